//! The session's audio input as the engine reads it: one buffer per input
//! channel up to the highest one an `input` node reads, loaded for each
//! block before the nodes run, either by the host (the live callback loads
//! what the input ring gives it) or by an [`InputFeed`] the engine owns
//! (offline: a WAV file, a journal's recorded input, the history a handover
//! fast-forwards through).
//!
//! Input sample n is what the engine reads at absolute sample n: an `input`
//! node's output at n is input sample n, whatever the block size, so a
//! render, a live session and its replay read the same samples at the same
//! clock.

use super::Engine;
use crate::dsp::vector::{all_finite_at, SimdLevel};
use crate::dsp::Sample;

/// Where an engine takes its input from, block by block (offline and on
/// control threads; the callback loads the engine itself).
pub trait InputFeed: Send {
    /// Writes the input frames `start .. start + block.frames()` (absolute
    /// engine samples) of every channel below `block.channels()`; a channel
    /// or frame the feed does not have is silence. Called in increasing
    /// `start` order, each block following the previous one.
    fn read(&mut self, start: u64, block: &mut InputBlock<'_>);
}

/// One block of input, a buffer per channel (`frames` long each).
pub struct InputBlock<'a> {
    data: &'a mut [f64],
    stride: usize,
    frames: usize,
}

impl InputBlock<'_> {
    /// A block over `data`: a buffer of `stride` samples per channel, of
    /// which the first `frames` are this block's (`frames` ≤ `stride`).
    pub fn new(data: &mut [f64], stride: usize, frames: usize) -> InputBlock<'_> {
        InputBlock {
            data,
            stride,
            frames: frames.min(stride),
        }
    }
    /// Channels the engine reads (the highest `input` channel + 1).
    pub fn channels(&self) -> usize {
        self.data.len() / self.stride.max(1)
    }
    /// Frames in this block.
    pub fn frames(&self) -> usize {
        self.frames
    }
    /// The samples of channel `c` (`frames` long).
    pub fn channel_mut(&mut self, c: usize) -> &mut [f64] {
        let at = c * self.stride;
        &mut self.data[at..at + self.frames]
    }
    /// Loads `frames` interleaved frames of `width` channels from `src`:
    /// channel c takes column c, channels the source lacks are silent.
    pub fn load_interleaved<T: Copy + Into<f64>>(&mut self, src: &[T], width: usize) {
        let frames = self.frames;
        for c in 0..self.channels() {
            let dst = self.channel_mut(c);
            if c < width {
                // Whole frames first, then what a short source holds of
                // the rest (a frame cut short keeps its first columns).
                let whole = (src.len() / width).min(frames);
                if width == 1 {
                    for (d, &x) in dst.iter_mut().zip(&src[..whole]) {
                        *d = x.into();
                    }
                } else {
                    for (d, frame) in dst.iter_mut().zip(src.chunks_exact(width).take(whole)) {
                        *d = frame[c].into();
                    }
                }
                for (i, d) in dst.iter_mut().enumerate().take(frames).skip(whole) {
                    *d = src.get(i * width + c).map_or(0.0, |&x| x.into());
                }
            } else {
                dst.fill(0.0);
            }
        }
    }
}

/// The engine's input buffers and where they are loaded from.
pub(super) struct Inputs {
    /// `channels × block` samples, a block per channel.
    data: Vec<f64>,
    channels: usize,
    block: usize,
    feed: Option<Box<dyn InputFeed>>,
}

impl Inputs {
    pub(super) fn new(channels: usize, block: usize) -> Inputs {
        Inputs {
            data: vec![0.0; channels * block],
            channels,
            block,
            feed: None,
        }
    }

    /// Loads the block `start .. start + frames` from the feed, if any.
    pub(super) fn pull(&mut self, start: u64, frames: usize) {
        if self.channels == 0 {
            return;
        }
        if let Some(feed) = &mut self.feed {
            let mut b = InputBlock {
                data: &mut self.data,
                stride: self.block,
                frames,
            };
            feed.read(start, &mut b);
        }
    }

    /// Writes `dst.len()` samples of channel `c` from block offset `offset`
    /// into an `input` node's buffer, at its precision; a non-finite sample
    /// (a float file can hold one) becomes silence. Returns how many were.
    pub(super) fn copy_to<S: Sample>(
        &self,
        simd: SimdLevel,
        c: usize,
        offset: usize,
        dst: &mut [S],
    ) -> u64 {
        if c >= self.channels {
            dst.fill(S::ZERO);
            return 0;
        }
        let at = c * self.block + offset;
        let mut bad = 0;
        let src = &self.data[at..at + dst.len()];
        if all_finite_at(simd, src) {
            // The usual block: a plain conversion, in vector lanes.
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = S::from_f64(x);
            }
            return 0;
        }
        for (d, &x) in dst.iter_mut().zip(src) {
            if x.is_finite() {
                *d = S::from_f64(x);
            } else {
                *d = S::ZERO;
                bad += 1;
            }
        }
        bad
    }
}

impl Engine {
    /// Input channels this engine reads: the highest channel an `input`
    /// node reads, plus one (0 without `input` nodes).
    pub fn input_channels(&self) -> usize {
        self.inputs.channels
    }

    /// Makes `feed` the source of every following block's input (offline
    /// renders, replays, fast-forwards). Not real-time: it may drop a feed.
    pub fn set_input_feed(&mut self, feed: Box<dyn InputFeed>) {
        self.inputs.feed = Some(feed);
    }

    /// The buffers of the next `frames`-frame block, for a host that loads
    /// input itself (the callback). Without a feed, `process_block` reads
    /// whatever was loaded last. Real-time safe.
    pub fn input_block(&mut self, frames: usize) -> InputBlock<'_> {
        let frames = frames.min(self.block_size);
        InputBlock {
            data: &mut self.inputs.data,
            stride: self.inputs.block,
            frames,
        }
    }

    /// Samples of the input that were not finite and were read as silence.
    #[cfg(test)]
    pub(crate) fn input_scrubbed(&self) -> u64 {
        self.stats.input_scrubbed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::render_to_vec;
    use crate::graph::{compile, CompileOptions};
    use crate::profile::Profile;

    /// A feed of one channel: sample n of `samples`, silence after.
    struct Vector(Vec<f64>);
    impl InputFeed for Vector {
        fn read(&mut self, start: u64, block: &mut InputBlock<'_>) {
            let frames = block.frames();
            for c in 0..block.channels() {
                let dst = block.channel_mut(c);
                for (i, d) in dst.iter_mut().enumerate().take(frames) {
                    let n = start as usize + i;
                    *d = if c == 0 {
                        self.0.get(n).copied().unwrap_or(0.0)
                    } else {
                        0.0
                    };
                }
            }
        }
    }

    fn engine(text: &str, profile: Profile, block: usize) -> Engine {
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(profile),
                block_size: Some(block),
                ..CompileOptions::default()
            },
        )
        .unwrap();
        Engine::new(plan)
    }

    const IDENTITY: &str = r#"{"version":"1.0","seed":1,"sample_rate":48000,
        "nodes":[{"id":"mic","op":"input","params":{"channel":0}},
                 {"id":"far","op":"input","params":{"channel":2}}],
        "outputs":{"main":["mic","far"]}}"#;

    /// f32 values, odd sizes: every block size and profile writes them back.
    #[test]
    fn input_to_main_is_the_input_at_every_block_size() {
        let samples: Vec<f64> = (0..1000)
            .map(|i| (libm::sinf(i as f32 * 0.37) * 0.9) as f64)
            .collect();
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            for block in [1, 7, 64, 4096] {
                let mut e = engine(IDENTITY, profile, block);
                assert_eq!(e.input_channels(), 3);
                e.set_input_feed(Box::new(Vector(samples.clone())));
                let out = render_to_vec(&mut e, 1200);
                for (n, (&y, &x)) in out[0]
                    .iter()
                    .zip(samples.iter().chain(&[0.0; 200]))
                    .enumerate()
                {
                    assert_eq!(
                        y.to_bits(),
                        x.to_bits(),
                        "{profile} block {block} sample {n}"
                    );
                }
                assert!(out[1].iter().all(|&y| y == 0.0), "channel 2 is silent");
            }
        }
    }

    /// A NaN in the input is read as silence and counted; the node keeps running.
    #[test]
    fn non_finite_input_is_silence() {
        let mut e = engine(IDENTITY, Profile::Repro, 64);
        e.set_input_feed(Box::new(Vector(vec![0.5, f64::NAN, f64::INFINITY, 0.25])));
        let out = render_to_vec(&mut e, 4);
        assert_eq!(out[0], vec![0.5, 0.0, 0.0, 0.25]);
        assert_eq!(e.input_scrubbed(), 2);
        assert_eq!(e.stats().nan_events, 0);
    }

    /// Interleaved frames load column by column at every width: whole
    /// frames, a frame cut short keeps the columns it has, and what the
    /// source lacks (frames or channels) is silent.
    #[test]
    fn interleaved_frames_load_column_by_column() {
        for width in 1..=4usize {
            for len in [0, 1, 4 * width - 1, 4 * width, 9 * width + 1] {
                let src: Vec<f32> = (0..len).map(|k| k as f32 + 0.5).collect();
                let mut data = vec![7.0; 3 * 8];
                InputBlock::new(&mut data, 8, 6).load_interleaved(&src, width);
                for c in 0..3 {
                    for i in 0..8 {
                        let want = if i >= 6 {
                            7.0 // beyond the block's frames: untouched
                        } else if c < width && i * width + c < len {
                            (i * width + c) as f64 + 0.5
                        } else {
                            0.0
                        };
                        assert_eq!(
                            data[c * 8 + i],
                            want,
                            "width {width}, {len} samples, [{c}][{i}]"
                        );
                    }
                }
            }
        }
    }

    /// Without a feed the engine reads what the host loaded for the block.
    #[test]
    fn host_loaded_block() {
        let mut e = engine(IDENTITY, Profile::Strict, 4);
        e.input_block(4)
            .load_interleaved(&[0.1f32, 9.0, 0.2, 9.0, 0.3, 9.0, 0.4, 9.0], 2);
        e.process_block(4);
        let bus = e.bus();
        let got: Vec<f64> = (0..4).map(|i| bus.get(0, i)).collect();
        assert_eq!(
            got,
            vec![0.1f32 as f64, 0.2f32 as f64, 0.3f32 as f64, 0.4f32 as f64]
        );
        assert!(
            (0..4).all(|i| bus.get(1, i) == 0.0),
            "channel 2 is beyond the source"
        );
    }
}
