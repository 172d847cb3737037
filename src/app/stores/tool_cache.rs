//! The on-disk tool-list cache: one private JSON file per exact server spec under
//! `$XDG_STATE_HOME/harness9/tool-cache/` (`HARNESS9_TOOL_CACHE` names another directory; set
//! empty, no cache), holding the server's last live tool list with its era, server info,
//! instructions, capabilities, `ttlMs` and when it was written. The file's name is the spec's
//! key (a SHA-256 of everything that can change what the server lists: name, transport,
//! command, args, env, cwd, url, header names, sandbox, pinned protocol, and the capabilities
//! declared to it), so a changed spec is a new entry. A file is used only when it passes every
//! check: a regular file of ours opened without following a symlink, at most
//! [`MAX_ENTRY_BYTES`], serde_json's nesting limit, typed fields with no unknown one, this
//! spec's key and name, a known revision, at most `maxTools` tools, not written in the future,
//! younger than its `ttlMs` and [`DEFAULT_MAX_AGE`]; any other is ignored with a warning
//! naming it. Writes go through `private_fs` (0600, atomic replace, 0700 directory) on a
//! writer thread with a bounded queue (flushed at `Session::close`), and the directory is
//! pruned, oldest first, to [`MAX_TOTAL_BYTES`]. The key also holds the content hashes of the
//! files an approved server runs (`ServerSpec::pinned`). A headless run's end waits (at most
//! [`CACHE_AT_EXIT`], [`wait_to_cache`]) for a server still starting that has no entry, so a
//! server slower than the run is cached too; one that does not list in time gets a `.waited`
//! marker and is not waited for again while it is fresh.

use std::fs::OpenOptions;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness9_actors::protocol::types::{Implementation, ServerCapabilities, Tool};
use harness9_actors::protocol::version::{Era, ProtocolVersion};
use harness9_actors::server::server_requests::InputCaps;
use harness9_actors::tool_cache::{CachedList, ToolListCache};
use harness9_actors::{ServerSpec, TransportSpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The largest entry read or written: 4 MiB (the 16 servers of issue 23 list 193 KB in all).
pub const MAX_ENTRY_BYTES: u64 = 4 << 20;
/// The most the directory holds: 32 MiB; past it the oldest entries are removed.
pub const MAX_TOTAL_BYTES: u64 = 32 << 20;
/// How long an entry whose list gave no `ttlMs` stays fresh: 7 days (the live list replaces
/// it at every connection, so age only matters for a server that was not started since).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
/// The file format; another number is ignored (and rewritten by the next live list).
const FORMAT: u32 = 1;
/// Writes waiting for the writer thread; past it a write is dropped (the next one comes).
const WRITE_QUEUE: usize = 64;

/// One file, as written and as read (every field typed; an unknown one is an error).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileEntry {
    format: u32,
    key: String,
    server: String,
    written_ms: u64,
    #[serde(default)]
    ttl_ms: Option<u64>,
    protocol_version: String,
    stateless: bool,
    server_info: Implementation,
    #[serde(default)]
    instructions: Option<String>,
    capabilities: ServerCapabilities,
    tools: Vec<Tool>,
}

/// What the writer thread is asked to do.
enum Job {
    Write { path: PathBuf, body: Vec<u8> },
    Flush(std::sync::mpsc::Sender<()>),
}

/// The cache directory and its writer.
pub struct DiskCache {
    dir: PathBuf,
    /// What this session declares to servers: part of every key.
    caps: InputCaps,
    writer: Mutex<Option<SyncSender<Job>>>,
}

/// The cache directory: `HARNESS9_TOOL_CACHE`, else `tool-cache` in the state directory;
/// `None` when that variable is set empty (no cache).
pub fn dir() -> Option<PathBuf> {
    match std::env::var_os("HARNESS9_TOOL_CACHE") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => Some(crate::stores::state_dir().join("tool-cache")),
    }
}

/// The key of exactly this spec: what the server is asked to be (a changed spec is a new
/// entry), where it runs and what we declare to it (our capabilities for it, our name and
/// version). Header values and OAuth tokens are left out (credentials rotate; the list is the
/// server's); environment values are in (they can change what a server offers). `caps` is what
/// the session's front end can answer (`Session::start` gives its desk's to the cache).
pub fn key(spec: &ServerSpec, caps: InputCaps) -> String {
    let transport = match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => serde_json::json!({
            "stdio": {"command": command, "args": args, "env": env,
                      "cwd": cwd.as_ref().map(|c| c.display().to_string())}
        }),
        TransportSpec::Http { url, headers, sse } => serde_json::json!({
            "http": {"url": url, "sse": sse,
                     "headers": headers.iter().map(|(k, _)| k).collect::<Vec<_>>()}
        }),
        other => serde_json::json!({ "other": other.command_line() }),
    };
    let sandbox = spec.sandbox.as_ref().map(|s| {
        serde_json::json!({
            "project": s.project_dir.display().to_string(),
            "writable": s.writable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "network": s.network,
        })
    });
    let roots = match &spec.roots {
        harness9_actors::Roots::Paths(p) => {
            serde_json::json!(p
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>())
        }
        harness9_actors::Roots::Off => serde_json::json!(false),
        _ => serde_json::json!(true),
    };
    // A child without its own `cwd` runs (and is offered as its root) in ours: a server
    // configured once for every project (the user's file) lists per project.
    let here = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let info = harness9_actors::server::server_requests::client_info();
    // The content of the files an approved server runs (issue 32's pins): a server whose
    // script changed, and was approved again, is a new entry, never offered the old list.
    let pinned: Vec<(String, &str)> = spec
        .pinned
        .iter()
        .map(|p| (p.path.display().to_string(), p.content.as_str()))
        .collect();
    let whole = serde_json::json!({
        "format": FORMAT,
        "name": spec.name,
        "transport": transport,
        "here": here,
        "sandbox": sandbox,
        "protocol": spec.protocol.map(|p| p.as_str()),
        "roots": roots,
        // What we declare (roots, elicitation, sampling) can change what a server lists:
        // server-everything offers its sampling tool only to a client that declares sampling.
        "capabilities": harness9_actors::server::server_requests::client_capabilities(spec, caps),
        "client": [&info.name, &info.version],
        "pinned": pinned,
    });
    let digest = Sha256::digest(whole.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl DiskCache {
    /// The cache in `dir` (created 0700 on the first write), with its writer thread, for a
    /// session that declares `caps` to its servers.
    pub fn open(dir: PathBuf, caps: InputCaps) -> Arc<Self> {
        let (tx, rx) = sync_channel(WRITE_QUEUE);
        let at = dir.clone();
        let spawned = std::thread::Builder::new()
            .name("tool-cache".into())
            .spawn(move || writer(&at, rx));
        let writer = match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(target: "mcp", "the tool-list cache is not written: {e}");
                None
            }
        };
        Arc::new(Self {
            dir,
            caps,
            writer: Mutex::new(writer),
        })
    }

    /// The file of `spec`'s entry.
    pub fn path_of(&self, spec: &ServerSpec) -> PathBuf {
        self.dir.join(format!("{}.json", key(spec, self.caps)))
    }

    /// Waits (up to `bound`) until every write asked for so far is on disk.
    pub fn flush(&self, bound: Duration) {
        let tx = match self.writer.lock() {
            Ok(w) => w.clone(),
            Err(_) => None,
        };
        let Some(tx) = tx else {
            return;
        };
        let (done, wait) = std::sync::mpsc::channel();
        if tx.send(Job::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(bound);
        }
    }

    /// The marker of `spec`: a headless run's end waited [`CACHE_AT_EXIT`] for it in vain.
    fn marker_of(&self, spec: &ServerSpec) -> PathBuf {
        self.dir.join(format!("{}.waited", key(spec, self.caps)))
    }

    /// Whether a run's end already waited for `spec` in vain within [`DEFAULT_MAX_AGE`] (a
    /// server that never lists is not waited for at every exit).
    pub fn waited_in_vain(&self, spec: &ServerSpec) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(self.marker_of(spec)) else {
            return false;
        };
        let age = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok());
        meta.is_file() && age.is_some_and(|a| a < DEFAULT_MAX_AGE)
    }

    /// Remembers that a run's end waited for `spec` in vain.
    fn mark_waited(&self, spec: &ServerSpec) {
        let path = self.marker_of(spec);
        if let Some(tx) = self.writer.lock().ok().and_then(|w| w.clone()) {
            let _ = tx.try_send(Job::Write {
                path,
                body: Vec::new(),
            });
        }
    }

    /// The entry of `spec` as it is on disk, fresh or not (for `mcp list`): `Ok(None)` when
    /// there is none, `Err` with why a file there is not used.
    pub fn read(&self, spec: &ServerSpec) -> Result<Option<CachedList>, String> {
        let path = self.path_of(spec);
        let bytes = match read_bounded(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        parse(&bytes, spec, &key(spec, self.caps)).map(Some)
    }
}

/// How long the end of a headless run waits for servers still starting that have no cached
/// list, so that their lists are cached and the next run offers their tools at once: 5 s
/// after the answer is printed. Paid once per server spec (later runs offer the cache and do
/// not wait), and a server that does not list in it is marked ([`DiskCache::waited_in_vain`])
/// and not waited for again while the mark is fresh.
pub const CACHE_AT_EXIT: Duration = Duration::from_secs(5);

/// At the end of a headless run: waits, at most `bound`, for every server of `specs` that is
/// still starting with no cached list (its status `Starting`: a cached one is `Cached`) and
/// has not been waited for in vain before, until each has connected (its list is then on its
/// way to the cache) or failed. `note` is told the names first, when there are any. Those
/// still starting at the bound are marked.
pub async fn wait_to_cache(
    status: &mut tokio::sync::watch::Receiver<harness9_actors::messages::StatusSnapshot>,
    specs: &[ServerSpec],
    cache: &DiskCache,
    bound: Duration,
    note: impl FnOnce(&[&str]),
) {
    use harness9_actors::messages::ServerStatus;
    let starting = |snap: &harness9_actors::messages::StatusSnapshot, name: &str| {
        matches!(
            snap.get(name).map(|s| &s.status),
            Some(ServerStatus::Starting { .. })
        )
    };
    let now = status.borrow().clone();
    let waiting: Vec<&ServerSpec> = specs
        .iter()
        .filter(|s| starting(&now, &s.name) && !cache.waited_in_vain(s))
        .collect();
    if waiting.is_empty() || bound.is_zero() {
        return;
    }
    let names: Vec<&str> = waiting.iter().map(|s| s.name.as_str()).collect();
    note(&names);
    let done = status.wait_for(|snap| names.iter().all(|n| !starting(snap, n)));
    if tokio::time::timeout(bound, done).await.is_ok() {
        return;
    }
    let now = status.borrow().clone();
    for s in waiting.into_iter().filter(|s| starting(&now, &s.name)) {
        cache.mark_waited(s);
    }
}

/// Whether `list` may still be offered: younger than its `ttlMs` (0: never), else than
/// [`DEFAULT_MAX_AGE`].
pub fn is_fresh(list: &CachedList) -> bool {
    let ttl = list
        .ttl_ms
        .map_or(DEFAULT_MAX_AGE, Duration::from_millis)
        .min(DEFAULT_MAX_AGE);
    list.age() < ttl
}

/// Reads a regular file of ours, not through a symlink, at most [`MAX_ENTRY_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    let f =
        harness9_platform::fs::nofollow_nonblocking(OpenOptions::new().read(true)).open(path)?;
    let meta = f.metadata()?;
    let refuse = |why: String| Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    if !meta.is_file() {
        return refuse("it is not a regular file".to_owned());
    }
    if !harness9_platform::fs::owned_by_me(&meta) {
        return refuse("it is owned by another user".to_owned());
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return refuse(format!(
            "it is {} bytes, over the {MAX_ENTRY_BYTES}-byte limit",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return refuse(format!("it is over the {MAX_ENTRY_BYTES}-byte limit"));
    }
    Ok(bytes)
}

/// A file's entry for `spec`, checked: typed fields, this spec's key (`key`) and name, a
/// known revision, no more tools than `maxTools`, not written in the future.
fn parse(bytes: &[u8], spec: &ServerSpec, key: &str) -> Result<CachedList, String> {
    let e: FileEntry =
        serde_json::from_slice(bytes).map_err(|e| format!("it is not an entry: {e}"))?;
    if e.format != FORMAT {
        return Err(format!("format {} is not {FORMAT}", e.format));
    }
    if e.key != key || e.server != spec.name {
        return Err("it belongs to another server spec".to_owned());
    }
    if e.tools.len() > spec.max_tools {
        return Err(format!(
            "it lists {} tools, over the server's maxTools ({})",
            e.tools.len(),
            spec.max_tools
        ));
    }
    let version = ProtocolVersion::parse(&e.protocol_version)
        .ok_or_else(|| format!("protocol {:?} is unknown", e.protocol_version))?;
    if version.is_stateless() != e.stateless {
        return Err("its era does not match its protocol".to_owned());
    }
    if e.written_ms > now_ms() + 60_000 {
        return Err("it was written in the future".to_owned());
    }
    let era = if e.stateless {
        Era::Stateless(version)
    } else {
        Era::Handshake(version)
    };
    Ok(CachedList {
        tools: e.tools.into_iter().map(Arc::new).collect(),
        era,
        server_info: e.server_info,
        instructions: e.instructions,
        capabilities: Arc::new(e.capabilities),
        ttl_ms: e.ttl_ms,
        written: UNIX_EPOCH + Duration::from_millis(e.written_ms),
    })
}

impl ToolListCache for DiskCache {
    fn load(&self, spec: &ServerSpec) -> Option<CachedList> {
        match self.read(spec) {
            Ok(Some(list)) if is_fresh(&list) => Some(list),
            Ok(Some(_)) => {
                tracing::debug!(target: "mcp", server = %spec.name, "the cached tool list is stale");
                None
            }
            Ok(None) => None,
            Err(why) => {
                tracing::warn!(target: "mcp", server = %spec.name,
                    "ignoring the cached tool list {}: {why}; the server's live list is used",
                    self.path_of(spec).display());
                None
            }
        }
    }

    fn store(&self, spec: &ServerSpec, list: CachedList) {
        let entry = FileEntry {
            format: FORMAT,
            key: key(spec, self.caps),
            server: spec.name.clone(),
            written_ms: list
                .written
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            ttl_ms: list.ttl_ms,
            protocol_version: list.era.version_str().to_owned(),
            stateless: list.era.is_stateless(),
            server_info: list.server_info,
            instructions: list.instructions,
            capabilities: (*list.capabilities).clone(),
            tools: list.tools.iter().map(|t| (**t).clone()).collect(),
        };
        let Ok(body) = serde_json::to_vec(&entry) else {
            return;
        };
        if body.len() as u64 > MAX_ENTRY_BYTES {
            tracing::info!(target: "mcp", server = %spec.name,
                "tool list not cached: {} bytes, over the {MAX_ENTRY_BYTES}-byte limit", body.len());
            return;
        }
        let path = self.path_of(spec);
        let tx = match self.writer.lock() {
            Ok(w) => w.clone(),
            Err(_) => None,
        };
        if let Some(tx) = tx {
            if let Err(TrySendError::Full(_)) = tx.try_send(Job::Write { path, body }) {
                tracing::debug!(target: "mcp", server = %spec.name, "tool-list cache writer busy; entry not written");
            }
        }
    }
}

/// The writer thread: each entry replaced atomically (0600, in a 0700 directory), then the
/// directory pruned to [`MAX_TOTAL_BYTES`].
fn writer(dir: &Path, rx: Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        match job {
            Job::Write { path, body } => {
                if let Err(e) = crate::private_fs::write_private(&path, &body) {
                    tracing::warn!(target: "mcp", "cannot write the tool-list cache {}: {e}", path.display());
                    continue;
                }
                prune(dir);
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Removes the oldest entries until the directory holds at most [`MAX_TOTAL_BYTES`], and
/// every `.waited` marker older than [`DEFAULT_MAX_AGE`].
fn prune(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for e in rd.flatten() {
        let old = e.path().symlink_metadata().ok().and_then(|m| {
            let age = now.duration_since(m.modified().ok()?).ok()?;
            Some(m.is_file() && age >= DEFAULT_MAX_AGE)
        });
        if e.file_name().to_string_lossy().ends_with(".waited") && old == Some(true) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let m = e.path().symlink_metadata().ok()?;
            let name = e.file_name();
            let name = name.to_str()?;
            (m.is_file() && name.ends_with(".json"))
                .then(|| (m.modified().unwrap_or(UNIX_EPOCH), m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= MAX_TOTAL_BYTES {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ServerSpec {
        ServerSpec::stdio("s", "/bin/x", vec!["a".into()])
    }

    #[test]
    fn a_changed_spec_is_a_new_key() {
        let a = spec();
        let mut b = spec();
        b.transport = TransportSpec::Stdio {
            command: "/bin/x".into(),
            args: vec!["b".into()],
            env: vec![],
            cwd: None,
        };
        let k = |s| key(s, InputCaps::default());
        assert_ne!(k(&a), k(&b));
        let mut c = spec();
        c.tool_timeout = Duration::from_secs(1);
        assert_eq!(k(&a), k(&c), "a timeout does not change the list");
        // The approved content of a file the server runs is part of its identity.
        let pin = |content: &str| harness9_actors::spec::Pinned {
            named: "./run.sh".into(),
            path: "/p/run.sh".into(),
            content: content.into(),
        };
        let (mut d, mut e) = (spec(), spec());
        d.pinned = vec![pin("sha256:aaa")];
        e.pinned = vec![pin("sha256:bbb")];
        assert_ne!(k(&d), k(&e));
        assert_ne!(k(&a), k(&d));
    }

    #[test]
    fn freshness_follows_ttl_ms_else_seven_days() {
        let list = |ttl_ms, age: Duration| CachedList {
            tools: Vec::new().into(),
            era: Era::Handshake(ProtocolVersion::V2025_11_25),
            server_info: Implementation::default(),
            instructions: None,
            capabilities: Arc::new(ServerCapabilities::default()),
            ttl_ms,
            written: SystemTime::now() - age,
        };
        assert!(is_fresh(&list(None, Duration::from_secs(6 * 86_400))));
        assert!(!is_fresh(&list(None, Duration::from_secs(8 * 86_400))));
        assert!(
            !is_fresh(&list(Some(0), Duration::ZERO)),
            "ttlMs 0 is stale at once"
        );
        assert!(is_fresh(&list(Some(60_000), Duration::from_secs(30))));
        assert!(!is_fresh(&list(Some(60_000), Duration::from_secs(90))));
        assert!(
            !is_fresh(&list(Some(u64::MAX), Duration::from_secs(8 * 86_400))),
            "never past 7 days"
        );
    }

    #[test]
    fn hostile_entries_are_refused() {
        let s = spec();
        let k = key(&s, InputCaps::default());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(deep.as_bytes(), &s, &k).is_err());
        assert!(parse(br#"{"format": "1"}"#, &s, &k).is_err());
        let good = serde_json::json!({"format": 1, "key": k, "server": "s", "writtenMs": now_ms(),
            "protocolVersion": "2025-11-25", "stateless": false, "serverInfo": {"name": "x"},
            "capabilities": {}, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]});
        assert!(parse(good.to_string().as_bytes(), &s, &k).is_ok());
        let mut other = good.clone();
        other["key"] = "0".into();
        assert!(parse(other.to_string().as_bytes(), &s, &k).is_err());
        let mut future = good.clone();
        future["writtenMs"] = (now_ms() + 3_600_000).into();
        assert!(parse(future.to_string().as_bytes(), &s, &k).is_err());
        let mut wrong = good;
        wrong["tools"] = serde_json::json!([{"name": 5}]);
        assert!(parse(wrong.to_string().as_bytes(), &s, &k).is_err());
    }
}
