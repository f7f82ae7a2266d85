//! A development build (`morphrt plugin SCENE -o NAME.clap --watch`)
//! follows its source scene file and applies each save as `run` does:
//! through the controller, so state carries, changed params glide and
//! structural edits crossfade. A save that does not load or compile is
//! reported through the host's log (standard error when the host has
//! none) and the scene playing goes on.
//!
//! While the plugin is active, a timer thread (never the audio thread)
//! looks at the file's modification time and length every [`POLL`]. Once
//! they have changed and then held still for one poll (an editor's save
//! is whole by then), it reads the file; a text other than the last one
//! it saw waits for the main thread, which the audio thread calls back
//! ([`Watch::due`] is one atomic load). Polling the file's metadata needs
//! no watcher thread per directory and follows a save by rename like any
//! other.

use clack_extensions::log::{HostLog, LogSeverity};
use clack_plugin::host::HostSharedHandle;
use morphrt_core::api::{ControlError, Controller};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// How often the timer thread looks at the file.
pub const POLL: Duration = Duration::from_millis(20);

/// What the timer thread hands the main thread.
#[derive(Default)]
struct Inner {
    /// The timer thread is asked to end.
    stop: AtomicBool,
    /// A new text waits in `text`.
    due: AtomicBool,
    /// The newest text read and not yet applied (the timer thread and the
    /// main thread only).
    text: Mutex<Option<String>>,
}

/// The watch of one instance: nothing for a plugin built without
/// `--watch`.
pub struct Watch {
    path: Option<PathBuf>,
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the timer thread compares from one poll to the next.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl Watch {
    /// The watch of the scene file at `path` (`None`: a plugin built
    /// without `--watch`).
    pub fn new(path: Option<PathBuf>) -> Watch {
        Watch {
            path,
            inner: Arc::new(Inner::default()),
            thread: Mutex::new(None),
        }
    }

    /// Starts watching (at activation); `playing` is the scene text the
    /// instance plays, so a file that differs from it is applied first.
    pub fn start(&self, playing: &str) {
        let Some(path) = self.path.clone() else {
            return;
        };
        self.stop();
        // The old thread has ended: nothing else touches `inner` now.
        self.inner.stop.store(false, Ordering::Release);
        self.inner.due.store(false, Ordering::Release);
        *self
            .inner
            .text
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        let shared = self.inner.clone();
        let mut last = playing.to_string();
        let spawned = std::thread::Builder::new()
            .name("morphrt-watch".into())
            .spawn(move || {
                let mut seen: Stamp = None;
                let mut read: Stamp = None;
                while !shared.stop.load(Ordering::Acquire) {
                    let now = stamp(&path);
                    if now.is_some() && now == seen && now != read {
                        read = now;
                        if let Ok(text) = std::fs::read_to_string(&path) {
                            if text != last {
                                last.clone_from(&text);
                                let mut slot =
                                    shared.text.lock().unwrap_or_else(PoisonError::into_inner);
                                *slot = Some(text);
                                shared.due.store(true, Ordering::Release);
                            }
                        }
                    }
                    seen = now;
                    std::thread::park_timeout(POLL);
                }
            });
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        match spawned {
            Ok(t) => *thread = Some(t),
            Err(e) => eprintln!("morphrt: cannot watch `{}`: {e}", self.path_shown()),
        }
    }

    /// Ends the timer thread (at deactivation). A text read and not
    /// applied is dropped.
    pub fn stop(&self) {
        self.inner.stop.store(true, Ordering::Release);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = thread {
            t.thread().unpark();
            let _ = t.join();
        }
    }

    /// Whether a save waits to be applied (the audio thread asks for a
    /// main-thread callback then). Real-time safe: one atomic load.
    pub fn due(&self) -> bool {
        self.inner.due.load(Ordering::Relaxed)
    }

    fn path_shown(&self) -> String {
        self.path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    /// On the main thread: applies the save waiting, if any, through
    /// `controller` (once it is idle), and returns what to log when the
    /// save does not load or compile.
    pub fn apply(&self, controller: &mut Controller) -> Option<String> {
        if !self.due() || controller.busy() {
            return None;
        }
        let text = {
            let mut slot = self
                .inner
                .text
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            self.inner.due.store(false, Ordering::Relaxed);
            slot.take()?
        };
        match controller.edit(&text) {
            Ok(()) => None,
            Err(ControlError::Busy) => {
                let mut slot = self
                    .inner
                    .text
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(text);
                self.inner.due.store(true, Ordering::Relaxed);
                None
            }
            Err(e) => Some(format!(
                "`{}` was not applied; the scene playing goes on:\n{e}",
                self.path_shown()
            )),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Logs `message` as an error through the host's log extension, or on
/// standard error when the host has none.
pub fn log(host: &HostSharedHandle, message: &str) {
    let text = format!("morphrt: {message}").replace('\0', " ");
    match (
        host.get_extension::<HostLog>(),
        std::ffi::CString::new(text.clone()),
    ) {
        (Some(log), Ok(c)) => log.log(host, LogSeverity::Error, &c),
        _ => eprintln!("{text}"),
    }
}
