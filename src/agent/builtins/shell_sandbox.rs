//! The sandbox of the agent's own `bash` (`[permissions] shell`): the same Landlock ruleset
//! and seccomp socket filter as a sandboxed stdio server (`harness9_actors::server::sandbox`),
//! with the project (harness9's working directory) and a private temp dir writable.

use std::path::{Path, PathBuf};

use harness9_actors::server::sandbox::{kernel_abi, prepare, Prepared, Scratch, NET_ABI};
use harness9_actors::SandboxSpec;
use serde::Deserialize;

/// How `bash` is confined: `[permissions] shell` in `harness9.toml`.
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

/// A ruleset ready for one `bash` run and its private temp dir (removed when dropped).
pub(super) struct Confined {
    pub(super) prepared: Prepared,
    pub(super) scratch: Scratch,
    /// Where the command may write (for the refusal note).
    pub(super) writable: Vec<PathBuf>,
    pub(super) network: bool,
}

/// Builds the sandbox of one `bash` run in `root`; `None` when the shell is unsandboxed. The
/// error says why the sandbox cannot be applied and how to run unsandboxed.
pub(super) fn confine(mode: ShellSandbox, root: &Path) -> Result<Option<Confined>, String> {
    let unable = |e: String| {
        format!(
            "the shell's sandbox cannot be applied, so the command did not run: {e}; to run bash unsandboxed set shell = \"off\" under [permissions] in harness9.toml"
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
            "the shell's sandbox cannot be applied, so the command did not run: keeping bash off the network needs Landlock ABI {NET_ABI} (Linux 6.7 or later) and this kernel has ABI {abi}; set shell = \"network\" (writes still confined) or \"off\" under [permissions] in harness9.toml"
        ));
    }
    if write_root {
        if let Some(held) = holds_private_dirs(root) {
            return Err(format!(
                "the shell's sandbox would let the command write {held} (the project, {}, holds it: your shell's startup files, harness9's approvals and remembered permissions), so the command did not run; run harness9 from a project directory, or set shell = \"read-only\" (writes only a temp dir) under [permissions] in harness9.toml",
                root.display()
            ));
        }
    }
    let scratch = Scratch::create().map_err(unable)?;
    let spec = SandboxSpec {
        project_dir: root.to_path_buf(),
        writable: Vec::new(),
        network,
    };
    let cwd = write_root.then_some(root);
    let prepared = prepare(&spec, cwd, scratch.path()).map_err(unable)?;
    let mut writable: Vec<PathBuf> = cwd.map(Path::to_path_buf).into_iter().collect();
    writable.push(scratch.path().to_path_buf());
    Ok(Some(Confined {
        prepared,
        scratch,
        writable,
        network,
    }))
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
/// when the output shows one; `None` when nothing points at the sandbox.
pub(super) fn refusal_note(output: &str, writable: &[PathBuf], network: bool) -> Option<String> {
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
        "note: {what} (writable: {writable}, the device files; {net}); ask the user, or the user can set [permissions] shell in harness9.toml"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_path_outside_and_the_setting() {
        let w = vec![PathBuf::from("/p"), PathBuf::from("/tmp/harness9-sbx-1")];
        let out = "bash: line 1: /etc/x: Permission denied\nexit code 1";
        let note = refusal_note(out, &w, false).expect("a note");
        assert!(
            note.starts_with("note: the sandbox refuses writes to /etc/x: it is outside the writable set (writable: /p, /tmp/harness9-sbx-1")
                && note.contains("no network")
                && note.contains("[permissions] shell"),
            "{note}"
        );
        let out = "touch: cannot touch '/p/sub/f': Permission denied\nexit code 1";
        let note = refusal_note(out, &w, false).expect("a note");
        assert!(
            note.starts_with("note: the sandbox may have refused this"),
            "{note}"
        );
        assert_eq!(refusal_note("no such file\nexit code 1", &w, false), None);
        let out = "cat: /proc/1/environ: Permission denied\nexit code 1";
        let note = refusal_note(out, &w, true).expect("a note");
        assert!(
            note.starts_with(
                "note: the sandbox refuses access to other processes' /proc (/proc/1/environ)"
            ) && note.contains("TCP and UDP allowed"),
            "{note}"
        );
    }
}
