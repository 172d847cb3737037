//! `harness9 trace stats FILE`: the per-method table of a `--trace` file
//! ([`crate::app::diagnostics::trace_stats`]); `harness9 trace replay FILE`: the file's server side served
//! over stdio ([`crate::app::diagnostics::trace_replay`]). The file is read a bounded line at a time.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::app::diagnostics::trace_replay::Loader;
use crate::app::diagnostics::trace_stats::{render, StatsBuilder, MAX_LINE_BYTES};

/// The longest line `trace replay` reads from its client; a longer one gets an error reply.
pub const MAX_INCOMING_BYTES: usize = 16 * 1024 * 1024;

/// Calls `f` with each line of the trace at `path` (`None` for one over [`MAX_LINE_BYTES`] or
/// not UTF-8), its end of line removed.
fn each_line(path: &Path, mut f: impl FnMut(Option<&str>)) -> anyhow::Result<()> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the trace file {}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        let n = read_bounded_line(&mut reader, &mut line, MAX_LINE_BYTES)
            .with_context(|| format!("cannot read the trace file {}", path.display()))?;
        match n {
            Line::End => return Ok(()),
            Line::TooLong => f(None),
            Line::Read => f(std::str::from_utf8(&line).ok().map(str::trim_end)),
        }
    }
}

enum Line {
    Read,
    TooLong,
    End,
}

/// Reads one line into `line` (its end of line removed), at most `max` bytes held; an
/// over-long line is read to its end and dropped.
fn read_bounded_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    Ok(
        match harness9_base::read::read_line_capped(reader, max, line)? {
            None => Line::End,
            Some(len) if len > max => {
                line.clear();
                Line::TooLong
            }
            Some(_) => Line::Read,
        },
    )
}

/// Prints the stats of the trace at `path` (text, or JSON with `json`).
pub fn stats(path: &Path, server: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let mut builder = StatsBuilder::new(server);
    each_line(path, |l| builder.push(l))?;
    let stats = builder.finish();
    if stats.records == 0 {
        if let Some(line) = stats.first_skipped_line {
            anyhow::bail!(
                "{}:{line}: not a trace record (`--trace FILE` writes one JSON object a line, each with \"dir\" and \"server\"); give `trace stats` the file --trace wrote",
                crate::sanitize::clean_line(&path.display().to_string())
            );
        }
    }
    if json {
        println!("{}", crate::sanitize::to_json(&stats, true)?);
    } else {
        print!("{}", crate::sanitize::clean_text(&render(&stats)));
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves the recordings of `server` (or of the only server) in the trace at `path` as a stdio
/// MCP server: a JSON-RPC message a line on stdin, the answers a line each on stdout, until
/// stdin ends. What it serves, and each request it has no recording for, go to stderr.
pub fn replay(path: &Path, server: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut loader = Loader::new(server);
    each_line(path, |l| loader.push(l))?;
    let mut replayer = loader
        .finish()
        .map_err(|e| anyhow::anyhow!("trace file {}: {e}", path.display()))?;
    let note = serving_note(replayer.stats(), replayer.server(), path);
    eprintln_clean(&note);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut line = Vec::new();
    loop {
        let answer = match read_bounded_line(&mut input, &mut line, MAX_INCOMING_BYTES)
            .context("cannot read stdin")?
        {
            Line::End => return Ok(ExitCode::SUCCESS),
            Line::TooLong => {
                let text = format!("a message over {MAX_INCOMING_BYTES} bytes was not read");
                eprintln_clean(&format!("trace replay: {text}"));
                crate::app::diagnostics::trace_replay::Answer {
                    messages: vec![serde_json::json!({
                        "jsonrpc": "2.0", "id": null,
                        "error": {"code": -32600, "message": text}
                    })],
                    miss: None,
                }
            }
            Line::Read => {
                let text = String::from_utf8_lossy(&line);
                if text.trim().is_empty() {
                    continue;
                }
                replayer.answer_line(text.trim_end())
            }
        };
        if let Some(miss) = &answer.miss {
            eprintln_clean(&format!("trace replay: {miss}"));
        }
        let mut out = stdout.lock();
        for m in &answer.messages {
            let written = serde_json::to_writer(&mut out, m)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            // The client is gone: nothing left to answer.
            if written.is_err() {
                return Ok(ExitCode::SUCCESS);
            }
        }
        if out.flush().is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}

/// What `trace replay` serves: the recordings of `server` from `path`, and what it holds
/// back (unanswered, over its bounds, the server's own requests, lines that were no records).
fn serving_note(
    s: &crate::app::diagnostics::trace_replay::LoadStats,
    server: &str,
    path: &Path,
) -> String {
    let mut note = format!(
        "trace replay: {} recorded requests of server {:?} from {}",
        s.recordings,
        server,
        path.display()
    );
    if s.unanswered > 0 {
        note.push_str(&format!(
            "; {} never answered in the trace (held open unless answered elsewhere)",
            s.unanswered
        ));
    }
    if s.dropped > 0 {
        note.push_str(&format!(
            "; {} more not held (over {} recordings or {} MiB)",
            s.dropped,
            crate::app::diagnostics::trace_replay::MAX_RECORDINGS,
            crate::app::diagnostics::trace_replay::MAX_HELD_BYTES / (1024 * 1024)
        ));
    }
    if s.server_requests > 0 {
        note.push_str(&format!(
            "; {} requests the server sent (sampling, elicitation, roots) are not replayed",
            s.server_requests
        ));
    }
    if let Some(line) = s.first_skipped_line {
        note.push_str(&format!(
            "; {} lines were not trace records (the first at line {line})",
            s.skipped
        ));
    }
    note
}

/// One line to stderr, without escape sequences or control characters (a trace's text is the
/// server's).
fn eprintln_clean(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", crate::sanitize::clean_line(s));
}
