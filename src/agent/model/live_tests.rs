//! `Provider::complete` over real HTTP: a tiny scripted server on a std thread (chunked SSE,
//! 429 with `retry-after`, 401, a stall, a cut stream) proves the awc plumbing, the retries,
//! the timeouts and cancellation.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;

/// One scripted response.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    /// Body pieces, each sent as an HTTP chunk after its delay.
    chunks: Vec<(Duration, Vec<u8>)>,
    /// Keep the connection open (silent) this long before ending the body.
    stall: Duration,
}

impl Reply {
    fn sse(body: &str, piece: usize) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type", "text/event-stream".into())],
            chunks: body
                .as_bytes()
                .chunks(piece)
                .map(|c| (Duration::from_millis(2), c.to_vec()))
                .collect(),
            stall: Duration::ZERO,
        }
    }

    fn json(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            chunks: vec![(Duration::ZERO, body.as_bytes().to_vec())],
            stall: Duration::ZERO,
        }
    }

    fn header(mut self, k: &'static str, v: &str) -> Self {
        self.headers.push((k, v.to_owned()));
        self
    }
}

/// A request the server saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

impl Seen {
    fn header(&self, k: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.as_str())
    }
}

/// Serves `replies` in order, one connection each, on a thread; returns the base URL and the
/// requests seen.
fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for reply in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            match read_request(&stream) {
                Some(s) => log.lock().expect("lock").push(s),
                None => return,
            }
            let _ = write_reply(stream, reply);
        }
    });
    (format!("http://{addr}"), seen)
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    let mut len = 0;
    loop {
        line.clear();
        r.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        if k.eq_ignore_ascii_case("content-length") {
            len = v.trim().parse().ok()?;
        }
        headers.push((k.to_owned(), v.trim().to_owned()));
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        headers,
        body: serde_json::from_slice(&body).ok()?,
    })
}

fn write_reply(mut s: TcpStream, reply: Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    s.write_all(head.as_bytes())?;
    s.flush()?;
    for (delay, chunk) in reply.chunks {
        std::thread::sleep(delay);
        s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
        s.write_all(&chunk)?;
        s.write_all(b"\r\n")?;
        s.flush()?;
    }
    std::thread::sleep(reply.stall);
    s.write_all(b"0\r\n\r\n")?;
    s.flush()
}

fn config(kind: ProviderKind, base_url: &str, key: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        base_url: base_url.to_owned(),
        api_key: key.map(str::to_owned),
        request_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        ..ProviderConfig::new(kind, "test-model")
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        system: Some("sys".into()),
        messages: vec![Message {
            role: Role::User,
            content: vec![Block::Text("hi".into())],
        }],
        tools: Arc::new(vec![]),
        max_tokens: 0,
    }
}

/// Runs one call with a hard timeout; the result and every event sent.
async fn call(
    provider: &Provider,
    cancel: &CancellationToken,
) -> (Result<ModelReply, ModelError>, Vec<StreamEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        provider.complete(&request(), &tx, cancel),
    )
    .await
    .expect("the call finished within 20 s");
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (result, events)
}

#[actix_rt::test]
async fn anthropic_streams_chunked_sse_over_http() {
    let (url, seen) = serve(vec![Reply::sse(anthropic::tests::STREAM, 7)]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, Some("sk-ant-test")));
    let (result, events) = call(&p, &CancellationToken::new()).await;
    assert_eq!(result, Ok(anthropic::tests::expected()));
    assert_eq!(events.len(), 4, "{events:?}");
    let seen = seen.lock().expect("lock")[0].clone();
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen.header("accept"), Some("text/event-stream"));
    assert_eq!(seen.body["stream"], json!(true));
    assert_eq!(seen.body["model"], json!("test-model"));
}

#[actix_rt::test]
async fn openai_429_with_retry_after_is_retried_then_streams() {
    let (url, seen) = serve(vec![
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit reached for test-model","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "1"),
        Reply::sse(openai::tests::STREAM, 5),
    ]);
    let p = Provider::new(config(ProviderKind::OpenAi, &url, None));
    let started = Instant::now();
    let (result, events) = call(&p, &CancellationToken::new()).await;
    let reply = result.expect("success after the retry");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.content.len(), 3);
    assert_eq!(
        events[0],
        StreamEvent::Retrying {
            attempt: 1,
            after: Duration::from_secs(1),
            reason: "openai rate limit hit for model \"test-model\" (429 rate_limit_exceeded: Rate limit reached for test-model)".into()
        }
    );
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].path, "/chat/completions");
    assert_eq!(seen[1].header("authorization"), None, "no key, no header");
    assert_eq!(seen[0].body, seen[1].body);
}

#[actix_rt::test]
async fn a_401_is_an_auth_error_at_once() {
    let (url, seen) = serve(vec![Reply::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, Some("bad")));
    let (result, events) = call(&p, &CancellationToken::new()).await;
    assert_eq!(
        result,
        Err(ModelError::Auth {
            status: 401,
            message: "anthropic rejected the API key (401 authentication_error: invalid x-api-key); set ANTHROPIC_API_KEY".into()
        })
    );
    assert!(events.is_empty());
    assert_eq!(seen.lock().expect("lock").len(), 1);
}

#[actix_rt::test]
async fn openai_sends_the_bearer_key() {
    let (url, seen) = serve(vec![Reply::sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
        1000,
    )]);
    let p = Provider::new(config(ProviderKind::OpenAi, &url, Some("sk-oa")));
    let (result, _) = call(&p, &CancellationToken::new()).await;
    assert_eq!(result.expect("ok").content, vec![Block::Text("ok".into())]);
    assert_eq!(
        seen.lock().expect("lock")[0].header("authorization"),
        Some("Bearer sk-oa")
    );
}

#[actix_rt::test]
async fn a_refused_connection_names_the_url_and_is_retried_once() {
    // 127.0.0.2: the other tests' servers (on 127.0.0.1) cannot take the freed port over.
    let port = TcpListener::bind("127.0.0.2:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let cfg = config(
        ProviderKind::Anthropic,
        &format!("http://127.0.0.2:{port}"),
        None,
    );
    assert_eq!(cfg.max_retries, 3);
    let (result, events) = call(&Provider::new(cfg), &CancellationToken::new()).await;
    let url = format!("http://127.0.0.2:{port}/v1/messages");
    assert_eq!(
        result,
        Err(ModelError::Network(format!(
            "cannot reach {url}: Connection refused (os error 111) (after 2 tries); check the network and the base URL"
        )))
    );
    assert_eq!(
        events,
        vec![StreamEvent::Retrying {
            attempt: 1,
            after: Duration::from_secs(1),
            reason: format!(
                "network error (cannot reach {url}: Connection refused (os error 111))"
            ),
        }]
    );
}

#[actix_rt::test]
async fn an_idle_stream_times_out() {
    let mut stall = Reply::sse("event: ping\ndata: {\"type\":\"ping\"}\n\n", 1000);
    stall.stall = Duration::from_secs(3);
    let (url, _) = serve(vec![stall]);
    let mut cfg = config(ProviderKind::Anthropic, &url, None);
    cfg.idle_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let (result, _) = call(&Provider::new(cfg), &CancellationToken::new()).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    match result {
        Err(ModelError::Network(m)) => assert!(m.contains("went idle: no data for 0.3 s"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[actix_rt::test]
async fn a_web_page_instead_of_a_stream_says_to_check_the_base_url() {
    let page = Reply {
        status: 200,
        headers: vec![("content-type", "text/html; charset=utf-8".into())],
        chunks: vec![(
            Duration::ZERO,
            b"<html><title>Sign in to the proxy</title></html>".to_vec(),
        )],
        stall: Duration::ZERO,
    };
    let (url, _) = serve(vec![page]);
    let p = Provider::new(config(ProviderKind::OpenAi, &url, Some("k")));
    let (result, _) = call(&p, &CancellationToken::new()).await;
    assert_eq!(
        result,
        Err(ModelError::Protocol(format!(
            "{url}/chat/completions answered with a web page instead of an event stream: <html><title>Sign in to the proxy</title></html>; check the openai base URL (and any proxy in between)"
        )))
    );
}

#[actix_rt::test]
async fn a_stream_cut_before_message_stop_is_a_protocol_error() {
    let cut = &anthropic::tests::STREAM[..anthropic::tests::STREAM
        .find("event: message_delta")
        .expect("marker")];
    let (url, _) = serve(vec![Reply::sse(cut, 100)]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, None));
    let (result, events) = call(&p, &CancellationToken::new()).await;
    assert_eq!(
        result,
        Err(ModelError::Protocol(format!(
            "the stream from {url}/v1/messages ended before message_stop; the reply is incomplete, try again"
        )))
    );
    assert!(!events.is_empty(), "text streamed before the cut");
}

#[actix_rt::test]
async fn cancel_during_a_retry_wait_ends_the_call_at_once() {
    let (url, _) = serve(vec![Reply::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
    .header("retry-after", "30")]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, None));
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let trigger = cancel.clone();
    actix_rt::spawn(async move {
        if let Some(StreamEvent::Retrying { after, .. }) = rx.recv().await {
            assert_eq!(after, Duration::from_secs(30));
            trigger.cancel();
        }
    });
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        p.complete(&request(), &tx, &cancel),
    )
    .await
    .expect("finished");
    assert_eq!(result, Err(ModelError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[actix_rt::test]
async fn overload_retries_run_out_with_the_try_count() {
    let overloaded = || {
        Reply::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .header("retry-after-ms", "10")
    };
    let (url, seen) = serve(vec![overloaded(), overloaded(), overloaded()]);
    let mut cfg = config(ProviderKind::Anthropic, &url, None);
    cfg.max_retries = 2;
    let (result, events) = call(&Provider::new(cfg), &CancellationToken::new()).await;
    assert_eq!(
        result,
        Err(ModelError::RateLimited {
            attempts: 3,
            message: "anthropic is overloaded (529 overloaded_error: Overloaded); gave up after 3 tries; wait a minute and try again".into()
        })
    );
    assert_eq!(events.len(), 2);
    assert_eq!(seen.lock().expect("lock").len(), 3);
}

#[actix_rt::test]
async fn a_retry_after_over_a_minute_fails_at_once() {
    let (url, _) = serve(vec![Reply::json(
        429,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
    )
    .header("retry-after", "120")]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, None));
    let (result, events) = call(&p, &CancellationToken::new()).await;
    assert_eq!(
        result,
        Err(ModelError::RateLimited {
            attempts: 1,
            message: "anthropic rate limit hit for model \"test-model\" (429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit) and asks to wait 120 s, longer than harness9 waits (60 s); try again later".into()
        })
    );
    assert!(events.is_empty());
}

#[actix_rt::test]
async fn an_overloaded_error_event_before_any_output_is_retried() {
    let overloaded = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let (url, seen) = serve(vec![
        Reply::sse(overloaded, 1000),
        Reply::sse(anthropic::tests::STREAM, 1000),
    ]);
    let p = Provider::new(config(ProviderKind::Anthropic, &url, None));
    let (result, events) = call(&p, &CancellationToken::new()).await;
    assert_eq!(result, Ok(anthropic::tests::expected()));
    assert_eq!(
        events[0],
        StreamEvent::Retrying {
            attempt: 1,
            after: Duration::from_secs(1),
            reason: "anthropic is overloaded (overloaded_error: Overloaded)".into()
        }
    );
    assert_eq!(seen.lock().expect("lock").len(), 2);
}
