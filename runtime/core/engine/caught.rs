//! Panic payloads caught on the audio thread. Freeing one there would be a
//! free in the callback, so the engine keeps them, within a capacity
//! reserved when it is built, and they go when the engine is dropped, off
//! the audio thread. The allocation of a payload itself is std's (it boxes
//! the panic's message before unwinding) and cannot be avoided; the engine
//! bounds how often it happens instead: a node that panics is dead from
//! then on, and a lane kernel or steady path that panics is not run again
//! (see `lanes.rs`).

use std::any::Any;

/// A caught panic's payload.
pub(super) type Payload = Box<dyn Any + Send>;

/// The payloads an engine caught.
pub(super) struct Caught {
    kept: Vec<Payload>,
}

impl Caught {
    /// Payloads kept; later ones are leaked, never freed on the audio thread
    /// (each is one node's, or one lane group's, once per engine).
    pub(super) const KEPT: usize = 16;

    /// Reserves room for [`KEPT`](Self::KEPT) (allocates: at build).
    pub(super) fn new() -> Caught {
        Caught {
            kept: Vec::with_capacity(Self::KEPT),
        }
    }

    /// Keeps `p` until the engine is dropped (real-time safe: within the
    /// reserved capacity, or leaked).
    pub(super) fn keep(&mut self, p: Payload) {
        if self.kept.len() < self.kept.capacity() {
            self.kept.push(p);
        } else {
            std::mem::forget(p);
        }
    }

    /// The first payload's message, when it is a string (as `panic!`
    /// makes it).
    pub(super) fn first_message(&self) -> Option<&str> {
        let p = self.kept.first()?;
        p.downcast_ref::<&'static str>()
            .copied()
            .or_else(|| p.downcast_ref::<String>().map(String::as_str))
    }
}
