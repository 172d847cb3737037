//! The transport seam under a server actor, one type each way: the actor hands its transport
//! [`Outgoing`] messages through a bounded write queue, and gets back [`TransportEvent`]s (as a
//! stream the actor attaches, or in its mailbox; the transport hands them to the actor's
//! [`Attach`], never to its context). Every JSON-RPC rule lives in the actor; a
//! transport only carries lines, and tells of its own failures and end. [`stdio`] (a child
//! process, NDJSON on its stdin and stdout) and [`http`] (Streamable HTTP, with the legacy
//! HTTP+SSE fallback) are its two implementations of [`Transport`]; another one (HTTP over
//! stdio, a named pipe) is one more file and one arm in [`open`].

pub(crate) mod budget;
pub(super) mod http;
pub(super) mod stdio;

use std::io;

use actix::prelude::*;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::sandbox::Scratch;
use crate::framing::LineDecoder;
use crate::protocol::codec::{Frame, PREFIX_BYTES};
use crate::spec::{ServerSpec, TransportSpec};

/// Messages waiting to be written to a server (stdin, or the HTTP task). When the queue is full
/// our own requests wait for room until their timeout; answers to the server's requests and our
/// notifications are dropped and counted, so a server that floods requests and reads nothing
/// cannot grow us.
pub(in crate::server) const WRITE_QUEUE: usize = 1024;

/// One message for the server: its serialized line (newline-terminated), the id of a request
/// of ours (`None` for a notification or an answer), and the headers a transport that has
/// headers sends with it (HTTP: a call's `Mcp-Param-*`); empty, and so never allocated, for
/// every other message.
#[derive(Debug)]
pub(in crate::server) struct Outgoing {
    pub(in crate::server) id: Option<i64>,
    pub(in crate::server) line: Vec<u8>,
    pub(in crate::server) headers: Vec<(String, String)>,
}

impl Outgoing {
    /// A notification or an answer: no id of ours, no headers.
    pub(in crate::server) fn line(line: Vec<u8>) -> Self {
        Self {
            id: None,
            line,
            headers: Vec::new(),
        }
    }
}

/// The write queue's sending end, held by the actor; dropping it ends the transport (stdio:
/// stdin is flushed and closed; HTTP: the session is deleted and the task reports
/// [`TransportEvent::Closed`]).
pub(in crate::server) type Writer = mpsc::Sender<Outgoing>;

/// Everything a transport tells its actor.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub(in crate::server) enum TransportEvent {
    /// One incoming JSON-RPC message, exactly as sent (a stdout line, one SSE event's data,
    /// one JSON body).
    Message(Bytes),
    /// A message over the maximum message size, discarded: its start (to find its id).
    TooLong { prefix: Bytes, max: usize },
    /// A line given up because the replies being read at once went over the read budget
    /// (`budget.rs`): its first bytes (for its id).
    OverBudget { prefix: Bytes },
    /// Reading from the server failed (the stream goes on or ends on its own).
    ReadFailed(io::Error),
    /// A request could not be completed, or (`fatal`) the connection is gone.
    Failed(Box<TransportFailed>),
    /// One HTTP exchange, for the trace (boxed: every stdio line moves a `TransportEvent`,
    /// which stays as small as a line's `Bytes` and a length).
    Exchange(Box<HttpStatus>),
    /// The transport in use changed (`sse`: the fallback to legacy HTTP+SSE).
    Kind(&'static str),
    /// A new `Mcp-Session-Id`, hashed (sent only while telemetry is exported).
    Session(String),
    /// One line of the server's own log (a child's stderr).
    Log(String),
    /// The server's log has ended.
    LogClosed,
    /// The server's output has ended while its process may still run (a child closed its
    /// stdout).
    OutputClosed,
    /// The server's process exited (how, in words).
    Exited(String),
    /// The transport has ended (HTTP: after `DELETE`).
    Closed,
}

/// A request could not be completed; `fatal` means the connection is gone.
#[derive(Debug)]
pub(in crate::server) struct TransportFailed {
    pub id: Option<i64>,
    pub error: String,
    pub fatal: bool,
    /// Stateless era: the response stream broke before the response; the request may be
    /// sent again under a new id.
    pub reissue: bool,
    /// The server wants an OAuth login that nobody here will do.
    pub needs_login: bool,
    /// The server refused the token for want of a scope (`403 insufficient_scope`): the
    /// request fails alone once connected; before that, the connection needs a login.
    pub step_up: bool,
}

/// One HTTP exchange for the trace: the response's status, the session id in use, the
/// headers we added and the response's (credentials redacted), and an error reply's body.
#[derive(Debug)]
pub(in crate::server) struct HttpStatus {
    pub id: Option<i64>,
    pub method: String,
    pub status: u16,
    pub session: Option<String>,
    pub request_headers: Vec<(String, String)>,
    pub response_headers: Vec<(String, String)>,
    pub body: Option<Bytes>,
}

/// A server process of ours (stdio; HTTP over stdio would have one too): the actor signals its
/// group to stop it and sweeps the group when it exits. A transport that has one reports the
/// end of the process's log (`LogClosed`) and its exit (`Exited`).
pub(in crate::server) struct Process {
    /// Its pid, which is its process group's id (0 if it was not known).
    pub(in crate::server) pgid: i32,
    /// It has exited (and its group has been swept).
    pub(in crate::server) exited: bool,
    /// A sandboxed server's private temp directory, removed once its process has exited.
    pub(in crate::server) scratch: Option<Scratch>,
}

/// What opening a transport gives the actor: the write queue's sender and, when the server is a
/// process of ours, that process.
pub(in crate::server) struct Opened {
    pub(in crate::server) writer: Writer,
    pub(in crate::server) process: Option<Process>,
    /// Whether it sends headers with each message (a tool's `x-mcp-header` params are then
    /// mirrored, and a tool whose declaration of them is invalid is left out).
    pub(in crate::server) headers: bool,
}

/// Where a transport's events go: the actor's side of the seam, which attaches each stream to
/// itself and takes messages in its bounded mailbox. A transport names no actor and never holds
/// the actor's context; the actor implements this for its own context (`mcp_server/link.rs`).
/// Generic rather than a list of boxed streams handed back, so a stdio line costs no virtual
/// call.
pub(in crate::server) trait Attach {
    /// Polls `events` as one of the transport's streams (stdio: stdout, stderr, the exit);
    /// each tells of its own end with an event, and its end does not stop the actor.
    fn attach<S: Stream<Item = TransportEvent> + 'static>(&mut self, events: S);
    /// The mailbox a transport's task sends its events to (HTTP): `try_send`, then `send`,
    /// never past its capacity.
    fn mailbox(&self) -> Events;
}

/// A way to reach a server. `open` starts it and hands its events to `to` (the actor's
/// [`Attach`]): as streams it attaches, or as messages to its mailbox, never through a shared
/// table. A static trait, not a trait object or an enum of transports: the actor keeps only
/// what `open` gives back (the writer, the process), so writing a line or handling an event
/// goes through no virtual call and no match on the transport, and a new transport adds no
/// variant for the actor's code to handle.
pub(in crate::server) trait Transport {
    /// Opens the connection to `spec`'s server; an error says what failed, in words.
    fn open(spec: &ServerSpec, to: &mut impl Attach) -> Result<Opened, String>;
}

/// Opens the transport `spec` names.
pub(in crate::server) fn open(spec: &ServerSpec, to: &mut impl Attach) -> Result<Opened, String> {
    match &spec.transport {
        TransportSpec::Stdio { .. } => stdio::Stdio::open(spec, to),
        TransportSpec::Http { .. } => http::Http::open(spec, to),
    }
}

/// Where a transport that reports by message sends its events (the actor's address).
pub(in crate::server) type Events = Recipient<TransportEvent>;

/// Writes the queue's lines to `w` as they come (what is queued meanwhile goes in the same
/// write, up to 1 MiB), and shuts `w` down once the queue is closed. For any transport that is
/// a byte stream of NDJSON (stdio; a named pipe).
pub(in crate::server) async fn write_lines<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Outgoing>,
) {
    let mut buf = Vec::with_capacity(8 * 1024);
    while let Some(first) = rx.recv().await {
        buf.clear();
        buf.extend_from_slice(&first.line);
        while buf.len() < 1024 * 1024 {
            match rx.try_recv() {
                Ok(more) => buf.extend_from_slice(&more.line),
                Err(_) => break,
            }
        }
        if w.write_all(&buf).await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

/// The NDJSON messages read from `r` (at most `max` bytes each), as events for the actor to
/// poll (`ctx.add_stream`), ending with [`TransportEvent::OutputClosed`].
pub(in crate::server) fn read_lines<R: AsyncRead + Unpin>(r: R, max: usize) -> Lines<R> {
    Lines {
        frames: Some(FramedRead::with_capacity(
            r,
            LineDecoder::new(max),
            64 * 1024,
        )),
        log: false,
        lease: budget::Lease::new(),
    }
}

/// The lines of a server's log read from `r` (at most `max` bytes each; a longer one is
/// replaced by a note, an unreadable one skipped), ending with [`TransportEvent::LogClosed`].
pub(in crate::server) fn read_log<R: AsyncRead + Unpin>(r: R, max: usize) -> Lines<R> {
    Lines {
        frames: Some(FramedRead::new(r, LineDecoder::new(max))),
        log: true,
        lease: budget::Lease::new(),
    }
}

/// The stream [`read_lines`] and [`read_log`] give: one layer over the codec, so a line costs
/// one poll, and its end is an event of its own.
pub(in crate::server) struct Lines<R> {
    /// `None` once the end has been told.
    frames: Option<FramedRead<R, LineDecoder>>,
    /// The server's log (`Log` lines), not its messages.
    log: bool,
    /// The line being read: its bytes held against the read budget (messages only).
    lease: budget::Lease,
}

impl<R: AsyncRead + Unpin> Stream for Lines<R> {
    type Item = TransportEvent;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<TransportEvent>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            let Some(frames) = this.frames.as_mut() else {
                return Poll::Ready(None);
            };
            let polled = frames.poll_next_unpin(cx);
            if !this.log {
                // What the read buffer takes for a line not yet complete counts against the
                // budget (its capacity: it grows by doubling, and a line split from it keeps
                // the allocation); a line over it is given up (its call fails naming it).
                let buf = frames.read_buffer();
                let pending = if buf.is_empty() { 0 } else { buf.capacity() };
                if matches!(polled, Poll::Pending) && this.lease.hold(pending).is_err() {
                    // At `Pending` the buffer holds only the line being read.
                    let buf = frames.read_buffer_mut();
                    let prefix = Bytes::copy_from_slice(&buf[..PREFIX_BYTES.min(buf.len())]);
                    buf.clear();
                    frames.decoder_mut().discard_line();
                    let _ = this.lease.hold(0);
                    return Poll::Ready(Some(TransportEvent::OverBudget { prefix }));
                }
            }
            let ev = match (futures_util::ready!(polled), this.log) {
                (Some(Ok(Frame::Line(line))), false) => {
                    // The line keeps its share until it is parsed and handed over.
                    let lease = std::mem::replace(&mut this.lease, budget::Lease::new());
                    TransportEvent::Message(budget::leased(line, lease))
                }
                (Some(Ok(Frame::TooLong { prefix, max })), false) => {
                    TransportEvent::TooLong { prefix, max }
                }
                (Some(Err(e)), false) => TransportEvent::ReadFailed(e),
                (Some(Ok(Frame::Line(line))), true) => {
                    TransportEvent::Log(String::from_utf8_lossy(&line).into_owned())
                }
                (Some(Ok(Frame::TooLong { .. })), true) => {
                    TransportEvent::Log("[stderr line too long, dropped]".to_owned())
                }
                (Some(Err(_)), true) => continue,
                (None, log) => {
                    this.frames = None;
                    if log {
                        TransportEvent::LogClosed
                    } else {
                        TransportEvent::OutputClosed
                    }
                }
            };
            return Poll::Ready(Some(ev));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stdio line moves one event from the codec to the actor: it stays no bigger than
    /// the `Frame` it replaced (a line's `Bytes` and a length).
    #[test]
    fn an_event_is_as_small_as_a_frame() {
        assert!(std::mem::size_of::<TransportEvent>() <= 48);
        assert!(
            std::mem::size_of::<TransportEvent>()
                <= std::mem::size_of::<Result<Frame, io::Error>>() + 8
        );
    }

    /// The reader gives each line as sent, an over-long one as its start, then the end.
    #[actix_rt::test]
    async fn lines_are_read_as_events_then_the_end() {
        let input: &[u8] =
            b"{\"a\":1}\n{\"id\":7,\"long\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n{\"b\":2}\n";
        let got: Vec<TransportEvent> = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            read_lines(input, 24).collect(),
        )
        .await
        .expect("the reader ends with its input");
        assert!(matches!(&got[0], TransportEvent::Message(l) if &l[..] == b"{\"a\":1}"));
        assert!(matches!(&got[1], TransportEvent::TooLong { max: 24, .. }));
        assert!(matches!(&got[2], TransportEvent::Message(l) if &l[..] == b"{\"b\":2}"));
        assert!(matches!(got[3], TransportEvent::OutputClosed));
        assert_eq!(got.len(), 4);
    }

    /// The log reader gives lines as text, a note for an over-long one, then its own end.
    #[actix_rt::test]
    async fn log_lines_are_text_then_the_end() {
        let input: &[u8] = b"starting\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nready \xff\n";
        let got: Vec<TransportEvent> = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            read_log(input, 16).collect(),
        )
        .await
        .expect("the reader ends with its input");
        assert!(matches!(&got[0], TransportEvent::Log(l) if l == "starting"));
        assert!(
            matches!(&got[1], TransportEvent::Log(l) if l == "[stderr line too long, dropped]")
        );
        assert!(matches!(&got[2], TransportEvent::Log(l) if l == "ready \u{fffd}"));
        assert!(matches!(got[3], TransportEvent::LogClosed));
        assert_eq!(got.len(), 4);
    }

    /// The writer sends each message's line, in order, and closes its end when the queue does.
    #[actix_rt::test]
    async fn the_writer_sends_lines_in_order_and_closes() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let writer = actix_rt::spawn(write_lines(ours, rx));
        for n in 0..3 {
            let line = format!("{{\"n\":{n}}}\n").into_bytes();
            tx.send(Outgoing::line(line))
                .await
                .expect("the writer runs");
        }
        drop(tx);
        let mut out = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            tokio::io::AsyncReadExt::read_to_end(&mut theirs, &mut out),
        )
        .await
        .expect("the writer closes its end")
        .expect("read");
        assert_eq!(out, b"{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n");
        let _ = writer.await;
    }
}
