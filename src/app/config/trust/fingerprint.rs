//! What an approval covers: a server's fingerprint (its entry as written and the resolved
//! facts: working directory, program, the repository's files it runs, with their content),
//! and the line an unapproved server shows.

use harness9_actors::spec::{shell_quote, TransportParts};
use harness9_actors::{Hold, Pinned, ServerSpec, TransportSpec};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::files::{
    found_program, project_roots, repository_files, resolved_cwd, resolved_program,
};
use crate::config::Config;

/// The canonical form of what a spec runs, from the spec alone (expanded values): the
/// fallback for a server without a written entry.
fn spec_form(spec: &ServerSpec) -> serde_json::Value {
    match spec.transport.parts() {
        TransportParts::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            env.sort();
            json!({"transport": "stdio", "command": command, "args": args, "env": env,
                   "cwd": cwd.map(|c| c.display().to_string())})
        }
        TransportParts::Http { url, headers, kind } => {
            let mut headers = headers.to_vec();
            headers.sort();
            json!({"transport": kind, "url": url, "headers": headers})
        }
    }
}

pub use harness9_actors::spec::content_hash;

/// `sha256:<hex>` of what an approval covers for `spec` of `config`: everything the file
/// controls that reaches a process or the network, and where it will run. That is the entry
/// as written (every field, header values and `${...}` references unexpanded, env, args, cwd,
/// url, `envFile`'s path and its content, the inputs it uses with their declared text) and the
/// resolved facts: the working directory, the canonical path of the program that will be
/// executed, the content (SHA-256) of that program and of every file an argument names when
/// they are inside the repository ([`repository_root`], [`files_in`]), and the sandbox. The user's own values (`${VAR}` from the environment, input
/// values) are not part of it: they are the user's, not the repository's.
pub fn fingerprint(config: &Config, spec: &ServerSpec) -> String {
    fingerprint_pinned(config, spec).0
}

/// [`fingerprint`] with the files whose content it covers, read once: the pins an approved
/// spec carries are exactly what the approval vouched for.
pub(super) fn fingerprint_pinned(config: &Config, spec: &ServerSpec) -> (String, Vec<Pinned>) {
    let written = config.written(&spec.name);
    let mut pins = Vec::new();
    // The facts from the spec when it built, else from the written form (held as invalid,
    // e.g. an input without a value yet).
    let transport = match (&spec.hold, written.and_then(|w| w.transport.as_ref())) {
        (Some(harness9_actors::Hold::Invalid(_)), Some(t)) => t,
        _ => &spec.transport,
    };
    let resolved = match transport {
        TransportSpec::Stdio {
            command, env, cwd, ..
        } => {
            let dir = resolved_cwd(cwd.as_deref());
            let program = resolved_program(command, env, &dir);
            let args = match transport {
                TransportSpec::Stdio { args, .. } => args.as_slice(),
                _ => &[],
            };
            let found = found_program(command, env, &dir);
            let (content, pinned) =
                repository_files(&project_roots(&config.path), found.as_deref(), args, &dir);
            pins = pinned;
            let mut facts = json!({"cwd": dir.display().to_string(),
                   "program": program.map(|p| p.display().to_string())});
            // Only when there is any: an approval of a server that runs nothing of the
            // repository's stays what it was.
            if !content.is_empty() {
                facts["content"] = json!(content);
            }
            facts
        }
        _ => json!(null),
    };
    // The sandbox is part of what runs: a spec that drops it asks again.
    let sandbox = spec.sandbox.as_ref().map(|s| {
        json!({"project": s.project_dir.display().to_string(),
               "writable": s.writable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
               "network": s.network})
    });
    let canonical = match written {
        Some(w) => json!({
            "entry": w.entry,
            "written": w.transport.as_ref().map(|t| format!("{t:?}")),
            "envFile": w.env_file.as_ref().map(|p| p.display().to_string()),
            "inputs": w.inputs,
            "resolved": resolved,
            "sandbox": sandbox,
        }),
        None => json!({"spec": spec_form(spec), "resolved": resolved, "sandbox": sandbox}),
    };
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    (format!("sha256:{hex}"), pins)
}

/// Whether server `spec` of `config` can be approved: a valid entry, or one held only for a
/// value of the user's (an unset variable, an input not given yet) whose written form builds.
pub(super) fn approvable(config: &Config, spec: &ServerSpec) -> bool {
    match &spec.hold {
        None => true,
        Some(Hold::Invalid(_)) => config
            .written(&spec.name)
            .is_some_and(|w| w.transport.is_some()),
        Some(_) => false,
    }
}

/// The transport server `spec` of `config` shows while it waits for approval: its written
/// form (no value of the user's is put in), else the spec's; a stdio server without `cwd`
/// names the working directory it would run in (part of the approval).
pub(super) fn awaiting_transport(config: &Config, spec: &ServerSpec) -> TransportSpec {
    let mut t = config
        .written(&spec.name)
        .and_then(|w| w.transport.clone())
        .unwrap_or_else(|| spec.transport.clone());
    // Where it runs, resolved (a path, not a value that is sent): the spec's when it built.
    let real = match (&spec.hold, &spec.transport) {
        (None, TransportSpec::Stdio { cwd, .. }) => Some(cwd.clone()),
        _ => None,
    };
    if let TransportSpec::Stdio { cwd, .. } = &mut t {
        let dir = real.unwrap_or_else(|| cwd.clone());
        *cwd = Some(resolved_cwd(dir.as_deref()));
    }
    t
}

/// What server `spec` of `config` shows while it waits for approval (one line, see
/// `awaiting_transport`): command, args, env keys, working directory, header names, and the
/// `${VAR}` names it uses, never their values.
pub fn shown(config: &Config, spec: &ServerSpec) -> String {
    let transport = awaiting_transport(config, spec);
    let line = transport.command_line();
    // References in fields the line does not show (`oauth`, `sandbox`, `roots`, ...): a
    // `clientSecret` of `${GITHUB_TOKEN}` goes to the network too.
    let mut refs = Vec::new();
    if let Some(w) = config.written(&spec.name) {
        references(&w.entry, &mut refs);
        // Files an OAuth grant reads and uses toward the network (a key signs for the server's
        // authorization server; a workload token is sent to it): named, as a `${VAR}` is.
        for field in ["privateKeyFile", "assertionFile"] {
            if let Some(f) = w.entry["oauth"][field].as_str() {
                refs.push(format!("oauth.{field} {f}"));
            }
        }
    }
    // Named once: not again when the line shows it, as written or as an env key passing the
    // user's own through (`(env $GITHUB_TOKEN)`: known from the entry, not read back from the
    // line, which a repository's arguments could imitate).
    let passed: Vec<String> = match &transport {
        TransportSpec::Stdio { env, .. } => env
            .iter()
            .filter(|(k, v)| harness9_actors::spec::passed_through(k, v))
            .map(|(k, _)| format!("${{{k}}}"))
            .collect(),
        _ => Vec::new(),
    };
    let more: Vec<String> = refs
        .into_iter()
        .filter(|r| !passed.contains(r))
        .map(|r| shell_quote(&r))
        .filter(|r| !line.contains(r.as_str()))
        .collect();
    if more.is_empty() {
        line
    } else {
        format!("{line} (also uses {})", more.join(", "))
    }
}

/// Every `${...}` reference in the strings of `value`, in order, once each.
fn references(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(i) = rest.find("${") {
                let Some(end) = rest[i..].find('}') else {
                    break;
                };
                let r = rest[i..i + end + 1].to_owned();
                if !out.contains(&r) {
                    out.push(r);
                }
                rest = &rest[i + end + 1..];
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        serde_json::Value::Object(m) => m.values().for_each(|v| references(v, out)),
        _ => {}
    }
}
