//! The sandbox settings a project may only tighten: `[mcp] sandbox` and `[permissions]
//! shell` merged from the user's and the project's files, and the warnings of what was
//! ignored.

use super::file::{key_line, parse_file, ShellSandbox};
use super::layers::{own_settings, read_layers, user_settings_file};
use super::{ModelFlags, SettingsError, DEFAULTS, DEFAULTS_NAME};

/// `[permissions] shell` of the settings (the user's file, else the default
/// `workspace-write`), tightened by the project's `./harness9.toml`: a project value looser
/// than the user's is ignored with a warning naming the file and line.
pub fn shell_sandbox(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<ShellSandbox, SettingsError> {
    let layers = read_layers(flags)?;
    // Where the effective value comes from: the user's file only when it sets one.
    let users = match &layers.user {
        Some((path, text)) => parse_file(&path.display().to_string(), text)?
            .permissions
            .shell
            .map(|v| (v, path.display().to_string())),
        None => None,
    };
    let (user, user_name) = users.unwrap_or_else(|| (default_shell(), "the default".to_owned()));
    let Some((path, text)) = &layers.project else {
        return Ok(user);
    };
    let name = path.display().to_string();
    let Some(project) = parse_file(&name, text)?.permissions.shell else {
        return Ok(user);
    };
    let own = own_settings(user_settings_file(flags).as_deref());
    let from = Origin {
        value: &user_name,
        own: &own,
    };
    let (out, warning) = merged_shell(user, from, project, &name, text);
    push_warning(warnings, warning);
    Ok(out)
}

/// The shell's sandbox when no settings file sets one: `workspace-write`, or `off` where the
/// system has no sandbox (Windows), so the default does not fail every command; a value set
/// explicitly is kept, and fails there with "not available".
fn default_shell() -> ShellSandbox {
    default_shell_where(harness9_platform::sandbox::AVAILABLE)
}

/// [`default_shell`] on a system that has a sandbox (`available`) or not.
pub(super) fn default_shell_where(available: bool) -> ShellSandbox {
    if available {
        ShellSandbox::default()
    } else {
        ShellSandbox::Off
    }
}

/// Where the user's side of a merge comes from, for its warning: `value` names where the
/// effective value was set (the user's file, or "the default"), `own` the user's own settings
/// file, where a looser value may go ([`own_settings`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Origin<'a> {
    pub(super) value: &'a str,
    pub(super) own: &'a str,
}

/// The project's shell sandbox when it is at least as tight as the user's, else the user's
/// and a warning.
pub(super) fn merged_shell(
    user: ShellSandbox,
    from: Origin<'_>,
    project: ShellSandbox,
    project_name: &str,
    project_text: &str,
) -> (ShellSandbox, Option<String>) {
    if project.looseness() <= user.looseness() {
        return (project, None);
    }
    let line = key_line(project_text, "permissions", "shell");
    (
        user,
        Some(format!(
            "{project_name}:{line}: [permissions] shell = \"{}\" is ignored: it is looser than \"{}\" from {}, and a project's settings file may only tighten the shell's sandbox; set it in {} if you mean it",
            project.name(),
            user.name(),
            from.value,
            from.own
        )),
    )
}

/// The sandbox default from the user's value `user` (their file's, else the shipped one) and
/// the project file's `project`: the project's only when it is at least as tight (on when the
/// user's is on, no network the user's does not allow, no writable path the user's does not
/// list). Otherwise the user's, with a warning naming the project file and line.
pub(super) fn merged_sandbox(
    user: Option<SandboxField>,
    from: Origin<'_>,
    project: Option<SandboxField>,
    project_name: &str,
    project_text: &str,
) -> (Option<SandboxField>, Option<String>) {
    let Some(p) = project else {
        return (user, None);
    };
    let u = match &user {
        Some(u) if u.on => u,
        _ => return (Some(p), None),
    };
    let looser = if !p.on {
        Some("turns the sandbox off".to_owned())
    } else if p.network && !u.network {
        Some("allows the network".to_owned())
    } else {
        p.writable
            .iter()
            .find(|w| !u.writable.contains(w))
            .map(|w| format!("makes {w:?} writable"))
    };
    match looser {
        None => (Some(p), None),
        Some(why) => {
            let line = key_line(project_text, "mcp", "sandbox");
            (
                user,
                Some(format!(
                    "{project_name}:{line}: [mcp] sandbox is ignored: it {why}, and a project's settings file may only tighten the sandbox set by {}; set it in {} if you mean it",
                    from.value,
                    from.own
                )),
            )
        }
    }
}

pub(super) type SandboxField = harness9_base::sandbox_field::SandboxField;

/// `[mcp] sandbox` of the settings (the user's file, else the shipped defaults, tightened by
/// the project's `./harness9.toml`): the sandbox of every stdio server whose `.mcp.json` entry
/// has no `"sandbox"`. A project value that would loosen the user's is ignored with a warning.
pub fn mcp_sandbox_default(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<Option<SandboxField>, SettingsError> {
    let defaults = parse_file(DEFAULTS_NAME, DEFAULTS)?;
    let layers = read_layers(flags)?;
    // Where the effective value comes from: the user's file only when it sets one.
    let users = match &layers.user {
        Some((path, text)) => parse_file(&path.display().to_string(), text)?
            .mcp
            .sandbox
            .map(|v| (Some(v), path.display().to_string())),
        None => None,
    };
    let (user, user_name) =
        users.unwrap_or_else(|| (defaults.mcp.sandbox, "the default".to_owned()));
    let Some((path, text)) = &layers.project else {
        return Ok(user);
    };
    let name = path.display().to_string();
    let project = parse_file(&name, text)?.mcp.sandbox;
    let own = own_settings(user_settings_file(flags).as_deref());
    let from = Origin {
        value: &user_name,
        own: &own,
    };
    let (out, warning) = merged_sandbox(user, from, project, &name, text);
    push_warning(warnings, warning);
    Ok(out)
}

/// Logs `warning`, if any, and adds it to `warnings` once (the TUI shows them in its
/// transcript; headless, the log has them).
pub(super) fn push_warning(warnings: &mut Vec<String>, warning: Option<String>) {
    let Some(w) = warning else {
        return;
    };
    tracing::warn!("{w}");
    if !warnings.contains(&w) {
        warnings.push(w);
    }
}
