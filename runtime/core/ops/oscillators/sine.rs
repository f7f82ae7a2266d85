//! `sine`: amp · sin(2π·phase + offset), the phase offset added to the u64
//! phase under fast math (the vector kernel) and to the argument otherwise.

use super::{freq_lints, OscOp, Shape, AMP_PARAM, FREQ_PARAM, PHASE_PARAM, TWO_PI};
use crate::dsp::vector::turns_to_phase;
use crate::dsp::{Math, Sample};
use crate::ops::{build_any, by_profile, no_choices, OpSpec};
use crate::profile::Profile;

/// `phase` advanced by a phase offset in radians (the fast sine's way of
/// adding sine's `phase` param: in the u64 phase, not per sample in floats).
#[inline]
pub(super) fn offset_phase(phase: u64, offset_rad: f64) -> u64 {
    phase.wrapping_add(turns_to_phase(offset_rad * (1.0 / TWO_PI)))
}

/// The sine's argument 2π·phase + offset (rad), as [`SineShape`] computes it.
#[inline(always)]
pub(super) fn sine_arg<S: Sample>(phase: u64, offset: S) -> S {
    S::from_f64(TWO_PI) * S::from_phase(phase) + offset
}

struct SineShape;
impl Shape for SineShape {
    const HAS_EXTRA: bool = true;
    const FAST_SINE: bool = true;
    #[inline]
    fn value<S: Sample, M: Math>(t: S, _dt: S, phase: f64) -> S {
        M::sin(S::from_f64(TWO_PI) * t + S::from_f64(phase))
    }
}

pub(crate) static SINE: OpSpec = OpSpec {
    name: "sine",
    doc: "Sine oscillator: amp · sin(2π·phase + phase offset).",
    inputs: &[],
    outputs: &["out"],
    params: &[FREQ_PARAM, AMP_PARAM, PHASE_PARAM],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [5.5, 5.6, 1.7]),
    algorithms: None,
    build: build_any::<OscOp<SineShape>>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::{Phasor, TWO_POW_64};
    use super::*;

    // The strict block kernel gives `libm::sin`'s bits on every argument the
    // oscillator can produce.
    #[test]
    fn strict_sine_kernel_equals_libm_sin_bit_for_bit() {
        use crate::dsp::rng::mix64;
        use crate::dsp::strict_sin::sin_block;
        use crate::dsp::vector::SimdLevel;

        let levels: Vec<SimdLevel> = SimdLevel::available().collect();
        let mut buf: Vec<f64> = Vec::with_capacity(4096);
        let mut got = vec![0.0f64; 4096];
        let mut checked = 0usize;
        let mut check = |buf: &mut Vec<f64>, checked: &mut usize| {
            for &level in &levels {
                got[..buf.len()].copy_from_slice(buf);
                sin_block(level, &mut got[..buf.len()]);
                for (x, y) in buf.iter().zip(&got) {
                    assert_eq!(
                        y.to_bits(),
                        libm::sin(*x).to_bits(),
                        "{level:?}: sin({x:e}) (bits {:#018x})",
                        x.to_bits()
                    );
                }
            }
            *checked += buf.len();
            buf.clear();
        };
        let mut push = |x: f64, buf: &mut Vec<f64>, checked: &mut usize| {
            buf.push(x);
            if buf.len() == buf.capacity() {
                check(buf, checked);
            }
        };

        // Phases whose arguments straddle each branch of libm's sin and
        // rem_pio2: both ends of every high word the code tests, the
        // multiples of π/4 (quadrant edges), 0 and the largest phase.
        const TOP: i64 = (1 << 53) - 1; // from_phase keeps the top 53 bits
        let words: [u64; 10] = [
            0x3e50_0000, // |x| < 2^-26
            0x3fe9_21fb, // |x| ~≤ π/4
            0x4002_d97c, // ~3π/4
            0x400f_6a7a, // ~5π/4
            0x4015_fdbc, // ~7π/4
            0x401c_463b, // ~9π/4
            0x3ff9_21fb, // ~π/2 (medium)
            0x4009_21fb, // ~π (medium)
            0x4012_d97c, // ~3π/2 (medium)
            0x4019_21fb, // ~2π (medium)
        ];
        let mut centres: Vec<f64> = Vec::new();
        for w in words {
            centres.push(f64::from_bits(w << 32));
            centres.push(f64::from_bits(w << 32 | 0xffff_ffff));
        }
        centres.extend((0..=8).map(|k| k as f64 * core::f64::consts::FRAC_PI_4));
        const R: i64 = 50_000;
        for c in centres {
            let m0 = (c / TWO_PI * 9007199254740992.0) as i64;
            for m in (m0 - R).max(0)..=(m0 + R).min(TOP) {
                push(sine_arg((m as u64) << 11, 0.0), &mut buf, &mut checked);
            }
        }
        for m in TOP - 2 * R..=TOP {
            push(sine_arg((m as u64) << 11, 0.0), &mut buf, &mut checked);
        }
        // Random phases through the oscillator's phase → argument function.
        for i in 0..7_000_000u64 {
            push(sine_arg(mix64(i), 0.0), &mut buf, &mut checked);
        }
        // Phase offsets (the `phase` param, ±1e6 rad): arguments of either
        // sign and beyond 9π/4, where the kernel falls back to libm.
        for i in 0..500_000u64 {
            let u = mix64(i ^ 0x5eed);
            let offset = (u >> 11) as f64 / 9007199254740992.0 * 2.0 - 1.0;
            let scale = [1.0, 4.0, 8.0, 1e6][(u & 3) as usize];
            push(sine_arg(mix64(!i), offset * scale), &mut buf, &mut checked);
        }
        // Values no phase produces but the kernel must still get right.
        for x in [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE / 4.0,
            1e-300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            push(x, &mut buf, &mut checked);
        }
        check(&mut buf, &mut checked);
        assert!(checked >= 10_000_000, "only {checked} arguments");
    }

    #[test]
    fn sine_matches_a_directly_computed_sine_without_drift() {
        // One second each: up to 17 000 phase wraps, i.e. well over 10 s of
        // cycles at audio-rate fundamentals. 440/1000/3000.5 Hz are not
        // binary fractions of 48 kHz; 12 kHz is.
        let frames = 48000;
        let (amp, phase) = (0.8, 0.3);
        for f in [
            hz(440, 1),
            hz(1000, 1),
            hz(12000, 1),
            hz(34001, 2),
            hz(-6001, 2),
        ] {
            let want: Vec<f64> = (0..frames as u64)
                .map(|k| amp * libm::sin(TWO_PI * f.phase(k) + phase))
                .collect();
            // The rate is the f64 quotient f/sr (truncated to 2^-64): a fixed
            // rate error of ≤ 2^-53 relative, measured exactly here. Phase
            // error may grow by that rate error times k, and by nothing else.
            let lag = f
                .increment_ceil()
                .wrapping_sub(Phasor::increment(f.f64(), SR)) as i64;
            let rate_err = TWO_PI * amp * (lag.unsigned_abs() + 1) as f64 / TWO_POW_64;
            for ((profile, precision), tol) in PROFILES.into_iter().zip([1e-12, 1e-5, 2e-4]) {
                let out = render(
                    &SINE,
                    &[("freq", f.f64()), ("amp", amp), ("phase", phase)],
                    profile,
                    precision,
                    frames,
                );
                let mut err = 0.0f64;
                for (k, (y, w)) in out.iter().zip(&want).enumerate() {
                    let e = (y - w).abs();
                    err = err.max(e);
                    let bound = tol + rate_err * k as f64;
                    assert!(
                        e <= bound,
                        "{f:?} {profile:?} k {k}: error {e:e} > {bound:e}"
                    );
                }
                eprintln!(
                    "sine {} Hz {profile:?}: max error {err:e}, rate term at the end {:e}",
                    f.f64(),
                    rate_err * frames as f64
                );
            }
        }
    }
}
