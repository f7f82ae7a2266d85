//! The repro and live converter: the `rubato` crate's synchronous FFT
//! resampler ([`rubato::Fft`], Blackman–Harris² window), behind the same
//! streaming face as the strict one.
//!
//! **Blocks.** rubato converts fixed blocks of [`Library::block_frames`]
//! input frames (an even multiple of `M`, at least [`BLOCK_FRAMES`]); this wrapper
//! gathers pushed frames into such blocks and queues rubato's output, so the
//! block boundaries sit at the same input frames whatever the caller's
//! push sizes. rubato's delay (half its FFT block, in output frames) is cut
//! from the front of the output, so output frame 0 is input time 0 as with
//! [`Polyphase`](super::Polyphase).
//!
//! **NaN and infinity.** A sample that is not finite is converted as
//! silence (rubato's FFT cannot take one); the strict converter passes it
//! through its filter, so the output frames it reaches are NaN.
//!
//! **Determinism it keeps.** The same input gives the same bytes on one
//! machine and build, whatever the push and pull sizes, because the blocks
//! fed to rubato do not depend on them. Not across CPUs or builds: rubato
//! designs its filter with `std`'s `sin`/`cos` (the platform's math
//! library), and its FFTs (`realfft` over `rustfft`) choose AVX, SSE or
//! NEON kernels at run time, which round differently. That is what repro
//! and live promise; strict uses [`Polyphase`](super::Polyphase).

use super::polyphase::{output_frames, ratio};
use super::{RateConverter, RateError};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler, WindowFunction};

/// The fewest input frames per rubato block: the block sets the length of
/// rubato's filter and so its transition band (at least 100 dB of
/// rejection from the lower Nyquist with the passband flat to 0.9 × it, as
/// the tests measure).
pub(crate) const BLOCK_FRAMES: usize = 1024;

/// rubato's FFT resampler behind [`RateConverter`]. `new` allocates;
/// `push`, `pull`, `finish` and `reset` do not.
pub(crate) struct Library {
    inner: Fft<f64>,
    up: usize,
    down: usize,
    channels: usize,
    block_in: usize,
    block_out: usize,
    /// The block being gathered, interleaved, `gathered` frames of `block_in`.
    gather: Vec<f64>,
    gathered: usize,
    /// Converted frames waiting to be pulled, interleaved: frames
    /// `queue_head..queue_tail` of `queue`.
    queue: Vec<f64>,
    queue_head: usize,
    queue_tail: usize,
    /// Output frames of rubato still to cut from the front (its delay).
    skip: usize,
    pushed: u64,
    /// Output frames handed to the caller.
    emitted: u64,
    finished: bool,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("up", &self.up)
            .field("down", &self.down)
            .field("channels", &self.channels)
            .field("block_in", &self.block_in)
            .finish_non_exhaustive()
    }
}

impl Library {
    /// A converter from `from_hz` to `to_hz` that accepts up to `capacity`
    /// frames per push between pulls.
    pub(crate) fn new(
        from_hz: u32,
        to_hz: u32,
        channels: usize,
        capacity: usize,
    ) -> Result<Library, RateError> {
        if channels == 0 {
            return Err(RateError::NoChannels);
        }
        let (up, down) = ratio(from_hz, to_hz)?;
        // An even number of `M`-frame units per block: rubato's filter is
        // then centred on a whole input frame that falls on an output
        // frame, and its reported delay is exact.
        let units = BLOCK_FRAMES.div_ceil(down).next_multiple_of(2);
        let inner = Fft::<f64>::new_custom(
            from_hz as usize,
            to_hz as usize,
            units * down,
            1,
            channels,
            WindowFunction::BlackmanHarris2,
            FixedSync::Both,
        )
        .map_err(|e| RateError::Library(e.to_string()))?;
        let block_in = inner.input_frames_next();
        let block_out = inner.output_frames_next();
        // Room for every block a full push completes, and one more.
        let queue_frames = block_out * (capacity.div_ceil(block_in) + 2);
        let mut conv = Library {
            inner,
            up,
            down,
            channels,
            block_in,
            block_out,
            gather: vec![0.0; block_in * channels],
            gathered: 0,
            queue: vec![0.0; queue_frames * channels],
            queue_head: 0,
            queue_tail: 0,
            skip: 0,
            pushed: 0,
            emitted: 0,
            finished: false,
        };
        conv.reset();
        Ok(conv)
    }

    /// Output frames the caller has yet to receive in all: unbounded until
    /// `finish`.
    fn owed(&self) -> u64 {
        if self.finished {
            output_frames(self.pushed, self.up, self.down) - self.emitted
        } else {
            u64::MAX
        }
    }

    /// Converts the gathered block if it is full (or, after `finish`, while
    /// output is owed) and the queue has room for its output.
    fn convert_ready(&mut self) {
        loop {
            let queued = (self.queue_tail - self.queue_head) as u64;
            let full = self.gathered == self.block_in;
            let tail_needed = self.finished && queued < self.owed();
            if !(full || tail_needed) {
                return;
            }
            let frames_room = self.queue.len() / self.channels;
            if frames_room - self.queue_tail < self.block_out {
                if self.queue_head == 0 {
                    return;
                }
                let ch = self.channels;
                self.queue
                    .copy_within(self.queue_head * ch..self.queue_tail * ch, 0);
                self.queue_tail -= self.queue_head;
                self.queue_head = 0;
                if frames_room - self.queue_tail < self.block_out {
                    return;
                }
            }
            // After `finish` the rest of the block is silence.
            self.gather[self.gathered * self.channels..].fill(0.0);
            // rubato's inverse FFT refuses a block holding a NaN or an
            // infinity (it panics): such a sample is read as silence.
            for x in &mut self.gather {
                if !x.is_finite() {
                    *x = 0.0;
                }
            }
            let ch = self.channels;
            let input = InterleavedSlice::new(&self.gather[..], ch, self.block_in)
                .expect("the gather buffer holds one block");
            let out_slice =
                &mut self.queue[self.queue_tail * ch..(self.queue_tail + self.block_out) * ch];
            let mut output = InterleavedSlice::new_mut(out_slice, ch, self.block_out)
                .expect("the queue has room for one block");
            let (_, written) = self
                .inner
                .process_into_buffer(&input, &mut output, None)
                .expect("blocks of the sizes rubato asked for");
            self.gathered = 0;
            // Cut rubato's delay from the front of its output.
            let cut = self.skip.min(written);
            if cut > 0 {
                let start = self.queue_tail * ch;
                self.queue
                    .copy_within(start + cut * ch..start + written * ch, start);
                self.skip -= cut;
            }
            self.queue_tail += written - cut;
        }
    }
}

impl RateConverter for Library {
    fn channels(&self) -> usize {
        self.channels
    }

    fn push(&mut self, frames: &[f64]) -> usize {
        assert_eq!(
            frames.len() % self.channels,
            0,
            "push takes whole interleaved frames"
        );
        if self.finished {
            return 0;
        }
        let ch = self.channels;
        let mut taken = 0;
        let want = frames.len() / ch;
        while taken < want {
            if self.gathered == self.block_in {
                self.convert_ready();
                if self.gathered == self.block_in {
                    break;
                }
            }
            let n = (self.block_in - self.gathered).min(want - taken);
            self.gather[self.gathered * ch..(self.gathered + n) * ch]
                .copy_from_slice(&frames[taken * ch..(taken + n) * ch]);
            self.gathered += n;
            taken += n;
        }
        self.convert_ready();
        self.pushed += taken as u64;
        taken
    }

    fn pull(&mut self, out: &mut [f64]) -> usize {
        let ch = self.channels;
        self.convert_ready();
        let mut done = 0;
        let want = out.len() / ch;
        loop {
            let owed = self.owed();
            let n = (want - done)
                .min(self.queue_tail - self.queue_head)
                .min(usize::try_from(owed).unwrap_or(usize::MAX));
            out[done * ch..(done + n) * ch]
                .copy_from_slice(&self.queue[self.queue_head * ch..(self.queue_head + n) * ch]);
            self.queue_head += n;
            self.emitted += n as u64;
            done += n;
            if n == 0 || done == want {
                return done;
            }
            self.convert_ready();
        }
    }

    fn finish(&mut self) {
        self.finished = true;
    }

    fn reset(&mut self) {
        self.inner.reset();
        self.gather.fill(0.0);
        self.gathered = 0;
        self.queue_head = 0;
        self.queue_tail = 0;
        self.skip = self.inner.output_delay();
        self.pushed = 0;
        self.emitted = 0;
        self.finished = false;
    }

    fn latency(&self) -> usize {
        // A frame waits for its block to fill, then for rubato's delay.
        self.block_out + self.inner.output_delay()
    }

    fn output_frames(&self, input_frames: u64) -> u64 {
        output_frames(input_frames, self.up, self.down)
    }
}
