//! Byte-level newline-delimited framing with a configurable maximum line size.
//!
//! Unlike `LinesCodec`, an over-long line is reported and discarded while the stream goes on, a
//! non-UTF-8 line is handed up as bytes (the envelope parser rejects it), and an unterminated
//! last line is still delivered at end of stream.

use bytes::{Bytes, BytesMut};

/// The default maximum message size: 256 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// How many leading bytes of an over-long line are kept, to read its id.
pub const PREFIX_BYTES: usize = 512;

/// One decoded frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its `\n` (or `\r\n`); never empty.
    Line(Bytes),
    /// A line that exceeded the maximum; it is being discarded up to its newline.
    TooLong {
        /// Its first bytes.
        prefix: Bytes,
        /// The maximum it exceeded.
        max: usize,
    },
}

/// Newline-delimited JSON codec.
#[derive(Debug)]
pub struct NdjsonCodec {
    max: usize,
    scanned: usize,
    discarding: bool,
}

impl NdjsonCodec {
    /// A codec whose lines may be at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            scanned: 0,
            discarding: false,
        }
    }

    /// The over-long line at the start of `buf`: it has at least `max + 1` bytes there, so its
    /// prefix never reaches into the next line and does not depend on how the input was split.
    fn too_long(&mut self, buf: &mut BytesMut) -> Frame {
        let keep = PREFIX_BYTES.min(self.max.saturating_add(1)).min(buf.len());
        let prefix = Bytes::copy_from_slice(&buf[..keep]);
        Frame::TooLong {
            prefix,
            max: self.max,
        }
    }
}

impl NdjsonCodec {
    /// Discards the line being read up to its newline (the caller cleared what was read of
    /// it: its memory budget is spent).
    pub fn discard_line(&mut self) {
        self.scanned = 0;
        self.discarding = true;
    }
}

impl Default for NdjsonCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_MESSAGE_BYTES)
    }
}

fn trim(mut line: BytesMut) -> BytesMut {
    if line.last() == Some(&b'\n') {
        line.truncate(line.len() - 1);
    }
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    line
}

impl NdjsonCodec {
    /// The next frame at the start of `buf` (taken out of it), or `None` until more bytes come.
    /// The runtime's reader calls it the way `tokio_util`'s `FramedRead` calls a `Decoder`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        loop {
            if self.discarding {
                match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        let _ = buf.split_to(i + 1);
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        buf.clear();
                        return None;
                    }
                }
            }
            match memchr::memchr(b'\n', &buf[self.scanned..]) {
                Some(rel) => {
                    let end = self.scanned + rel;
                    self.scanned = 0;
                    if end > self.max {
                        let frame = self.too_long(buf);
                        let _ = buf.split_to(end + 1);
                        return Some(frame);
                    }
                    let line = trim(buf.split_to(end + 1));
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Frame::Line(line.freeze()));
                }
                None => {
                    if buf.len() > self.max {
                        let frame = self.too_long(buf);
                        buf.clear();
                        self.scanned = 0;
                        self.discarding = true;
                        return Some(frame);
                    }
                    self.scanned = buf.len();
                    return None;
                }
            }
        }
    }

    /// Like [`Self::decode`] at the end of the stream: an unterminated last line is delivered.
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        if let Some(frame) = self.decode(buf) {
            return Some(frame);
        }
        self.scanned = 0;
        if self.discarding || buf.is_empty() {
            buf.clear();
            return None;
        }
        let line = trim(buf.split_to(buf.len()));
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(Frame::Line(line.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(codec: &mut NdjsonCodec, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            while let Some(f) = codec.decode(&mut buf) {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf) {
            out.push(f);
        }
        out
    }

    fn line(s: &str) -> Frame {
        Frame::Line(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_across_chunks_and_skips_blank_lines() {
        let mut c = NdjsonCodec::new(1024);
        let got = lines(
            &mut c,
            &[b"{\"a\"", b":1}\r\n\n  \n{\"b\":2}\n{\"c\"", b":3}"],
        );
        assert_eq!(
            got,
            vec![line("{\"a\":1}"), line("{\"b\":2}"), line("{\"c\":3}")]
        );
    }

    #[test]
    fn over_long_line_is_reported_once_and_the_stream_goes_on() {
        let mut c = NdjsonCodec::new(16);
        let long = format!("{{\"id\":5,\"result\":\"{}\"}}\n", "x".repeat(100));
        let (a, b) = long.as_bytes().split_at(40);
        let got = lines(&mut c, &[a, b, b"{\"ok\":1}\n"]);
        assert_eq!(got.len(), 2, "{got:?}");
        match &got[0] {
            Frame::TooLong { prefix, max } => {
                assert!(prefix.starts_with(b"{\"id\":5"));
                assert_eq!(*max, 16);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(got[1], line("{\"ok\":1}"));
    }

    #[test]
    fn over_long_line_in_one_chunk() {
        let mut c = NdjsonCodec::new(8);
        let got = lines(&mut c, &[b"0123456789abc\nshort\n"]);
        assert!(matches!(got[0], Frame::TooLong { .. }));
        assert_eq!(got[1], line("short"));
    }

    #[test]
    fn invalid_utf8_is_passed_up_as_bytes() {
        let mut c = NdjsonCodec::new(64);
        let got = lines(&mut c, &[b"\xff\xfe\n{}\n"]);
        assert_eq!(got.len(), 2);
    }
}
