//! `noise`'s pink and brown colours: white noise's own words (the locked
//! Philox stream 0, mapped as white's) through a fixed filter.
//!
//! - **pink** (−3 dB/octave): seven first-order pole–zero sections in
//!   cascade, `t = s − z·s[n−1] + p·t[n−1]`, each pole and zero placed by the
//!   matched z-transform `exp(−2π·f/sr)` from a frequency in Hz:
//!
//!   | section | 1 | 2 | 3 | 4 | 5 | 6 | 7 |
//!   |---|---|---|---|---|---|---|---|
//!   | pole (Hz) | 4.05 | 16.3 | 69.6 | 273 | 1150 | 6320 | 23300·sr/48000 |
//!   | zero (Hz) | 7.74 | 34.6 | 138 | 550 | 2570 | 18100 | 40700·sr/48000 |
//!
//!   A filter bank rather than Voss–McCartney's sum of held random values
//!   (SuperCollider's `PinkNoise`), whose spectrum ripples by about a dB
//!   and whose rows would each need their own draws; and rather than Paul
//!   Kellet's fixed coefficients, which are designed for 44.1 kHz and move
//!   with the sample rate. The frequencies were fitted by least squares to
//!   −3 dB/octave from 15 Hz to 20 kHz at 44.1, 48, 88.2, 96 and 192 kHz
//!   together (the last section scaled with the rate keeps the top
//!   octave's shape near Nyquist): the fit is within ±0.2 dB of the line
//!   at 48 kHz. Below 4 Hz the response is flat, so its DC gain is finite.
//! - **brown** (−6 dB/octave): a leaky integrator, the same section with
//!   no zero, `t = s + a·t[n−1]`, `a = exp(−2π·5 Hz/sr)`: a −6 dB/octave
//!   slope above its 5 Hz corner and a finite gain `1/(1 − a)` at DC, so it never drifts as a random
//!   walk does. Near Nyquist the slope eases (the sampled integrator's
//!   `1/(2·sin(πf/sr))`), +0.4 dB at 8 kHz at 48 kHz.
//!
//! The output is `amp·g·t` of the last section, `g` scaled so that the
//! RMS is `amp/5` (−14 dBFS at amp 1): `g` comes from the filter's power
//! gain `Σ h[n]²` in closed form (partial fractions), times the words'
//! variance 1/3. A rare peak may pass `amp`; every sample is bounded by
//! `amp·g·Σ|h[n]|`. The state is the sections' last inputs and outputs;
//! `reset` zeroes it.

use super::{NodeProcessor, NodeState, StateError};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Sample};

/// The pink sections' poles and zeros in Hz (the last pair at 48 kHz,
/// scaled with the rate); see the module docs.
pub(super) const PINK_POLES_HZ: [f64; 7] = [4.05, 16.3, 69.6, 273.0, 1150.0, 6320.0, 23300.0];
pub(super) const PINK_ZEROS_HZ: [f64; 7] = [7.74, 34.6, 138.0, 550.0, 2570.0, 18100.0, 40700.0];

/// The brown integrator's corner in Hz.
pub(super) const BROWN_CORNER_HZ: f64 = 5.0;

/// The RMS of pink and brown at amp 1.
pub(super) const COLOR_RMS: f64 = 0.2;

/// The variance of a white word (uniform in [−1, 1)).
const WORD_VARIANCE: f64 = 1.0 / 3.0;

/// A coloured noise's filter.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ColorFilter {
    /// Per section (pink: 7; brown: 1) its pole and zero (brown's zero is 0).
    pub(super) poles: Vec<f64>,
    pub(super) zeros: Vec<f64>,
    /// The gain applied after the sections.
    pub(super) gain: f64,
}

impl ColorFilter {
    /// Pink at `sample_rate`.
    pub(super) fn pink<M: Math>(sample_rate: f64) -> ColorFilter {
        let at = |hz: f64, k: usize| {
            let hz = if k == 6 {
                hz * sample_rate / 48000.0
            } else {
                hz
            };
            M::coef_exp(-2.0 * core::f64::consts::PI * hz / sample_rate)
        };
        let poles: Vec<f64> = (0..7).map(|k| at(PINK_POLES_HZ[k], k)).collect();
        let zeros: Vec<f64> = (0..7).map(|k| at(PINK_ZEROS_HZ[k], k)).collect();
        let gain = COLOR_RMS / (WORD_VARIANCE * power_gain(&poles, &zeros)).sqrt();
        ColorFilter { poles, zeros, gain }
    }

    /// Brown at `sample_rate`.
    pub(super) fn brown<M: Math>(sample_rate: f64) -> ColorFilter {
        let a = M::coef_exp(-2.0 * core::f64::consts::PI * BROWN_CORNER_HZ / sample_rate);
        let poles = vec![a];
        let zeros = vec![0.0];
        let gain = COLOR_RMS / (WORD_VARIANCE * power_gain(&poles, &zeros)).sqrt();
        ColorFilter { poles, zeros, gain }
    }
}

/// `Σ h[n]²` of `Π (1 − z_k·q)/(1 − p_k·q)` (distinct poles inside the
/// unit circle): with `H = c₀ + Σ r_k/(1 − p_k·q)`, `c₀ = Π z/Π p` and
/// `r_k = Π_j (1 − z_j/p_k) / Π_{j≠k} (1 − p_j/p_k)`, the sum is
/// `(c₀ + Σ r)² + Σ_k Σ_l r_k·r_l·p_k·p_l/(1 − p_k·p_l)`.
pub(super) fn power_gain(poles: &[f64], zeros: &[f64]) -> f64 {
    let c0 = zeros.iter().product::<f64>() / poles.iter().product::<f64>();
    let r: Vec<f64> = poles
        .iter()
        .enumerate()
        .map(|(k, &pk)| {
            let num: f64 = zeros.iter().map(|z| 1.0 - z / pk).product();
            let den: f64 = poles
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .map(|(_, pj)| 1.0 - pj / pk)
                .product();
            num / den
        })
        .collect();
    let h0 = c0 + r.iter().sum::<f64>();
    let mut tail = 0.0;
    for (k, pk) in poles.iter().enumerate() {
        for (l, pl) in poles.iter().enumerate() {
            tail += r[k] * r[l] * pk * pl / (1.0 - pk * pl);
        }
    }
    h0 * h0 + tail
}

/// The most sections a colour has.
const MAX_SECTIONS: usize = 7;

/// Pink or brown noise at one precision.
pub(super) struct Colored<S> {
    stream: NoiseStream,
    /// The index of the node's `amp` param.
    amp: usize,
    sections: usize,
    poles: [S; MAX_SECTIONS],
    zeros: [S; MAX_SECTIONS],
    gain: S,
    /// Each section's last input and output.
    last_in: [S; MAX_SECTIONS],
    last_out: [S; MAX_SECTIONS],
}

impl<S: Sample> Colored<S> {
    /// Colours `stream` through `filter`, scaled by the param at `amp`.
    pub(super) fn new(stream: NoiseStream, amp: usize, filter: &ColorFilter) -> Colored<S> {
        let mut poles = [S::ZERO; MAX_SECTIONS];
        let mut zeros = [S::ZERO; MAX_SECTIONS];
        for (k, (p, z)) in filter.poles.iter().zip(&filter.zeros).enumerate() {
            poles[k] = S::from_f64(*p);
            zeros[k] = S::from_f64(*z);
        }
        Colored {
            stream,
            amp,
            sections: filter.poles.len(),
            poles,
            zeros,
            gain: S::from_f64(filter.gain),
            last_in: [S::ZERO; MAX_SECTIONS],
            last_out: [S::ZERO; MAX_SECTIONS],
        }
    }

    /// The filtered word at absolute sample `n`, before `amp`.
    #[inline(always)]
    fn next(&mut self, n: u64) -> S {
        let mut s: S = self.stream.sample(n);
        for k in 0..self.sections {
            let t = s - self.zeros[k] * self.last_in[k] + self.poles[k] * self.last_out[k];
            self.last_in[k] = s;
            self.last_out[k] = t;
            s = t;
        }
        self.gain * s
    }
}

impl<S: Sample> NodeProcessor<S> for Colored<S> {
    fn process(&mut self, io: &mut super::Io<'_, S>) {
        let amp = io.params.get(self.amp);
        let start = io.start;
        let out = &mut io.outputs[0][..io.frames];
        if amp.is_const() {
            let a = S::from_f64(amp.value());
            for (i, o) in out.iter_mut().enumerate() {
                *o = a * self.next(start + i as u64);
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                *o = S::from_f64(amp.at(i)) * self.next(start + i as u64);
            }
        }
    }

    fn reset(&mut self) {
        self.last_in = [S::ZERO; MAX_SECTIONS];
        self.last_out = [S::ZERO; MAX_SECTIONS];
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("last_in", &self.last_in[..self.sections]);
        st.put_samples("last_out", &self.last_out[..self.sections]);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        st.get_samples("last_in", &mut self.last_in[..self.sections])?;
        st.get_samples("last_out", &mut self.last_out[..self.sections])
    }

    /// Stable filters of a bounded word, times a finite `amp`.
    fn always_finite(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "noise_color_tests.rs"]
mod tests;
