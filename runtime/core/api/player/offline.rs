//! The player driven by an offline host (`render`, `plot`), which takes
//! the main bus at the engine's precision instead of device frames: the
//! same serving, change records and parts as the callback's block.

use super::{InputSource, Meters, Player, Switches};
use crate::engine::{BusRef, ChangeFeed, Engine};
use std::sync::Arc;
use std::time::Instant;

impl<I: InputSource + ?Sized> Player<I> {
    /// Plays from the clock towards `end` (at most one block on) for an
    /// offline host: serves the control side, takes change records, queues
    /// the changes of `feed` due before the end (the part ends earlier
    /// when the engine's queue cannot hold them: see
    /// `ChangeFeed::push_due`), reads the input of these frames, and
    /// plays them as the callback does, handing `sink` the playing
    /// engine's main bus after each part (an engine fading out under a
    /// switch is not in it). Returns the sample it played to, or `sink`'s
    /// first error.
    pub fn play_bus<E>(
        &mut self,
        end: u64,
        feed: Option<&mut ChangeFeed>,
        mut sink: impl FnMut(BusRef<'_>) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.play_offline(end, feed, false, |p| sink(p.deck.engine().bus()))
    }

    /// As [`play_bus`](Self::play_bus), handing `sink` what the outputs
    /// get after each part instead: the main bus of the playing engine,
    /// crossfaded with the one fading out under a switch, mapped onto the
    /// player's outputs, interleaved at f64 before the device stage. A
    /// scripted session ([`Scripted`](crate::engine::incoming::Scripted))
    /// plays through it.
    pub(crate) fn play_mix<E>(
        &mut self,
        end: u64,
        feed: Option<&mut ChangeFeed>,
        mut sink: impl FnMut(&[f64]) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.play_offline(end, feed, true, |p| sink(p.deck.output()))
    }

    /// The body of [`play_bus`](Self::play_bus), calling `part` with the
    /// player after each part; `map`: whether the deck maps its output
    /// (only `play_mix` reads it).
    fn play_offline<E>(
        &mut self,
        end: u64,
        feed: Option<&mut ChangeFeed>,
        map: bool,
        mut part: impl FnMut(&mut Self) -> Result<(), E>,
    ) -> Result<u64, E> {
        self.deck.map_output(map);
        self.serve();
        self.serve_timing();
        self.take_controls();
        let start = self.deck.clock();
        let mut end = end.min(start + self.deck.block_size() as u64);
        if let Some(f) = feed {
            end = f.push_due(self.deck.engine_mut(), end);
        }
        let width = self.input_width;
        if let Some(input) = &mut self.input {
            input.read(&mut self.input_buf[..(end - start) as usize * width]);
        }
        self.play_parts(end, |_, _, end| end, |p, _, _| part(p))?;
        self.note_block(0.0);
        Ok(self.deck.clock())
    }
}

impl<I: InputSource + ?Sized> Player<I> {
    /// Plays exactly `frames` frames from the clock for an offline host,
    /// in blocks on the absolute grid (multiples of the block size) that
    /// also end at each sample of `stops` (absolute, ascending; those
    /// outside the frames are ignored), calling `at_stop` there between
    /// blocks. A render that starts at a snapshot's sample so takes exactly
    /// the steps the render that wrote the snapshot took after it. Each
    /// block is [`play_bus`](Self::play_bus) with `feed` and `sink`;
    /// `progress` gets the frames done after each. Ends at the first error
    /// of `at_stop` or `sink`.
    pub fn play_frames<E>(
        &mut self,
        frames: u64,
        stops: &[u64],
        mut feed: Option<&mut ChangeFeed>,
        mut at_stop: impl FnMut(&Engine) -> Result<(), E>,
        mut sink: impl FnMut(BusRef<'_>) -> Result<(), E>,
        mut progress: impl FnMut(u64),
    ) -> Result<(), E> {
        let block = self.deck.block_size() as u64;
        let start = self.deck.clock();
        let end = start + frames;
        let mut stops = stops
            .iter()
            .copied()
            .filter(|s| (start..=end).contains(s))
            .peekable();
        loop {
            let clock = self.deck.clock();
            while stops.next_if(|s| *s <= clock).is_some() {
                at_stop(self.deck.engine())?;
            }
            if clock >= end {
                return Ok(());
            }
            let mut to = ((clock / block + 1) * block).min(end);
            if let Some(s) = stops.peek() {
                to = to.min(*s);
            }
            let to = self.play_bus(to, feed.as_deref_mut(), &mut sink)?;
            progress(to - start);
        }
    }
}

/// A player for an offline host: the engine's main bus on as many
/// outputs, no limit, no stop fade, meters of its own.
pub fn offline_player(engine: Engine) -> Player {
    let channels = engine.channels();
    Player::new(
        engine,
        channels,
        None,
        1,
        Arc::new(Meters::default()),
        Arc::new(Switches::default()),
        Instant::now(),
    )
}
