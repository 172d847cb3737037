//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`), pure: the results of
//! `skills/list` and `skills/get`, a skill's entry checked whole before anything of it is read,
//! and the checks every read of one of its files passes (in the manifest, size, `sha256:`
//! digest; for `SKILL.md` also its frontmatter against the entry's).
//!
//! A server's entry is hostile input: every string is bounded, every URI stays inside its
//! skill's directory, and a skill over the spec's limits (512 files, 16 MiB) is refused from
//! its entry alone, before any read.

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::types::{Page, ResourceContents};

/// The extension's identifier, in `capabilities.extensions` of either side.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The file that names a skill: its entry's `uri` ends with `/SKILL.md`.
pub const SKILL_MD: &str = "SKILL.md";
/// The most files one skill may list (the spec's limit, which every host must accept).
pub const MAX_FILES: usize = 512;
/// The most bytes one skill's files may add up to (the spec's limit: 16 MiB).
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest URI kept from an entry.
pub const MAX_URI_CHARS: usize = 2048;
/// The longest skill name (the Agent Skills specification's).
pub const MAX_NAME_CHARS: usize = 64;
/// The longest description (the Agent Skills specification's).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The longest a listing is kept on the server's word (`ttlMs`): an hour.
pub const MAX_TTL_MS: u64 = 3_600_000;

/// `skills/list` result: one page of raw entries (each checked on its own by
/// [`SkillEntry::parse`], so one bad entry does not hide the others).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// This page's entries, unchecked.
    #[serde(default)]
    pub skills: Vec<Value>,
    /// The next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// How long the listing may be kept (0: stale at once).
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// `private` or `public`: both fine for one user's client.
    #[serde(default)]
    pub cache_scope: Option<String>,
    /// Stateless era: `complete` (or absent).
    #[serde(default)]
    pub result_type: Option<String>,
}

impl Page for ListSkillsResult {
    type Item = Value;

    fn into_parts(self) -> (Vec<Value>, Option<String>) {
        (self.skills, self.next_cursor)
    }

    fn result_type(&self) -> Option<&str> {
        self.result_type.as_deref()
    }

    fn ttl_ms(&self) -> Option<u64> {
        self.ttl_ms
    }
}

/// `skills/get` result: one raw entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The entry, unchecked.
    pub skill: Value,
    /// Stateless era: `complete` (or absent).
    #[serde(default)]
    pub result_type: Option<String>,
}

/// One file of a skill as its entry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// Its path under the skill's root (`SKILL.md`, `references/FORMS.md`).
    pub path: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// One skill's entry, checked: what a host may list, approve and load.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md`: with the server, the skill's identity.
    pub uri: String,
    /// `frontmatter.name`, the last segment of its path.
    pub name: String,
    /// `frontmatter.description`.
    pub description: String,
    /// The whole frontmatter as the server sent it.
    pub frontmatter: Map<String, Value>,
    /// Every file, `SKILL.md` first; `None` for `"resources": "dynamic"`.
    pub files: Option<Vec<SkillFile>>,
}

/// A server's listing, checked: the valid entries, and each refused one with its reason.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillListing {
    /// The entries that passed [`SkillEntry::parse`], in the server's order.
    pub skills: Vec<SkillEntry>,
    /// Each refused entry: its `uri` (or `#N`) and why.
    pub invalid: Vec<(String, String)>,
}

impl SkillListing {
    /// Checks every raw entry on its own.
    pub fn from_raw(raw: &[Value]) -> Self {
        let mut out = Self::default();
        for (i, v) in raw.iter().enumerate() {
            match SkillEntry::parse(v) {
                Ok(e) => out.skills.push(e),
                Err(why) => {
                    let uri = v
                        .get("uri")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("#{}", i + 1), |u| shown(u, 200));
                    out.invalid.push((uri, why));
                }
            }
        }
        out
    }

    /// The entries a user's `SKILL` names: its `SKILL.md` URI, else its name (several
    /// skills may share a name: all of them).
    pub fn find(&self, skill: &str) -> Vec<&SkillEntry> {
        let by_uri: Vec<&SkillEntry> = self.skills.iter().filter(|e| e.uri == skill).collect();
        if !by_uri.is_empty() {
            return by_uri;
        }
        self.skills.iter().filter(|e| e.name == skill).collect()
    }
}

/// Whether a name follows the Agent Skills rules: 1 to 64 of `a-z`, `0-9` and `-`, no `-` at
/// either end, no `--`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// `s` cut to `max` characters for an error message.
fn shown(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

/// `rel` is a relative path of plain segments (no empty, `.` or `..` segment, no `\`).
fn plain_path(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains('\\')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

impl SkillEntry {
    /// Checks one raw entry whole: its URI, name and description, and (an array) every file:
    /// inside the skill's directory, listed once, with a valid digest and size, `SKILL.md`
    /// among them, within [`MAX_FILES`] and [`MAX_TOTAL_BYTES`].
    pub fn parse(v: &Value) -> Result<Self, String> {
        let uri = v
            .get("uri")
            .and_then(Value::as_str)
            .ok_or("the entry has no string \"uri\"")?;
        if uri.chars().count() > MAX_URI_CHARS {
            return Err(format!("its uri is longer than {MAX_URI_CHARS} characters"));
        }
        let root = uri
            .strip_suffix(&format!("/{SKILL_MD}"))
            .ok_or_else(|| format!("its uri {:?} does not end with /{SKILL_MD}", shown(uri, 80)))?;
        let Some((_, path)) = root.split_once("://") else {
            return Err(format!("its uri {:?} has no scheme", shown(uri, 80)));
        };
        if !plain_path(path) {
            return Err(format!(
                "its uri {:?} has an empty, \".\" or \"..\" segment",
                shown(uri, 80)
            ));
        }
        let frontmatter = v
            .get("frontmatter")
            .and_then(Value::as_object)
            .ok_or("the entry has no \"frontmatter\" object")?
            .clone();
        let name = frontmatter
            .get("name")
            .and_then(Value::as_str)
            .ok_or("its frontmatter has no string \"name\"")?;
        if !valid_name(name) {
            return Err(format!(
                "its name {:?} is not a skill name (1 to {MAX_NAME_CHARS} of a-z, 0-9 and -)",
                shown(name, 80)
            ));
        }
        let last = path.rsplit('/').next().unwrap_or(path);
        if last != name {
            return Err(format!(
                "its name {name:?} is not the last segment of its uri {:?}",
                shown(uri, 80)
            ));
        }
        let description = frontmatter
            .get("description")
            .and_then(Value::as_str)
            .ok_or("its frontmatter has no string \"description\"")?;
        if description.trim().is_empty() || description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(format!(
                "its description is empty or longer than {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        let files = match v.get("resources") {
            Some(Value::String(s)) if s == "dynamic" => None,
            Some(Value::Array(list)) => Some(Self::files(uri, root, list)?),
            _ => {
                return Err(
                    "its \"resources\" is neither a list of files nor \"dynamic\"".to_owned(),
                )
            }
        };
        Ok(Self {
            uri: uri.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            files,
            frontmatter,
        })
    }

    /// The manifest of an entry whose `SKILL.md` is `uri` under `root`.
    fn files(uri: &str, root: &str, list: &[Value]) -> Result<Vec<SkillFile>, String> {
        if list.len() > MAX_FILES {
            return Err(format!(
                "it lists {} files, more than the {MAX_FILES} a skill may have",
                list.len()
            ));
        }
        let mut files: Vec<SkillFile> = Vec::with_capacity(list.len());
        let mut seen = std::collections::HashSet::new();
        let mut total: u64 = 0;
        for (i, f) in list.iter().enumerate() {
            let furi = f
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("its file #{} has no string \"uri\"", i + 1))?;
            let path = furi
                .strip_prefix(root)
                .and_then(|p| p.strip_prefix('/'))
                .filter(|p| plain_path(p))
                .ok_or_else(|| {
                    format!(
                        "its file {:?} is outside the skill's directory {:?}",
                        shown(furi, 80),
                        shown(root, 80)
                    )
                })?;
            if !seen.insert(furi) {
                return Err(format!("it lists the file {:?} twice", shown(furi, 80)));
            }
            let digest = f
                .get("digest")
                .and_then(Value::as_str)
                .filter(|d| valid_digest(d))
                .ok_or_else(|| {
                    format!(
                        "its file {:?} has no digest of the form sha256:<64 lowercase hex digits>",
                        shown(furi, 80)
                    )
                })?;
            let size = f.get("size").and_then(Value::as_u64).ok_or_else(|| {
                format!(
                    "its file {:?} has no size (a whole number of bytes)",
                    shown(furi, 80)
                )
            })?;
            total = total.saturating_add(size);
            files.push(SkillFile {
                uri: furi.to_owned(),
                path: path.to_owned(),
                digest: digest.to_owned(),
                size,
            });
        }
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "its files add up to {total} bytes, more than the {MAX_TOTAL_BYTES} (16 MiB) a skill may have"
            ));
        }
        let Some(at) = files.iter().position(|f| f.uri == uri) else {
            return Err(format!("its files do not list its own {SKILL_MD}"));
        };
        files.swap(0, at);
        Ok(files)
    }

    /// The skill's root directory: its `SKILL.md` URI without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri
            .strip_suffix(SKILL_MD)
            .and_then(|r| r.strip_suffix('/'))
            .unwrap_or(&self.uri)
    }

    /// The total of its files' sizes (0 for a dynamic skill).
    pub fn total_bytes(&self) -> u64 {
        self.files
            .iter()
            .flatten()
            .fold(0u64, |t, f| t.saturating_add(f.size))
    }

    /// The file of the manifest at `path` under the skill's root (`references/FORMS.md`, or
    /// its full URI): a path that leaves the skill or that the manifest does not list is
    /// refused, as the spec says, like a digest mismatch.
    pub fn file(&self, path: &str) -> Result<&SkillFile, String> {
        let files = self.files.as_deref().ok_or_else(|| {
            "its files are \"dynamic\": they cannot be verified, so none is read".to_owned()
        })?;
        let rel = path
            .strip_prefix(self.root())
            .and_then(|p| p.strip_prefix('/'))
            .unwrap_or(path);
        let rel = rel.strip_prefix("./").unwrap_or(rel);
        if !plain_path(rel) {
            return Err(format!(
                "{:?} is not a path inside the skill (no \"..\", no absolute path)",
                shown(path, 80)
            ));
        }
        files.iter().find(|f| f.path == rel).ok_or_else(|| {
            format!(
                "{:?} is not among the skill's {} listed files; refresh the skill if it changed",
                shown(rel, 80),
                files.len()
            )
        })
    }

    /// `allowed-tools` of its frontmatter, if any: a grant the user must approve; ignored
    /// otherwise.
    pub fn allowed_tools(&self) -> Option<&Value> {
        self.frontmatter.get("allowed-tools")
    }
}

/// `sha256:` and 64 lowercase hex digits.
pub fn valid_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in sum {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The raw bytes of `file` in a `resources/read` result: the one part with its URI (or the
/// only part), text as UTF-8, a blob decoded; a part far larger than the entry's size is
/// refused before it is decoded.
pub fn bytes_of(file: &SkillFile, contents: &[ResourceContents]) -> Result<Vec<u8>, String> {
    let mut parts = contents.iter().filter(|c| c.uri == file.uri);
    let part = match (parts.next(), parts.next()) {
        (Some(p), None) => p,
        (Some(_), Some(_)) => {
            return Err(format!(
                "the server sent {} twice in one read",
                shown(&file.uri, 80)
            ))
        }
        (None, _) if contents.len() == 1 => &contents[0],
        (None, _) => {
            return Err(format!(
                "the server's read has no contents for {}",
                shown(&file.uri, 80)
            ))
        }
    };
    match (&part.text, &part.blob) {
        (Some(t), _) => Ok(t.as_bytes().to_vec()),
        (None, Some(b)) => {
            let b = b.trim();
            // Base64 is 4 characters per 3 bytes: anything longer cannot match the size.
            let most = file.size.saturating_add(2) / 3 * 4 + 4;
            if b.len() as u64 > most {
                return Err(size_mismatch(file, b.len() as u64 / 4 * 3));
            }
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("the blob of {} is not base64: {e}", shown(&file.uri, 80)))
        }
        (None, None) => Err(format!(
            "the server's read of {} has neither text nor blob",
            shown(&file.uri, 80)
        )),
    }
}

fn size_mismatch(file: &SkillFile, got: u64) -> String {
    format!(
        "size mismatch: {} is {got} bytes, its entry says {}",
        shown(&file.uri, 80),
        file.size
    )
}

/// Verifies a file's bytes against its entry: its size first, then its digest.
pub fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != file.size {
        return Err(size_mismatch(file, bytes.len() as u64));
    }
    let got = digest_of(bytes);
    if got != file.digest {
        return Err(format!(
            "digest mismatch: {} hashes to {got}, its entry says {}",
            shown(&file.uri, 80),
            file.digest
        ));
    }
    Ok(())
}

/// The YAML frontmatter of a `SKILL.md` (between a first `---` line and the next), as JSON.
pub fn frontmatter_of(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not begin with a --- frontmatter line")?;
    let mut yaml_end = None;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            yaml_end = Some(at);
            break;
        }
        at += line.len();
    }
    let yaml = &rest[..yaml_end.ok_or("its frontmatter has no closing --- line")?];
    let v: Value =
        serde_norway::from_str(yaml).map_err(|e| format!("its frontmatter is not YAML: {e}"))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err("its frontmatter is not a YAML mapping".to_owned()),
    }
}

/// Compares a `SKILL.md`'s parsed frontmatter with the entry's, field by field: the first
/// field that differs, missing on either side included, is the error.
pub fn check_frontmatter(
    entry: &Map<String, Value>,
    file: &Map<String, Value>,
) -> Result<(), String> {
    let mut keys: Vec<&String> = entry.keys().chain(file.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (a, b) = (entry.get(k), file.get(k));
        if !same(a, b) {
            let what = match (a, b) {
                (Some(_), None) => "is in the entry but not in the SKILL.md",
                (None, Some(_)) => "is in the SKILL.md but not in the entry",
                _ => "differs between the SKILL.md and its entry",
            };
            return Err(format!(
                "frontmatter mismatch: the field {:?} {what}",
                shown(k, 80)
            ));
        }
    }
    Ok(())
}

/// JSON equality where numbers compare by value (YAML's `1.0` and JSON's `1.0`, `1` and `1`).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(Some(p), Some(q)))
        }
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.len() == y.len() && x.iter().all(|(k, v)| same(Some(v), y.get(k)))
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BODY: &str = "---\nname: pdf-processing\ndescription: Extract PDFs\n---\n\nBody.\n";

    fn entry(files: Value) -> Value {
        json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract PDFs"},
            "resources": files,
        })
    }

    fn md() -> Value {
        json!({"uri": "skill://pdf-processing/SKILL.md", "digest": digest_of(BODY.as_bytes()), "size": BODY.len()})
    }

    #[test]
    fn a_good_entry_parses_with_skill_md_first() {
        let forms = json!({"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest_of(b"x"), "size": 1});
        let e = SkillEntry::parse(&entry(json!([forms, md()]))).unwrap();
        assert_eq!(e.name, "pdf-processing");
        assert_eq!(e.root(), "skill://pdf-processing");
        let files = e.files.as_ref().unwrap();
        assert_eq!(files[0].path, "SKILL.md");
        assert_eq!(e.file("references/FORMS.md").unwrap().size, 1);
        assert!(e
            .file("references/OTHER.md")
            .unwrap_err()
            .contains("not among"));
        assert!(e
            .file("../x/SKILL.md")
            .unwrap_err()
            .contains("not a path inside"));
        let d = SkillEntry::parse(&entry(json!("dynamic"))).unwrap();
        assert!(d.files.is_none() && d.file("SKILL.md").is_err());
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        let bad = |files: Value| SkillEntry::parse(&entry(files)).unwrap_err();
        assert!(bad(json!([])).contains("do not list its own SKILL.md"));
        assert!(bad(json!(null)).contains("neither"));
        let outside = json!({"uri": "skill://other/SKILL.md", "digest": digest_of(b""), "size": 0});
        assert!(bad(json!([md(), outside])).contains("outside the skill's directory"));
        let dots =
            json!({"uri": "skill://pdf-processing/../x", "digest": digest_of(b""), "size": 0});
        assert!(bad(json!([md(), dots])).contains("outside"));
        assert!(bad(json!([md(), md()])).contains("twice"));
        let upper =
            json!({"uri": "skill://pdf-processing/SKILL.md", "digest": "sha256:ABC", "size": 1});
        assert!(bad(json!([upper])).contains("digest"));
        let many: Vec<Value> = (0..=MAX_FILES)
            .map(|i| json!({"uri": format!("skill://pdf-processing/f{i}"), "digest": digest_of(b""), "size": 0}))
            .collect();
        assert!(bad(Value::Array(many)).contains("more than the 512"));
        let big = json!({"uri": "skill://pdf-processing/big", "digest": digest_of(b""), "size": MAX_TOTAL_BYTES});
        assert!(bad(json!([md(), big])).contains("16 MiB"));
        let mut wrong = entry(json!([md()]));
        wrong["uri"] = json!("skill://other-name/SKILL.md");
        assert!(SkillEntry::parse(&wrong)
            .unwrap_err()
            .contains("last segment"));
        wrong["frontmatter"]["name"] = json!("Evil Name\u{1b}[2J");
        assert!(SkillEntry::parse(&wrong)
            .unwrap_err()
            .contains("not a skill name"));
    }

    #[test]
    fn the_limits_themselves_are_accepted() {
        let mut files = vec![md()];
        let each = (MAX_TOTAL_BYTES - BODY.len() as u64) / (MAX_FILES as u64 - 1);
        for i in 1..MAX_FILES {
            files.push(json!({"uri": format!("skill://pdf-processing/f{i}"), "digest": digest_of(b""), "size": each}));
        }
        let e = SkillEntry::parse(&entry(Value::Array(files))).unwrap();
        assert_eq!(e.files.unwrap().len(), MAX_FILES);
    }

    #[test]
    fn reads_are_verified_by_size_digest_and_frontmatter() {
        let e = SkillEntry::parse(&entry(json!([md()]))).unwrap();
        let f = &e.files.as_ref().unwrap()[0];
        verify(f, BODY.as_bytes()).unwrap();
        assert!(verify(f, format!("{BODY}x").as_bytes())
            .unwrap_err()
            .contains("size mismatch"));
        let evil = BODY.replace("Body.", "Evil.");
        assert!(verify(f, evil.as_bytes())
            .unwrap_err()
            .contains("digest mismatch"));
        let fm = frontmatter_of(BODY).unwrap();
        check_frontmatter(&e.frontmatter, &fm).unwrap();
        let other = frontmatter_of(&BODY.replace("Extract PDFs", "Exfiltrate")).unwrap();
        assert!(check_frontmatter(&e.frontmatter, &other)
            .unwrap_err()
            .contains("\"description\""));
        assert!(frontmatter_of("no frontmatter").is_err());
        assert!(frontmatter_of("---\nname: x\n")
            .unwrap_err()
            .contains("closing"));
        let nested =
            frontmatter_of("---\nname: a\nmetadata:\n  version: \"2.1\"\n  n: 1.5\n---\n").unwrap();
        let mut m = Map::new();
        m.insert("name".into(), json!("a"));
        m.insert("metadata".into(), json!({"version": "2.1", "n": 1.5}));
        check_frontmatter(&m, &nested).unwrap();
    }

    #[test]
    fn a_blob_longer_than_its_size_is_refused_before_decoding() {
        let f = SkillFile {
            uri: "skill://a/SKILL.md".into(),
            path: "SKILL.md".into(),
            digest: digest_of(b"abc"),
            size: 3,
        };
        let part = |blob: &str| ResourceContents {
            uri: f.uri.clone(),
            mime_type: None,
            text: None,
            blob: Some(blob.into()),
        };
        assert_eq!(bytes_of(&f, &[part("YWJj")]).unwrap(), b"abc");
        assert!(bytes_of(&f, &[part(&"A".repeat(4000))])
            .unwrap_err()
            .contains("size mismatch"));
        assert!(bytes_of(&f, &[part("YWJj"), part("YWJj")])
            .unwrap_err()
            .contains("twice"));
    }
}
