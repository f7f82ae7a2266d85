//! Keyboard control while playing: single keys without Enter when stdin is
//! a terminal (raw-ish mode via termios, restored on drop), and Ctrl-C.

use super::player::Controls;
use std::io::{IsTerminal, Read};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Restores the terminal when dropped.
pub struct KeyListener {
    #[cfg(unix)]
    saved: Option<libc::termios>,
}

impl KeyListener {
    /// Starts a thread that turns `q` (and Ctrl-C, from anywhere) into a stop request.
    pub fn start(controls: Arc<Controls>) -> KeyListener {
        let c = controls.clone();
        // A second Ctrl-C while fading is ignored; the fade is a few ms.
        let _ = ctrlc::set_handler(move || c.stop.store(true, Ordering::Relaxed));
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return KeyListener {
                #[cfg(unix)]
                saved: None,
            };
        }
        #[cfg(unix)]
        let saved = unsafe {
            // SAFETY: plain termios calls on fd 0, which is a terminal.
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) == 0 {
                let saved = t;
                t.c_lflag &= !(libc::ICANON | libc::ECHO);
                t.c_cc[libc::VMIN] = 1;
                t.c_cc[libc::VTIME] = 0;
                libc::tcsetattr(0, libc::TCSANOW, &t);
                Some(saved)
            } else {
                None
            }
        };
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            let mut input = std::io::stdin();
            while let Ok(1) = input.read(&mut b) {
                if matches!(b[0], b'q' | b'Q') {
                    controls.stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        });
        KeyListener {
            #[cfg(unix)]
            saved,
        }
    }
}

impl Drop for KeyListener {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(t) = self.saved {
            // SAFETY: restores the attributes read in `start`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &t);
            }
        }
    }
}
