//! SIGINT, SIGTERM and SIGHUP during a render: instead of dying with a
//! half-written file on disk, the render notices between blocks, removes
//! what it wrote and exits 128 + the signal's number, as a shell expects.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal caught since the last [`InterruptGuard::install`] (0: none).
/// An atomic store is all a handler may safely do.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    CAUGHT.store(signal, Ordering::Relaxed);
}

/// While alive, the render's stop signals set a flag instead of killing the
/// process; dropping it puts the previous handlers back.
///
/// Signals that were ignored when it was installed stay ignored (`nohup`,
/// background jobs of a non-interactive shell), as POSIX utilities do.
pub struct InterruptGuard {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

/// The signals a render stops on, cleanly.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

impl InterruptGuard {
    /// Installs the handlers and clears any earlier catch.
    pub fn install() -> InterruptGuard {
        CAUGHT.store(0, Ordering::Relaxed);
        let mut saved = Vec::new();
        for signal in SIGNALS {
            // SAFETY: sigaction with valid, zero-initialised structs; the
            // handler only stores to an atomic (async-signal-safe).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut new.sa_mask);
                new.sa_flags = libc::SA_RESTART;
                if libc::sigaction(signal, &new, &mut old) == 0 {
                    saved.push((signal, old));
                }
            }
        }
        InterruptGuard { saved }
    }

    /// The signal that asked the render to stop, if one has.
    pub fn caught(&self) -> Option<i32> {
        match CAUGHT.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        for (signal, old) in self.saved.drain(..).rev() {
            // SAFETY: restores the action saved by `install`.
            unsafe {
                libc::sigaction(signal, &old, std::ptr::null_mut());
            }
        }
    }
}

/// The signal's usual name, for messages.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        s => format!("signal {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test: the handlers and the flag are process-wide.
    #[test]
    fn a_signal_sets_the_flag_and_an_ignored_one_stays_ignored() {
        // SAFETY: signal() and raise() on this process; while the guard is
        // installed SIGTERM only sets the flag, and SIGHUP is ignored.
        unsafe {
            let before = libc::signal(libc::SIGHUP, libc::SIG_IGN);
            let guard = InterruptGuard::install();
            assert_eq!(guard.caught(), None);
            libc::raise(libc::SIGHUP);
            assert_eq!(guard.caught(), None, "SIGHUP was ignored before");
            libc::raise(libc::SIGTERM);
            assert_eq!(guard.caught(), Some(libc::SIGTERM));
            drop(guard);
            let mut now: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut now);
            assert_eq!(now.sa_sigaction, libc::SIG_DFL, "restored");
            libc::signal(libc::SIGHUP, before);
        }
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }
}
