//! The agent's own `bash` in its sandbox (`[permissions] shell`), end to end: the real binary
//! runs `run -p` against the scripted model, whose script calls `bash`; what the commands could
//! do is read back from the files, the listeners and the tool results.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;

/// How long one `harness9 run` may take.
const LIMIT: Duration = Duration::from_secs(90);

/// A project dir for a test, with its `HOME` and config dir beside it (a project that holds
/// the home directory is one the shell's sandbox will not write).
struct Project {
    dir: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new(tag: &str) -> Project {
        let dir = temp_path(tag);
        let home = dir.with_file_name(format!(
            "{}-home",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(home.join("config/harness9")).unwrap();
        Project { dir, home }
    }

    /// A real repository with one commit (`a.txt`) and a change to diff.
    fn git(tag: &str) -> Project {
        let p = Project::new(tag);
        git(&p.dir, &["init", "-q"]);
        std::fs::write(p.dir.join("a.txt"), "one\n").unwrap();
        git(&p.dir, &["add", "a.txt"]);
        git(&p.dir, &["commit", "-qm", "one"]);
        std::fs::write(p.dir.join("a.txt"), "one\ntwo\n").unwrap();
        p
    }

    /// The user's settings file (`$XDG_CONFIG_HOME/harness9/config.toml`).
    fn user_settings(&self, text: &str) {
        std::fs::write(self.home.join("config/harness9/config.toml"), text).unwrap();
    }

    /// `[permissions] shell = MODE` in the user's settings.
    fn shell(&self, mode: &str) {
        self.user_settings(&format!("[permissions]\nshell = \"{mode}\"\n"));
    }

    /// Everything of this project (and its home) owned by `uid`, so that harness9 run as
    /// that user can work in it.
    fn chown(&self, uid: u32) {
        for root in [&self.dir, &self.home] {
            chown_all(root, uid);
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn chown_all(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if std::fs::symlink_metadata(path).unwrap().is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            chown_all(&e.unwrap().path(), uid);
        }
    }
}

/// `git ARGS` in `dir` (no user or system config), which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir);
    let out = output_within(cmd, None, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Who runs harness9.
#[derive(Clone, Copy, PartialEq, Eq)]
enum As {
    /// The suite's own user.
    Me,
    /// uid and gid 65534 (through `setpriv` when the suite runs as root; the suite's own
    /// user, who is not root either, otherwise).
    Nobody,
    /// The suite's own user under a seccomp policy that refuses `unshare` (a container's:
    /// no namespaces), through the program at this path ([`no_unshare`]).
    NoNamespaces(&'static str),
}

/// Whether the suite runs as root.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The results of one `harness9 run -p` in `p` whose model calls `bash` with each command in
/// turn (ids `c0`, `c1`, ...): each call's output, in order.
fn run_bash(tag: &str, p: &Project, commands: &[&str], who: As) -> Vec<String> {
    let mut steps: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"tool_calls": [{"id": format!("c{i}"), "name": "bash", "input": {"command": c}}]})
        })
        .collect();
    steps.push(json!({"text": "done"}));
    let model = Model::start(tag, json!({ "steps": steps }));
    let mut cmd = if who == As::Nobody && root() {
        p.chown(65534);
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_harness9"));
        c
    } else if let As::NoNamespaces(wrapper) = who {
        let mut c = Command::new(wrapper);
        c.arg(env!("CARGO_BIN_EXE_harness9"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_harness9"))
    };
    without_user_env(&mut cmd);
    cmd.args(["--approve-project", "run", "-p", "go", "--json"])
        .args(["--allowed-tools", "bash"])
        .current_dir(&p.dir)
        .env("HOME", &p.home)
        .env("XDG_CONFIG_HOME", p.home.join("config"))
        .env("HARNESS9_APPROVALS", p.home.join("approvals.json"))
        .env("HARNESS9_SESSIONS", p.home.join("sessions"))
        .env("HARNESS9_TOOL_CACHE", p.home.join("tool-cache"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url);
    let out = output_within(cmd, None, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (0..commands.len())
        .map(|i| {
            let id = format!("c{i}");
            events
                .iter()
                .find(|e| e["event"] == "tool_result" && e["id"] == id.as_str())
                .and_then(|e| e["output"].as_str())
                .unwrap_or_else(|| panic!("no result for {id}\n{stdout}\n{stderr}"))
                .to_owned()
        })
        .collect()
}

/// A C program that runs its arguments under a seccomp filter refusing `unshare` with `EPERM`,
/// as a container's default policy does.
const NO_UNSHARE_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <errno.h>
int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("no-unshare");
        return 125;
    }
    execv(argv[1], argv + 1);
    perror("no-unshare: exec");
    return 126;
}
"#;

/// The [`NO_UNSHARE_C`] program, compiled once for the suite.
pub(super) fn no_unshare() -> &'static str {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = temp_path("no-unshare");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("no_unshare.c");
        std::fs::write(&src, NO_UNSHARE_C).unwrap();
        let bin = dir.join("no_unshare");
        let mut cc = Command::new("cc");
        cc.arg("-o").arg(&bin).arg(&src);
        let out = output_within(cc, None, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin.display().to_string()
    })
}

/// Every file under `dir` with its bytes, sorted: a snapshot to compare.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                _ => out.push((path.clone(), std::fs::read(&path).unwrap_or_default())),
            }
        }
    }
    out.sort();
    out
}

/// The commands a prompt-injected model would run to plant something the user's next git
/// command runs outside the sandbox: a hook, `core.fsmonitor`, a swapped `.git`.
const PLANT_HOOK: &str =
    "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch planted\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo planted-hook";
const PLANT_CONFIG: &str =
    "printf '[core]\\n\\tfsmonitor = touch planted\\n' >> .git/config && echo planted-config";
const SWAP_GIT: &str = "mv .git .git-old && mkdir .git && echo swapped";
const REMOVE_GIT: &str = "rm -rf .git 2>/dev/null; test -e .git/HEAD && echo still-there";
const WORK: &str = "mkdir -p src && echo hi > src/x.txt && git status --short && git diff --stat && echo work-done";

#[test]
fn the_sandboxed_shell_cannot_write_git_but_works_in_the_project() {
    let p = Project::git("shell-git");
    let before = snapshot(&p.dir.join(".git"));
    let out = run_bash(
        "shell-git",
        &p,
        &[PLANT_HOOK, PLANT_CONFIG, SWAP_GIT, REMOVE_GIT, WORK],
        As::Me,
    );
    for (i, said) in out[..3].iter().enumerate() {
        assert!(
            !said.contains("planted-") && !said.contains("swapped"),
            "c{i}: {said}"
        );
        assert!(
            said.contains("Read-only file system") || said.contains("Device or resource busy"),
            "c{i}: {said}"
        );
        assert!(
            said.contains("note: the sandbox keeps") && said.contains(".git"),
            "c{i}: {said}"
        );
    }
    assert!(out[3].contains("still-there"), "{}", out[3]);
    assert_eq!(
        snapshot(&p.dir.join(".git")),
        before,
        "the shell changed .git"
    );
    assert!(!p.dir.join(".git-old").exists());
    // The same run edits sources and reads the repository.
    let work = &out[4];
    assert!(
        work.contains(" M a.txt")
            && work.contains("?? src/")
            && work.contains("1 file changed")
            && work.contains("work-done")
            && work.ends_with("exit code 0"),
        "{work}"
    );
    assert_eq!(
        std::fs::read_to_string(p.dir.join("src/x.txt")).unwrap(),
        "hi\n"
    );
}

#[test]
fn with_the_shell_sandbox_off_the_same_commands_write_git() {
    let p = Project::git("shell-git-off");
    p.shell("off");
    let out = run_bash("shell-git-off", &p, &[PLANT_HOOK, PLANT_CONFIG], As::Me);
    assert!(out[0].contains("planted-hook"), "{}", out[0]);
    assert!(out[1].contains("planted-config"), "{}", out[1]);
    assert!(p.dir.join(".git/hooks/pre-commit").exists());
    let config = std::fs::read_to_string(p.dir.join(".git/config")).unwrap();
    assert!(config.contains("fsmonitor = touch planted"), "{config}");
}

#[test]
fn a_git_file_pointer_stays_read_only_too() {
    // The project is a worktree of a repository elsewhere: its `.git` is a file the shell
    // could otherwise replace by a folder of its own (with hooks and a config).
    let main = Project::git("shell-main-repo");
    let p = Project::new("shell-worktree");
    std::fs::remove_dir(&p.dir).unwrap();
    git(
        &main.dir,
        &["worktree", "add", "-q", &p.dir.display().to_string()],
    );
    let pointer = std::fs::read_to_string(p.dir.join(".git")).unwrap();
    let out = run_bash(
        "shell-worktree",
        &p,
        &[
            "rm -f .git; mkdir -p .git/hooks && echo replaced",
            "echo 'gitdir: /tmp/elsewhere' > .git && echo rewritten",
            "git status --short && echo work-done",
        ],
        As::Me,
    );
    assert!(!out[0].contains("replaced"), "{}", out[0]);
    assert!(!out[1].contains("rewritten"), "{}", out[1]);
    assert!(out[2].contains("work-done"), "{}", out[2]);
    assert_eq!(
        std::fs::read_to_string(p.dir.join(".git")).unwrap(),
        pointer
    );
}

#[test]
fn read_only_writes_only_its_temp_dir() {
    let p = Project::new("shell-ro");
    p.shell("read-only");
    let out = run_bash(
        "shell-ro",
        &p,
        &[
            "echo x > here.txt && echo wrote-project",
            "echo y > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo wrote-temp",
        ],
        As::Me,
    );
    assert!(
        !out[0].contains("wrote-project") && out[0].contains("Permission denied"),
        "{}",
        out[0]
    );
    assert!(!p.dir.join("here.txt").exists());
    assert!(out[1].contains("y\nwrote-temp"), "{}", out[1]);
    // The same write to the project under the default.
    p.shell("workspace-write");
    let out = run_bash(
        "shell-ro-default",
        &p,
        &["echo x > here.txt && echo wrote-project"],
        As::Me,
    );
    assert!(out[0].contains("wrote-project"), "{}", out[0]);
}

/// A bash command that connects to `addr` over TCP (bash's `/dev/tcp`).
fn tcp(port: u16) -> String {
    format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
}

/// A command that connects to the unix socket at `path` (python3).
fn unix(path: &Path) -> String {
    format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('unix-connected')\"",
        path.display()
    )
}

#[test]
fn network_reaches_a_loopback_listener_where_workspace_write_cannot_and_no_unix_socket() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let sockdir = temp_path("shell-net-sock");
    std::fs::create_dir_all(&sockdir).unwrap();
    let sock = sockdir.join("s.sock");
    let unix_listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    unix_listener.set_nonblocking(true).unwrap();
    let accepted = |l: &std::net::TcpListener| l.accept().is_ok();

    let p = Project::new("shell-net");
    let out = run_bash("shell-net-default", &p, &[&tcp(port)], As::Me);
    assert!(!out[0].contains("connected\n"), "{}", out[0]);
    assert!(!accepted(&listener), "workspace-write reached the listener");

    p.shell("network");
    let out = run_bash("shell-net", &p, &[&tcp(port), &unix(&sock)], As::Me);
    assert!(out[0].contains("connected\n"), "{}", out[0]);
    assert!(
        poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            accepted(&listener)
        }),
        "the listener saw no connection"
    );
    assert!(
        !out[1].contains("unix-connected") && out[1].contains("Permission denied"),
        "{}",
        out[1]
    );
    assert!(unix_listener.accept().is_err(), "a unix socket was reached");
    // Without the sandbox the unix socket is reachable: the refusal is the sandbox's.
    p.shell("off");
    let out = run_bash("shell-net-off", &p, &[&unix(&sock)], As::Me);
    assert!(out[0].contains("unix-connected"), "{}", out[0]);
    let _ = std::fs::remove_dir_all(&sockdir);
}

/// A C program that tries, and reports, each system call the seccomp filter decides on:
/// io_uring, a 32-bit `int 0x80` call, an x32 call, a plain one, and sockets of each family.
const PROBE_C: &str = r#"
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <linux/netlink.h>
static void say(const char *what, long r) {
    if (r < 0) printf("%s: %s\n", what, strerror(errno)); else printf("%s: ok\n", what);
}
int main(void) {
    char params[120];
    memset(params, 0, sizeof params);
    long r = syscall(425 /* io_uring_setup */, 1, params);
    say("io_uring_setup", r);
    if (r >= 0) close((int)r);
    r = syscall(426 /* io_uring_enter */, -1, 0, 0, 0, 0, 0);
    say("io_uring_enter", r);
#if defined(__x86_64__)
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20 /* i386 getpid */) : "memory");
    if (r < 0) { errno = (int)-r; r = -1; }
    say("int80_getpid", r);
    r = syscall(39 | 0x40000000 /* x32 getpid */);
    say("x32_getpid", r);
#endif
    say("getpid", syscall(SYS_getpid));
    int sv[2];
    say("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    say("netlink", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
    say("inet", socket(AF_INET, SOCK_STREAM, 0));
    say("inet6", socket(AF_INET6, SOCK_DGRAM, 0));
    say("unix", socket(AF_UNIX, SOCK_STREAM, 0));
    say("packet", socket(17 /* AF_PACKET */, SOCK_DGRAM, 0));
    return 0;
}
"#;

/// The probe's report for `name`: `ok` or the error text.
fn probe_line<'a>(said: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    said.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name} line: {said}"))
}

#[test]
fn seccomp_refuses_io_uring_foreign_abis_and_sockets_as_it_says() {
    let p = Project::new("shell-seccomp");
    let src = p.dir.join("probe.c");
    std::fs::write(&src, PROBE_C).unwrap();
    let mut cc = Command::new("cc");
    cc.arg("-O0").arg("-o").arg(p.dir.join("probe")).arg(&src);
    let built = output_within(cc, None, Duration::from_secs(60));
    assert!(
        built.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let x86 = cfg!(target_arch = "x86_64");
    let eperm = "Operation not permitted";
    let eacces = "Permission denied";
    // Outside the sandbox: every call gets through (x32 may be off in the kernel: ENOSYS).
    p.shell("off");
    let off = run_bash("shell-seccomp-off", &p, &["./probe"], As::Me).remove(0);
    for name in ["getpid", "socketpair", "netlink", "inet", "inet6", "unix"] {
        assert_eq!(probe_line(&off, name), "ok", "{name}: {off}");
    }
    assert_ne!(probe_line(&off, "io_uring_enter"), eperm, "{off}");
    if x86 {
        assert_eq!(probe_line(&off, "int80_getpid"), "ok", "{off}");
        assert_ne!(probe_line(&off, "x32_getpid"), eperm, "{off}");
    }
    // Network off (the default) and on: io_uring and foreign ABIs refused; a plain call and
    // socketpair allowed; sockets by family.
    for (mode, net) in [("workspace-write", false), ("network", true)] {
        p.shell(mode);
        let said = run_bash(&format!("shell-seccomp-{mode}"), &p, &["./probe"], As::Me).remove(0);
        assert_eq!(probe_line(&said, "io_uring_setup"), eperm, "{mode}: {said}");
        assert_eq!(probe_line(&said, "io_uring_enter"), eperm, "{mode}: {said}");
        if x86 {
            assert_eq!(probe_line(&said, "int80_getpid"), eperm, "{mode}: {said}");
            assert_eq!(probe_line(&said, "x32_getpid"), eperm, "{mode}: {said}");
        }
        assert_eq!(probe_line(&said, "getpid"), "ok", "{mode}: {said}");
        assert_eq!(probe_line(&said, "socketpair"), "ok", "{mode}: {said}");
        let want = if net { "ok" } else { eacces };
        for name in ["netlink", "inet", "inet6"] {
            assert_eq!(probe_line(&said, name), want, "{mode} {name}: {said}");
        }
        for name in ["unix", "packet"] {
            assert_eq!(probe_line(&said, name), eacces, "{mode} {name}: {said}");
        }
    }
}

/// The capability sets of `/proc/self/status` in `said`: (name, bits).
fn caps(said: &str) -> Vec<(String, u64)> {
    said.lines()
        .filter_map(|l| l.trim().strip_prefix("Cap"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.to_owned(), u64::from_str_radix(v.trim(), 16).ok()?)))
        .collect()
}

#[test]
fn the_sandboxed_shell_has_no_capability_as_root_or_as_another_user() {
    // A repository, so that the shell's `.git` carve-out runs (as a non-root user in a user
    // namespace, which hands out a full set of capabilities inside it).
    for who in [As::Nobody, As::Me] {
        let p = Project::git("shell-caps");
        let out = run_bash(
            "shell-caps",
            &p,
            // Read by bash itself: the sandbox lets a process read only its own /proc entry.
            &["while IFS= read -r l; do case $l in Cap*) echo \"$l\";; esac; done < /proc/self/status; id -u; echo x >> .git/config"],
            who,
        );
        let got = caps(&out[0]);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        for want in ["Eff", "Prm", "Bnd", "Amb"] {
            assert!(names.contains(&want), "no Cap{want}: {}", out[0]);
        }
        assert!(got.iter().all(|(_, b)| *b == 0), "{}", out[0]);
        if who == As::Nobody && root() {
            assert!(out[0].contains("\n65534\n"), "{}", out[0]);
        }
        // And the carve-out held.
        assert!(out[0].contains("Read-only file system"), "{}", out[0]);
    }
}

#[test]
fn without_namespaces_the_shell_refuses_to_run_with_git_writable() {
    let wrapper = no_unshare();
    let p = Project::git("shell-no-ns");
    let out = run_bash(
        "shell-no-ns",
        &p,
        &[&format!("{PLANT_HOOK}; echo ran > ran.txt")],
        As::NoNamespaces(wrapper),
    );
    assert!(
        out[0].starts_with(&format!(
            "tool \"bash\": the shell's sandbox cannot keep {}/.git read-only, so the command did not run: ",
            std::fs::canonicalize(&p.dir).unwrap().display()
        )) && out[0].contains("Operation not permitted")
            && out[0].contains("shell = \"read-only\"")
            && out[0].contains("\"off\" under [permissions] in your own settings file ("),
        "{}",
        out[0]
    );
    assert!(!p.dir.join("ran.txt").exists(), "the command ran");
    assert!(!p.dir.join(".git/hooks/pre-commit").exists());
    // Nothing to protect (no repository): the command runs, confined as before.
    let plain = Project::new("shell-no-ns-plain");
    let out = run_bash(
        "shell-no-ns-plain",
        &plain,
        &["echo ran > ran.txt && echo ran"],
        As::NoNamespaces(wrapper),
    );
    assert!(out[0].contains("ran\nexit code 0"), "{}", out[0]);
    // And with the shell read-only, which writes nothing of the project.
    p.shell("read-only");
    let out = run_bash(
        "shell-no-ns-ro",
        &p,
        &["git status --short && echo read"],
        As::NoNamespaces(wrapper),
    );
    assert!(out[0].contains("read\nexit code 0"), "{}", out[0]);
}
