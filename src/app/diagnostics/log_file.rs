//! The interactive session's log file, capped: past [`MAX_BYTES`] it is rotated to `<name>.1`
//! (one old file kept), so logging can never fill the disk; what it writes is cleaned of the
//! session's known secrets (`telemetry::redact_text`) and sanitized. The
//! file is private (0600, never opened through a symlink). It keeps tracing's full format
//! (time, level, module); what a user reads on a terminal is [`UserLines`].

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Bytes one log file holds before it is rotated (so at most twice this on disk).
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// An append-only file that rotates itself at a size.
pub struct CappedLog {
    path: PathBuf,
    file: File,
    written: u64,
    max: u64,
}

impl CappedLog {
    /// Opens (appends to) `path`, rotating at `max` bytes.
    pub fn open(path: &Path, max: u64) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                crate::private_fs::private_dir(dir)?;
            }
        }
        // 0600, never through a symlink.
        let file = crate::private_fs::open_append(path)?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Self {
            path: path.to_owned(),
            file,
            written,
            max: max.max(1),
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)?;
        self.file = crate::private_fs::open_append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for CappedLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max {
            // A file that cannot be rotated (moved away, permissions) stops taking logs rather
            // than growing without end.
            if self.rotate().is_err() {
                return Ok(buf.len());
            }
        }
        // Field values reach here raw (tracing escapes only messages): the file gets the
        // sanitizer's text, so `cat` on the log replays no escape sequence.
        let text = String::from_utf8_lossy(buf);
        let text = harness9_actors::telemetry::redact_text(&text);
        let clean = harness9_base::sanitize::clean_text(&text);
        self.file.write_all(clean.as_bytes())?;
        self.written += clean.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// How a log event reads on the user's terminal (headless stderr at the default level):
/// `harness9: warning: MESSAGE` (`error:`, `note:` for the other levels), the event's other
/// fields after it as `key=value`; no timestamp, no module path (a log file, or `-v` and
/// `RUST_LOG`, keep tracing's full format).
pub struct UserLines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for UserLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "note",
            _ => "debug",
        };
        write!(writer, "harness9: {level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warning reads as `harness9: warning: ...`, its fields after the message; no time, no
    /// level column, no module path.
    #[test]
    fn a_warning_on_the_terminal_reads_as_a_harness9_line() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl Write for Buf {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let out = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || out.clone())
            .with_ansi(false)
            .event_format(UserLines)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "harness9_app::x", "/r/harness9.toml:2: shell is ignored");
            tracing::error!(server = "git", "it failed");
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "harness9: warning: /r/harness9.toml:2: shell is ignored\nharness9: error: it failed server=\"git\"\n"
        );
    }

    #[test]
    fn rotates_at_the_cap_and_keeps_one_old_file() {
        let dir = std::env::temp_dir().join(format!("h9-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("h.log");
        let mut log = CappedLog::open(&path, 1000).unwrap();
        let line = [b'x'; 99];
        for _ in 0..100 {
            log.write_all(&line).unwrap();
            log.write_all(b"\n").unwrap();
        }
        let now = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(dir.join("h.log.1")).unwrap().len();
        assert!(now <= 1000 && old <= 1000, "{now} {old}");
        assert!(now > 0 && old > 900, "{now} {old}");
        // Reopening continues the count from the file's size.
        drop(log);
        let log = CappedLog::open(&path, 1000).unwrap();
        assert_eq!(log.written, now);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The TUI's log (`HARNESS9_LOG`) is cleaned of the registered secrets, a control line
    /// passes as written.
    #[test]
    fn a_registered_secret_never_reaches_the_file() {
        let dir = std::env::temp_dir().join(format!("h9-log-secret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("h.log");
        harness9_actors::telemetry::redact_also(["Bearer logtok-31f8a2"]);
        let mut log = CappedLog::open(&path, 10_000).unwrap();
        log.write_all(b"server said: bad token logtok-31f8a2\n")
            .unwrap();
        log.write_all(b"an ordinary line\n").unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "server said: bad token [redacted]\nan ordinary line\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
