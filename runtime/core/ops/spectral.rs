//! `spectral_gate`: STFT → per-bin gate → inverse STFT with overlap-add.
//!
//! Analysis and synthesis windows are both √(periodic Hann) (`sqrt` only, so
//! exact under strict); output is normalised by the overlap sum of the
//! window product, so with the gate open the output is the input delayed by
//! exactly `fft_size` samples (perfect reconstruction for any hop that
//! divides `fft_size` and is at most half of it). A bin's gain moves toward
//! 1 when its magnitude (as the amplitude of a sinusoid in that bin) reaches
//! `threshold`, else toward 0, smoothed per frame with time constant
//! `smoothing`. The FFT provider and norm come from the node's profile.

use super::{
    build_any, by_profile, fft_choice, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::dsp::fft::{plan_real, Complex, RealFft};
use crate::dsp::window::{self, Window};
use crate::dsp::{Math, Sample};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;
use std::marker::PhantomData;

const THRESHOLD: usize = SPECTRAL_GATE.index_of("threshold");
const SMOOTHING: usize = SPECTRAL_GATE.index_of("smoothing");
const FFT_SIZE: usize = SPECTRAL_GATE.index_of("fft_size");
const HOP: usize = SPECTRAL_GATE.index_of("hop");

struct SpectralGate<S: Sample, M> {
    n: usize,
    hop: usize,
    fft: Box<dyn RealFft<S>>,
    /// √Hann, used for analysis and synthesis.
    window: Vec<S>,
    /// 1 / Σ window² over the frames covering each position mod hop.
    inv_norm: Vec<S>,
    /// Converts a bin magnitude to the amplitude of a sinusoid in that bin.
    mag_scale: f64,
    sample_rate: f64,
    // State.
    in_fifo: Vec<S>,
    ola: Vec<S>,
    out_fifo: Vec<S>,
    /// Samples taken since the last frame (0..hop).
    k: usize,
    gains: Vec<S>,
    // Scratch.
    frame: Vec<S>,
    spectrum: Vec<Complex<S>>,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> SpectralGate<S, M> {
    fn run_frame(&mut self, threshold: f64, smoothing: f64) {
        let n = self.n;
        // Element-wise loops over zipped slices (no index checks: they
        // vectorise); the same products and sums as indexing would give.
        for ((f, x), w) in self.frame.iter_mut().zip(&self.in_fifo).zip(&self.window) {
            *f = *x * *w;
        }
        self.fft.forward(&mut self.frame, &mut self.spectrum);
        let a = if smoothing > 0.0 {
            M::coef_exp(-(self.hop as f64) / (smoothing * self.sample_rate))
        } else {
            0.0
        };
        let a_s = S::from_f64(a);
        let one_minus = S::from_f64(1.0 - a);
        let thr = S::from_f64(threshold / self.mag_scale);
        let thr2 = thr * thr;
        for (c, g) in self.spectrum.iter_mut().zip(self.gains.iter_mut()) {
            let m2 = c.re * c.re + c.im * c.im;
            let target = if m2 >= thr2 { S::ONE } else { S::ZERO };
            *g = a_s * *g + one_minus * target;
            *c = Complex::new(c.re * *g, c.im * *g);
        }
        self.fft.inverse(&mut self.spectrum, &mut self.frame);
        for ((o, f), w) in self.ola.iter_mut().zip(&self.frame).zip(&self.window) {
            *o += *f * *w;
        }
        let hop = self.hop;
        for ((y, o), g) in self.out_fifo[..hop]
            .iter_mut()
            .zip(&self.ola)
            .zip(&self.inv_norm)
        {
            *y = *o * *g;
        }
        self.ola.copy_within(hop.., 0);
        self.ola[n - hop..].iter_mut().for_each(|x| *x = S::ZERO);
        self.in_fifo.copy_within(hop.., 0);
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for SpectralGate<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let threshold = io.params.get(THRESHOLD);
        let smoothing = io.params.get(SMOOTHING);
        let frames = io.frames;
        let base = self.n - self.hop;
        // Runs of samples up to the next frame: copies, then the frame.
        let mut i = 0;
        while i < frames {
            let len = (self.hop - self.k).min(frames - i);
            let k = self.k;
            self.in_fifo[base + k..base + k + len].copy_from_slice(&io.inputs[0][i..i + len]);
            io.outputs[0][i..i + len].copy_from_slice(&self.out_fifo[k..k + len]);
            self.k += len;
            i += len;
            if self.k == self.hop {
                self.k = 0;
                // The params as of the frame's last sample, as before.
                let last = i - 1;
                self.run_frame(threshold.at(last).max(0.0), smoothing.at(last).max(0.0));
            }
        }
    }

    fn reset(&mut self) {
        for v in [&mut self.in_fifo, &mut self.ola, &mut self.out_fifo] {
            v.iter_mut().for_each(|x| *x = S::ZERO);
        }
        self.gains.iter_mut().for_each(|g| *g = S::ONE);
        self.k = 0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("in_fifo", &self.in_fifo);
        st.put_samples("ola", &self.ola);
        st.put_samples("out_fifo", &self.out_fifo);
        st.put_samples("gains", &self.gains);
        st.put_u64("k", self.k as u64);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let k = st.get_u64("k")? as usize;
        if k >= self.hop {
            return Err(StateError::Kind("k"));
        }
        st.get_samples("in_fifo", &mut self.in_fifo)?;
        st.get_samples("ola", &mut self.ola)?;
        st.get_samples("out_fifo", &mut self.out_fifo)?;
        st.get_samples("gains", &mut self.gains)?;
        self.k = k;
        Ok(())
    }

    fn latency(&self) -> usize {
        self.n
    }
}

struct SpectralGateOp;

/// `check`'s view of a node: the FFT it builds its plan with.
fn spectral_choices(profile: &NodeProfile, _: &[Value]) -> Vec<(&'static str, String)> {
    vec![("fft", fft_choice(profile))]
}

impl Operator for SpectralGateOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let int = |i: usize| match cx.values[i] {
            Value::Integer(v) => v as usize,
            _ => 0,
        };
        let n = int(FFT_SIZE);
        let hop = int(HOP);
        if !n.is_power_of_two() || n < 16 {
            return Err(format!("fft_size {n} must be a power of two ≥ 16"));
        }
        if hop == 0 || n % hop != 0 || hop > n / 2 {
            return Err(format!(
                "hop {hop} must divide fft_size {n} and be at most {}",
                n / 2
            ));
        }
        let profile = cx.profile;
        let norm = profile.fft_norm();
        let fft = plan_real::<S>(profile.fft_provider(), n, norm);
        // Periodic Hann, then its square root: only cos (libm) and sqrt.
        let hann = window::periodic(Window::Hann, n);
        let window: Vec<S> = hann.iter().map(|h| S::from_f64(h.sqrt())).collect();
        let inv_norm = (0..hop)
            .map(|q| {
                let mut sum = S::ZERO;
                let mut p = q;
                while p < n {
                    sum += window[p] * window[p];
                    p += hop;
                }
                if sum > S::ZERO {
                    S::ONE / sum
                } else {
                    S::ZERO
                }
            })
            .collect();
        let win_sum: f64 = hann.iter().map(|h| h.sqrt()).sum();
        let (fwd_scale, _) = norm.scales(n);
        Ok(Box::new(SpectralGate::<S, M> {
            n,
            hop,
            fft,
            window,
            inv_norm,
            mag_scale: 2.0 / (win_sum * fwd_scale),
            sample_rate: cx.sample_rate,
            in_fifo: vec![S::ZERO; n],
            ola: vec![S::ZERO; n],
            out_fifo: vec![S::ZERO; hop],
            k: 0,
            gains: vec![S::ONE; n / 2 + 1],
            frame: vec![S::ZERO; n],
            spectrum: vec![Complex::new(S::ZERO, S::ZERO); n / 2 + 1],
            _m: PhantomData,
        }))
    }
}

pub(crate) static SPECTRAL_GATE: OpSpec = OpSpec {
    name: "spectral_gate",
    doc: "STFT noise gate: bins below `threshold` fade out; latency = fft_size samples.",
    inputs: &["in"],
    outputs: &["out"],
    params: &[
        number(
            "threshold",
            Dimension::Amplitude,
            0.01,
            0.0,
            1e6,
            "bin level that opens the gate (-40 dB)",
        ),
        number(
            "smoothing",
            Dimension::Time,
            0.02,
            0.0,
            10.0,
            "gain smoothing time constant",
        ),
        ParamSpec {
            name: "fft_size",
            kind: ParamKind::Integer {
                default: 1024,
                min: 16,
                max: 65536,
            },
            doc: "frame length (a power of two)",
            settable_by_events: false,
        },
        ParamSpec {
            name: "hop",
            kind: ParamKind::Integer {
                default: 256,
                min: 1,
                max: 32768,
            },
            doc: "frame step (divides fft_size, at most half of it)",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: spectral_choices,
    lints: no_lints,
    cost: |p, _| by_profile(p, [135.0, 13.8, 13.5]),
    algorithms: Some([
        "reference radix-2 FFT, ortho",
        "rustfft, ortho",
        "rustfft, backward",
    ]),
    build: build_any::<SpectralGateOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};

    fn runner(profile: Profile, params: &[(&str, Value)]) -> NodeRunner {
        NodeRunner::new(
            &SPECTRAL_GATE,
            values_with(&SPECTRAL_GATE, params),
            profile,
            None,
            48000.0,
            512,
            1,
        )
        .unwrap()
    }

    #[test]
    fn open_gate_reconstructs_the_input_delayed_by_fft_size() {
        let x = test_signal(5, 6000);
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            for (n, hop) in [(1024, 256), (512, 256), (256, 32)] {
                let mut r = runner(
                    profile,
                    &[
                        ("threshold", Value::Number(0.0)),
                        ("fft_size", Value::Integer(n)),
                        ("hop", Value::Integer(hop)),
                    ],
                );
                assert_eq!(r.node().latency(), n as usize);
                let y = &r.run(std::slice::from_ref(&x), &[], x.len(), &[100])[0];
                let n = n as usize;
                // f64 reference FFT under strict; f32 otherwise.
                let tol = if profile == Profile::Strict {
                    1e-12
                } else {
                    1e-5
                };
                for i in 0..x.len() - n {
                    assert!(
                        (y[i + n] - x[i]).abs() < tol,
                        "{profile} n={n} hop={hop} sample {i}: {} vs {}",
                        y[i + n],
                        x[i]
                    );
                }
                assert!(
                    y[..n].iter().all(|v| v.abs() < tol),
                    "nothing before the latency"
                );
            }
        }
    }

    #[test]
    fn gate_removes_a_quiet_tone_and_keeps_a_loud_one() {
        let sr = 48000.0;
        let tone = |f: f64, a: f64, i: usize| {
            a * libm::sin(2.0 * core::f64::consts::PI * f * i as f64 / sr)
        };
        let x: Vec<f64> = (0..24000)
            .map(|i| tone(1500.0, 0.5, i) + tone(6000.0, 0.001, i))
            .collect();
        let mut r = runner(
            Profile::Repro,
            &[
                ("threshold", Value::Number(0.01)),
                ("smoothing", Value::Number(0.0)),
            ],
        );
        let y = &r.run(std::slice::from_ref(&x), &[], x.len(), &[64])[0];
        // Amplitude of each tone in the steady-state output, by correlation
        // over a whole number of cycles of both (12000 samples = 0.25 s).
        let amp = |f: f64| {
            let (mut c, mut s) = (0.0, 0.0);
            for (i, v) in y[8000..20000].iter().enumerate() {
                let ph = 2.0 * core::f64::consts::PI * f * (i + 8000) as f64 / sr;
                c += v * libm::cos(ph);
                s += v * libm::sin(ph);
            }
            2.0 * (c * c + s * s).sqrt() / 12000.0
        };
        let loud = amp(1500.0);
        let quiet = amp(6000.0);
        assert!((loud - 0.5).abs() < 0.005, "loud tone amplitude {loud}");
        assert!(
            quiet < 0.001 * 0.01,
            "quiet tone still at {quiet} (input 0.001)"
        );
    }
}
