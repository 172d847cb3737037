//! The protocol crate's NDJSON codec as a `tokio_util` decoder: the one adapter between the pure
//! framing (`harness9_protocol::codec`, no tokio) and the runtime's `FramedRead` readers.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

use crate::protocol::codec::{Frame, NdjsonCodec};

/// [`NdjsonCodec`] read through `FramedRead`; a decode never fails (a bad line is a frame).
#[derive(Debug)]
pub(crate) struct LineDecoder(NdjsonCodec);

impl LineDecoder {
    /// Lines of at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self(NdjsonCodec::new(max))
    }

    /// Discards the line being read up to its newline (see [`NdjsonCodec::discard_line`]).
    pub(crate) fn discard_line(&mut self) {
        self.0.discard_line();
    }
}

impl Decoder for LineDecoder {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        Ok(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        Ok(self.0.decode_eof(buf))
    }
}
