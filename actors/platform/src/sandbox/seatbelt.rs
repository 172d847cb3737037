//! The Seatbelt profile (SBPL) of a sandboxed child on macOS, generated from its [`Rules`]: a
//! pure function, compiled on every target so its tests run on Linux too. `macos.rs` runs the
//! child under `sandbox-exec -p PROFILE -D NAME=PATH ... -- program args`; every path reaches
//! the profile as a `-D` parameter (`(param "W0")`), never spliced into its text, so no path
//! can change the profile's meaning.
//!
//! What the profile keeps (README's Sandbox section, promise by promise):
//! - closed by default (`(deny default)`): whatever is not allowed below is refused;
//! - read and execute anywhere; no reading of other processes: their information and their
//!   arguments and environment (`kern.procargs`, where harness9's API keys are) are refused,
//!   only the sandbox's own processes can be inspected (macOS has no `/proc`);
//! - write only the child's `cwd` (when given), its scratch directory, the device files of
//!   [`DEVICES`] and the listed paths: not the shared temp directories, not a terminal, no
//!   POSIX shared memory (the `/dev/shm` of macOS: a place to plant things for others);
//! - but never the read-only paths ([`Rules::read_only`]: a project's `.git`, the configs
//!   harness9 reads), nor anything under them: denied after the allows (Seatbelt's last
//!   matching rule wins), which also refuses renaming or removing them;
//! - no unix socket, network on or off; network off: no socket at all; network on: TCP and
//!   UDP, plus the one unix socket address lookups need on macOS, the system resolver's
//!   (`/private/var/run/mDNSResponder`), and the system services TLS and DNS use;
//! - no signal to, and no inspection of, a process outside the sandbox;
//! - only a short list of system services (Mach lookups): not Launch Services, so no `open`
//!   of an application that would run outside the sandbox.
//!
//! There is no capability on macOS to drop, and the profile follows every exec (a setuid
//! program runs under it too, root included).

use std::path::PathBuf;

use super::{Rules, DEVICES};

/// A profile and the values of its parameters (`-D NAME=VALUE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The SBPL text.
    pub text: String,
    /// Each parameter's name and path.
    pub params: Vec<(String, PathBuf)>,
}

/// System services a sandboxed program may look up: user and group names, the system log,
/// the per-user temp directory lookup, power assertions.
const SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.bsd.dirhelper",
    "com.apple.PowerManagement.control",
];

/// System services a program on the network needs: DNS and network configuration, TLS
/// certificate checks.
const NETWORK_SERVICES: &[&str] = &[
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.dnssd.service",
    "com.apple.networkd",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
    "com.apple.ocspd",
];

/// The system resolver's socket: the one unix socket a program on the network may reach.
pub const RESOLVER_SOCKET: &str = "/private/var/run/mDNSResponder";

/// The profile of a child with `rules`, whose paths are already resolved (no symlink in
/// them: Seatbelt matches the real path of what is opened).
pub fn profile(rules: &Rules<'_>) -> Profile {
    let mut params: Vec<(String, PathBuf)> = Vec::new();
    let mut writable: Vec<String> = Vec::new();
    let mut add = |name: String, path: &std::path::Path| {
        writable.push(format!("(subpath (param \"{name}\"))"));
        params.push((name, path.to_path_buf()));
    };
    if let Some(cwd) = rules.cwd {
        add("CWD".to_owned(), cwd);
    }
    add("SCRATCH".to_owned(), rules.scratch);
    for (i, w) in rules.writable.iter().enumerate() {
        add(format!("W{i}"), w);
    }
    // `subpath` matches the path itself and what it holds: a file or a folder alike.
    let mut read_only: Vec<String> = Vec::new();
    for (i, r) in rules.read_only.iter().enumerate() {
        let name = format!("R{i}");
        read_only.push(format!("(subpath (param \"{name}\"))"));
        params.push((name, r.to_path_buf()));
    }

    let mut t = String::from(
        "(version 1)\n\
         ; closed by default: what is not allowed below is refused\n\
         (deny default)\n\
         \n\
         ; read and execute anywhere\n\
         (allow file-read*)\n\
         (allow process-exec)\n\
         (allow process-fork)\n\
         \n\
         ; other processes: no signal, no inspection, not their arguments or environment\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow sysctl-read (require-not (sysctl-name-prefix \"kern.procargs\")))\n\
         \n\
         ; what ordinary programs need of the system\n\
         (allow user-preference-read)\n\
         (allow mach-host*)\n\
         (allow ipc-posix-sem)\n\
         (allow iokit-open (iokit-registry-entry-class \"RootDomainUserClient\"))\n\
         (allow pseudo-tty)\n\
         (allow file-read* file-write* file-ioctl (literal \"/dev/ptmx\"))\n\
         (allow file-read* file-write* file-ioctl\n  \
           (require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))\n",
    );
    t.push_str("(allow mach-lookup");
    for s in SERVICES {
        t.push_str(&format!("\n  (global-name \"{s}\")"));
    }
    t.push_str(")\n\n; write: the device files, its own descriptors, and its writable set\n");
    t.push_str("(allow file-write-data file-ioctl");
    for d in DEVICES {
        t.push_str(&format!("\n  (literal \"{d}\")"));
    }
    t.push_str("\n  (regex #\"^/dev/fd/[0-9]+$\"))\n");
    t.push_str("(allow file-write*");
    for w in &writable {
        t.push_str("\n  ");
        t.push_str(w);
    }
    t.push_str(")\n");
    if rules.network {
        t.push_str(
            "\n; network: TCP and UDP, the system resolver; never another unix socket\n\
             (allow network-outbound (remote ip))\n\
             (allow network-inbound (local ip))\n\
             (allow network-bind (local ip))\n",
        );
        t.push_str(&format!(
            "(allow network-outbound (literal \"{RESOLVER_SOCKET}\"))\n"
        ));
        t.push_str("(allow mach-lookup");
        for s in NETWORK_SERVICES {
            t.push_str(&format!("\n  (global-name \"{s}\")"));
        }
        t.push_str(")\n");
    } else {
        t.push_str("\n; offline: no socket of any kind\n");
    }
    // Last, so that no allow comes after it (the last matching rule wins).
    if !read_only.is_empty() {
        t.push_str("\n; read-only inside the writable set\n");
        t.push_str("(deny file-write*");
        for r in &read_only {
            t.push_str("\n  ");
            t.push_str(r);
        }
        t.push_str(")\n");
    }
    Profile { text: t, params }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn rules<'a>(cwd: Option<&'a Path>, writable: &'a [PathBuf], network: bool) -> Rules<'a> {
        Rules {
            cwd,
            scratch: Path::new("/private/var/folders/x/T/harness9-sbx-1"),
            writable,
            network,
            read_only: &[],
        }
    }

    /// The profile without its comments.
    fn rules_text(p: &Profile) -> String {
        p.text
            .lines()
            .filter(|l| !l.starts_with(';'))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The profile's forms that start with `head` (`(allow `, `(deny `), in order, each to
    /// where its parentheses balance.
    fn forms<'a>(p: &'a Profile, head: &str) -> Vec<&'a str> {
        let t = &p.text;
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(i) = t[from..].find(head) {
            let start = from + i;
            let mut depth = 0;
            let mut end = start;
            for (j, c) in t[start..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = start + j + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push(&t[start..end]);
            from = end.max(start + 1);
        }
        out
    }

    /// The profile's rules that allow `op` (each `(allow ...)` form whose operations name it).
    fn allows<'a>(p: &'a Profile, op: &str) -> Vec<&'a str> {
        forms(p, "(allow ")
            .into_iter()
            .filter(|form| {
                let head = form[7..].split(['(', ')', '\n']).next().unwrap_or("");
                head.split_whitespace().any(|o| o == op)
            })
            .collect()
    }

    #[test]
    fn it_is_closed_by_default() {
        let p = profile(&rules(None, &[], false));
        assert!(p.text.starts_with("(version 1)\n"));
        assert_eq!(p.text.matches("(deny default)").count(), 1);
        // Nothing is allowed wholesale but reading and running programs.
        for line in p.text.lines() {
            if line.starts_with("(allow ") && line.ends_with(')') && !line.contains(" (") {
                assert!(
                    [
                        "(allow file-read*)",
                        "(allow process-exec)",
                        "(allow process-fork)",
                        "(allow user-preference-read)",
                        "(allow mach-host*)",
                        "(allow ipc-posix-sem)",
                        "(allow pseudo-tty)",
                    ]
                    .contains(&line),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn promise_read_and_execute_anywhere() {
        let p = profile(&rules(None, &[], false));
        assert_eq!(allows(&p, "file-read*")[0], "(allow file-read*)");
        assert_eq!(allows(&p, "process-exec"), vec!["(allow process-exec)"]);
        assert_eq!(allows(&p, "process-fork"), vec!["(allow process-fork)"]);
    }

    #[test]
    fn promise_no_reading_other_processes() {
        let p = profile(&rules(None, &[], true));
        assert_eq!(
            allows(&p, "process-info*"),
            vec!["(allow process-info* (target same-sandbox))"]
        );
        assert_eq!(
            allows(&p, "sysctl-read"),
            vec!["(allow sysctl-read (require-not (sysctl-name-prefix \"kern.procargs\")))"]
        );
        // No task port of another process (the ptrace of macOS).
        assert!(!p.text.contains("mach-priv-task-port"));
        assert!(!p.text.contains("mach-task-name"));
    }

    #[test]
    fn promise_writes_only_cwd_scratch_devices_and_listed_paths() {
        let extra = [PathBuf::from("/Users/u/.npm"), PathBuf::from("/a \"b\")")];
        let cwd = Path::new("/Users/u/proj");
        let p = profile(&rules(Some(cwd), &extra, false));
        assert_eq!(
            allows(&p, "file-write*"),
            vec![
                "(allow file-read* file-write* file-ioctl (literal \"/dev/ptmx\"))",
                "(allow file-read* file-write* file-ioctl\n  (require-all (regex #\"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\")))",
                "(allow file-write*\n  (subpath (param \"CWD\"))\n  (subpath (param \"SCRATCH\"))\n  (subpath (param \"W0\"))\n  (subpath (param \"W1\")))",
            ]
        );
        assert_eq!(
            p.params,
            vec![
                ("CWD".to_owned(), cwd.to_path_buf()),
                (
                    "SCRATCH".to_owned(),
                    PathBuf::from("/private/var/folders/x/T/harness9-sbx-1")
                ),
                ("W0".to_owned(), extra[0].clone()),
                ("W1".to_owned(), extra[1].clone()),
            ]
        );
        // A path never enters the text (a quote in it changes nothing).
        assert!(!p.text.contains("/Users/u"));
        assert!(!p.text.contains("\"b\""));
        // The device files, and the child's own descriptors, by data only.
        let data = allows(&p, "file-write-data");
        assert_eq!(data.len(), 1);
        for d in DEVICES {
            assert!(data[0].contains(&format!("(literal \"{d}\")")), "{d}");
        }
        assert!(data[0].contains("(regex #\"^/dev/fd/[0-9]+$\")"));
    }

    #[test]
    fn promise_no_cwd_means_harness9s_directory_is_not_writable() {
        let p = profile(&rules(None, &[], false));
        assert!(!p.text.contains("CWD"));
        assert_eq!(p.params.len(), 1);
        assert_eq!(p.params[0].0, "SCRATCH");
    }

    #[test]
    fn promise_not_the_shared_temp_dirs_a_terminal_or_shared_memory() {
        let p = profile(&rules(None, &[], true));
        for shared in ["/tmp", "/private/tmp", "/var/tmp", "/private/var/folders"] {
            assert!(!p.text.contains(shared), "{shared}");
        }
        assert!(!p.text.contains("/dev/tty\""));
        // Terminals only through a pty the sandbox made itself (its extension).
        assert!(!p.text.contains("(regex #\"^/dev/ttys[0-9]+$\"))"));
        assert!(!p.text.contains("ipc-posix-shm"));
    }

    #[test]
    fn promise_no_unix_socket_and_no_network_when_off() {
        let p = profile(&rules(None, &[], false));
        for op in [
            "network-outbound",
            "network-inbound",
            "network-bind",
            "network*",
            "system-socket",
        ] {
            assert!(allows(&p, op).is_empty(), "{op}");
        }
        assert!(!rules_text(&p).contains("network"));
        assert!(!rules_text(&p).contains("unix"));
    }

    #[test]
    fn promise_network_on_is_tcp_udp_and_the_resolver_only() {
        let p = profile(&rules(None, &[], true));
        assert_eq!(
            allows(&p, "network-outbound"),
            vec![
                "(allow network-outbound (remote ip))",
                "(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))",
            ]
        );
        assert_eq!(
            allows(&p, "network-inbound"),
            vec!["(allow network-inbound (local ip))"]
        );
        assert_eq!(
            allows(&p, "network-bind"),
            vec!["(allow network-bind (local ip))"]
        );
        assert!(!rules_text(&p).contains("unix"));
        assert!(allows(&p, "system-socket").is_empty());
        assert!(allows(&p, "network*").is_empty());
    }

    #[test]
    fn promise_no_signal_outside_the_sandbox() {
        let p = profile(&rules(None, &[], true));
        assert_eq!(
            allows(&p, "signal"),
            vec!["(allow signal (target same-sandbox))"]
        );
    }

    #[test]
    fn promise_no_system_service_that_runs_things_outside() {
        for network in [false, true] {
            let p = profile(&rules(None, &[], network));
            let lookups = allows(&p, "mach-lookup").join("\n");
            assert!(!lookups.contains("launchservicesd"));
            assert!(!lookups.contains("lsd"));
            assert!(!p.text.contains("(allow mach-lookup)"));
            let names = lookups.matches("(global-name ").count();
            let want = SERVICES.len() + if network { NETWORK_SERVICES.len() } else { 0 };
            assert_eq!(names, want, "{lookups}");
            // The network's services only with the network.
            assert_eq!(lookups.contains("DNSConfiguration"), network);
        }
    }

    /// The profile's `(deny ...)` forms, in order.
    fn denies(p: &Profile) -> Vec<String> {
        forms(p, "(deny ").into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn promise_read_only_paths_are_denied_after_every_allow() {
        let cwd = Path::new("/Users/u/proj");
        let ro = [
            PathBuf::from("/Users/u/proj/.git"),
            PathBuf::from("/Users/u/proj/harness9.toml"),
        ];
        for network in [false, true] {
            let mut r = rules(Some(cwd), &[], network);
            r.read_only = &ro;
            let p = profile(&r);
            assert_eq!(
                denies(&p),
                vec![
                    "(deny default)".to_owned(),
                    "(deny file-write*\n  (subpath (param \"R0\"))\n  (subpath (param \"R1\")))"
                        .to_owned(),
                ]
            );
            // Seatbelt's last match wins: nothing is allowed after the deny.
            let deny_at = p.text.find("(deny file-write*").expect("the deny");
            assert!(!p.text[deny_at..].contains("(allow"), "{}", p.text);
            assert_eq!(
                &p.params[2..],
                &[
                    ("R0".to_owned(), ro[0].clone()),
                    ("R1".to_owned(), ro[1].clone()),
                ]
            );
            assert!(!p.text.contains("/Users/u"));
        }
        // None: no deny at all.
        let p = profile(&rules(Some(cwd), &[], false));
        assert_eq!(denies(&p), vec!["(deny default)".to_owned()]);
    }

    #[test]
    fn the_parentheses_balance() {
        for network in [false, true] {
            let ro = [PathBuf::from("/p/.git")];
            let w = [PathBuf::from("/w")];
            let mut r = rules(Some(Path::new("/p")), &w, network);
            r.read_only = &ro;
            let p = profile(&r);
            let mut depth = 0i32;
            let mut in_string = false;
            for c in p.text.chars() {
                match c {
                    '"' => in_string = !in_string,
                    '(' if !in_string => depth += 1,
                    ')' if !in_string => {
                        depth -= 1;
                        assert!(depth >= 0, "{}", p.text);
                    }
                    _ => {}
                }
            }
            assert_eq!(depth, 0, "{}", p.text);
            assert!(!in_string);
        }
    }
}
