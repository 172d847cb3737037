//! An incremental Server-Sent Events parser: chunks split anywhere, LF/CRLF/CR line ends,
//! comments, multi-line `data:`, `event:`, `id:`, `retry:`, and a cap on one event's data.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// `event:` (empty means `message`).
    pub event: String,
    /// The `data:` lines joined by `\n`.
    pub data: String,
    /// The last `id:` seen (sticky, as the spec says).
    pub id: Option<String>,
}

/// How much longer than the data cap one line may be: `data: ` before a maximal value.
const FIELD_SLACK: usize = "data: ".len();

/// Parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    last_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    /// The latest `retry:` in milliseconds.
    pub retry_ms: Option<u64>,
    max: usize,
    /// Set by the first [`SseError::TooLarge`]: a parser that failed stays failed, so the
    /// oversized event is never dispatched by a caller that goes on feeding.
    overflow: bool,
}

/// Why parsing stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event's data exceeded the maximum.
    #[error("an SSE event exceeded the maximum message size of {0} bytes")]
    TooLarge(usize),
}

impl SseParser {
    /// A parser whose events may carry at most `max` bytes of data.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            ..Self::default()
        }
    }

    /// The bytes it holds of the event being read (its line and data so far).
    pub fn buffered(&self) -> usize {
        self.line.capacity() + self.data.capacity()
    }

    /// The last event id, for `Last-Event-ID` on reconnect.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Feeds a chunk; returns the events it completed. After an error every call fails.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, SseError> {
        if self.overflow {
            return Err(SseError::TooLarge(self.max));
        }
        let mut out = Vec::new();
        for &b in chunk {
            if self.last_cr {
                self.last_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.last_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(ev) = self.on_line(&line)? {
                        out.push(ev);
                    }
                }
                _ => {
                    if self.line.len() >= self.max.saturating_add(FIELD_SLACK) {
                        self.overflow = true;
                        return Err(SseError::TooLarge(self.max));
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(out)
    }

    fn on_line(&mut self, line: &[u8]) -> Result<Option<Event>, SseError> {
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return Ok(None);
            }
            self.has_data = false;
            return Ok(Some(Event {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
                id: self.last_id.clone(),
            }));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(value);
                if self.data.len() > self.max {
                    self.overflow = true;
                    return Err(SseError::TooLarge(self.max));
                }
            }
            "event" => self.event = value.to_owned(),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut SseParser, chunks: &[&[u8]]) -> Vec<Event> {
        chunks.iter().flat_map(|c| p.feed(c).unwrap()).collect()
    }

    #[test]
    fn parses_split_chunks_crlf_comments_and_multiline_data() {
        let mut p = SseParser::new(1024);
        let evs = all(
            &mut p,
            &[
                b": keepalive\r\nid: 7\r\nevent: mess",
                b"age\r\ndata: {\"a\":\r",
                b"\ndata: 1}\r\n\r\n",
                b"retry: 2500\n\ndata:x\n\n",
            ],
        );
        assert_eq!(
            evs,
            vec![
                Event {
                    event: "message".into(),
                    data: "{\"a\":\n1}".into(),
                    id: Some("7".into())
                },
                Event {
                    event: String::new(),
                    data: "x".into(),
                    id: Some("7".into())
                },
            ]
        );
        assert_eq!(p.retry_ms, Some(2500));
        assert_eq!(p.last_event_id(), Some("7"));
    }

    #[test]
    fn an_unfinished_event_is_not_dispatched_and_big_ones_fail() {
        let mut p = SseParser::new(1024);
        assert!(all(
            &mut p,
            &[b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"]
        )
        .is_empty());
        let mut p = SseParser::new(8);
        assert_eq!(p.feed(b"data: 0123456789\n"), Err(SseError::TooLarge(8)));
    }
}
