//! The file built-ins: `read_file` (text only, line windows), `write_file`, `list_dir`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::{io_failure, plain_io, resolve, BINARY_SNIFF, LIST_MAX_ENTRIES, READ_MAX_LINE_CHARS};

use harness9_base::read::read_line_capped;

/// A text file being read: its sniffed first bytes, then the rest.
pub(super) type TextReader = BufReader<io::Chain<io::Cursor<Vec<u8>>, File>>;

/// Opens `path` for reading text: `None` for a file with a NUL byte in its first 8 KiB, an
/// `IsADirectory` error for a directory.
pub(super) fn open_text(path: &Path) -> io::Result<Option<TextReader>> {
    // `path` is resolved ([`resolve`]): a symlink put in its place since is refused, not
    // followed.
    let mut file =
        harness9_platform::fs::nofollow(std::fs::OpenOptions::new().read(true)).open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::from(io::ErrorKind::IsADirectory));
    }
    let mut first = Vec::with_capacity(BINARY_SNIFF);
    (&mut file)
        .take(BINARY_SNIFF as u64)
        .read_to_end(&mut first)?;
    if first.contains(&0) {
        return Ok(None);
    }
    Ok(Some(BufReader::with_capacity(
        64 * 1024,
        Read::chain(io::Cursor::new(first), file),
    )))
}

pub(super) fn read_file(
    root: &Path,
    seen: &super::edit::Seen,
    path: &str,
    offset: u64,
    limit: u64,
) -> Result<String, String> {
    let full = resolve("read_file", root, path)?;
    let mut reader = match open_text(&full) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(format!(
                "tool \"read_file\": {path} is a binary file (it has NUL bytes); read_file shows text only"
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(format!(
                "tool \"read_file\": {path} is a directory; use list_dir to see its entries"
            ))
        }
        Err(e) => return Err(io_failure("read_file", "read", "file", path, &e)),
    };
    // What the model sees is the file as opened (a change while it is read makes a later
    // edit refused, never the other way round).
    if let Ok(meta) = reader.get_ref().get_ref().1.metadata() {
        seen.read(&full, &meta);
    }
    let read_err = |e: io::Error| io_failure("read_file", "read", "file", path, &e);
    // A character is at most 4 bytes: keeping this many bytes always covers the shown part.
    let keep = READ_MAX_LINE_CHARS * 4;
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut out = String::new();
    let last = offset.saturating_add(limit - 1);
    while number < last {
        let keep_now = if number + 1 >= offset { keep } else { 0 };
        let Some(len) = read_line_capped(&mut reader, keep_now, &mut line).map_err(read_err)?
        else {
            break;
        };
        number += 1;
        if number < offset {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let _ = write!(out, "{number:>6}\t");
        match text.char_indices().nth(READ_MAX_LINE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&text[..cut]);
                let _ = write!(out, " [... line cut; it is {len} bytes long]");
            }
            None => out.push_str(&text),
        }
        out.push('\n');
    }
    if number == 0 {
        return Ok(format!("({path} is empty)"));
    }
    if number < offset {
        return Err(format!(
            "tool \"read_file\": {path} has only {number} lines; offset {offset} is past its end"
        ));
    }
    let more = read_line_capped(&mut reader, 0, &mut line).map_err(read_err)?;
    if more.is_some() {
        let _ = write!(
            out,
            "({path} goes on after line {number}; pass offset {} to read more)",
            number + 1
        );
    }
    Ok(out)
}

pub(super) fn write_file(
    root: &Path,
    seen: &super::edit::Seen,
    path: &str,
    content: &str,
) -> Result<String, String> {
    let full = resolve("write_file", root, path)?;
    if let Some(e) = super::edit::git_refusal("write_file", root, path, &full) {
        return Err(e);
    }
    seen.unchanged("write_file", path, &full)?;
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            format!(
                "tool \"write_file\": unable to create the directory {}: {}",
                parent.display(),
                plain_io(&e)
            )
        })?;
    }
    // Replaced atomically through a new temp file: a symlink at the path is replaced, never
    // written through.
    harness9_base::private_fs::write_atomic(&full, content).map_err(|e| {
        format!(
            "tool \"write_file\": unable to write {path}: {}",
            plain_io(&e)
        )
    })?;
    seen.wrote(&full, content.as_bytes());
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

pub(super) fn list_dir(
    root: &Path,
    path: &str,
    policy: Option<&crate::permissions::Policy>,
) -> Result<String, String> {
    let full = resolve("list_dir", root, path)?;
    let entries = match std::fs::read_dir(&full) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(format!(
                "tool \"list_dir\": {path} is a file, not a directory; use read_file to read it"
            ))
        }
        Err(e) => return Err(io_failure("list_dir", "list", "directory", path, &e)),
    };
    let mut names = Vec::new();
    let mut denied = 0usize;
    for entry in entries {
        let entry = entry.map_err(|e| io_failure("list_dir", "list", "directory", path, &e))?;
        if policy.is_some_and(|p| p.refuses_file("list_dir", &entry.path())) {
            denied += 1;
            continue;
        }
        let mut name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_symlink() => entry.path().is_dir(),
            Ok(t) => t.is_dir(),
            Err(_) => false,
        };
        if is_dir {
            name.push('/');
        }
        names.push(name);
    }
    let hidden = match denied {
        0 => String::new(),
        n => format!("({n} entries left out: a deny rule of the user's refuses them)\n"),
    };
    if names.is_empty() {
        return Ok(format!("{hidden}({path} is empty)"));
    }
    names.sort_unstable();
    let total = names.len();
    let mut out = names
        .iter()
        .take(LIST_MAX_ENTRIES)
        .fold(String::new(), |mut out, n| {
            out.push_str(n);
            out.push('\n');
            out
        });
    if total > LIST_MAX_ENTRIES {
        let _ = write!(
            out,
            "(and {} more entries; {total} in all: list a subdirectory or use grep or bash to narrow down)",
            total - LIST_MAX_ENTRIES
        );
    }
    out.push_str(&hidden);
    Ok(out)
}
