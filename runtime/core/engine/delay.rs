//! A test-only hook: a delay before a worker runs a node or a part of a
//! lane group, to show that the order in which the work of a level
//! finishes changes no bit.

use std::sync::atomic::{AtomicU64, Ordering};

/// The seed of the delays (0: none).
pub(in crate::engine) static SEED: AtomicU64 = AtomicU64::new(0);

/// Spins for a pseudo-random while, up to about 50 µs, when delays are on.
pub(in crate::engine) fn wait(node: usize) {
    let seed = SEED.load(Ordering::Relaxed);
    if seed == 0 {
        return;
    }
    // A fresh value per call: the seed, the node and a per-thread count.
    thread_local!(static COUNT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
    let c = COUNT.with(|c| {
        c.set(c.get().wrapping_add(1));
        c.get()
    });
    let mut x = seed ^ (node as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ c << 32;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    let until = std::time::Instant::now() + std::time::Duration::from_nanos(x % 50_000);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}
