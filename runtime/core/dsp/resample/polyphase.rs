//! The strict converter: a Kaiser-windowed sinc in polyphase form, designed
//! and run in f64 with `+ − × ÷ sqrt` and the pinned `libm::sin` only.
//!
//! **Design.** For a ratio reduced to `L/M` (output/input, `gcd` divided
//! out) the prototype runs at `L × input rate`. With `R = max(L, M)` it has
//! `N = TAPS_PER_RATIO · R − 1` taps (odd), centre `c = (N − 1)/2`, and for
//! `d = n − c`:
//!
//! `h[n] = sinc(CUTOFF · d / R) · I0(β·√(1 − (d/c)²))`, then scaled by
//! `L / Σh` (summed in index order), so each phase has unit gain at DC on
//! average.
//!
//! `sinc(x) = sin(πx)/(πx)` with `libm::sin(PI * x)`; `I0` is the power series
//! of [`bessel_i0`]. `CUTOFF` puts the −6 dB point at 0.95 × the lower
//! Nyquist, and the Kaiser window's transition band spans 0.9 to 1.0 × the
//! lower Nyquist: the passband (to 0.9 ×) is flat within 1e-5 dB and
//! everything from the lower Nyquist up is at least 142 dB down (the
//! figures the tests measure).
//!
//! **Filtering.** Output frame `m` is the prototype evaluated at the high
//! rate's sample `t = m·M + c`:
//! `y[m] = Σ_k x[k] · h[t − k·L]`, input before frame 0 being zero. With
//! `p = t mod L` and `k₁ = t div L` that is a dot product of phase `p`'s
//! taps with the `T` newest inputs up to `k₁`. Because the centre `c` is
//! added to `t`, the filter's delay is taken out: an impulse at input
//! frame `k` peaks at output time `k·L/M`, and output frame 0 is input
//! time 0.
//!
//! **Determinism.** Every sum has one order: four running partial sums over
//! the taps in ascending index (tap `i` into partial `i mod 4`), then
//! `(s0 + s1) + (s2 + s3)`. Separate multiplies and adds (never a fused
//! multiply-add) over a fixed order are the same bits on every CPU and at
//! every optimisation level, and the output of a frame depends only on the
//! input frames, never on how they were split into pushes and pulls.
//!
//! **Speed.** The four partial sums of one output are the four lanes of
//! one AVX register (where the CPU has AVX; plain scalar code elsewhere,
//! the same bits). A pull computes up to [`BATCH`] dot products (frames ×
//! channels) side by side, so their additions, each waiting on its own
//! accumulator, overlap instead of queueing behind one another.

use super::{RateConverter, RateError};
use crate::dsp::oversample::bessel_i0;

/// The prototype's length per unit of `max(L, M)`: `N = TAPS_PER_RATIO · max(L, M) − 1`.
pub const TAPS_PER_RATIO: usize = 192;
/// The Kaiser window's β.
pub const KAISER_BETA: f64 = 14.8;
/// The sinc's cutoff as a fraction of the lower Nyquist (the −6 dB point).
pub const CUTOFF: f64 = 0.95;
/// The most phases (`L`) a converter builds: its table holds about
/// `TAPS_PER_RATIO · max(L, M)` taps, so finer ratios are refused.
pub const MAX_PHASES: u64 = 8192;

/// Greatest common divisor.
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The ratio `(L, M)` of a conversion from `from_hz` to `to_hz` in lowest
/// terms, checked against [`MAX_PHASES`].
pub fn ratio(from_hz: u32, to_hz: u32) -> Result<(usize, usize), RateError> {
    if from_hz == 0 || to_hz == 0 {
        return Err(RateError::ZeroRate { from_hz, to_hz });
    }
    let g = gcd(from_hz as u64, to_hz as u64);
    let (l, m) = (to_hz as u64 / g, from_hz as u64 / g);
    if l > MAX_PHASES || m > MAX_PHASES {
        return Err(RateError::RatioTooFine {
            from_hz,
            to_hz,
            up: l,
            down: m,
        });
    }
    Ok((l as usize, m as usize))
}

/// The prototype lowpass of the `from_hz → to_hz` conversion, all `N` taps
/// at `L × from_hz` (see the module docs for the formula).
pub fn prototype(from_hz: u32, to_hz: u32) -> Result<Vec<f64>, RateError> {
    let (l, m) = ratio(from_hz, to_hz)?;
    Ok(design(l, m))
}

fn design(l: usize, m: usize) -> Vec<f64> {
    if l == m {
        // Equal rates: one tap of 1, frames pass through unchanged.
        return vec![1.0];
    }
    let r = l.max(m);
    let n = TAPS_PER_RATIO * r - 1;
    let c = (n - 1) / 2;
    let mut h = vec![0.0; n];
    for (i, tap) in h.iter_mut().enumerate() {
        let d = i as f64 - c as f64;
        let x = CUTOFF * d / r as f64;
        let sinc = if d == 0.0 {
            1.0
        } else {
            libm::sin(core::f64::consts::PI * x) / (core::f64::consts::PI * x)
        };
        let u = d / c as f64;
        *tap = sinc * bessel_i0(KAISER_BETA * libm::sqrt(1.0 - u * u));
    }
    let mut sum = 0.0;
    for tap in &h {
        sum += *tap;
    }
    let scale = l as f64 / sum;
    for tap in &mut h {
        *tap *= scale;
    }
    h
}

/// A strict streaming converter between two integer rates, over interleaved
/// frames of `channels` channels.
///
/// `new` allocates everything; [`push`](RateConverter::push),
/// [`pull`](RateConverter::pull) and [`finish`](RateConverter::finish)
/// never allocate, lock or block.
#[derive(Clone, Debug)]
pub struct Polyphase {
    up: usize,
    down: usize,
    channels: usize,
    /// Taps per phase (a multiple of 4).
    taps: usize,
    /// `table[p·taps + i] = h[p + (taps − 1 − i)·L]` (zero past the prototype).
    table: Vec<f64>,
    /// Planar input, one run of `buf_len` frames per channel; position 0
    /// holds absolute input frame `start`.
    buf: Vec<f64>,
    buf_len: usize,
    start: i64,
    /// Frames held in `buf` (positions `0..filled`).
    filled: usize,
    /// Input frames pushed.
    pushed: u64,
    /// The next output frame: its phase and newest input frame `k₁`.
    next_out: u64,
    phase: usize,
    newest: i64,
    latency: usize,
    finished: bool,
    /// The CPU has AVX: the dot products run in 4-lane registers.
    avx: bool,
}

/// Dot products a pull computes together (frames × channels).
const BATCH: usize = 8;

/// One dot product to compute: the phase row at `g` in the table with the
/// run at `x` in the input buffer, into `out[out]`.
#[derive(Clone, Copy, Debug, Default)]
struct Job {
    g: usize,
    x: usize,
    out: usize,
}

impl Polyphase {
    /// A converter from `from_hz` to `to_hz` that accepts up to `capacity`
    /// frames per push between pulls (more are accepted once output is
    /// pulled). Allocates its table and buffers here, off the audio thread.
    pub fn new(
        from_hz: u32,
        to_hz: u32,
        channels: usize,
        capacity: usize,
    ) -> Result<Polyphase, RateError> {
        if channels == 0 {
            return Err(RateError::NoChannels);
        }
        let (l, m) = ratio(from_hz, to_hz)?;
        let h = design(l, m);
        let taps = h.len().div_ceil(l).div_ceil(4) * 4;
        let mut table = vec![0.0; l * taps];
        for p in 0..l {
            for i in 0..taps {
                let n = p + (taps - 1 - i) * l;
                if n < h.len() {
                    table[p * taps + i] = h[n];
                }
            }
        }
        let c = (h.len() - 1) / 2;
        // History of `taps − 1` frames, room for one output's step of
        // `⌈M/L⌉` frames, and the caller's pushes.
        let buf_len = taps + m.div_ceil(l) + capacity.max(1);
        let mut conv = Polyphase {
            up: l,
            down: m,
            channels,
            taps,
            table,
            buf: vec![0.0; channels * buf_len],
            buf_len,
            start: 0,
            filled: 0,
            pushed: 0,
            next_out: 0,
            phase: 0,
            newest: 0,
            latency: c.div_ceil(m),
            finished: false,
            avx: has_avx(),
        };
        conv.reset();
        Ok(conv)
    }

    /// This converter computing with the portable kernel, one dot product
    /// at a time (what a CPU without AVX runs): the same bits, slower; for
    /// tests and benchmarks that compare the two.
    pub fn portable(mut self) -> Polyphase {
        self.avx = false;
        self
    }

    /// Taps per phase, a multiple of 4 (the work per output frame and channel).
    pub fn taps_per_phase(&self) -> usize {
        self.taps
    }

    /// The ratio `(L, M)` in lowest terms.
    pub fn ratio(&self) -> (usize, usize) {
        (self.up, self.down)
    }

    /// Drops frames older than the next output needs, moving the rest to
    /// the front of each channel's run.
    fn compact(&mut self) {
        let keep_from = self.newest - self.taps as i64 + 1;
        let drop = (keep_from - self.start).clamp(0, self.filled as i64) as usize;
        if drop == 0 {
            return;
        }
        for ch in 0..self.channels {
            let run = &mut self.buf[ch * self.buf_len..(ch + 1) * self.buf_len];
            run.copy_within(drop..self.filled, 0);
        }
        self.filled -= drop;
        self.start += drop as i64;
    }

    /// Appends one frame of zeros (past the end of a finished input).
    fn append_zero(&mut self) -> bool {
        if self.filled == self.buf_len {
            self.compact();
            if self.filled == self.buf_len {
                return false;
            }
        }
        for ch in 0..self.channels {
            self.buf[ch * self.buf_len + self.filled] = 0.0;
        }
        self.filled += 1;
        true
    }

    /// Computes `jobs` into `out`.
    fn run(&self, jobs: &[Job], out: &mut [f64]) {
        let taps = self.taps;
        #[cfg(target_arch = "x86_64")]
        if self.avx {
            if let Ok(batch) = <&[Job; BATCH]>::try_from(jobs) {
                // SAFETY: the CPU has AVX (`has_avx`).
                unsafe { dots_avx(&self.table, &self.buf, batch, taps, out) };
            } else {
                for job in jobs {
                    // SAFETY: as above.
                    unsafe { dots_avx(&self.table, &self.buf, &[*job], taps, out) };
                }
            }
            return;
        }
        for job in jobs {
            out[job.out] = dot4(&self.table[job.g..][..taps], &self.buf[job.x..][..taps]);
        }
    }

    fn advance(&mut self) {
        self.next_out += 1;
        let next = self.phase + self.down;
        self.newest += (next / self.up) as i64;
        self.phase = next % self.up;
    }
}

/// Whether the CPU has AVX (always false off x86-64).
fn has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`dot4`] of each of the `K` jobs, side by side: the partial sums
/// `s0 … s3` of a job are the lanes of one register, multiplied and added
/// by separate instructions in ascending tap order (no fused
/// multiply-add), so each result is [`dot4`]'s bits.
///
/// # Safety
/// The CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dots_avx<const K: usize>(
    table: &[f64],
    buf: &[f64],
    jobs: &[Job; K],
    taps: usize,
    out: &mut [f64],
) {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd,
    };
    // Each job's rows, bounds-checked once here.
    let g: [&[f64]; K] = std::array::from_fn(|k| &table[jobs[k].g..][..taps]);
    let x: [&[f64]; K] = std::array::from_fn(|k| &buf[jobs[k].x..][..taps]);
    let mut s: [__m256d; K] = [_mm256_setzero_pd(); K];
    let mut i = 0;
    while i + 4 <= taps {
        for k in 0..K {
            // SAFETY: `i + 4 ≤ taps`, the length of `g[k]` and `x[k]`.
            let (gv, xv) = unsafe {
                (
                    _mm256_loadu_pd(g[k].as_ptr().add(i)),
                    _mm256_loadu_pd(x[k].as_ptr().add(i)),
                )
            };
            s[k] = _mm256_add_pd(s[k], _mm256_mul_pd(gv, xv));
        }
        i += 4;
    }
    for k in 0..K {
        let mut lanes = [0.0f64; 4];
        // SAFETY: `lanes` holds four f64s.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), s[k]) };
        out[jobs[k].out] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    }
}

/// `Σ g[i]·x[i]` in four running partial sums (`i mod 4`), then
/// `(s0 + s1) + (s2 + s3)`; both slices have the same length, a multiple of 4.
#[inline]
fn dot4(g: &[f64], x: &[f64]) -> f64 {
    let mut s = [0.0f64; 4];
    for (gc, xc) in g.chunks_exact(4).zip(x.chunks_exact(4)) {
        s[0] += gc[0] * xc[0];
        s[1] += gc[1] * xc[1];
        s[2] += gc[2] * xc[2];
        s[3] += gc[3] * xc[3];
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

impl RateConverter for Polyphase {
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
        let want = frames.len() / self.channels;
        if self.buf_len - self.filled < want {
            self.compact();
        }
        let n = want.min(self.buf_len - self.filled);
        for ch in 0..self.channels {
            let run = &mut self.buf[ch * self.buf_len + self.filled..][..n];
            for (dst, frame) in run.iter_mut().zip(frames.chunks_exact(self.channels)) {
                *dst = frame[ch];
            }
        }
        self.filled += n;
        self.pushed += n as u64;
        n
    }

    fn pull(&mut self, out: &mut [f64]) -> usize {
        let ch_n = self.channels;
        let want = out.len() / ch_n;
        let mut done = 0;
        // Dot products queued, computed BATCH at a time.
        let mut jobs = [Job::default(); BATCH];
        let mut queued = 0;
        while done < want {
            if self.finished && self.next_out >= output_frames(self.pushed, self.up, self.down) {
                break;
            }
            // The buffer must hold frames up to `newest`.
            let end = self.start + self.filled as i64;
            if self.newest >= end {
                // Appending may move the buffer: compute what is queued first.
                self.run(&jobs[..queued], out);
                queued = 0;
                if !self.finished || !self.append_zero() {
                    break;
                }
                continue;
            }
            let first = (self.newest - self.taps as i64 + 1 - self.start) as usize;
            let g = self.phase * self.taps;
            for ch in 0..ch_n {
                jobs[queued] = Job {
                    g,
                    x: ch * self.buf_len + first,
                    out: done * ch_n + ch,
                };
                queued += 1;
                if queued == BATCH {
                    self.run(&jobs, out);
                    queued = 0;
                }
            }
            done += 1;
            self.advance();
        }
        self.run(&jobs[..queued], out);
        done
    }

    fn finish(&mut self) {
        self.finished = true;
    }

    fn reset(&mut self) {
        let pre = self.taps - 1;
        self.buf.fill(0.0);
        // Positions 0..taps−1 hold the zero history before input frame 0.
        self.start = -(pre as i64);
        self.filled = pre;
        self.pushed = 0;
        self.next_out = 0;
        let c = (self.table_len() - 1) / 2;
        self.phase = c % self.up;
        self.newest = (c / self.up) as i64;
        self.finished = false;
    }

    fn latency(&self) -> usize {
        self.latency
    }

    fn output_frames(&self, input_frames: u64) -> u64 {
        output_frames(input_frames, self.up, self.down)
    }
}

impl Polyphase {
    /// The prototype's length `N`.
    fn table_len(&self) -> usize {
        if self.up == self.down {
            1
        } else {
            TAPS_PER_RATIO * self.up.max(self.down) - 1
        }
    }
}

/// `⌈n·L/M⌉`: the output frames whose time falls before the end of `n` input frames.
pub(crate) fn output_frames(n: u64, l: usize, m: usize) -> u64 {
    (n as u128 * l as u128).div_ceil(m as u128) as u64
}
