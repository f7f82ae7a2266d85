//! `impulse`: an impulse train on the first sample of every cycle, its
//! phase advanced by the exact rate rounded up; at 0 Hz one impulse.

use super::{freq_lints, Phasor, AMP, AMP_PARAM, FREQ};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, StateError,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

/// Impulse train: `amp` on the first sample of every cycle; at 0 Hz a single
/// impulse on the first sample after build or reset. Which sample a cycle
/// starts on is its whole output, so it advances by the exact rate rounded
/// up: the m-th impulse fires on sample ceil(m·sr/f).
struct Impulse<S> {
    phasor: Phasor,
    sample_rate: f64,
    fired: bool,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> NodeProcessor<S> for Impulse<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        for (i, o) in io.outputs[0][..io.frames].iter_mut().enumerate() {
            self.phasor.set_freq_exact(freq.at(i), self.sample_rate);
            let hit = if self.phasor.inc == 0 {
                !self.fired
            } else {
                self.phasor.phase < self.phasor.inc
            };
            self.fired = true;
            *o = if hit { S::from_f64(amp.at(i)) } else { S::ZERO };
            self.phasor.advance();
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
        self.fired = false;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
        st.put_bool("fired", self.fired);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.phasor.phase = st.get_u64("phase")?;
        self.fired = st.get_bool("fired")?;
        Ok(())
    }
}

struct ImpulseOp;
impl Operator for ImpulseOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Impulse::<S> {
            phasor: Phasor::default(),
            sample_rate: cx.sample_rate,
            fired: false,
            _p: PhantomData,
        }))
    }
}

pub(crate) static IMPULSE: OpSpec = OpSpec {
    name: "impulse",
    doc: "Impulse train at `freq`; 0 Hz gives a single impulse at sample 0.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        number(
            "freq",
            Dimension::Frequency,
            0.0,
            0.0,
            1e6,
            "impulses per second (0 = one impulse)",
        ),
        AMP_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [3.0, 2.8, 2.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<ImpulseOp>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::dsp::Precision;

    fn impulse_positions(out: &[f64], amp: f64) -> Vec<usize> {
        out.iter()
            .enumerate()
            .filter(|(_, y)| **y != 0.0)
            .map(|(k, y)| {
                assert_eq!(*y, amp, "impulse at {k}");
                k
            })
            .collect()
    }

    #[test]
    fn impulse_at_zero_hz_fires_once_per_reset() {
        for (profile, precision) in PROFILES {
            let amp = 0.75;
            let mut r = runner(&IMPULSE, &[("freq", 0.0), ("amp", amp)], profile, precision);
            let mut pass = || impulse_positions(&r.run(&[], &[], 10_000, BLOCKS)[0], amp);
            assert_eq!(pass(), vec![0], "{profile:?} first run");
            assert_eq!(pass(), Vec::<usize>::new(), "{profile:?} second run");
            r.reset();
            assert_eq!(
                impulse_positions(&r.run(&[], &[], 10_000, BLOCKS)[0], amp),
                vec![0],
                "{profile:?} after reset"
            );
        }
    }

    #[test]
    fn impulse_trains_fire_on_the_first_sample_of_each_period() {
        // The m-th impulse of an f Hz train belongs at time m·sr/f: it must
        // fire on sample ceil(m·sr/f), the first at or after that time.
        for (num, den) in [(1000u64, 1u64), (441, 1), (6001, 2), (12000, 1)] {
            let f = num as f64 / den as f64;
            for (profile, precision) in PROFILES {
                let out = render(
                    &IMPULSE,
                    &[("freq", f), ("amp", 1.0)],
                    profile,
                    precision,
                    48000,
                );
                let got = impulse_positions(&out, 1.0);
                let want: Vec<usize> = (0u64..)
                    .map(|m| (m * SR_INT * den).div_ceil(num) as usize)
                    .take_while(|k| *k < 48000)
                    .collect();
                assert_eq!(got, want, "{f} Hz {profile:?}");
            }
        }
        let out = render(
            &IMPULSE,
            &[("freq", 1000.0), ("amp", 1.0)],
            Profile::Strict,
            Precision::F64,
            48000,
        );
        let got = impulse_positions(&out, 1.0);
        assert_eq!(got, (0..48000).step_by(48).collect::<Vec<_>>());
        // 48000/441 = 108.84…: spacings of 108 and 109 only, 441 in one second.
        let out = render(
            &IMPULSE,
            &[("freq", 441.0), ("amp", 1.0)],
            Profile::Strict,
            Precision::F64,
            48000,
        );
        let got = impulse_positions(&out, 1.0);
        assert_eq!(got.len(), 441);
        assert_eq!(got[0], 0);
        let gaps: Vec<usize> = got.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| *g == 108 || *g == 109), "{gaps:?}");
        assert!(gaps.contains(&108) && gaps.contains(&109));
    }
}
