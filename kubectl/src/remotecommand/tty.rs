//! The local terminal for `-t`: raw mode while the session lasts, and its size as it changes.
//!
//! termios and `TIOCGWINSZ` have no safe wrapper among our dependencies; the few `unsafe`
//! calls below pass pointers to locals of the exact types libc declares.
#![allow(unsafe_code)]

use std::io::IsTerminal;
use tokio::sync::mpsc;

/// True when stdin is a terminal (upstream's `IsTerminalIn`).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Puts stdin's terminal in raw mode until dropped.
pub struct RawMode {
    saved: libc::termios,
}

impl RawMode {
    pub fn enter() -> std::io::Result<RawMode> {
        // SAFETY: `termios` is plain old data; tcgetattr fills it or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut raw = saved;
        // SAFETY: `raw` is a valid termios obtained above.
        unsafe { libc::cfmakeraw(&mut raw) };
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter`.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}

/// The size `(width, height)` of the terminal on stdout, else stdin.
pub fn size() -> Option<(u16, u16)> {
    [libc::STDOUT_FILENO, libc::STDIN_FILENO]
        .into_iter()
        .find_map(|fd| {
            // SAFETY: `winsize` is plain old data that TIOCGWINSZ fills.
            let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
            let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
            (ok && ws.ws_col > 0).then_some((ws.ws_col, ws.ws_row))
        })
}

/// The current size, then every change signalled by SIGWINCH.
pub fn sizes() -> mpsc::UnboundedReceiver<(u16, u16)> {
    let (tx, rx) = mpsc::unbounded_channel();
    if let Some(s) = size() {
        let _ = tx.send(s);
    }
    if let Ok(mut winch) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
    {
        tokio::spawn(async move {
            while winch.recv().await.is_some() {
                if let Some(s) = size()
                    && tx.send(s).is_err()
                {
                    break;
                }
            }
        });
    }
    rx
}
