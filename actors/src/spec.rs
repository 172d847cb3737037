//! What the runtime needs to know to run one server: built by the config loader, read by actors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::protocol::codec::DEFAULT_MAX_MESSAGE_BYTES;

/// A task's bound when its entry sets no `taskTimeoutSec`: an hour (CI pipelines, batch jobs,
/// a person's approval), then it is cancelled.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(3600);

/// The default of [`ServerSpec::max_tools`].
pub const DEFAULT_MAX_TOOLS: usize = 100_000;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The program to run, looked up in `PATH` unless it is a path.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment (added to the parent's).
        env: Vec<(String, String)>,
        /// Working directory (the parent's when absent).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint (`sse = false`) or a legacy HTTP+SSE one.
    Http {
        /// The server's URL: the Streamable HTTP endpoint, or the legacy transport's SSE stream.
        url: String,
        /// Headers (credentials) sent only to requests on the URL's origin.
        headers: Vec<(String, String)>,
        /// Use the legacy HTTP+SSE transport from the start (without it, an initialize that
        /// gets HTTP 400, 404 or 405 falls back to it).
        sse: bool,
    },
}

/// A [`TransportSpec`]'s parts, borrowed ([`TransportSpec::parts`]); every kind of
/// transport is one of these, so a reader of them all handles each.
#[derive(Debug, Clone, Copy)]
pub enum TransportParts<'a> {
    /// A child process.
    Stdio {
        /// The program.
        command: &'a str,
        /// Its arguments.
        args: &'a [String],
        /// Its extra environment, in the spec's order.
        env: &'a [(String, String)],
        /// Its working directory, when set.
        cwd: Option<&'a Path>,
    },
    /// An HTTP endpoint.
    Http {
        /// The URL.
        url: &'a str,
        /// The headers, in the spec's order.
        headers: &'a [(String, String)],
        /// `http` or `sse`.
        kind: &'static str,
    },
}

impl TransportSpec {
    /// What this transport runs or reaches, as one line a user can read and check: the
    /// command line (each word shell-quoted, control characters escaped as `$'\x1b'`), its
    /// environment keys and working directory; or the URL and its header names. Values that
    /// are not shown (env, headers) name the `${VAR}` references they still hold (a spec as
    /// a config writes it, before expansion), never a value.
    pub fn command_line(&self) -> String {
        match self.parts() {
            TransportParts::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut out: Vec<String> = std::iter::once(command)
                    .chain(args.iter().map(String::as_str))
                    .map(shell_quote)
                    .collect();
                if !env.is_empty() {
                    let keys: Vec<String> = env
                        .iter()
                        .map(|(k, v)| match passed_through(k, v) {
                            true => format!("${k}"),
                            false => shell_quote(k),
                        })
                        .collect();
                    out.push(format!("(env {})", keys.join(", ")));
                }
                if let Some(cwd) = cwd {
                    out.push(format!("(in {})", shell_quote(&cwd.display().to_string())));
                }
                // Each variable named once: not again for a `$KEY` above or a word shown.
                let shown = out.join(" ");
                let mut refs = references(env);
                refs.retain(|r| {
                    !shown.contains(r.as_str())
                        && !env
                            .iter()
                            .any(|(k, v)| passed_through(k, v) && *r == shell_quote(v))
                });
                out.extend(uses(&refs));
                out.join(" ")
            }
            TransportParts::Http { url, headers, .. } => {
                let mut out = vec![shell_quote(url)];
                if !headers.is_empty() {
                    let names: Vec<String> = headers.iter().map(|(k, _)| shell_quote(k)).collect();
                    out.push(format!("(headers {})", names.join(", ")));
                }
                let shown = out.join(" ");
                let mut refs = references(headers);
                refs.retain(|r| !shown.contains(r.as_str()));
                out.extend(uses(&refs));
                out.join(" ")
            }
        }
    }

    /// The transport taken apart, borrowed: the one place a spec is unpacked for what reads
    /// it whole (its [`command_line`](Self::command_line), an approval's canonical form).
    pub fn parts(&self) -> TransportParts<'_> {
        match self {
            TransportSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } => TransportParts::Stdio {
                command,
                args,
                env,
                cwd: cwd.as_deref(),
            },
            TransportSpec::Http { url, headers, .. } => TransportParts::Http {
                url,
                headers,
                kind: self.kind(),
            },
        }
    }

    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Http { sse: false, .. } => "http",
            TransportSpec::Http { sse: true, .. } => "sse",
        }
    }
}

/// Whether the entry `key` = `value` passes the user's own `key` through (`"K": "${K}"`, a
/// plain name): the command line shows it once, as `$K`.
pub fn passed_through(key: &str, value: &str) -> bool {
    value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) == Some(key)
        && shell_quote(key) == key
}

/// `(uses ${A}, ${B})` of `refs`, when there are any.
fn uses(refs: &[String]) -> Option<String> {
    (!refs.is_empty()).then(|| format!("(uses {})", refs.join(", ")))
}

/// The `${...}` references in `pairs`' values, each once, shell-quoted.
fn references(pairs: &[(String, String)]) -> Vec<String> {
    let mut refs: Vec<String> = Vec::new();
    for (_, v) in pairs {
        let mut rest = v.as_str();
        while let Some(i) = rest.find("${") {
            let Some(end) = rest[i..].find('}') else {
                break;
            };
            let r = shell_quote(&rest[i..i + end + 1]);
            if !refs.contains(&r) {
                refs.push(r);
            }
            rest = &rest[i + end + 1..];
        }
    }
    refs
}

/// A word as a POSIX shell reads it back: bare when it is plain, else single-quoted, and
/// `$'...'` with `\xNN` escapes when it holds control characters (so it never carries a raw
/// escape sequence to a terminal).
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    if !word.chars().any(char::is_control) {
        return format!("'{}'", word.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in word.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Why a configured server is held back: the supervisor keeps its entry (it shows in every
/// status) but never launches it until a new spec without a hold arrives (`Reconcile`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hold {
    /// It comes from a project config whose user has not approved this exact spec: status
    /// `Unapproved`, nothing is spawned.
    Unapproved,
    /// Its entry in the config is invalid (the message names the file, server, field and what
    /// to do): status `Failed` with that message.
    Invalid(String),
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name from `.mcp.json`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// How long the handshake may take (`startupTimeoutSec`).
    pub startup_timeout: Duration,
    /// Default per-call timeout (`toolTimeoutSec`).
    pub tool_timeout: Duration,
    /// How long a call may go without a progress notification (`toolIdleTimeoutSec`): each
    /// one starts the wait again; `None`: only the total `tool_timeout` bounds it.
    pub tool_idle_timeout: Option<Duration>,
    /// How long a call that became a task (`io.modelcontextprotocol/tasks`) may run before it
    /// is cancelled (`taskTimeoutSec`); the tool timeout does not bound a task.
    pub task_timeout: Duration,
    /// Only these tools are registered, when set (`enabledTools`).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never registered (`disabledTools`).
    pub disabled_tools: Vec<String>,
    /// The largest message accepted from the server.
    pub max_message_bytes: usize,
    /// The most tools accepted from the server, over all pages (`maxTools`).
    pub max_tools: usize,
    /// Shutdown: how long to wait after closing stdin before SIGTERM, and after SIGTERM before
    /// SIGKILL.
    pub shutdown_grace: Duration,
    /// Held back instead of started (not approved, or an invalid config entry).
    pub hold: Option<Hold>,
    /// Run the child under Landlock (stdio only); `None` runs it unrestricted.
    pub sandbox: Option<SandboxSpec>,
    /// `protocolVersion`: speak this revision (and its era) only; `None` chooses per server
    /// (`server/discover` first, then the handshake).
    pub protocol: Option<crate::protocol::version::ProtocolVersion>,
    /// OAuth for an HTTP server: its configuration, the token store and whether the runtime
    /// may start a login itself; `None` sends no token and fails a `401` as before.
    pub oauth: Option<crate::oauth::OAuthSpec>,
    /// The roots the server is offered (`roots`).
    pub roots: Roots,
    /// `logLevel`: the least severe log message the server is asked to send (`logging/setLevel`
    /// in the handshake era, `_meta` `io.modelcontextprotocol/logLevel` in the stateless one);
    /// `None` asks nothing.
    pub log_level: Option<String>,
    /// What a held spec shows instead of its transport's command line (the config's written
    /// form of the entry, with every `${VAR}` it uses named); `None` shows the command line.
    pub shown: Option<String>,
    /// For a held spec: the key of exactly what approving it approves (the app's fingerprint
    /// of the entry as written and where it runs). The trust screen sends it back, so a spec
    /// that changed after it was shown, even where the shown line does not say, is not
    /// approved by that answer.
    pub approval: Option<String>,
    /// `start`: how the server starts when its tool list is cached (`None`: the session's
    /// default, `[mcp] start`).
    pub start: Option<crate::tool_cache::StartMode>,
    /// The repository's files this server runs (its program, the scripts its arguments name)
    /// with the content its approval vouched for: checked before every start, restarts
    /// included, so a file rewritten since (by anything) never runs unasked.
    pub pinned: Vec<Pinned>,
}

/// What a content fingerprint reads of one file at most: past it, the length stands in for
/// the rest (a repository's 10 GB file does not stall a start).
pub const MAX_HASHED_BYTES: u64 = 256 << 20;

/// A file a server runs, with the content its approval covered ([`ServerSpec::pinned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The file as the spawn names it (a `node_modules/.bin` link, `./run.sh`).
    pub named: PathBuf,
    /// The file it resolved to, canonical.
    pub path: PathBuf,
    /// Its [`content_hash`] when approved.
    pub content: String,
}

impl Pinned {
    /// The file `named`, resolved to `path`, as it is now.
    pub fn of(named: &Path, path: &Path) -> std::io::Result<Pinned> {
        Ok(Pinned {
            named: named.to_path_buf(),
            path: path.to_path_buf(),
            content: content_hash(path)?,
        })
    }

    /// Whether the file still resolves where it did and holds what server `server`'s approval
    /// covered; the error names the file and what to do.
    pub fn check(&self, server: &str) -> Result<(), String> {
        let now = std::fs::canonicalize(&self.named).ok();
        if now.as_deref() != Some(self.path.as_path()) {
            return Err(format!(
                "{} leads elsewhere than when server \"{server}\" was approved ({}), so it is not started; look at the change, then approve it again: harness9 mcp approve {server} (with the same --config if it comes from one)",
                self.named.display(),
                self.path.display()
            ));
        }
        match content_hash(&self.path) {
            Ok(now) if now == self.content => Ok(()),
            Ok(_) => Err(format!(
                "{} changed since server \"{server}\" was approved, so it is not started; look at the change, then approve it again: harness9 mcp approve {server} (with the same --config if it comes from one)",
                self.path.display()
            )),
            Err(e) => Err(format!(
                "{} (run by server \"{server}\", approved with its content) cannot be read, so it is not started: {}",
                self.path.display(),
                harness9_platform::plain_io_error(&e)
            )),
        }
    }
}

/// `sha256:<hex>` of the file at `path` (its first [`MAX_HASHED_BYTES`], then `+<length>`
/// when it is longer).
pub fn content_hash(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest as _, Sha256};
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut left = MAX_HASHED_BYTES;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(buf.len()));
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(if len > MAX_HASHED_BYTES {
        format!("sha256:{hex}+{len}")
    } else {
        format!("sha256:{hex}")
    })
}

/// The log levels of the spec, least severe first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The roots a server is offered (`roots/list`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Roots {
    /// The server's working directory (its `cwd`, else harness9's).
    #[default]
    WorkingDirectory,
    /// These directories (absolute).
    Paths(Vec<PathBuf>),
    /// `"roots": false`: the capability is not declared and `roots/list` is refused.
    Off,
}

impl ServerSpec {
    /// Whether `other` differs from this spec in its `roots` only, both declaring the
    /// capability (a reload tells the server instead of restarting it).
    pub fn only_roots_differ(&self, other: &ServerSpec) -> bool {
        if self.roots == other.roots || self.roots == Roots::Off || other.roots == Roots::Off {
            return false;
        }
        let mut same = other.clone();
        same.roots = self.roots.clone();
        *self == same
    }
}

/// A stdio server's sandbox: it may read and execute the filesystem (not other processes'
/// `/proc`), write only its own configured `cwd`, its private temp dir, a few device files and
/// `writable`, and use sockets only if `network` (see `server/sandbox.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The config file's directory (relative `writable` paths were resolved against it); not
    /// writable by itself.
    pub project_dir: PathBuf,
    /// More writable paths (directories or files); each must exist.
    pub writable: Vec<PathBuf>,
    /// TCP connect and bind allowed; `false` needs Landlock ABI 4 (Linux 6.7+).
    pub network: bool,
}

impl ServerSpec {
    /// A stdio server with default settings.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            name: name.into(),
            transport: TransportSpec::Stdio {
                command: command.into(),
                args,
                env: Vec::new(),
                cwd: None,
            },
            startup_timeout: Duration::from_secs(30),
            tool_timeout: Duration::from_secs(60),
            tool_idle_timeout: None,
            task_timeout: DEFAULT_TASK_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_tools: DEFAULT_MAX_TOOLS,
            shutdown_grace: Duration::from_secs(2),
            hold: None,
            sandbox: None,
            protocol: None,
            oauth: None,
            roots: Roots::WorkingDirectory,
            log_level: None,
            shown: None,
            approval: None,
            start: None,
            pinned: Vec::new(),
        }
    }

    /// Whether a tool of this server (by its own name) is registered.
    pub fn tool_enabled(&self, tool: &str) -> bool {
        if self.disabled_tools.iter().any(|t| t == tool) {
            return false;
        }
        match &self.enabled_tools {
            Some(list) => list.iter().any(|t| t == tool),
            None => true,
        }
    }
}

/// How the supervisor restarts servers that exit after connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Delay before the first restart; doubled for every exit in the window.
    pub initial_backoff: Duration,
    /// The doubling stops at this delay.
    pub max_backoff: Duration,
    /// This many exits within `window` trip the breaker: Failed until `Restart`.
    pub max_exits: usize,
    /// How far back exits count toward `max_exits`.
    pub window: Duration,
}

/// 0.5 s before the first restart, doubling up to 30 s; 5 exits within 60 s trip the breaker.
impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_exits: 5,
            window: Duration::from_secs(60),
        }
    }
}

impl RestartPolicy {
    /// The delay after the `n`-th exit within the window (n >= 1).
    pub fn backoff(&self, n: usize) -> Duration {
        let shift = n.saturating_sub(1).min(20) as u32;
        self.initial_backoff
            .saturating_mul(1u32 << shift)
            .min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RestartPolicy::default();
        let got: Vec<u64> = (1..=9).map(|n| p.backoff(n).as_millis() as u64).collect();
        assert_eq!(
            got,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }

    #[test]
    fn command_lines_quote_words_and_escape_controls() {
        let mut s = ServerSpec::stdio(
            "s",
            "sh",
            vec![
                "-c".into(),
                "touch M; exec x".into(),
                "it's".into(),
                "\u{1b}]52;c;x\u{7}".into(),
            ],
        );
        assert_eq!(
            s.transport.command_line(),
            r"sh -c 'touch M; exec x' 'it'\''s' $'\x1b]52;c;x\x07'"
        );
        if let TransportSpec::Stdio { env, cwd, .. } = &mut s.transport {
            env.push(("K".into(), "secret".into()));
            *cwd = Some("/p".into());
        }
        assert_eq!(
            s.transport.command_line(),
            r"sh -c 'touch M; exec x' 'it'\''s' $'\x1b]52;c;x\x07' (env K) (in /p)"
        );
        // A value as written names its references, never a value.
        let http = TransportSpec::Http {
            url: "https://h/mcp".into(),
            headers: vec![
                ("X-Client".into(), "${SUPER_SECRET}".into()),
                ("Authorization".into(), "Bearer ${input:key}".into()),
            ],
            sse: false,
        };
        assert_eq!(
            http.command_line(),
            "https://h/mcp (headers X-Client, Authorization) (uses '${SUPER_SECRET}', '${input:key}')"
        );
        // Each variable once: a key passing the user's own through is `$KEY`, and a reference
        // the arguments show already is not named again.
        let gh = TransportSpec::Stdio {
            command: "npx".into(),
            args: vec!["gh".into(), "--token".into(), "${GH_TOKEN}".into()],
            env: vec![
                ("GITHUB_TOKEN".into(), "${GITHUB_TOKEN}".into()),
                (
                    "OTHER".into(),
                    "x-${GH_TOKEN}-${GITHUB_TOKEN}-${API}".into(),
                ),
            ],
            cwd: None,
        };
        assert_eq!(
            gh.command_line(),
            "npx gh --token '${GH_TOKEN}' (env $GITHUB_TOKEN, OTHER) (uses '${API}')"
        );
    }

    #[test]
    fn tool_filters() {
        let mut s = ServerSpec::stdio("s", "x", vec![]);
        assert!(s.tool_enabled("a"));
        s.disabled_tools = vec!["a".into()];
        assert!(!s.tool_enabled("a"));
        s.enabled_tools = Some(vec!["b".into()]);
        assert!(s.tool_enabled("b") && !s.tool_enabled("c"));
    }
}

#[cfg(test)]
mod pin_tests {
    use super::*;

    #[test]
    fn a_pin_holds_while_the_file_and_where_it_leads_stay_as_approved() {
        let dir = std::env::temp_dir().join(format!("h9-pinned-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, link) = (dir.join("a.sh"), dir.join("b.sh"), dir.join("cli"));
        std::fs::write(&a, "echo a").unwrap();
        std::fs::write(&b, "echo b").unwrap();
        harness9_platform::fs::symlink(&a, &link).unwrap();
        let real = std::fs::canonicalize(&link).unwrap();
        let pin = Pinned::of(&link, &real).unwrap();
        assert_eq!(pin.check("s"), Ok(()));
        // Re-pointed: the same content elsewhere is not what was approved either.
        std::fs::remove_file(&link).unwrap();
        harness9_platform::fs::symlink(&b, &link).unwrap();
        let e = pin.check("s").unwrap_err();
        assert!(
            e.contains("leads elsewhere than when server \"s\" was approved"),
            "{e}"
        );
        std::fs::remove_file(&link).unwrap();
        harness9_platform::fs::symlink(&a, &link).unwrap();
        assert_eq!(pin.check("s"), Ok(()));
        // Rewritten.
        std::fs::write(&a, "echo evil").unwrap();
        let e = pin.check("s").unwrap_err();
        assert!(
            e.contains("changed since server \"s\" was approved, so it is not started"),
            "{e}"
        );
        assert!(e.contains("harness9 mcp approve s"), "{e}");
        // Gone.
        std::fs::remove_file(&a).unwrap();
        assert!(pin.check("s").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
