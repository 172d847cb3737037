//! `harness9 permissions import --from claude-code|codex`: another agent's permission
//! settings written into the user's own settings file (never a project's), after every part
//! was checked, in one private atomic write; what has no equivalent is named with why.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::UsageError;
use crate::app::permissions_import::{self as pi, From, Imported};
use crate::sanitize::clean_line;

/// `permissions import`: reads `file` (else `from`'s standard place), maps it, and adds what
/// maps to `settings` (else the user's settings file); `dry_run` shows it and writes nothing.
pub fn import(
    from: From,
    file: Option<&Path>,
    settings: Option<&Path>,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let env = |k: &str| std::env::var(k).ok();
    let source = match file {
        Some(f) => f.to_path_buf(),
        None => pi::default_path(from, &env).ok_or_else(|| {
            UsageError("HOME is not set: name the file to read with --file".to_owned())
        })?,
    };
    let shown_source = clean_line(&source.display().to_string()).into_owned();
    let text = read(&source).map_err(|e| {
        let message = format!("cannot read {shown_source} ({e}); name the file with --file");
        match e.kind() {
            std::io::ErrorKind::NotFound => anyhow::Error::from(UsageError(message)),
            _ => anyhow::anyhow!(message),
        }
    })?;
    let imported = match from {
        From::ClaudeCode => pi::from_claude_code(&text),
        From::Codex => pi::from_codex(&text),
    }
    .map_err(|why| UsageError(format!("{shown_source}: {why}")))?;

    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    if file.is_some() && inside(&source, &cwd) && !dry_run {
        // A repository's settings are its authors' word: their allow rules now apply to every
        // project of yours. Said, so that the list below is read.
        eprintln!(
            "note: {shown_source} is inside this directory, not your own settings: the rules added from it apply in every project; review them below (remove one with your editor)"
        );
    }
    let target = match settings {
        Some(p) => p.to_path_buf(),
        None => user_settings(&cwd)?,
    };
    let shown = clean_line(&target.display().to_string()).into_owned();
    if pi::is_project_file(&target, &cwd) {
        return Err(UsageError(format!(
            "{shown} is this project's settings file: imported rules go to your own settings file (a project's allow rules are ignored); leave out --settings"
        ))
        .into());
    }
    let link = std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink());
    if link && !dry_run {
        return Err(UsageError(format!(
            "{shown} is a symbolic link: harness9 does not write through one; add the rules to the file it points to yourself (--dry-run shows them)"
        ))
        .into());
    }
    let existing = match read(&target) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(anyhow::anyhow!("cannot read {shown} ({e})")),
    };
    // The file as it is must load as settings: a broken one is fixed first, not added to.
    check_settings(&target, &existing)?;
    let spliced = pi::splice(&existing, &shown, &imported).map_err(UsageError)?;
    if !spliced.added.is_empty() || spliced.shell.is_some() {
        check_settings(&target, &spliced.text)?;
    }
    report(&imported, &spliced, &shown_source, &shown, dry_run)?;
    if dry_run || (spliced.added.is_empty() && spliced.shell.is_none()) {
        return Ok(ExitCode::SUCCESS);
    }
    harness9_base::private_fs::write_private(&target, spliced.text.as_bytes())
        .with_context(|| format!("cannot write {shown}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Whether `path` is under `dir` (both resolved as far as they exist).
fn inside(path: &Path, dir: &Path) -> bool {
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    resolve(&dir.join(path)).starts_with(resolve(dir))
}

/// A settings file's text, bounded.
fn read(path: &Path) -> std::io::Result<String> {
    harness9_base::read::read_regular(path, pi::MAX_FILE_BYTES)
}

/// The user's settings file (`$XDG_CONFIG_HOME/harness9/config.toml` or the system's place).
fn user_settings(cwd: &Path) -> anyhow::Result<PathBuf> {
    let env = |k: &str| std::env::var(k).ok();
    let flags = crate::agent::model::settings::ModelFlags::default();
    crate::agent::model::settings::candidate_paths(&flags, &env, cwd)
        .into_iter()
        .nth(1)
        .ok_or_else(|| {
            UsageError(
                "no user settings file: neither XDG_CONFIG_HOME nor HOME is set; name one with --settings"
                    .to_owned(),
            )
            .into()
        })
}

/// Whether `text` parses as the user's settings file at `path`, its rules included.
fn check_settings(path: &Path, text: &str) -> anyhow::Result<()> {
    if text.trim().is_empty() {
        return Ok(());
    }
    // Parsed as the settings are (an unknown key is an error), the rules as rules.
    crate::agent::model::settings::rules_of_text(path, text)?;
    Ok(())
}

/// What was (or would be) written, what was there already, and what has no equivalent.
fn report(
    imported: &Imported,
    spliced: &pi::Spliced,
    source: &str,
    target: &str,
    dry_run: bool,
) -> anyhow::Result<()> {
    let verb = if dry_run { "would add" } else { "added" };
    for (kind, rule) in &spliced.added {
        say!("{verb} {:<5} {}", kind.name(), clean_line(rule));
    }
    if let (Some(s), Some((_, from))) = (spliced.shell, &imported.shell) {
        say!(
            "{verb} shell = \"{}\" (from {})",
            s.name(),
            clean_line(from)
        );
    }
    for (kind, rule) in &spliced.present {
        say!("already there: {} {}", kind.name(), clean_line(rule));
    }
    if let (Some(kept), Some((s, from))) = (&spliced.shell_kept, &imported.shell) {
        say!(
            "kept shell = \"{}\" (your setting; {} would be shell = \"{}\")",
            clean_line(kept),
            clean_line(from),
            s.name()
        );
    }
    if let Some((flag, from)) = &imported.mode {
        say!(
            "not written: {} is `--permission-mode {flag}` (harness9 has no setting for the mode: pass the flag)",
            clean_line(from)
        );
    }
    for (what, why) in &imported.unmapped {
        say!("not imported: {}: {}", clean_line(what), clean_line(why));
    }
    let n = spliced.added.len() + usize::from(spliced.shell.is_some());
    if n == 0 {
        say!("nothing to add from {source} to {target}");
    } else if dry_run {
        say!(
            "dry run: {n} setting{} of {source} would go into {target}; nothing written",
            plural(n)
        );
    } else {
        say!("wrote {n} setting{} of {source} into {target}", plural(n));
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
