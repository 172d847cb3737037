//! Approval of project configs: a `.mcp.json` found in the working directory (not given with
//! `--config`) runs nothing until the user approves its servers. A server is approved by the
//! SHA-256 of a canonical form of its exact spec (transport, command, args, env keys and values,
//! cwd, url, header names) and of the content of the repository's files it executes (its
//! program, the scripts its arguments name), so a changed spec or script asks again. A
//! `--config` server that runs such files is recorded at its first start and asks once they
//! change ([`hold_changed_given`]). Approvals live in a private (0600)
//! JSON file: `$HARNESS9_APPROVALS`, else `$XDG_STATE_HOME/harness9/approvals.json`
//! (`~/.local/state/...`), keyed by the config file's canonical path, the server's name and the
//! spec's hash. An unapproved server's spec gets `Hold::Unapproved`: the supervisor shows it and
//! never spawns it.
//!
//! A file a sandboxed server may write is not the user's word any more: when a sandbox grant
//! (`cwd`, `writable`) of any server of the loaded configs covers a config file (`--config`,
//! the project's, the user's `mcp.json`) or a settings file (`harness9.toml`,
//! `config.toml`), that file is marked "exposed" in the approvals store, for good. An exposed
//! config's servers are held to approval like a project config's; an exposed settings file
//! (it sets the sandbox default) holds every config's servers. A grant that covers the
//! approvals store itself keeps its server from starting (it could approve anything).

use std::path::Path;

use harness9_actors::spec::shell_quote;
use harness9_actors::{Hold, Pinned, ServerSpec, TransportSpec};

use crate::config::{self, Config};

mod exposed;
mod files;
mod fingerprint;
mod protected;
mod store;

pub use exposed::{guard, sandbox_grants, writable_by_sandbox, Files};
pub use files::{
    entry_path, files_in, found_program, project_roots, repository_root, resolved_cwd,
    resolved_program,
};
use fingerprint::{approvable, awaiting_transport, fingerprint_pinned};
pub use fingerprint::{content_hash, fingerprint, shown};
pub use protected::{list as protected_list, protected, Sources};
pub use store::{config_key, store_path, Approvals, ENV};

/// Holds (`Hold::Unapproved`) every server of the project config `config` that is not approved
/// as it is; with `approve_all`, approves them first (and saves). A held server shows its
/// written form (its transport as the file writes it: no `${VAR}` value of the user's is put
/// in), and the inputs only unapproved servers use are not asked for. Invalid entries stay as
/// they are, except one held only for a value of the user's: it waits for approval first. An
/// approvals file that cannot be read holds every server (nothing runs unasked).
pub fn hold_unapproved(config: &mut Config, approve_all: bool) -> anyhow::Result<()> {
    let all = vec![true; config.servers.len()];
    hold_unapproved_of(config, approve_all, &all)
}

/// Whether stdio server `spec` of the config at `config_path` runs a file of the repository:
/// its program or a file an argument names, inside [`project_roots`].
pub fn runs_repository_files(config_path: &Path, spec: &ServerSpec) -> bool {
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = &spec.transport
    else {
        return false;
    };
    let dir = resolved_cwd(cwd.as_deref());
    let program = found_program(command, env, &dir);
    project_roots(config_path)
        .iter()
        .any(|root| !files_in(root, program.as_deref(), args, &dir).is_empty())
}

/// A `--config` file is the user's own word, but what a server of it runs inside the
/// repository (its program, a script it is handed: [`runs_repository_files`]) could be
/// rewritten by what works there (the agent's shell). Such a server is recorded as it is
/// (its [`fingerprint`], with those files' content) at its first start, and held to approval
/// ([`hold_unapproved`]) once it changes.
pub fn hold_changed_given(config: &mut Config, approve_all: bool) -> anyhow::Result<()> {
    let select: Vec<bool> = config
        .servers
        .iter()
        .map(|s| s.hold.is_none() && runs_repository_files(&config.path, s))
        .collect();
    if !select.contains(&true) {
        return Ok(());
    }
    let key = config_key(&config.path);
    // An approvals file that cannot be read records nothing: they are held (and it is said).
    let Ok(mut store) = Approvals::load(&store_path()) else {
        return hold_unapproved_of(config, approve_all, &select);
    };
    let mut first = false;
    for (s, _) in config.servers.iter().zip(&select).filter(|(_, on)| **on) {
        if !store
            .entries
            .iter()
            .any(|a| a.config == key && a.server == s.name)
        {
            store.approve(&key, &s.name, fingerprint(config, s));
            first = true;
        }
    }
    if first {
        store.save()?;
    }
    hold_unapproved_of(config, approve_all, &select)
}

/// [`hold_unapproved`] for the servers `select` marks (by index).
fn hold_unapproved_of(
    config: &mut Config,
    approve_all: bool,
    select: &[bool],
) -> anyhow::Result<()> {
    let key = config_key(&config.path);
    let mut store = match Approvals::load(&store_path()) {
        Ok(s) => s,
        Err(e) if !approve_all => {
            tracing::warn!("{e:#}; every server of {key} waits for approval");
            Approvals {
                path: store_path(),
                entries: Vec::new(),
                exposed: Vec::new(),
            }
        }
        Err(e) => return Err(e),
    };
    let (hashes, mut pins): (Vec<Option<String>>, Vec<Vec<Pinned>>) = config
        .servers
        .iter()
        .zip(select)
        .map(|(s, on)| {
            if *on && approvable(config, s) {
                let (h, p) = fingerprint_pinned(config, s);
                (Some(h), p)
            } else {
                (None, Vec::new())
            }
        })
        .unzip();
    if approve_all {
        let mut fresh = false;
        for (s, hash) in config.servers.iter().zip(&hashes) {
            if let Some(h) = hash
                .as_ref()
                .filter(|h| !store.is_approved(&key, &s.name, h))
            {
                store.approve(&key, &s.name, h.clone());
                fresh = true;
            }
        }
        if fresh {
            store.save()?;
        }
    }
    let mut held = Vec::new();
    for (i, hash) in hashes.iter().enumerate() {
        let Some(h) = hash else { continue };
        if store.is_approved(&key, &config.servers[i].name, h) {
            // Checked again before every start of it, restarts included.
            config.servers[i].pinned = std::mem::take(&mut pins[i]);
            continue;
        }
        let transport = awaiting_transport(config, &config.servers[i]);
        let line = shown(config, &config.servers[i]);
        let s = &mut config.servers[i];
        s.transport = transport;
        s.shown = Some(line);
        s.approval = Some(h.clone());
        s.hold = Some(Hold::Unapproved);
        held.push(s.name.clone());
    }
    // An input prompt is text the repository wrote: not shown for a server not approved.
    for i in &mut config.inputs {
        i.servers.retain(|n| !held.contains(n));
    }
    config.inputs.retain(|i| !i.servers.is_empty());
    Ok(())
}

/// Loads the config at `path`: `given` (with `--config`) is trusted as it is; otherwise it is
/// a project config and its unapproved servers are held (approved first with `approve_all`,
/// the `--approve-project` flag).
pub fn load(
    path: &Path,
    given: bool,
    approve_all: bool,
    defaults: &config::EntryDefaults,
) -> anyhow::Result<Config> {
    let mut cfg = config::load(path, given, defaults)?;
    if !given {
        hold_unapproved(&mut cfg, approve_all)?;
    }
    Ok(cfg)
}

/// One line per unapproved server of `config`: what it would run and how to approve it.
pub fn hints(config: &Config) -> Vec<String> {
    config
        .servers
        .iter()
        .filter(|s| s.hold == Some(Hold::Unapproved))
        .map(|s| {
            format!(
                "server {:?} not started: {} is a project config, or what the server runs inside the repository changed since it was approved, and this server is not approved; it would run: {}; approve it with `harness9 mcp approve {}` (with the same --config, if any; or run with --approve-project)",
                s.name,
                config.path.display(),
                shown(config, s),
                shell_quote(&s.name)
            )
        })
        .collect()
}

/// The `[mcp]` lines of [`hints`] a headless front end prints on stderr, only for server
/// `only` when given.
pub fn hint_lines(config: &Config, only: Option<&str>) -> Vec<String> {
    let held = config
        .servers
        .iter()
        .filter(|s| s.hold == Some(Hold::Unapproved));
    held.zip(hints(config))
        .filter(|(s, _)| only.is_none_or(|o| o == s.name))
        .map(|(_, line)| format!("[mcp] {line}"))
        .collect()
}

/// `text` with every control character written as an escape (`\u{1b}`): a config's strings
/// never reach the terminal raw.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Approves the servers `names` of the config at `path` (every server when empty) as they are
/// now, run from here (loaded with `defaults`, as a session loads it); returns one line per
/// server saying what was approved.
pub fn approve(
    path: &Path,
    names: &[String],
    defaults: &config::EntryDefaults,
) -> anyhow::Result<Vec<String>> {
    let cfg = config::load(path, true, defaults)?;
    for n in names {
        if !cfg.servers.iter().any(|s| s.name == *n) {
            let known: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
            anyhow::bail!(
                "no server named {n:?} in {} (servers: {})",
                path.display(),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    let key = config_key(path);
    let mut store = Approvals::load(&store_path())?;
    let mut out = Vec::new();
    for s in &cfg.servers {
        if !names.is_empty() && !names.contains(&s.name) {
            continue;
        }
        match &s.hold {
            Some(Hold::Invalid(e)) if !approvable(&cfg, s) => {
                out.push(format!("not approved {:?}: {}", s.name, visible(e)))
            }
            _ => {
                store.approve(&key, &s.name, fingerprint(&cfg, s));
                out.push(format!("approved {:?}: {}", s.name, shown(&cfg, s)));
            }
        }
    }
    if out.is_empty() {
        out.push(format!("no servers to approve in {}", path.display()));
        return Ok(out);
    }
    store.save()?;
    Ok(out)
}

/// Approves the servers `servers` (name, the approval key of the spec the user was shown:
/// [`ServerSpec::approval`]) of the config at `path` (the trust screen), or of the user's file
/// `user` for a server held there (a user file a sandboxed server may write: approved under
/// that file's key; the project's entry wins a name): each only if it is still exactly what
/// was shown (its fingerprint is the key), so a change made while the screen was open, even
/// in a value the screen does not show, is not approved; returns the names approved.
pub fn approve_shown(
    path: &Path,
    must_exist: bool,
    user: Option<&Path>,
    servers: &[(String, String)],
    defaults: &config::EntryDefaults,
) -> anyhow::Result<Vec<String>> {
    approve_shown_in(&store_path(), path, must_exist, user, servers, defaults)
}

/// [`approve_shown`] with the approvals kept at `store`.
fn approve_shown_in(
    store: &Path,
    path: &Path,
    must_exist: bool,
    user: Option<&Path>,
    servers: &[(String, String)],
    defaults: &config::EntryDefaults,
) -> anyhow::Result<Vec<String>> {
    let cfg = config::load(path, must_exist, defaults)?;
    let key = config_key(path);
    let user = match user {
        Some(u) => crate::config::sources::load_user(u, defaults)?.map(|c| (config_key(u), c)),
        None => None,
    };
    let mut store = Approvals::load(store)?;
    let mut done = Vec::new();
    for (name, line) in servers {
        let found = cfg
            .servers
            .iter()
            .find(|s| s.name == *name)
            .map(|s| (&key, &cfg, s))
            .or_else(|| {
                user.as_ref().and_then(|(k, c)| {
                    c.servers
                        .iter()
                        .find(|s| s.name == *name)
                        .map(|s| (k, c, s))
                })
            });
        match found {
            Some((key, cfg, s)) if approvable(cfg, s) && fingerprint(cfg, s) == *line => {
                store.approve(key, &s.name, line.clone());
                done.push(name.clone());
            }
            _ => tracing::warn!(server = %name, "changed since it was shown; not approved"),
        }
    }
    store.save()?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_base::path::resolved;

    /// The trust screen's race: between the screen and the yes, the repository rewrites the
    /// script its servers run (a value the screen does not show). What was shown is not what
    /// would run, so nothing is approved; shown again, the new form is.
    #[test]
    fn approving_what_was_shown_refuses_a_server_whose_script_changed_meanwhile() {
        let root = std::env::temp_dir().join(format!("h9-approve-shown-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join("server.py"), "print(1)").unwrap();
        let mcp = repo.join(".mcp.json");
        // The script by its absolute path: the unit test's working directory is not the repo.
        let script = std::fs::canonicalize(repo.join("server.py")).unwrap();
        let entries = serde_json::json!({"mcpServers": {
            "s": {"command": "python3", "args": [script]},
            "t": {"command": "python3", "args": ["-V"]},
        }});
        std::fs::write(&mcp, entries.to_string()).unwrap();
        let defaults = config::EntryDefaults::default();
        let shown = |defaults: &config::EntryDefaults| -> Vec<(String, String)> {
            let cfg = config::load(&mcp, true, defaults).unwrap();
            cfg.servers
                .iter()
                .map(|s| (s.name.clone(), fingerprint(&cfg, s)))
                .collect()
        };
        let first = shown(&defaults);
        std::fs::write(repo.join("server.py"), "import os; os.system('id')").unwrap();
        let store = root.join("approvals.json");
        let done = approve_shown_in(&store, &mcp, true, None, &first, &defaults).unwrap();
        assert_eq!(done, ["t"], "only the server whose files did not change");
        let saved = Approvals::load(&store).unwrap();
        let key = config_key(&mcp);
        assert!(!saved.is_approved(&key, "s", &first[0].1));
        let again = shown(&defaults);
        assert_ne!(
            again[0].1, first[0].1,
            "the script is part of what is approved"
        );
        let done = approve_shown_in(&store, &mcp, true, None, &again, &defaults).unwrap();
        assert_eq!(done, ["s", "t"]);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// The fingerprint of `spec` alone in a config.
    fn fp(spec: &ServerSpec) -> String {
        let cfg = Config {
            servers: vec![spec.clone()],
            ..Config::default()
        };
        fingerprint(&cfg, spec)
    }

    #[test]
    fn the_repositorys_files_a_server_runs_are_found_and_hashed() {
        let root = std::env::temp_dir().join(format!("h9-files-in-{}", std::process::id()));
        let repo = root.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub/.vscode")).unwrap();
        std::fs::create_dir_all(repo.join("node_modules/.bin")).unwrap();
        std::fs::write(repo.join("sub/.vscode/mcp.json"), "{}").unwrap();
        std::fs::write(repo.join("server.py"), "print(1)").unwrap();
        std::fs::write(repo.join("cfg.json"), "{}").unwrap();
        std::fs::write(repo.join("node_modules/pkg.js"), "x").unwrap();
        harness9_platform::fs::symlink("../pkg.js", repo.join("node_modules/.bin/pkg")).unwrap();
        std::fs::write(root.join("outside.py"), "").unwrap();
        let repo = std::fs::canonicalize(&repo).unwrap();
        assert_eq!(
            repository_root(&repo.join("sub/.vscode/mcp.json")),
            Some(repo.clone())
        );
        let args: Vec<String> = [
            "server.py",
            "--config=cfg.json",
            "../outside.py",
            "missing.py",
            "server.py",
            "-v",
        ]
        .map(String::from)
        .to_vec();
        let bin = repo.join("node_modules/.bin/pkg");
        let files = files_in(
            &repo,
            Some(&std::fs::canonicalize(&bin).unwrap()),
            &args,
            &repo,
        );
        assert_eq!(
            files,
            [
                repo.join("node_modules/pkg.js"),
                repo.join("server.py"),
                repo.join("cfg.json")
            ]
        );
        let before = content_hash(&repo.join("server.py")).unwrap();
        assert!(
            before.starts_with("sha256:") && before.len() == 71,
            "{before}"
        );
        std::fs::write(repo.join("server.py"), "print(2)").unwrap();
        assert_ne!(content_hash(&repo.join("server.py")).unwrap(), before);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_grant_covers_what_lies_under_it_links_resolved() {
        let dir = std::env::temp_dir().join(format!("h9-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("granted/sub")).expect("mkdir");
        std::fs::create_dir_all(dir.join("other")).expect("mkdir");
        harness9_platform::fs::symlink(dir.join("granted"), dir.join("link")).expect("symlink");
        let grants = vec![("s".to_owned(), resolved(&dir.join("link")))];
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/sub/mcp.json"), &grants),
            Some("s")
        );
        // A file that does not exist yet, under a granted folder, is covered too.
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/new/x.toml"), &grants),
            Some("s")
        );
        assert_eq!(
            writable_by_sandbox(&dir.join("other/mcp.json"), &grants),
            None
        );
        // `..` in the path does not escape the check.
        assert_eq!(
            writable_by_sandbox(&dir.join("other/../granted/mcp.json"), &grants),
            Some("s")
        );
        // A link in a granted folder is covered wherever it points (it can be re-pointed).
        harness9_platform::fs::symlink(dir.join("other/mcp.json"), dir.join("granted/cfg.json"))
            .expect("symlink");
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/cfg.json"), &grants),
            Some("s")
        );
        // A sibling whose name starts the same is not under the grant.
        assert_eq!(
            writable_by_sandbox(&dir.join("granted2/mcp.json"), &grants),
            None
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_changed_spec_is_not_approved_and_the_file_is_private() {
        let dir = std::env::temp_dir().join(format!("h9-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("state").join("approvals.json");
        let mut store = Approvals::load(&path).expect("missing is empty");
        let spec = ServerSpec::stdio("s", "sh", vec!["-c".into(), "true".into()]);
        assert!(!store.is_approved("/p/.mcp.json", "s", &fp(&spec)));
        store.approve("/p/.mcp.json", "s", fp(&spec));
        store.save().expect("save");
        let store = Approvals::load(&path).expect("load");
        assert!(store.is_approved("/p/.mcp.json", "s", &fp(&spec)));
        assert!(!store.is_approved("/q/.mcp.json", "s", &fp(&spec)));
        let mut changed = spec.clone();
        changed.transport = TransportSpec::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), "false".into()],
            env: vec![],
            cwd: None,
        };
        assert!(!store.is_approved("/p/.mcp.json", "s", &fp(&changed)));
        let mut env_changed = spec.clone();
        if let TransportSpec::Stdio { env, .. } = &mut env_changed.transport {
            env.push(("NODE_OPTIONS".into(), "--require evil".into()));
        }
        assert_ne!(fp(&spec), fp(&env_changed));
        // Dropping (or loosening) the sandbox asks again.
        let mut sandboxed = spec.clone();
        sandboxed.sandbox = Some(harness9_actors::SandboxSpec {
            project_dir: "/p".into(),
            writable: vec![],
            network: false,
        });
        assert_ne!(fp(&spec), fp(&sandboxed));
        let mut networked = sandboxed.clone();
        if let Some(s) = &mut networked.sandbox {
            s.network = true;
        }
        assert_ne!(fp(&sandboxed), fp(&networked));
        // Limits that cannot run anything do not change the fingerprint.
        let mut limits = spec.clone();
        limits.tool_timeout = std::time::Duration::from_secs(1);
        assert_eq!(fp(&spec), fp(&limits));
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&path).expect("metadata"));
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, "not json").expect("write");
        let e = Approvals::load(&path).expect_err("invalid");
        assert!(format!("{e:#}").contains("fix or delete it"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_fingerprint_covers_the_entry_as_written_not_the_users_values() {
        let parse = |text: &str, token: &'static str| {
            config::parse(
                text,
                "/p/.mcp.json",
                Path::new("/p"),
                &move |v| (v == "TOKEN").then(|| token.to_owned()),
                &config::EntryDefaults::in_memory(),
            )
            .expect("parse")
        };
        let fp_of = |c: &Config| fingerprint(c, &c.servers[0]);
        let plain = parse(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "headers": {"X": "harness9"}}}}"#,
            "a",
        );
        let var = parse(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "headers": {"X": "${TOKEN}"}}}}"#,
            "a",
        );
        // A header value changed to a reference: not the same approval.
        assert_ne!(fp_of(&plain), fp_of(&var));
        // The user's value of the reference is not part of it.
        let other = parse(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "headers": {"X": "${TOKEN}"}}}}"#,
            "b",
        );
        assert_eq!(fp_of(&var), fp_of(&other));
        // Even a field harness9 does not read is the repository's.
        let extra = parse(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "headers": {"X": "${TOKEN}"}, "note": 1}}}"#,
            "a",
        );
        assert_ne!(fp_of(&var), fp_of(&extra));
        // What an unapproved server shows: names and references, never the value.
        let line = shown(&var, &var.servers[0]);
        assert_eq!(line, "http://h/mcp (headers X) (uses '${TOKEN}')");
        // A variable is named once: an env key passing the user's own through is `$KEY`,
        // not named again in a `uses` of its own or of another field.
        let gh = parse(
            r#"{"mcpServers": {"g": {"command": "npx", "args": ["gh"], "env": {"TOKEN": "${TOKEN}", "B": "${TOKEN}"}}}}"#,
            "a",
        );
        let line = shown(&gh, &gh.servers[0]);
        assert!(line.starts_with("npx gh (env $TOKEN, B) (in "), "{line}");
        assert_eq!(line.matches("TOKEN").count(), 1, "{line}");
        // Arguments that imitate that env list hide nothing.
        let spoof = parse(
            r#"{"mcpServers": {"g": {"command": "npx", "args": ["gh", " (env $TOKEN)"], "sandbox": {"writable": ["/tmp/${TOKEN}"]}}}}"#,
            "a",
        );
        let line = shown(&spoof, &spoof.servers[0]);
        assert!(line.ends_with("(also uses '${TOKEN}')"), "{line}");
        // A reference in a field the line does not show is named too.
        let oauth = parse(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "oauth": {"clientSecret": "${GH_TOKEN}"}}}}"#,
            "a",
        );
        assert_eq!(
            shown(&oauth, &oauth.servers[0]),
            "http://h/mcp (also uses '${GH_TOKEN}')"
        );
    }

    #[test]
    fn the_program_is_resolved_against_the_working_directory_and_path() {
        let dir = std::env::temp_dir().join(format!("h9-trust-prog-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).expect("dir");
        let prog = dir.join("bin/tool");
        std::fs::write(&prog, "#!/bin/sh\n").expect("write");
        let file = std::fs::File::open(&prog).expect("open");
        harness9_platform::fs::set_mode(&file, 0o755).expect("chmod");
        let real = std::fs::canonicalize(&prog).expect("canonical");
        assert_eq!(
            resolved_program("./bin/tool", &[], &dir),
            Some(real.clone())
        );
        let path = vec![("PATH".to_owned(), dir.join("bin").display().to_string())];
        assert_eq!(resolved_program("tool", &path, Path::new("/")), Some(real));
        assert_eq!(resolved_program("tool", &[], &dir.join("nope")), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
