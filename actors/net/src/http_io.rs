//! A plain-TCP stream for awc that lets it read HTTP/1.1 bodies delimited by the connection's
//! close. actix-http reads an HTTP/1.1 response with neither `Content-Length` nor chunked
//! encoding as empty (valid HTTP/1.1: the body runs to the close), while it reads the same
//! response as HTTP/1.0 to its end. [`CloseBodies`] follows the response framing on the wire
//! and rewrites such a head's `HTTP/1.1` to `HTTP/1.0` (same length), so the body arrives whole
//! and the connection is not reused. TLS streams are passed through untouched (the framing is
//! not visible under TLS; awc layers TLS over this stream).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_rt::net::{ActixStream, Ready, TcpStream};
use actix_service::Service;
use actix_tls::connect::{ConnectError, ConnectInfo, Connection};
use awc::http::Uri;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest response head followed; past it the stream is passed through as it is.
const MAX_HEAD: usize = 64 * 1024;

/// Where the reader is in the response framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// A body of this many more bytes.
    Fixed(u64),
    /// Chunked: reading a chunk-size line.
    ChunkSize,
    /// Chunked: this many more data bytes, then CRLF.
    ChunkData(u64),
    /// Chunked: the CRLF after a chunk's data (bytes left).
    ChunkEnd(u8),
    /// Chunked: trailer lines until an empty one.
    Trailer,
    /// The body runs to the close: everything passes.
    ToClose,
    /// Not followed (TLS, not HTTP, an over-long head): everything passes.
    Off,
}

/// Follows response framing over the bytes read and rewrites close-delimited HTTP/1.1 heads.
#[derive(Debug)]
pub(crate) struct Framing {
    state: State,
    /// The head (or chunk-size/trailer line) being collected.
    line: Vec<u8>,
}

impl Framing {
    pub(crate) fn new(follow: bool) -> Self {
        Self {
            state: if follow { State::Head } else { State::Off },
            line: Vec::new(),
        }
    }

    fn passes_all(&self) -> bool {
        matches!(self.state, State::ToClose | State::Off)
    }

    /// Feeds bytes read from the wire; appends what the reader gets to `out`.
    pub(crate) fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) {
        while !data.is_empty() {
            match self.state {
                State::Off | State::ToClose => {
                    out.extend_from_slice(data);
                    return;
                }
                State::Head => {
                    // Collect up to the blank line, a byte at a time through the buffer.
                    let start = self.line.len().saturating_sub(3);
                    let take = data.len().min(MAX_HEAD + 4 - self.line.len().min(MAX_HEAD));
                    self.line.extend_from_slice(&data[..take]);
                    match find(&self.line[start..], b"\r\n\r\n") {
                        Some(at) => {
                            let end = start + at + 4;
                            let rest_in_line = self.line.len() - end;
                            let consumed = take - rest_in_line;
                            self.line.truncate(end);
                            let mut head = std::mem::take(&mut self.line);
                            self.state = head_state(&mut head);
                            out.extend_from_slice(&head);
                            data = &data[consumed..];
                        }
                        None if self.line.len() > MAX_HEAD => {
                            self.state = State::Off;
                            out.append(&mut self.line);
                            data = &data[take..];
                        }
                        None => data = &data[take..],
                    }
                }
                State::Fixed(n) => {
                    let k = (data.len() as u64).min(n) as usize;
                    out.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    self.state = if n - k as u64 == 0 {
                        State::Head
                    } else {
                        State::Fixed(n - k as u64)
                    };
                }
                State::ChunkSize | State::Trailer => {
                    let nl = data.iter().position(|&b| b == b'\n');
                    let k = nl.map_or(data.len(), |i| i + 1);
                    out.extend_from_slice(&data[..k]);
                    if self.line.len() < 1024 {
                        self.line.extend_from_slice(&data[..k.min(1024)]);
                    }
                    data = &data[k..];
                    if nl.is_none() {
                        continue;
                    }
                    let line = std::mem::take(&mut self.line);
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim();
                    self.state = if self.state == State::Trailer {
                        if text.is_empty() {
                            State::Head
                        } else {
                            State::Trailer
                        }
                    } else {
                        let size = text.split(';').next().unwrap_or("").trim();
                        match u64::from_str_radix(size, 16) {
                            Ok(0) => State::Trailer,
                            Ok(n) => State::ChunkData(n),
                            Err(_) => State::Off,
                        }
                    };
                }
                State::ChunkData(n) => {
                    let k = (data.len() as u64).min(n) as usize;
                    out.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    self.state = if n - k as u64 == 0 {
                        State::ChunkEnd(2)
                    } else {
                        State::ChunkData(n - k as u64)
                    };
                }
                State::ChunkEnd(left) => {
                    let k = data.len().min(left as usize);
                    out.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    self.state = if left as usize == k {
                        State::ChunkSize
                    } else {
                        State::ChunkEnd(left - k as u8)
                    };
                }
            }
        }
    }
}

/// Reads a complete response head; rewrites a close-delimited HTTP/1.1 one to HTTP/1.0.
fn head_state(head: &mut [u8]) -> State {
    let text = String::from_utf8_lossy(head).into_owned();
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or("");
    let Some(code) = parts.next().and_then(|c| c.parse::<u16>().ok()) else {
        return State::Off;
    };
    if !version.starts_with("HTTP/1.") || code == 101 {
        return State::Off;
    }
    if (100..200).contains(&code) || code == 204 || code == 304 {
        return State::Head;
    }
    let mut length = None;
    let mut chunked = false;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<u64>().ok();
        } else if k.eq_ignore_ascii_case("transfer-encoding") {
            chunked |= v.to_ascii_lowercase().contains("chunked");
        }
    }
    match (chunked, length) {
        (true, _) => State::ChunkSize,
        (false, Some(0)) => State::Head,
        (false, Some(n)) => State::Fixed(n),
        (false, None) => {
            if version == "HTTP/1.1" {
                head[..8].copy_from_slice(b"HTTP/1.0");
            }
            State::ToClose
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A TCP stream whose reads go through `Framing`.
#[derive(Debug)]
pub struct CloseBodyStream {
    io: TcpStream,
    framing: Framing,
    out: Vec<u8>,
    pos: usize,
}

impl AsyncRead for CloseBodyStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pos < this.out.len() {
                let k = buf.remaining().min(this.out.len() - this.pos);
                buf.put_slice(&this.out[this.pos..this.pos + k]);
                this.pos += k;
                if this.pos == this.out.len() {
                    this.out.clear();
                    this.pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.framing.passes_all() && this.framing.line.is_empty() {
                return Pin::new(&mut this.io).poll_read(cx, buf);
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.io).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // The close: a head cut short goes to the reader as it is.
                    this.out.append(&mut this.framing.line);
                    if this.out.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Ready(Ok(())) => this.framing.feed(rb.filled(), &mut this.out),
            }
        }
    }
}

impl AsyncWrite for CloseBodyStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl ActixStream for CloseBodyStream {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<Ready>> {
        if self.pos < self.out.len() {
            return Poll::Ready(Ok(Ready::READABLE));
        }
        ActixStream::poll_read_ready(&self.io, cx)
    }

    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<Ready>> {
        ActixStream::poll_write_ready(&self.io, cx)
    }
}

/// awc's TCP connector, its streams wrapped in [`CloseBodyStream`] (followed for `http://`
/// only).
#[derive(Clone)]
pub struct CloseBodies<S>(pub S);

type Connected = Connection<Uri, CloseBodyStream>;

impl<S> Service<ConnectInfo<Uri>> for CloseBodies<S>
where
    S: Service<ConnectInfo<Uri>, Response = Connection<Uri, TcpStream>, Error = ConnectError>,
    S::Future: 'static,
{
    type Response = Connected;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Connected, ConnectError>>>>;

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        self.0.poll_ready(cx)
    }

    fn call(&self, req: ConnectInfo<Uri>) -> Self::Future {
        let follow = req.request().scheme_str() != Some("https");
        let fut = self.0.call(req);
        Box::pin(async move {
            let conn = fut.await?;
            let (io, uri) = conn.into_parts();
            Ok(Connection::new(
                uri,
                CloseBodyStream {
                    io,
                    framing: Framing::new(follow),
                    out: Vec::new(),
                    pos: 0,
                },
            ))
        })
    }
}

/// awc's TCP connector (TLS is layered over it by awc) that reads close-delimited HTTP/1.1
/// bodies whole: for every awc client that reads a server's or a model's replies.
pub fn close_bodies_tcp() -> CloseBodies<actix_tls::connect::ConnectorService> {
    CloseBodies(actix_tls::connect::Connector::default().service())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], split: usize) -> Vec<u8> {
        let mut f = Framing::new(true);
        let mut out = Vec::new();
        for piece in input.chunks(split.max(1)) {
            f.feed(piece, &mut out);
        }
        out
    }

    #[test]
    fn close_delimited_heads_become_http_1_0_and_framed_ones_pass() {
        let keep = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHTTP/\r\n0\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"HTTP/1.1\":1}";
        let want = {
            let mut w = keep.to_vec();
            let at = w.len()
                - b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"HTTP/1.1\":1}"
                    .len();
            w[at..at + 8].copy_from_slice(b"HTTP/1.0");
            w
        };
        for split in [1, 2, 3, 7, 16, 1000] {
            assert_eq!(run(keep, split), want, "split {split}");
        }
        // 204 and 1xx have no body; a 101 or something not HTTP is left alone.
        let b =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\nx";
        assert!(run(b, 5).ends_with(b"HTTP/1.0 200 OK\r\n\r\nx"));
        assert_eq!(
            run(b"SSH-2.0 hi\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", 4),
            b"SSH-2.0 hi\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
        );
    }
}
