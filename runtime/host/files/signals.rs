//! SIGINT, SIGTERM and SIGHUP never leave a half-written file behind.
//!
//! During a render ([`InterruptGuard`]) the render notices the signal
//! between blocks, removes what it wrote and exits 128 + the signal's
//! number, as a shell expects; during `run` the control loop notices it and
//! stops the session as `q` does, keeping the take, then exits the same
//! way. Everywhere else, a signal that would end the
//! process still ends it, but first removes every temporary file the
//! writer has open ([`TempRegistration`]), with no other work than
//! `unlink`, which is all a handler may safely do.

use std::cell::UnsafeCell;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

/// The signal caught since the last [`InterruptGuard::install`] (0: none).
/// An atomic store is all a handler may safely do.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    CAUGHT.store(signal, Ordering::Relaxed);
}

/// Whether a stop signal was caught since the last
/// [`InterruptGuard::install`]: for work that must give up at once, deep
/// inside a loop that cannot reach the guard (placing a handover).
pub fn stop_caught() -> bool {
    CAUGHT.load(Ordering::Relaxed) != 0
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

    /// Puts the previous handlers back now, keeping what was caught: after
    /// the first signal, a second one does what it would have done without
    /// the guard (ends the process), for a user whose clean stop takes too
    /// long.
    pub fn release(&mut self) {
        for (signal, old) in self.saved.drain(..).rev() {
            // SAFETY: restores the action saved by `install`.
            unsafe {
                libc::sigaction(signal, &old, std::ptr::null_mut());
            }
        }
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        self.release();
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

/// How many temporary files can be open at once and still be removed by a
/// signal (a render, its snapshot and a capture need three).
const SLOTS: usize = 32;
/// The longest path a slot holds, with its NUL (`PATH_MAX` on Linux).
const PATH_BYTES: usize = 4096;

/// One temporary file's path, readable from a signal handler.
struct Slot {
    /// FREE, FILLING (being written by its owner) or LIVE (the handler may
    /// read `path`).
    state: AtomicU8,
    path: UnsafeCell<[u8; PATH_BYTES]>,
}

const FREE: u8 = 0;
const FILLING: u8 = 1;
const LIVE: u8 = 2;

// SAFETY: `path` is written only by the thread that moved the slot from
// FREE to FILLING, and read (by the handler) only while it is LIVE.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    path: UnsafeCell::new([0; PATH_BYTES]),
};

static TEMPS: [Slot; SLOTS] = [EMPTY; SLOTS];

/// Removes every live temporary file, then lets the signal do what it
/// would have done: the process ends as if no handler were installed.
extern "C" fn remove_temps_and_die(signal: libc::c_int) {
    for slot in &TEMPS {
        if slot.state.load(Ordering::Acquire) == LIVE {
            // SAFETY: a LIVE slot holds a NUL-terminated path; unlink and
            // signal/raise are async-signal-safe.
            unsafe {
                libc::unlink(slot.path.get() as *const libc::c_char);
            }
        }
    }
    // SAFETY: as above; the signal is blocked while its handler runs, so
    // it is delivered, with its default action, when this returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// A temporary file that a stop signal removes before the process ends;
/// dropping the registration (the file was renamed or removed) forgets it.
#[derive(Debug)]
pub struct TempRegistration(usize);

impl TempRegistration {
    /// Registers `path` (absolute, or relative to a working directory that
    /// does not change) and makes sure SIGINT, SIGTERM and SIGHUP remove it:
    /// a signal whose action is the default (to end the process) gets a
    /// handler that removes the registered files first. Signals that are
    /// ignored, or handled by someone else (a render's [`InterruptGuard`],
    /// `run`'s Ctrl-C), are left alone. `None` when the path does not fit
    /// or every slot is taken: the file is then removed only by its owner.
    pub fn new(path: &Path) -> Option<TempRegistration> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        if bytes.len() >= PATH_BYTES || bytes.contains(&0) {
            return None;
        }
        let k = TEMPS.iter().position(|s| {
            s.state
                .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })?;
        // SAFETY: this thread moved the slot to FILLING, so it alone touches
        // `path` until the slot is LIVE.
        unsafe {
            let buf = &mut *TEMPS[k].path.get();
            buf[..bytes.len()].copy_from_slice(bytes);
            buf[bytes.len()] = 0;
        }
        TEMPS[k].state.store(LIVE, Ordering::Release);
        for signal in SIGNALS {
            // SAFETY: sigaction with valid, zero-initialised structs; the
            // handler only unlinks and re-raises (async-signal-safe).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = remove_temps_and_die as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut new.sa_mask);
                new.sa_flags = libc::SA_RESTART;
                libc::sigaction(signal, &new, std::ptr::null_mut());
            }
        }
        Some(TempRegistration(k))
    }
}

impl Drop for TempRegistration {
    fn drop(&mut self) {
        TEMPS[self.0].state.store(FREE, Ordering::Release);
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
            // The default, or (when another test's writer registered a
            // temporary file first) the handler that removes it.
            let cleanup = remove_temps_and_die as extern "C" fn(libc::c_int) as usize;
            assert!(
                now.sa_sigaction == libc::SIG_DFL || now.sa_sigaction == cleanup,
                "restored"
            );
            libc::signal(libc::SIGHUP, before);
        }
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }

    #[test]
    fn registrations_take_a_slot_and_give_it_back() {
        let path = Path::new("/nonexistent/morphrt-registration-test.partial");
        let live = |p: &Path| {
            use std::os::unix::ffi::OsStrExt;
            TEMPS.iter().any(|s| {
                s.state.load(Ordering::Acquire) == LIVE
                    // SAFETY: a LIVE slot is not written to.
                    && unsafe { &(&*s.path.get())[..p.as_os_str().len() + 1] }
                        == [p.as_os_str().as_bytes(), &[0]].concat()
            })
        };
        let r = TempRegistration::new(path).unwrap();
        assert!(live(path));
        drop(r);
        assert!(!live(path));
        assert!(TempRegistration::new(Path::new(&"x".repeat(PATH_BYTES))).is_none());
    }
}
