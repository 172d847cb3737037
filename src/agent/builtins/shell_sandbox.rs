//! The sandbox of the agent's own `bash` (`[permissions] shell`): the same Landlock ruleset
//! and seccomp socket filter as a sandboxed stdio server (`harness9_actors::server::sandbox`),
//! with the project (harness9's working directory) and a private temp dir writable, except
//! what something outside the sandbox runs later: the project's `.git` (hooks, `core.fsmonitor`
//! run on the user's next `git status`) and the app's [`ProtectedPaths`] (the configs harness9
//! reads, approved servers' programs) stay read-only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness9_actors::server::sandbox::{
    carve_out_check, kernel_abi, prepare_keeping, Prepared, Scratch, NET_ABI,
};
use harness9_actors::SandboxSpec;
use serde::Deserialize;

/// How `bash` is confined: `[permissions] shell` of the settings (a project may only tighten it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShellSandbox {
    /// Writes the project, a private temp dir and the device files; no network.
    #[default]
    WorkspaceWrite,
    /// Writes only its private temp dir and the device files; no network.
    ReadOnly,
    /// `WorkspaceWrite` with TCP and UDP (still no unix socket).
    Network,
    /// Unsandboxed.
    Off,
}

impl ShellSandbox {
    /// How loose it is: a project's settings file may only pick one at most as loose as the
    /// user's.
    pub fn looseness(self) -> u8 {
        match self {
            Self::ReadOnly => 0,
            Self::WorkspaceWrite => 1,
            Self::Network => 2,
            Self::Off => 3,
        }
    }

    /// The name in the settings file.
    pub fn name(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Network => "network",
            Self::Off => "off",
        }
    }
}

/// Paths inside the project the sandboxed shell must not write, beside its `.git`: asked of
/// the app before every `bash` run (so a hot reload's new list applies at once).
#[derive(Clone)]
pub struct ProtectedPaths(Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>);

impl ProtectedPaths {
    /// The list `f` gives at each run.
    pub fn new(f: impl Fn() -> Vec<PathBuf> + Send + Sync + 'static) -> ProtectedPaths {
        ProtectedPaths(Arc::new(f))
    }

    /// The list now.
    pub fn get(&self) -> Vec<PathBuf> {
        (self.0)()
    }
}

impl std::fmt::Debug for ProtectedPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProtectedPaths(..)")
    }
}

/// Bytes of a `.git` file (a worktree's or submodule's pointer) read at most.
const GIT_FILE_MAX: u64 = 4096;

/// The repository paths at `root` the shell keeps read-only: its `.git` (a folder, or the
/// file of a worktree or submodule), and the folders such a file points at (`gitdir:`, and
/// that folder's `commondir`), which matter when they lie inside the project.
fn git_paths(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    let mut out = vec![dot_git.clone()];
    if !meta.is_file() {
        return out;
    }
    let Some(gitdir) = pointer(&dot_git, "gitdir:", root) else {
        return out;
    };
    if let Some(common) = pointer(&gitdir.join("commondir"), "", &gitdir) {
        out.push(common);
    }
    out.push(gitdir);
    out
}

/// The path a small pointer file holds after `prefix` (relative ones from `base`).
fn pointer(file: &Path, prefix: &str, base: &Path) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(GIT_FILE_MAX)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    if line.is_empty() {
        return None;
    }
    Some(crate::permissions::pattern::normalize(&base.join(line)))
}

/// A ruleset ready for one `bash` run and its private temp dir (removed when dropped).
pub(super) struct Confined {
    pub(super) prepared: Prepared,
    pub(super) scratch: Scratch,
    /// Where the command may write (for the refusal note).
    pub(super) writable: Vec<PathBuf>,
    /// What stays read-only inside it (for the refusal note).
    pub(super) read_only: Vec<PathBuf>,
    pub(super) network: bool,
}

/// Builds the sandbox of one `bash` run in `root`; `None` when the shell is unsandboxed. The
/// project's `.git` and `protected` stay read-only when the project is writable. The
/// error says why the sandbox cannot be applied and how to run unsandboxed, naming `own`,
/// the user's own settings file (a project's `harness9.toml` may not loosen the shell).
pub(super) fn confine(
    mode: ShellSandbox,
    root: &Path,
    protected: Option<&ProtectedPaths>,
    own: &str,
) -> Result<Option<Confined>, String> {
    let unable = |e: String| {
        format!(
            "the shell's sandbox cannot be applied, so the command did not run: {e}; to run bash unsandboxed set shell = \"off\" under [permissions] in {own}"
        )
    };
    let (write_root, network) = match mode {
        ShellSandbox::Off => return Ok(None),
        ShellSandbox::WorkspaceWrite => (true, false),
        ShellSandbox::Network => (true, true),
        ShellSandbox::ReadOnly => (false, false),
    };
    // Said here in the shell's own terms (the server messages name `.mcp.json` fields).
    let abi = kernel_abi().map_err(unable)?;
    if !network && abi < NET_ABI {
        return Err(format!(
            "the shell's sandbox cannot be applied, so the command did not run: keeping bash off the network needs Landlock ABI {NET_ABI} (Linux 6.7 or later) and this kernel has ABI {abi}; set shell = \"network\" (writes still confined) or \"off\" under [permissions] in {own}"
        ));
    }
    if write_root {
        if let Some(held) = holds_private_dirs(root) {
            return Err(format!(
                "the shell's sandbox would let the command write {held} (the project, {}, holds it: your shell's startup files, harness9's approvals and remembered permissions), so the command did not run; run harness9 from a project directory, or set shell = \"read-only\" (writes only a temp dir) under [permissions] in {own}",
                root.display()
            ));
        }
    }
    // Only the project is writable beside the private temp dir: with it read-only there is
    // nothing to carve out.
    let read_only = if write_root {
        kept_read_only(root, protected, own)?
    } else {
        Vec::new()
    };
    let scratch = Scratch::create().map_err(unable)?;
    let spec = SandboxSpec {
        project_dir: root.to_path_buf(),
        writable: Vec::new(),
        network,
    };
    let cwd = write_root.then_some(root);
    let prepared = prepare_keeping(&spec, cwd, scratch.path(), &read_only).map_err(unable)?;
    let mut writable: Vec<PathBuf> = cwd.map(Path::to_path_buf).into_iter().collect();
    writable.push(scratch.path().to_path_buf());
    Ok(Some(Confined {
        prepared,
        scratch,
        writable,
        read_only,
        network,
    }))
}

/// What stays read-only inside a writable project: its `.git` and the `protected` paths
/// that exist inside it, once the carve-out is known to work here.
fn kept_read_only(
    root: &Path,
    protected: Option<&ProtectedPaths>,
    own: &str,
) -> Result<Vec<PathBuf>, String> {
    let mut read_only = git_paths(root);
    let listed = protected.map(ProtectedPaths::get).unwrap_or_default();
    read_only.extend(
        listed
            .into_iter()
            .map(|p| crate::permissions::pattern::normalize(&root.join(p))),
    );
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let inside = |p: &PathBuf| {
        std::fs::symlink_metadata(p).is_ok()
            && p.parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .is_some_and(|d| d.starts_with(&real_root))
    };
    read_only.retain(inside);
    read_only.sort();
    read_only.dedup();
    if !read_only.is_empty() {
        carve_out_check().map_err(|e| {
            format!(
                "the shell's sandbox cannot keep {} read-only, so the command did not run: {e}; allow user namespaces, or set shell = \"read-only\" (bash then writes only a temp dir) or \"off\" under [permissions] in {own}",
                list(&read_only)
            )
        })?;
    }
    Ok(read_only)
}

/// Paths as a comma-separated list.
fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The private directory of the user's that `root` is or holds: `$HOME`, `$XDG_CONFIG_HOME`,
/// `$XDG_STATE_HOME` (resolved). A sandbox that writes `root` would write there too: a
/// `~/.bashrc` or a harness9 approval planted there runs unsandboxed later.
fn holds_private_dirs(root: &Path) -> Option<String> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    ["HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"]
        .into_iter()
        .filter_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .find(|p| p.starts_with(&root))
        .map(|p| p.display().to_string())
}

/// The note added to a failed command's output when it looks like the sandbox refused it
/// ("Permission denied" / "Operation not permitted"), naming a path outside the writable set
/// when the output shows one, or the read-only paths inside it ("Read-only file system",
/// "Device or resource busy" for a rename); `None` when nothing points at the sandbox. `own`
/// names the user's own settings file, where a looser `[permissions] shell` works.
pub(super) fn refusal_note(
    output: &str,
    writable: &[PathBuf],
    read_only: &[PathBuf],
    network: bool,
    own: &str,
) -> Option<String> {
    let kept =
        |l: &str| l.contains("Read-only file system") || l.contains("Device or resource busy");
    if !read_only.is_empty() && output.lines().any(kept) {
        return Some(format!(
            "note: the sandbox keeps {} read-only inside the project: git hooks and config, harness9's configs and approved servers' programs run outside the sandbox later, so only the user changes them; git commands that only read (status, diff, log) work; ask the user to commit or to make such a change",
            list(read_only)
        ));
    }
    let refused =
        |l: &str| l.contains("Permission denied") || l.contains("Operation not permitted");
    let lines: Vec<&str> = output.lines().filter(|l| refused(l)).collect();
    if lines.is_empty() {
        return None;
    }
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w)) || p.starts_with("/dev");
    let outside = lines.iter().find_map(|l| {
        l.split(|ch: char| ch.is_whitespace() || matches!(ch, ':' | '\'' | '"' | '`' | '‘' | '’'))
            .filter(|t| t.starts_with('/'))
            .map(PathBuf::from)
            .find(|p| !inside(p))
    });
    let writable = writable
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let net = if network {
        "TCP and UDP allowed, no unix sockets"
    } else {
        "no network"
    };
    let what = match outside {
        Some(p) if p.starts_with("/proc") => format!(
            "the sandbox refuses access to other processes' /proc ({})",
            p.display()
        ),
        Some(p) => format!(
            "the sandbox refuses writes to {}: it is outside the writable set",
            p.display()
        ),
        None => "the sandbox may have refused this".to_owned(),
    };
    Some(format!(
        "note: {what} (writable: {writable}, the device files; {net}); ask the user, or the user can set [permissions] shell in {own}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user's own settings file as the hints name it.
    const OWN: &str = "your own settings file (/u/config.toml)";

    #[test]
    fn a_refusal_names_the_path_outside_and_the_setting() {
        let w = vec![PathBuf::from("/p"), PathBuf::from("/tmp/harness9-sbx-1")];
        let out = "bash: line 1: /etc/x: Permission denied\nexit code 1";
        let note = refusal_note(out, &w, &[], false, OWN).expect("a note");
        assert!(
            note.starts_with("note: the sandbox refuses writes to /etc/x: it is outside the writable set (writable: /p, /tmp/harness9-sbx-1")
                && note.contains("no network")
                && note.ends_with("[permissions] shell in your own settings file (/u/config.toml)"),
            "{note}"
        );
        let out = "touch: cannot touch '/p/sub/f': Permission denied\nexit code 1";
        let note = refusal_note(out, &w, &[], false, OWN).expect("a note");
        assert!(
            note.starts_with("note: the sandbox may have refused this"),
            "{note}"
        );
        assert_eq!(
            refusal_note("no such file\nexit code 1", &w, &[], false, OWN),
            None
        );
        let out = "cat: /proc/1/environ: Permission denied\nexit code 1";
        let note = refusal_note(out, &w, &[], true, OWN).expect("a note");
        assert!(
            note.starts_with(
                "note: the sandbox refuses access to other processes' /proc (/proc/1/environ)"
            ) && note.contains("TCP and UDP allowed"),
            "{note}"
        );
    }

    #[test]
    fn a_write_to_a_read_only_path_is_explained() {
        let w = vec![PathBuf::from("/p")];
        let ro = vec![PathBuf::from("/p/.git"), PathBuf::from("/p/.mcp.json")];
        for out in [
            "bash: line 1: .git/hooks/pre-commit: Read-only file system\nexit code 1",
            "mv: cannot move '.git' to 'g': Device or resource busy\nexit code 1",
        ] {
            let note = refusal_note(out, &w, &ro, false, OWN).expect("a note");
            assert!(
                note.starts_with(
                    "note: the sandbox keeps /p/.git, /p/.mcp.json read-only inside the project"
                ) && note.contains("ask the user"),
                "{note}"
            );
        }
        // Nothing kept: a read-only file system elsewhere is not the sandbox's doing.
        let out = "touch: cannot touch '/mnt/cd/x': Read-only file system\nexit code 1";
        assert_eq!(refusal_note(out, &w, &[], false, OWN), None);
    }

    /// A fresh directory, removed when dropped.
    struct Dir(PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[actix_rt::test]
    async fn a_listed_path_stays_read_only_and_the_list_is_asked_at_each_run() {
        let d = Dir(std::env::temp_dir().join(format!("h9-protected-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&d.0);
        let proj = d.0.join("proj");
        std::fs::create_dir_all(proj.join("src")).expect("mkdir");
        std::fs::write(proj.join("harness9.toml"), "model = \"m\"\n").expect("write");
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (n, listed) = (
            asked.clone(),
            vec![proj.join("harness9.toml"), d.0.join("elsewhere")],
        );
        let protected = ProtectedPaths::new(move || {
            n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            listed.clone()
        });
        for run in 1..=2 {
            let c = confine(ShellSandbox::WorkspaceWrite, &proj, Some(&protected), OWN)
                .expect("confine")
                .expect("sandboxed");
            // Outside the project: not carved (the sandbox does not write there anyway).
            assert_eq!(c.read_only, vec![proj.join("harness9.toml")]);
            assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), run);
            let mut cmd = tokio::process::Command::new("bash");
            cmd.arg("-c")
                .arg("echo 'model = \"evil\"' >> harness9.toml; mv harness9.toml x.toml; echo y > src/ok.txt")
                .current_dir(&proj);
            let out = c.prepared.wrap(cmd).output().await.expect("bash");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("harness9.toml: Read-only file system")
                    && err.contains("Device or resource busy"),
                "{err}"
            );
            assert_eq!(
                std::fs::read_to_string(proj.join("harness9.toml")).expect("read"),
                "model = \"m\"\n"
            );
            assert!(proj.join("src/ok.txt").exists());
        }
        // Read-only mode writes nothing of the project: nothing to carve out, nothing asked.
        let c = confine(ShellSandbox::ReadOnly, &proj, Some(&protected), OWN)
            .expect("confine")
            .expect("sandboxed");
        assert!(c.read_only.is_empty());
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn the_git_paths_are_the_folder_or_the_pointer_and_what_it_points_at() {
        let d = Dir(std::env::temp_dir().join(format!("h9-gitpaths-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&d.0);
        let plain = d.0.join("plain");
        std::fs::create_dir_all(&plain).expect("mkdir");
        assert!(git_paths(&plain).is_empty());
        let repo = d.0.join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        assert_eq!(git_paths(&repo), vec![repo.join(".git")]);
        // A worktree: `.git` is a file pointing at a folder whose `commondir` names the rest.
        let wt = d.0.join("wt");
        let admin = repo.join(".git/worktrees/wt");
        std::fs::create_dir_all(&admin).expect("mkdir");
        std::fs::create_dir_all(&wt).expect("mkdir");
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).expect("write");
        std::fs::write(admin.join("commondir"), "../..\n").expect("write");
        assert_eq!(
            git_paths(&wt),
            vec![wt.join(".git"), repo.join(".git"), admin.clone()]
        );
        // A submodule's relative pointer.
        let sub = repo.join("sub");
        std::fs::create_dir_all(&sub).expect("mkdir");
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").expect("write");
        assert_eq!(
            git_paths(&sub),
            vec![sub.join(".git"), repo.join(".git/modules/sub")]
        );
    }
}
