//! Opening things outside the TUI: `.mcp.json` in an editor (with the terminal handed over
//! while it runs), a file or an accepted URL with the system opener.

use std::sync::atomic::Ordering;

use actix::prelude::*;
use harness9_app::watcher::ReloadConfig;

use super::Tui;
use crate::state::Event;
use crate::{restore_terminal, EDITOR_RUNNING};

impl Tui {
    /// Opens `.mcp.json` in `$VISUAL`/`$EDITOR` with the terminal suspended, or hands it to the
    /// system opener. Runs straight from the key handler inside `ctx.wait`, so no other input is
    /// read while the editor owns the terminal (DESIGN.md trap 13).
    pub(super) fn open_editor(&mut self, ctx: &mut Context<Self>) {
        let path = self.config_path.clone();
        if !path.exists() {
            let skeleton = "{\n  \"mcpServers\": {\n  }\n}\n";
            // Created exclusively (never through a symlink planted there).
            let created = harness9_app::private_fs::create_new(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, skeleton.as_bytes()));
            if let Err(e) = created {
                self.notice(true, format!("cannot create {}: {e}", path.display()), ctx);
                return;
            }
        }
        let mut editor = std::env::var("VISUAL")
            .ok()
            .or_else(|| std::env::var("EDITOR").ok())
            .filter(|e| !e.trim().is_empty());
        let mut fallback_note = None;
        if editor.is_none() && !harness9_platform::open::has_desktop_opener() {
            // No $EDITOR and no desktop to open a file on (SSH, a console): a terminal editor.
            if let Some(found) = ["vi", "nano"]
                .into_iter()
                .find(|e| harness9_platform::open::on_path(e))
            {
                fallback_note = Some(format!(
                    "no $EDITOR is set; edited {} with {found} (set $EDITOR to choose)",
                    path.display()
                ));
                editor = Some(found.to_owned());
            }
        }
        let Some(editor) = editor else {
            let text = match spawn_opener(&path) {
                Ok(opener) => (false, format!("opened {} with {opener}; it reloads by itself when saved (set $EDITOR to edit in the terminal)", path.display())),
                Err(e) => (true, format!("cannot open {}: {e}; set $EDITOR", path.display())),
            };
            self.notice(text.0, text.1, ctx);
            return;
        };
        self.screen.close();
        restore_terminal();
        EDITOR_RUNNING.store(true, Ordering::SeqCst);
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("harness9-editor")
            .arg(&path);
        let shown = editor.clone();
        ctx.wait(async move { cmd.status().await }.into_actor(self).map(
            move |status, act, ctx| {
                EDITOR_RUNNING.store(false, Ordering::SeqCst);
                if let Err(e) = act.screen.resume() {
                    tracing::error!("cannot take the terminal back: {e}");
                }
                // Keys typed ahead of the editor (read with the one that opened it, or left in
                // the terminal while the editor had it) were not meant for what comes after it:
                // dropped, so `ee` does not open the editor twice (bounded; resizes are applied
                // below from the terminal's size).
                drop_pending_input();
                // The terminal may have been resized while the editor had it.
                if let Ok((w, h)) = crossterm::terminal::size() {
                    act.apply(Event::Resize(w, h), ctx);
                }
                match status {
                    Ok(s) if s.success() => {
                        if let Some(note) = fallback_note {
                            act.notice(false, note, ctx);
                        }
                    }
                    Ok(s) => act.notice(true, format!("editor `{shown}` exited with {s}"), ctx),
                    Err(e) => act.notice(true, format!("cannot run editor `{shown}`: {e}"), ctx),
                }
                act.watcher.do_send(ReloadConfig { forced: true });
                act.schedule_draw(ctx);
            },
        ));
    }
}

/// The most pending terminal events dropped after the editor returns.
const MAX_DROPPED_INPUT: usize = 4096;

/// Drops the terminal input waiting to be read (crossterm's buffer and the terminal's), at most
/// [`MAX_DROPPED_INPUT`] events, without waiting for more.
fn drop_pending_input() {
    let mut dropped = 0;
    while dropped < MAX_DROPPED_INPUT
        && crossterm::event::poll(std::time::Duration::ZERO).unwrap_or(false)
    {
        if crossterm::event::read().is_err() {
            break;
        }
        dropped += 1;
    }
    if dropped > 0 {
        tracing::debug!(dropped, "dropped the input typed ahead of the editor");
    }
}

/// Hands the file `path` to the system opener. The opener's name, or why it could not start.
pub(super) fn spawn_opener(path: &std::path::Path) -> Result<String, String> {
    harness9_actors::opener::open_file(path)
}
