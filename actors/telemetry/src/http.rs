//! The exporter's HTTP client: one blocking HTTP/1.1 `POST` per export (`Connection: close`),
//! plain or TLS (rustls, the same roots as every other connection of harness9), the whole
//! exchange bounded by `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds; [`DEFAULT_TIMEOUT`], at most
//! [`MAX_TIMEOUT`]): it bounds one export, never the user's exit (`export::Telemetry::shutdown`
//! has its own bound). The answer is read up to [`MAX_RESPONSE`] bytes. Every export goes
//! through the circuit breaker (`breaker.rs`): a collector that is down is not contacted again
//! for a while, and the SDK's own retries are off. The SDK calls it on its own export threads,
//! never on the actors' runtime.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

use super::breaker;

/// The bound on one export's exchange, when `OTEL_EXPORTER_OTLP_TIMEOUT` does not set one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `OTEL_EXPORTER_OTLP_TIMEOUT` honoured.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of a collector's answer that is read.
const MAX_RESPONSE: u64 = 1024 * 1024;

/// The client (cheap to clone: the TLS config is shared).
#[derive(Debug, Clone)]
pub(crate) struct OtlpHttp {
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
}

impl OtlpHttp {
    pub(crate) fn new() -> Self {
        harness9_net::install_crypto();
        let timeout = std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis);
        Self {
            tls: harness9_net::tls_config(),
            timeout: bounded_timeout(timeout),
        }
    }

    fn post(&self, req: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let uri = req.uri().clone();
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => {
                let shown = super::without_credentials(&uri.to_string());
                return Err(format!("unsupported scheme {other:?} in {shown}").into());
            }
        };
        let host = uri.host().ok_or_else(|| {
            format!(
                "no host in {}",
                super::without_credentials(&uri.to_string())
            )
        })?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let addr = (host, port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| format!("{host} has no address"))?;
        let deadline = std::time::Instant::now() + self.timeout;
        let tcp = TcpStream::connect_timeout(&addr, self.timeout)?;
        tcp.set_read_timeout(Some(self.timeout))?;
        tcp.set_write_timeout(Some(self.timeout))?;
        let mut head = format!(
            "{} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            req.method(),
            host_header(host, port, https),
            req.body().len()
        );
        for (k, v) in req.headers() {
            if k == "host" || k == "content-length" || k == "connection" {
                continue;
            }
            let v = v.to_str().map_err(|_| format!("header {k} is not text"))?;
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let raw = if https {
            let name = rustls::pki_types::ServerName::try_from(host.to_owned())?;
            let conn = rustls::ClientConnection::new(self.tls.clone(), name)?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            exchange(&mut s, head.as_bytes(), req.body(), deadline)?
        } else {
            let mut s = tcp;
            exchange(&mut s, head.as_bytes(), req.body(), deadline)?
        };
        parse_response(&raw)
    }
}

fn host_header(host: &str, port: u16, https: bool) -> String {
    let h = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    match (https, port) {
        (false, 80) | (true, 443) => h,
        _ => format!("{h}:{port}"),
    }
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` as honoured: at least a millisecond, at most [`MAX_TIMEOUT`].
fn bounded_timeout(t: Option<Duration>) -> Duration {
    t.unwrap_or(DEFAULT_TIMEOUT)
        .clamp(Duration::from_millis(1), MAX_TIMEOUT)
}

/// Writes the request, reads the answer until the collector closes, [`MAX_RESPONSE`] bytes, or
/// `deadline` (a collector that trickles its answer is cut off there).
fn exchange<S: Read + Write>(
    s: &mut S,
    head: &[u8],
    body: &[u8],
    deadline: std::time::Instant,
) -> std::io::Result<Vec<u8>> {
    s.write_all(head)?;
    s.write_all(body)?;
    s.flush()?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the collector did not answer in time",
            ));
        }
        match s.read(&mut buf) {
            Ok(0) => return Ok(raw),
            Ok(n) => {
                let room = (MAX_RESPONSE as usize).saturating_sub(raw.len());
                raw.extend_from_slice(&buf[..n.min(room)]);
                if raw.len() >= MAX_RESPONSE as usize {
                    return Ok(raw);
                }
            }
            // A TLS peer that closes without close_notify: what came is the answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {
                return Ok(raw)
            }
            Err(e) => return Err(e),
        }
    }
}

/// The status, and the body (content-length or chunked) of an HTTP/1.x answer.
fn parse_response(raw: &[u8]) -> Result<Response<Bytes>, HttpError> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the collector's answer has no end of headers")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the answer's headers are not text")?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or("the collector's answer has no status")?;
    let mut chunked = false;
    let mut length: Option<usize> = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k == "content-length" {
                length = v.parse().ok();
            }
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)
    } else {
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    Ok(Response::builder().status(status).body(Bytes::from(body))?)
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok());
        let Some(size) = size.filter(|n| *n > 0) else {
            return out;
        };
        let start = eol + 2;
        let Some(chunk) = rest.get(start..start + size) else {
            return out;
        };
        out.extend_from_slice(chunk);
        rest = rest.get(start + size + 2..).unwrap_or(&[]);
    }
}

impl OtlpHttp {
    /// One export through the breaker: skipped at once while the collector is known down;
    /// its outcome is what the breaker learns.
    fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let endpoint = request.uri().to_string();
        let origin = breaker::origin(&endpoint).unwrap_or_else(|| endpoint.clone());
        if breaker::is_down(&origin) {
            return Err(format!(
                "the collector at {} is down; export skipped",
                super::without_credentials(&endpoint)
            )
            .into());
        }
        match self.post(request) {
            Ok(r) => {
                breaker::answered(&origin);
                Ok(r)
            }
            Err(e) => {
                breaker::failed(&origin, &endpoint, &e.to_string());
                Err(e)
            }
        }
    }

    /// Posts an empty export (a valid, empty protobuf request) to `endpoint`, so the breaker
    /// knows the collector before the first real export: refused, it is down at once; any
    /// answer, it is up. Blocking: the caller runs it on a thread of its own.
    pub(crate) fn probe(&self, endpoint: &str) {
        let req = Request::builder()
            .method("POST")
            .uri(endpoint)
            .header("content-type", "application/x-protobuf")
            .body(Bytes::new());
        match req {
            Ok(req) => {
                let _ = self.send(req);
            }
            Err(e) => {
                let origin = breaker::origin(endpoint).unwrap_or_else(|| endpoint.to_owned());
                breaker::failed(&origin, endpoint, &e.to_string());
            }
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        self.send(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_plain_and_chunked() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
        assert!(matches!(&r, Ok(r) if r.status() == 200 && r.body().as_ref() == b"ok"));
        let r = parse_response(
            b"HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        );
        assert!(matches!(&r, Ok(r) if r.status() == 400 && r.body().as_ref() == b"abcde"));
        assert!(parse_response(b"garbage").is_err());
        assert_eq!(host_header("::1", 4318, false), "[::1]:4318");
        assert_eq!(host_header("c", 443, true), "c");
        assert_eq!(bounded_timeout(None), DEFAULT_TIMEOUT);
        assert_eq!(bounded_timeout(Some(Duration::from_secs(600))), MAX_TIMEOUT);
        assert_eq!(
            bounded_timeout(Some(Duration::ZERO)),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn a_post_reaches_a_listener_and_its_status_comes_back() -> Result<(), HttpError> {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = l.local_addr()?.port();
        let server = std::thread::spawn(move || -> std::io::Result<Vec<u8>> {
            let (mut c, _) = l.accept()?;
            c.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(5).any(|w| w == b"hello") {
                let n = c.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            c.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")?;
            Ok(got)
        });
        let req = Request::builder()
            .method("POST")
            .uri(format!("http://127.0.0.1:{port}/v1/traces"))
            .header("content-type", "application/x-protobuf")
            .body(Bytes::from_static(b"hello"))?;
        let resp = OtlpHttp::new().post(req)?;
        assert_eq!(resp.status(), 202);
        let got = server.join().map_err(|_| "listener panicked")??;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{text}");
        assert!(
            text.contains("content-type: application/x-protobuf\r\n"),
            "{text}"
        );
        Ok(())
    }
}
