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
    /// The guard the callback runs the player under: once a panic outside
    /// every node tripped it, the callback writes silence and never runs
    /// the player again.
    guard: UnsafeCell<PanicGuard>,
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

/// Runs audio-thread code so that a panic in it never unwinds into the
/// host: the panic hook stays silent while it runs
/// ([`install_panic_hook`]), and a panic is caught, counted in
/// [`Meters::callback_panics`] and kept. From then on the guard runs
/// nothing: what panicked once would panic again, and whatever the code
/// owns is freed later by its owner, off the audio thread. The device
/// callback ([`PlayerCell`]) and the embedding API's processor run their
/// player under one.
#[derive(Default)]
pub(crate) struct PanicGuard {
    /// The payload of the panic caught: kept, never freed on the audio
    /// thread.
    fatal: Option<Box<dyn std::any::Any + Send>>,
}

impl PanicGuard {
    /// Runs `f` unless a panic tripped the guard before; `None` when it
    /// did, now or before. Real-time safe when `f` is (catching a panic
    /// does not allocate; the panic itself may).
    pub(crate) fn run<R>(&mut self, meters: &Meters, f: impl FnOnce() -> R) -> Option<R> {
        if self.fatal.is_some() {
            return None;
        }
        IN_AUDIO.with(|c| c.set(true));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        IN_AUDIO.with(|c| c.set(false));
        match r {
            Ok(v) => Some(v),
            Err(payload) => {
                self.fatal = Some(payload);
                meters.callback_panics.fetch_add(1, Ordering::Release);
                None
            }
        }
    }

    /// Whether a panic tripped it.
    pub(crate) fn tripped(&self) -> bool {
        self.fatal.is_some()
    }
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
            guard: UnsafeCell::new(PanicGuard::default()),
            busy: AtomicBool::new(false),
            switches,
            meters,
        })
    }

    /// The meters the player reports through (a device adds the xruns
    /// its server reports).
    pub fn meters(&self) -> &Arc<Meters> {
        &self.meters
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
        // SAFETY: `busy` was false, so no one else is inside.
        let (player, guard) = unsafe { (&mut *self.player.get(), &mut *self.guard.get()) };
        let played = match player {
            Some(p) => guard.run(&self.meters, || p.fill(out)).is_some(),
            None => false,
        };
        if !played {
            out.iter_mut().for_each(|x| *x = 0.0);
        }
        self.busy.store(false, Ordering::Release);
    }

    /// [`Player::hold`] from the callback: a cycle that plays nothing
    /// (the buffer is left to the caller). Wait-free.
    pub fn hold(&self) {
        if self.busy.swap(true, Ordering::Acquire) {
            return;
        }
        // SAFETY: `busy` was false, so no one else is inside.
        if let Some(p) = unsafe { &mut *self.player.get() } {
            p.hold();
        }
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
