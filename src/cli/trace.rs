//! `harness9 trace stats FILE`: the per-method table of a `--trace` file
//! ([`crate::app::trace_stats`]). Reads the file a line at a time, each line bounded.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::ExitCode;

use crate::app::trace_stats::{render, StatsBuilder, MAX_LINE_BYTES};

/// Prints the stats of the trace at `path` (text, or JSON with `json`).
pub fn stats(path: &Path, server: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the trace file {}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut builder = StatsBuilder::new(server);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let n = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read the trace file {}", path.display()))?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            // Over-long: skip to its end, counted as not a record.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let m = (&mut reader)
                    .take(limit)
                    .read_until(b'\n', &mut rest)
                    .with_context(|| format!("cannot read the trace file {}", path.display()))?;
                if m == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
            }
            builder.push(None);
            continue;
        }
        builder.push(std::str::from_utf8(&line).ok().map(str::trim_end));
    }
    let stats = builder.finish();
    if json {
        println!("{}", crate::sanitize::to_json(&stats, true)?);
    } else {
        print!("{}", crate::sanitize::clean_text(&render(&stats)));
    }
    Ok(ExitCode::SUCCESS)
}
