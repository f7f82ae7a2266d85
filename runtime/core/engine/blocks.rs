//! Engine loops without a player, for tests and library users that hold
//! an engine: exactly N frames of a plan, in blocks on the absolute grid,
//! stopping at chosen samples, or into memory. The command line's offline
//! hosts play through the player instead (`Player::play_frames`).

use crate::engine::{BusRef, Engine};

/// Runs the engine for exactly `frames` frames, calling `sink` with each block.
pub fn run_blocks(
    engine: &mut Engine,
    frames: u64,
    mut sink: impl FnMut(BusRef<'_>),
    mut progress: impl FnMut(u64),
) {
    let block = engine.block_size() as u64;
    let mut done = 0;
    while done < frames {
        let n = block.min(frames - done) as usize;
        engine.process_block(n);
        sink(engine.bus());
        done += n as u64;
        progress(done);
    }
}

/// Runs the engine for exactly `frames` frames from its clock, stopping at
/// each sample of `stops` (absolute, ascending; those outside the render are
/// ignored) to call `at_stop` there, between blocks.
///
/// Blocks end on the absolute grid (multiples of the block size) and at the
/// stops: a render that starts at a snapshot's sample takes exactly the
/// steps the render that wrote the snapshot took after it, and from a
/// fresh engine without stops the steps are those of [`run_blocks`].
pub fn run_blocks_with_stops<E>(
    engine: &mut Engine,
    frames: u64,
    stops: &[u64],
    mut at_stop: impl FnMut(&Engine) -> Result<(), E>,
    mut sink: impl FnMut(BusRef<'_>),
    mut progress: impl FnMut(u64),
) -> Result<(), E> {
    let block = engine.block_size() as u64;
    let start = engine.clock();
    let end = start + frames;
    let mut stops = stops
        .iter()
        .copied()
        .filter(|s| (start..=end).contains(s))
        .peekable();
    loop {
        let clock = engine.clock();
        while stops.next_if(|s| *s <= clock).is_some() {
            at_stop(engine)?;
        }
        if clock >= end {
            return Ok(());
        }
        let mut to = ((clock / block + 1) * block).min(end);
        if let Some(s) = stops.peek() {
            to = to.min(*s);
        }
        engine.process_block((to - clock) as usize);
        sink(engine.bus());
        progress(to - start);
    }
}

/// Renders into memory: one f64 vector per channel (exact for both precisions).
pub fn render_to_vec(engine: &mut Engine, frames: u64) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::with_capacity(frames as usize); engine.channels()];
    run_blocks(
        engine,
        frames,
        |bus| {
            for (c, o) in out.iter_mut().enumerate() {
                o.extend((0..bus.frames()).map(|i| bus.get(c, i)));
            }
        },
        |_| {},
    );
    out
}
