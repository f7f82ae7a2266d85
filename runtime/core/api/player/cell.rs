//! The cell a device callback runs the player from, without a lock, and
//! the panic hook that keeps the audio thread quiet.

use super::{InputSource, Meters, Player, Switches};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Hands the player between the callback and the control thread without a
/// lock: the callback takes it for the duration of one call; the control
/// thread only touches it when no stream is running.
pub struct PlayerCell<I: InputSource + ?Sized = dyn InputSource> {
    player: UnsafeCell<Option<Player<I>>>,
    /// The payload of a panic the callback caught outside every node: set
    /// once, kept (freed with the cell, off the audio thread). From then
    /// on the callback writes silence and never runs the player again.
    fatal: UnsafeCell<Option<Box<dyn std::any::Any + Send>>>,
    busy: AtomicBool,
    switches: Arc<Switches>,
    meters: Arc<Meters>,
}

thread_local! {
    /// Set while this thread runs the audio callback: the panic hook then
    /// stays silent (no printing, no I/O on the audio thread).
    static IN_AUDIO: Cell<bool> = const { Cell::new(false) };
}

/// Installs a panic hook that keeps the audio thread quiet: a panic there
/// is counted in the meters and reported by the control thread, never
/// printed from the callback. Panics elsewhere print as usual.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_AUDIO.with(Cell::get) {
            default(info);
        }
    }));
}

// SAFETY: access to `player` is serialised by `busy` (callback) and by the
// stream being stopped (control thread), see `with` and `take`.
unsafe impl<I: InputSource + ?Sized> Sync for PlayerCell<I> {}

impl<I: InputSource + ?Sized> PlayerCell<I> {
    /// A cell holding `p`, shared by the callback and the control thread.
    pub fn new(p: Player<I>) -> Arc<PlayerCell<I>> {
        let switches = p.switches.clone();
        let meters = p.meters.clone();
        Arc::new(PlayerCell {
            player: UnsafeCell::new(Some(p)),
            fatal: UnsafeCell::new(None),
            busy: AtomicBool::new(false),
            switches,
            meters,
        })
    }

    /// Whether a stop was requested (Ctrl-C, `q`).
    pub fn stop_requested(&self) -> bool {
        self.switches.stop.load(Ordering::Relaxed)
    }

    /// Runs the player's callback unless another call holds it (then writes
    /// silence). Wait-free. A panic in a node is the engine's to contain (the
    /// node is muted). A panic anywhere else is fatal: the buffer is
    /// silence, it is counted in [`Meters::callback_panics`] (the control
    /// thread ends the session), and from then on every call writes silence
    /// without running the player, which keeps its engines for the control
    /// thread to drop ([`take`](Self::take)): nothing is freed on the audio
    /// thread, and a panic that would recur each call happens once.
    pub fn fill(&self, out: &mut [f32]) {
        if self.busy.swap(true, Ordering::Acquire) {
            out.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        IN_AUDIO.with(|f| f.set(true));
        // SAFETY: `busy` was false, so no one else is inside.
        let (player, fatal) = unsafe { (&mut *self.player.get(), &mut *self.fatal.get()) };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match player {
            Some(p) if fatal.is_none() => p.fill(out),
            _ => out.iter_mut().for_each(|x| *x = 0.0),
        }));
        if let Err(payload) = r {
            // Kept, not freed on the audio thread.
            *fatal = Some(payload);
            out.iter_mut().for_each(|x| *x = 0.0);
            self.meters.callback_panics.fetch_add(1, Ordering::Release);
        }
        IN_AUDIO.with(|f| f.set(false));
        self.busy.store(false, Ordering::Release);
    }

    /// Takes the player back. Call only when no stream can run the callback
    /// (after the stream is dropped); returns `None` if a call is in flight.
    pub fn take(&self) -> Option<Player<I>> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        // SAFETY: as in `fill`.
        let p = unsafe { &mut *self.player.get() }.take();
        self.busy.store(false, Ordering::Release);
        p
    }
}
