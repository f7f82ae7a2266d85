//! The beat grid as a tempo map: where the beats of a scene's events in
//! beats or bars land on the sample clock, and how a tempo edit while
//! playing moves it (`scenes/README.md`, *Musical time*). A map is an
//! anchor, beat `beat` at sample `sample`, and the samples a beat lasts
//! from there on. A first plan's map is anchored at (0, 0). A handover
//! swapped at S to a new tempo keeps the beat the old map stands at at S
//! and re-anchors there: beat b ≥ b_S lands at S + (b − b_S)·spb_new. An
//! edit that keeps the tempo keeps the anchor. The map is a pure function
//! of the old map, S and the new tempo, so a replay of the journaled
//! handover (N, S) rebuilds it exactly.

use crate::scene::Rational;

/// Beat `beat` at sample `sample`, then `spb` samples a beat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TempoMap {
    /// The sample the anchor beat falls on.
    pub sample: u64,
    /// The beat at `sample` (0 is the scene's start).
    pub beat: Rational,
    /// Samples a beat lasts, > 0.
    pub spb: Rational,
}

impl TempoMap {
    /// The map of a scene played from sample 0: beat b at b·spb.
    pub(crate) fn from_start(spb: Rational) -> TempoMap {
        TempoMap {
            sample: 0,
            beat: Rational::ZERO,
            spb,
        }
    }

    /// The beat the map stands at at sample `at` (exact).
    pub(crate) fn beat_at(&self, at: u64) -> Option<Rational> {
        let since = Rational::from_int(at as i128 - self.sample as i128);
        self.beat.checked_add(since.checked_div(self.spb)?)
    }

    /// The exact sample beat `b` lands on.
    pub(crate) fn exact_sample(&self, b: Rational) -> Option<Rational> {
        Rational::from_int(self.sample as i128)
            .checked_add(b.checked_sub(self.beat)?.checked_mul(self.spb)?)
    }

    /// The map after a handover swapped at `at` to `spb` samples a beat:
    /// the same map when the tempo does not change, else one anchored at
    /// (`at`, the beat this map stands at there).
    pub(crate) fn edited(self, at: u64, spb: Rational) -> Option<TempoMap> {
        if spb == self.spb {
            return Some(self);
        }
        Some(TempoMap {
            sample: at,
            beat: self.beat_at(at)?,
            spb,
        })
    }
}

/// Where beat `b` lands when `old` played until the swap and `new` plays
/// from it: before the new anchor's beat on the old map (already played,
/// it does not move), from it on the new one; rounded half to even.
pub(crate) fn beat_sample(old: &TempoMap, new: &TempoMap, b: Rational) -> Option<u64> {
    let map = if b.checked_sub(new.beat)?.is_negative() {
        old
    } else {
        new
    };
    u64::try_from(map.exact_sample(b)?.round_half_even()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i128, d: i128) -> Rational {
        Rational::new(n, d).unwrap()
    }

    #[test]
    fn a_tempo_edit_re_anchors_at_the_swap_and_a_same_tempo_edit_keeps_the_anchor() {
        // 120 bpm at 48 kHz: 24000 samples a beat; 97 bpm: 2880000/97.
        let old = TempoMap::from_start(Rational::from_int(24_000));
        let spb97 = r(2_880_000, 97);
        let new = old.edited(20_992, spb97).unwrap();
        assert_eq!(new.sample, 20_992);
        assert_eq!(new.beat, r(20_992, 24_000));
        // Beats before the swap's stay where they were.
        assert_eq!(beat_sample(&old, &new, r(1, 2)), Some(12_000));
        // Beat 1: 20992 + (1 − 20992/24000)·2880000/97 = 20992 + 3756.7…
        let want = 20_992 + ((1.0 - 20_992.0 / 24_000.0) * 2_880_000.0 / 97.0_f64).round() as u64;
        assert_eq!(beat_sample(&old, &new, Rational::from_int(1)), Some(want));
        // The same tempo again: the anchor stays, no drift.
        assert_eq!(new.edited(96_000, spb97), Some(new));
        // A second edit anchors on the first's map.
        let third = new.edited(96_000, Rational::from_int(24_000)).unwrap();
        assert_eq!(third.beat, new.beat_at(96_000).unwrap());
        assert_eq!(
            third.exact_sample(third.beat).unwrap(),
            Rational::from_int(96_000)
        );
    }
}
