//! The terminal the `Tui` actor draws on and its frames: at most one frame per [`FRAME`], a
//! frame asked for meanwhile drawn once that time has passed, the first one measured.

use std::io::Stdout;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::state::State;
use crate::take_terminal;

/// Shortest time between two frames.
pub(super) const FRAME: Duration = Duration::from_millis(16);

/// The terminal (none before the actor starts, while the editor has it and after quitting) and
/// when it was last drawn.
pub(super) struct Screen {
    terminal: Option<Terminal<CrosstermBackend<Stdout>>>,
    /// When the process started (for the first-frame measurement).
    started: Instant,
    first_frame: bool,
    /// The state changed since the last frame.
    pub(super) dirty: bool,
    /// A frame is due once [`FRAME`] has passed since the last one.
    pub(super) frame_armed: bool,
    last_frame: Instant,
}

impl Screen {
    /// A screen with no terminal yet, for a process started at `started`.
    pub(super) fn new(started: Instant) -> Self {
        Screen {
            terminal: None,
            started,
            first_frame: true,
            dirty: true,
            frame_armed: false,
            last_frame: Instant::now(),
        }
    }

    /// Opens the terminal on stdout.
    pub(super) fn open(&mut self) -> std::io::Result<()> {
        self.terminal = Some(Terminal::new(CrosstermBackend::new(std::io::stdout()))?);
        Ok(())
    }

    /// Lets the terminal go (to the editor, or for good).
    pub(super) fn close(&mut self) {
        self.terminal = None;
    }

    /// Takes the terminal back after the editor, cleared, and asks for a frame.
    pub(super) fn resume(&mut self) -> std::io::Result<()> {
        take_terminal()?;
        let mut t = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        t.clear()?;
        self.terminal = Some(t);
        self.dirty = true;
        Ok(())
    }

    /// Follows the terminal's new size.
    pub(super) fn resized(&mut self) {
        if let Some(t) = self.terminal.as_mut() {
            let _ = t.autoresize();
        }
    }

    /// How long since the last frame.
    pub(super) fn since_last(&self) -> Duration {
        self.last_frame.elapsed()
    }

    /// Draws `state` now.
    pub(super) fn draw(&mut self, state: &State) {
        self.dirty = false;
        self.last_frame = Instant::now();
        let Some(t) = self.terminal.as_mut() else {
            return;
        };
        if let Err(e) = t.draw(|f| crate::view::view(state, f)) {
            tracing::error!("cannot draw: {e}");
        }
        if self.first_frame {
            self.first_frame = false;
            tracing::info!(
                target: "harness9::tui",
                elapsed_ms = self.started.elapsed().as_secs_f64() * 1000.0,
                "first frame drawn"
            );
        }
    }
}
