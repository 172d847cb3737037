//! Bounded reads of regular files: a file a repository names (a config, an env file, a
//! settings file) is read only when it is a regular file of a bounded size.

use std::path::Path;

/// The largest text file of settings or config read (a repository's file is not trusted to be
/// small): 4 MiB.
pub const MAX_TEXT_BYTES: u64 = 4 << 20;

/// Reads `path` as UTF-8 text when it is a regular file of at most `limit` bytes. A FIFO (which
/// would block the open), a device such as `/dev/zero` (endless) or a huge file that a
/// repository names or links to is an error, never a hang or a full memory.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read as _};
    let file =
        harness9_platform::fs::nonblocking(std::fs::OpenOptions::new().read(true)).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, FIFO or directory); point it at a file",
        ));
    }
    let too_big = || {
        Error::new(
            ErrorKind::InvalidData,
            format!("larger than {limit} bytes; harness9 reads no bigger file here"),
        )
    };
    if meta.len() > limit {
        return Err(too_big());
    }
    let mut text = String::new();
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(text)
}

/// Reads one line (without its `\n` or `\r\n`) keeping at most `keep` bytes of it in `line`;
/// returns the line's full length, or `None` at the end of the input.
pub fn read_line_capped(
    r: &mut impl std::io::BufRead,
    keep: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<usize>> {
    line.clear();
    let mut len = 0;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&part[..room.min(part.len())]);
        len += part.len();
        let used = done.unwrap_or(part.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if line.last() == Some(&b'\r') && line.len() == len {
        line.pop();
        len -= 1;
    }
    Ok(Some(len))
}
