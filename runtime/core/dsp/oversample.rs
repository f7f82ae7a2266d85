//! Oversampling for nonlinear operators: linear-phase half-band FIR filters
//! in polyphase form, 2× as one stage and 4× as two cascaded 2× stages.
//!
//! **Design.** Each stage is a windowed-sinc half-band of odd length
//! `N = 4K + 3` with a Kaiser window, designed in f64 with `+ − × ÷ sqrt`
//! only (the sinc at odd offsets from the centre is `±1/(π·d)`, so no
//! transcendental is needed; the Bessel I0 is its power series). Taps at even
//! offsets from the centre are exactly zero and the centre tap is exactly ½;
//! the other taps are scaled so they sum to ½ (unity gain at DC).
//!
//! | stage | rate | length | Kaiser β | passband | stopband |
//! |---|---|---|---|---|---|
//! | 1 | 2·fs | [`STAGE1_LEN`] | [`STAGE1_BETA`] | ≤ 20 kHz | ≥ 28 kHz (at fs = 48 kHz) |
//! | 2 | 4·fs | [`STAGE2_LEN`] | [`STAGE2_BETA`] | ≤ 20 kHz | ≥ 76 kHz |
//!
//! The second stage's transition band is wide: at 4·fs only content above
//! 76 kHz folds into 0…20 kHz when decimating to 2·fs, and the first stage
//! removes what folds into 20…48 kHz. Both stages measure ≥ 90 dB of
//! stopband attenuation (see the tests for the figures).
//!
//! **Polyphase.** With centre `c = 2K + 1` the 2× upsampler's odd outputs are
//! the input delayed by `K` base samples (the centre tap alone) and its even
//! outputs are an FIR over the `2K + 2` even taps; the decimator is the same
//! split the other way. Each stage adds `c` samples of delay at its own rate
//! in each direction. The 4× chain adds one more sample of delay at 2·fs
//! between the stages so that its total is a whole number of base samples.
//!
//! **Latency.** [`latency_samples`]: 1× → 0, 2× → `c₁`, 4× → `c₁ + (c₂+1)/2`
//! base samples. An [`Oversampler`] always delays its output by
//! `latency_samples(4)` whatever its factor (the shorter paths go through a
//! plain integer delay line), so changing the factor never shifts time.
//!
//! **Changing factor across a restore or in place.** [`Oversampler::snapshot`] records
//! the factor (`os_factor`) and a base-rate history of the last
//! [`INPUT_HISTORY`] inputs (`os_in`). Restoring a state taken at another
//! factor does not load that path's filter histories into this one: it keeps
//! the old path's already-computed outputs that are still waiting in its
//! latency ring, and marks the path for priming. The next
//! [`process`](Oversampler::process) (the first moment the nonlinearity is
//! at hand) runs this factor's up → f → down path over the input history,
//! which leaves its filter histories exactly as an uninterrupted run at this
//! factor would have them (for a memoryless `f`), then puts the carried old
//! outputs back into the latency ring at the taps where they come due. The
//! output therefore continues the old path sample for sample and then joins
//! the new path with no shift in time. Same-factor restores are bit-exact.
//! [`Oversampler::set_factor`] (an edit or event of a node's `oversampling`
//! or `critical`) does the same in place, from the running path.
//!
//! **Arithmetic.** Every sum has one fixed order (symmetric tap pairs in
//! ascending order, then the centre term); only `+ − ×`. `process` never
//! allocates.

use super::sample::Sample;
use super::state::{NodeState, StateError};

/// Length of the first (2·fs) half-band stage.
pub(crate) const STAGE1_LEN: usize = 79;
/// Kaiser β of the first stage.
pub(crate) const STAGE1_BETA: f64 = 9.6;
/// Length of the second (4·fs) half-band stage.
pub(crate) const STAGE2_LEN: usize = 23;
/// Kaiser β of the second stage.
pub(crate) const STAGE2_BETA: f64 = 9.6;

/// The oversampling factors supported.
pub(crate) const FACTORS: [u32; 3] = [1, 2, 4];

/// Modified Bessel function of the first kind, order 0, by its power series
/// `Σ ((x/2)^k / k!)²`, summed until the term no longer changes the sum.
pub(crate) fn bessel_i0(x: f64) -> f64 {
    let half = x / 2.0;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut k = 1.0;
    loop {
        let r = half / k;
        term *= r * r;
        let next = sum + term;
        if next == sum {
            return sum;
        }
        sum = next;
        k += 1.0;
    }
}

/// A Kaiser-windowed half-band lowpass of odd length `len = 4K + 3` (cutoff
/// at a quarter of its sample rate). Returns all `len` taps.
pub(crate) fn design_halfband(len: usize, beta: f64) -> Vec<f64> {
    assert!(len % 4 == 3, "half-band length must be 4K + 3, got {len}");
    let c = (len - 1) / 2;
    let i0_beta = bessel_i0(beta);
    let mut h = vec![0.0; len];
    h[c] = 0.5;
    for (n, tap) in h.iter_mut().enumerate() {
        let d = n as i64 - c as i64;
        if d % 2 == 0 {
            continue;
        }
        let r = d as f64 / c as f64;
        let w = bessel_i0(beta * (1.0 - r * r).sqrt()) / i0_beta;
        // sin(π·d/2) for odd d: +1 when d ≡ 1 (mod 4), −1 when d ≡ 3.
        let s = if d.rem_euclid(4) == 1 { 1.0 } else { -1.0 };
        *tap = w * s / (core::f64::consts::PI * d as f64);
    }
    // Scale the side taps to sum to exactly ½ (unity DC gain), in index order.
    let mut side = 0.0;
    for (n, tap) in h.iter().enumerate() {
        if n != c {
            side += *tap;
        }
    }
    let scale = 0.5 / side;
    for (n, tap) in h.iter_mut().enumerate() {
        if n != c {
            *tap *= scale;
        }
    }
    h
}

/// The taps of stage 1 (`STAGE1_LEN` of them).
pub(crate) fn stage1_taps() -> Vec<f64> {
    design_halfband(STAGE1_LEN, STAGE1_BETA)
}

/// The taps of stage 2 (`STAGE2_LEN` of them).
pub(crate) fn stage2_taps() -> Vec<f64> {
    design_halfband(STAGE2_LEN, STAGE2_BETA)
}

/// Latency in base-rate samples of the up → down path at `factor` (1, 2 or 4).
pub(crate) const fn latency_samples(factor: u32) -> usize {
    let c1 = (STAGE1_LEN - 1) / 2;
    let c2 = (STAGE2_LEN - 1) / 2;
    match factor {
        1 => 0,
        2 => c1,
        // c2 is odd: one extra sample at 2·fs makes the total whole.
        _ => c1 + c2.div_ceil(2),
    }
}

/// The latency every [`Oversampler`] reports, whatever its factor.
pub(crate) const MAX_LATENCY: usize = latency_samples(4);

/// Base-rate inputs kept for re-priming another factor's path after a
/// restore: longer than every filter history plus the latency ring, with
/// room for a stateful nonlinearity to settle.
pub(crate) const INPUT_HISTORY: usize = 256;

/// A history of the last `P` samples, newest first, as a contiguous slice
/// (a doubled ring: each sample is written twice).
#[derive(Clone, Debug)]
struct History<S> {
    buf: Vec<S>,
    pos: usize,
}

impl<S: Sample> History<S> {
    fn new(len: usize) -> History<S> {
        History {
            buf: vec![S::ZERO; 2 * len],
            pos: 0,
        }
    }

    fn len(&self) -> usize {
        self.buf.len() / 2
    }

    #[inline]
    fn push(&mut self, x: S) {
        let p = self.len();
        self.pos = if self.pos == 0 { p - 1 } else { self.pos - 1 };
        self.buf[self.pos] = x;
        self.buf[self.pos + p] = x;
    }

    /// `[x[m], x[m−1], …, x[m−P+1]]`.
    #[inline]
    fn window(&self) -> &[S] {
        &self.buf[self.pos..self.pos + self.len()]
    }

    fn clear(&mut self) {
        self.buf.fill(S::ZERO);
        self.pos = 0;
    }
}

/// Σ c[j]·(w[j] + w[P−1−j]) for j ascending: a symmetric FIR of even length
/// `P = 2·c.len()` over a newest-first window.
#[inline]
fn symmetric_dot<S: Sample>(c: &[S], w: &[S]) -> S {
    let p = w.len();
    let mut acc = S::ZERO;
    for (j, cj) in c.iter().enumerate() {
        acc += *cj * (w[j] + w[p - 1 - j]);
    }
    acc
}

/// One half-band stage's polyphase coefficients at precision `S`.
#[derive(Clone, Debug)]
struct Stage<S> {
    /// `h[2j]` for `j < K + 1` (the even phase is symmetric: `2K + 2` taps).
    even: Vec<S>,
    /// `2·h[2j]`: the upsampler's even phase (gain 2 restores the level).
    even_up: Vec<S>,
    /// `K`: the odd phase is a delay of `K` samples at the stage's input rate.
    k: usize,
}

impl<S: Sample> Stage<S> {
    fn new(taps: &[f64]) -> Stage<S> {
        let n = taps.len();
        let k = (n - 3) / 4;
        let even: Vec<f64> = (0..k + 1).map(|j| taps[2 * j]).collect();
        Stage {
            even: even.iter().map(|v| S::from_f64(*v)).collect(),
            even_up: even.iter().map(|v| S::from_f64(2.0 * v)).collect(),
            k,
        }
    }

    /// Even-phase length `P = 2K + 2`.
    fn phase_len(&self) -> usize {
        2 * self.k + 2
    }
}

/// Upsampler state for one stage: the input history.
#[derive(Clone, Debug)]
struct Up<S> {
    hist: History<S>,
}

impl<S: Sample> Up<S> {
    /// One input sample → two output samples (earlier first).
    #[inline]
    fn tick(&mut self, st: &Stage<S>, x: S) -> (S, S) {
        self.hist.push(x);
        let w = self.hist.window();
        (symmetric_dot(&st.even_up, w), w[st.k])
    }
}

/// Decimator state for one stage: histories of the even and odd inputs.
#[derive(Clone, Debug)]
struct Down<S> {
    even: History<S>,
    odd: History<S>,
}

impl<S: Sample> Down<S> {
    /// Two input samples (earlier first) → one output sample.
    #[inline]
    fn tick(&mut self, st: &Stage<S>, a: S, b: S) -> S {
        self.even.push(a);
        self.odd.push(b);
        let half = S::from_f64(0.5);
        symmetric_dot(&st.even, self.even.window()) + half * self.odd.window()[st.k + 1]
    }
}

/// A 1×/2×/4× oversampling wrapper around a per-sample nonlinearity, whose
/// output is always delayed by [`MAX_LATENCY`] base samples.
#[derive(Clone, Debug)]
pub(crate) struct Oversampler<S> {
    factor: u32,
    s1: Stage<S>,
    s2: Stage<S>,
    up1: Up<S>,
    down1: Down<S>,
    up2: Up<S>,
    down2: Down<S>,
    /// One sample of delay at 2·fs inside the 4× chain.
    z2: S,
    /// Latency compensation at the base rate: `MAX_LATENCY − latency(factor)`.
    comp: History<S>,
    /// The last [`INPUT_HISTORY`] base-rate inputs.
    input: History<S>,
    /// Old-path outputs carried over a restore from another factor: `carry[j]`
    /// is due at output `j + 1` after the restore, for `j < carry_len`.
    carry: Vec<S>,
    carry_len: usize,
    /// Set by a restore from another factor: prime before the next sample.
    prime_pending: bool,
}

impl<S: Sample> Oversampler<S> {
    /// Designs the filters and allocates every buffer (any factor can later
    /// be selected without allocating).
    pub(crate) fn new(factor: u32) -> Oversampler<S> {
        let s1 = Stage::new(&stage1_taps());
        let s2 = Stage::new(&stage2_taps());
        let (p1, p2) = (s1.phase_len(), s2.phase_len());
        Oversampler {
            factor: Self::valid(factor),
            up1: Up {
                hist: History::new(p1),
            },
            down1: Down {
                even: History::new(p1),
                odd: History::new(p1),
            },
            up2: Up {
                hist: History::new(p2),
            },
            down2: Down {
                even: History::new(p2),
                odd: History::new(p2),
            },
            s1,
            s2,
            z2: S::ZERO,
            comp: History::new(MAX_LATENCY + 1),
            input: History::new(INPUT_HISTORY),
            carry: vec![S::ZERO; MAX_LATENCY + 1],
            carry_len: 0,
            prime_pending: false,
        }
    }

    fn valid(factor: u32) -> u32 {
        match factor {
            0 | 1 => 1,
            2 | 3 => 2,
            _ => 4,
        }
    }

    pub(crate) fn factor(&self) -> u32 {
        self.factor
    }

    /// Selects another factor (1, 2 or 4; others round down to one of them)
    /// without a gap: like a restore from another factor, the old path's
    /// pending outputs carry and this factor's path is primed from the
    /// input history at the next [`process`](Self::process) (see the module
    /// documentation), so the output continues instead of going silent for
    /// the latency. Allocation-free.
    pub(crate) fn set_factor(&mut self, factor: u32) {
        let f = Self::valid(factor);
        if f == self.factor {
            return;
        }
        let old = self.factor;
        self.factor = f;
        // Not primed since the last change: its carried outputs still wait.
        if !self.prime_pending {
            self.carry_from(old);
        }
    }

    /// The output delay in base samples (the same for every factor).
    pub(crate) fn latency(&self) -> usize {
        MAX_LATENCY
    }

    pub(crate) fn reset(&mut self) {
        self.clear_path();
        self.comp.clear();
        self.input.clear();
        self.carry_len = 0;
        self.prime_pending = false;
    }

    /// Clears the filter histories of the up → down path (not the input
    /// history or the latency ring).
    fn clear_path(&mut self) {
        self.up1.hist.clear();
        self.down1.even.clear();
        self.down1.odd.clear();
        self.up2.hist.clear();
        self.down2.even.clear();
        self.down2.odd.clear();
        self.z2 = S::ZERO;
    }

    /// True after a restore from another factor until the next
    /// [`process`](Self::process) or [`prime`](Self::prime).
    pub(crate) fn needs_prime(&self) -> bool {
        self.prime_pending
    }

    /// Runs this factor's path over the input history with `f` so its
    /// filter histories and latency ring hold what an uninterrupted run would,
    /// then writes the carried outputs of the old path into the latency ring
    /// where they come due. Does nothing unless [`needs_prime`](Self::needs_prime).
    /// A caller whose `f` has state it must not advance (a solver) passes a
    /// copy of it here before calling `process`. Allocation-free.
    pub(crate) fn prime<F: FnMut(S) -> S>(&mut self, mut f: F) {
        if !self.prime_pending {
            return;
        }
        self.prime_pending = false;
        self.clear_path();
        self.comp.clear();
        let n = self.input.len();
        for i in (0..n).rev() {
            let x = self.input.window()[i];
            let y = self.path(x, &mut f);
            self.comp.push(y);
        }
        // Output k ≥ 1 after now reads comp tap `d − k` of the current ring.
        let d = MAX_LATENCY - latency_samples(self.factor);
        let p = self.comp.len();
        for j in 0..self.carry_len.min(d) {
            let tap = d - 1 - j;
            let pos = (self.comp.pos + tap) % p;
            self.comp.buf[pos] = self.carry[j];
            self.comp.buf[pos + p] = self.carry[j];
        }
        self.carry_len = 0;
    }

    /// The up → f → down path at the current factor, undelayed.
    #[inline]
    fn path<F: FnMut(S) -> S>(&mut self, x: S, f: &mut F) -> S {
        match self.factor {
            1 => f(x),
            2 => {
                let (a, b) = self.up1.tick(&self.s1, x);
                let (a, b) = (f(a), f(b));
                self.down1.tick(&self.s1, a, b)
            }
            _ => {
                let (a, b) = self.up1.tick(&self.s1, x);
                let (p, q) = self.up2.tick(&self.s2, a);
                let (r, s) = self.up2.tick(&self.s2, b);
                let (p, q, r, s) = (f(p), f(q), f(r), f(s));
                let d0 = self.down2.tick(&self.s2, p, q);
                let d1 = self.down2.tick(&self.s2, r, s);
                let prev = self.z2;
                self.z2 = d1;
                self.down1.tick(&self.s1, prev, d0)
            }
        }
    }

    /// One base-rate sample: upsample `x`, apply `f` to each of the
    /// `factor` samples in time order, decimate, and delay the result to
    /// [`MAX_LATENCY`].
    #[inline]
    pub(crate) fn process<F: FnMut(S) -> S>(&mut self, x: S, mut f: F) -> S {
        if self.prime_pending {
            self.prime(&mut f);
        }
        self.input.push(x);
        let y = self.path(x, &mut f);
        self.comp.push(y);
        self.comp.window()[MAX_LATENCY - latency_samples(self.factor)]
    }

    /// Writes the filter histories (every stage, whatever the factor, so the
    /// state has one shape) under `os_*` names, with the factor (`os_factor`)
    /// and the base-rate input history (`os_in`, position `os_in_pos`).
    pub(crate) fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("os_factor", self.factor as u64);
        st.put_samples("os_in", &self.input.buf);
        st.put_u64("os_in_pos", self.input.pos as u64);
        st.put_samples("os_up1", &self.up1.hist.buf);
        st.put_samples("os_down1_even", &self.down1.even.buf);
        st.put_samples("os_down1_odd", &self.down1.odd.buf);
        st.put_samples("os_up2", &self.up2.hist.buf);
        st.put_samples("os_down2_even", &self.down2.even.buf);
        st.put_samples("os_down2_odd", &self.down2.odd.buf);
        st.put_sample("os_z2", self.z2);
        st.put_samples("os_comp", &self.comp.buf);
        let pos = [
            self.up1.hist.pos,
            self.down1.even.pos,
            self.up2.hist.pos,
            self.down2.even.pos,
            self.comp.pos,
        ];
        // Positions packed 12 bits each (every ring is far shorter).
        let packed = pos
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, p)| acc | ((*p as u64) << (12 * i)));
        st.put_u64("os_pos", packed);
    }

    /// Reads what [`snapshot`](Self::snapshot) wrote. Allocation-free.
    ///
    /// A state from the same factor (or one without `os_factor`) is loaded
    /// as it is. A state from another factor keeps time: see the module
    /// documentation.
    pub(crate) fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let old = match st.get_u64("os_factor") {
            Ok(f) if f <= 4 && FACTORS.contains(&(f as u32)) => f as u32,
            Ok(f) => {
                return Err(StateError::Shape {
                    name: "os_factor",
                    expected: 4,
                    found: f as usize,
                })
            }
            Err(StateError::Missing(_)) => self.factor,
            Err(e) => return Err(e),
        };
        if old == self.factor {
            self.restore_same(st)?;
            self.carry_len = 0;
            self.prime_pending = false;
            return Ok(());
        }
        // Another factor: take the inputs and the old path's pending outputs.
        self.restore_input(st)?;
        let packed = st.get_u64("os_pos")?;
        let comp_pos = ((packed >> 48) & 0xfff) as usize;
        let p = self.comp.len();
        if comp_pos >= p {
            return Err(StateError::Shape {
                name: "os_pos",
                expected: p,
                found: comp_pos,
            });
        }
        st.get_samples("os_comp", &mut self.comp.buf)?;
        self.comp.pos = comp_pos;
        self.carry_from(old);
        Ok(())
    }

    /// Keeps the outputs the `old` factor's path has computed but not yet
    /// output (its latency ring's pending taps), clears the path and marks
    /// it for priming at the current factor.
    fn carry_from(&mut self, old: u32) {
        // The old path's output k ≥ 1 from now is its tap `d − k`.
        let d_old = MAX_LATENCY - latency_samples(old);
        for j in 0..d_old {
            self.carry[j] = self.comp.window()[d_old - 1 - j];
        }
        self.carry_len = d_old;
        self.clear_path();
        self.comp.clear();
        self.prime_pending = true;
    }

    /// Loads `os_in` / `os_in_pos`, or clears the input history when the
    /// state has none.
    fn restore_input(&mut self, st: &NodeState) -> Result<(), StateError> {
        match st.get_u64("os_in_pos") {
            Ok(pos) => {
                let l = self.input.len();
                if pos as usize >= l {
                    return Err(StateError::Shape {
                        name: "os_in_pos",
                        expected: l,
                        found: pos as usize,
                    });
                }
                st.get_samples("os_in", &mut self.input.buf)?;
                self.input.pos = pos as usize;
                Ok(())
            }
            Err(StateError::Missing(_)) => {
                self.input.clear();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Loads every history as it is (a state from this same factor).
    fn restore_same(&mut self, st: &NodeState) -> Result<(), StateError> {
        let packed = st.get_u64("os_pos")?;
        let pos: [usize; 5] = core::array::from_fn(|i| ((packed >> (12 * i)) & 0xfff) as usize);
        let lens = [
            self.up1.hist.len(),
            self.down1.even.len(),
            self.up2.hist.len(),
            self.down2.even.len(),
            self.comp.len(),
        ];
        for (p, l) in pos.iter().zip(lens) {
            if *p >= l {
                return Err(StateError::Shape {
                    name: "os_pos",
                    expected: l,
                    found: *p,
                });
            }
        }
        st.get_samples("os_up1", &mut self.up1.hist.buf)?;
        st.get_samples("os_down1_even", &mut self.down1.even.buf)?;
        st.get_samples("os_down1_odd", &mut self.down1.odd.buf)?;
        st.get_samples("os_up2", &mut self.up2.hist.buf)?;
        st.get_samples("os_down2_even", &mut self.down2.even.buf)?;
        st.get_samples("os_down2_odd", &mut self.down2.odd.buf)?;
        self.z2 = st.get_sample("os_z2")?;
        st.get_samples("os_comp", &mut self.comp.buf)?;
        self.up1.hist.pos = pos[0];
        self.down1.even.pos = pos[1];
        self.down1.odd.pos = pos[1];
        self.up2.hist.pos = pos[2];
        self.down2.even.pos = pos[3];
        self.down2.odd.pos = pos[3];
        self.comp.pos = pos[4];
        self.restore_input(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// |H(f)| of an FIR at frequency `f` (as a fraction of its sample rate).
    fn mag(h: &[f64], f: f64) -> f64 {
        let (mut re, mut im) = (0.0, 0.0);
        for (n, t) in h.iter().enumerate() {
            let w = 2.0 * core::f64::consts::PI * f * n as f64;
            re += t * libm::cos(w);
            im -= t * libm::sin(w);
        }
        libm::sqrt(re * re + im * im)
    }

    fn db(x: f64) -> f64 {
        20.0 * libm::log10(x)
    }

    /// Worst passband deviation (dB) and worst stopband level (dB) on a
    /// dense grid; frequencies are fractions of the stage's rate.
    fn measure(h: &[f64], pass: f64, stop: f64) -> (f64, f64) {
        let grid = 20000;
        let mut ripple = 0.0f64;
        let mut stopband = f64::NEG_INFINITY;
        for i in 0..=grid {
            let f = 0.5 * i as f64 / grid as f64;
            let m = mag(h, f);
            if f <= pass {
                ripple = ripple.max(db(m).abs());
            }
            if f >= stop {
                stopband = stopband.max(db(m));
            }
        }
        (ripple, stopband)
    }

    #[test]
    fn bessel_i0_known_values() {
        // Abramowitz & Stegun table 9.8 / standard values.
        for (x, want) in [
            (0.0, 1.0),
            (1.0, 1.2660658777520082),
            (5.0, 27.239871823604442),
            (10.0, 2815.716628466254),
        ] {
            let got = bessel_i0(x);
            assert!((got - want).abs() <= 1e-14 * want, "I0({x}) = {got}");
        }
    }

    #[test]
    fn halfband_structure() {
        for h in [stage1_taps(), stage2_taps()] {
            let c = (h.len() - 1) / 2;
            assert_eq!(h[c], 0.5);
            for (n, t) in h.iter().enumerate() {
                let d = n as i64 - c as i64;
                if d != 0 && d % 2 == 0 {
                    assert_eq!(*t, 0.0);
                } else {
                    assert!(*t != 0.0);
                }
                assert_eq!(*t, h[h.len() - 1 - n], "symmetric");
            }
            let dc: f64 = h.iter().sum();
            assert!((dc - 1.0).abs() < 1e-15, "DC gain {dc}");
        }
    }

    #[test]
    fn halfband_response_meets_the_spec() {
        // Stage 1 at 96 kHz: pass ≤ 20 kHz, stop ≥ 28 kHz.
        let (r1, s1) = measure(&stage1_taps(), 20.0 / 96.0, 28.0 / 96.0);
        // Stage 2 at 192 kHz: pass ≤ 20 kHz, stop ≥ 76 kHz.
        let (r2, s2) = measure(&stage2_taps(), 20.0 / 192.0, 76.0 / 192.0);
        eprintln!(
            "stage 1 (N={STAGE1_LEN}, β={STAGE1_BETA}): passband ripple ±{r1:.2e} dB, stopband {s1:.1} dB"
        );
        eprintln!(
            "stage 2 (N={STAGE2_LEN}, β={STAGE2_BETA}): passband ripple ±{r2:.2e} dB, stopband {s2:.1} dB"
        );
        assert!(s1 <= -90.0, "stage 1 stopband {s1} dB");
        assert!(s2 <= -90.0, "stage 2 stopband {s2} dB");
        assert!(r1 <= 1e-3 && r2 <= 1e-3, "passband ripple {r1} / {r2} dB");
    }

    #[test]
    fn latency_is_whole_base_samples() {
        assert_eq!(latency_samples(1), 0);
        assert_eq!(latency_samples(2), (STAGE1_LEN - 1) / 2);
        // 4×: c1 at fs plus (c2 + 1) samples at 2·fs.
        assert_eq!(
            2 * latency_samples(4),
            (STAGE1_LEN - 1) + (STAGE2_LEN - 1) / 2 + 1
        );
        assert_eq!(MAX_LATENCY, latency_samples(4));
    }

    /// A band-limited test signal: a few tones below 18 kHz.
    fn tones(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let t = i as f64 / 48000.0;
                let tau = 2.0 * core::f64::consts::PI;
                0.3 * libm::sin(tau * 440.0 * t)
                    + 0.2 * libm::sin(tau * 5123.0 * t + 0.3)
                    + 0.2 * libm::sin(tau * 11000.0 * t + 1.0)
                    + 0.1 * libm::sin(tau * 17900.0 * t + 2.0)
            })
            .collect()
    }

    #[test]
    fn round_trip_reconstructs_delayed_by_the_stated_latency() {
        let n = 8000;
        let x = tones(n);
        for factor in FACTORS {
            let mut os = Oversampler::<f64>::new(factor);
            let y: Vec<f64> = x.iter().map(|v| os.process(*v, |u| u)).collect();
            let l = os.latency();
            assert_eq!(l, MAX_LATENCY);
            // Skip the filters' start-up, compare the rest.
            let (mut num, mut den) = (0.0, 0.0);
            for m in 200..n {
                let e = y[m] - x[m - l];
                num += e * e;
                den += x[m - l] * x[m - l];
            }
            let err = libm::sqrt(num / den);
            eprintln!("{factor}×: round-trip relative RMS error {err:.2e}");
            assert!(err < 1e-4, "{factor}×: error {err}");
            // The path itself has exactly latency_samples(factor): the peak
            // of an impulse response lands on MAX_LATENCY.
            let mut os = Oversampler::<f64>::new(factor);
            let imp: Vec<f64> = (0..200)
                .map(|i| os.process(if i == 0 { 1.0 } else { 0.0 }, |u| u))
                .collect();
            let peak = (0..imp.len())
                .max_by(|a, b| imp[*a].abs().total_cmp(&imp[*b].abs()))
                .unwrap();
            assert_eq!(peak, MAX_LATENCY, "{factor}×");
        }
    }

    #[test]
    fn process_is_linear_phase_and_f32_follows_f64() {
        let x = tones(3000);
        for factor in [2, 4] {
            let mut a = Oversampler::<f64>::new(factor);
            let mut b = Oversampler::<f32>::new(factor);
            let mut worst = 0.0f64;
            for v in &x {
                let ya = a.process(*v, |u| u);
                let yb = b.process(*v as f32, |u| u) as f64;
                worst = worst.max((ya - yb).abs());
            }
            assert!(worst < 1e-5, "{factor}×: f32 vs f64 {worst}");
        }
    }

    #[test]
    fn restore_from_another_factor_keeps_time() {
        let x = tones(2000);
        let f = |u: f64| 0.5 * u - 0.1 * u * u * u;
        for from in FACTORS {
            for to in FACTORS {
                let mut a = Oversampler::<f64>::new(from);
                for v in &x[..1300] {
                    a.process(*v, f);
                }
                let pending: Vec<f64> = {
                    let mut c = a.clone();
                    x[1300..].iter().map(|v| c.process(*v, f)).collect()
                };
                let mut st = NodeState::default();
                a.snapshot(&mut st);
                let mut b = Oversampler::<f64>::new(to);
                b.restore(&st).unwrap();
                let mut want = Oversampler::<f64>::new(to);
                let want: Vec<f64> = x.iter().map(|v| want.process(*v, f)).collect();
                let got: Vec<f64> = x[1300..].iter().map(|v| b.process(*v, f)).collect();
                let d_old = MAX_LATENCY - latency_samples(from);
                let d_new = MAX_LATENCY - latency_samples(to);
                for (k, g) in got.iter().enumerate() {
                    if k < d_old.min(d_new) {
                        // The old path's already-computed outputs.
                        assert_eq!(*g, pending[k], "{from}→{to} at {k}");
                    } else {
                        // Then exactly the new path.
                        assert_eq!(*g, want[1300 + k], "{from}→{to} at {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn snapshot_restore_continues() {
        let x = tones(1000);
        for factor in FACTORS {
            let mut a = Oversampler::<f64>::new(factor);
            let full: Vec<f64> = x.iter().map(|v| a.process(*v, |u| u * u)).collect();
            let mut b = Oversampler::<f64>::new(factor);
            for v in &x[..437] {
                b.process(*v, |u| u * u);
            }
            let mut st = NodeState::default();
            b.snapshot(&mut st);
            let mut c = Oversampler::<f64>::new(factor);
            c.restore(&st).unwrap();
            for (i, v) in x[437..].iter().enumerate() {
                assert_eq!(c.process(*v, |u| u * u), full[437 + i]);
            }
        }
    }
}
