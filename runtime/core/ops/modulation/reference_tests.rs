//! `delay`, `chorus`, `flanger` and `phaser` against the kernels they
//! replaced, kept here as references: one `libm` (or std, or fast) sine per
//! LFO value and frame, a ring read through `floor` and two divisions, and
//! `delay`'s params converted at every sample. The kernels in use compute
//! the LFO's sines a chunk at a time (under strict in lanes), read the ring
//! without `floor` or a division, and convert constant params once a block;
//! they must give the same bits under every profile, at every block size,
//! with their params constant and modulated.

use super::super::harness::{first_difference, values_with, NodeRunner};
use super::super::{AnyNode, Io, NodeProcessor, NodeState, OpSpec, StateError, Value};
use super::{Frames, Phasor, TWO_PI};
use crate::dsp::{FastMath, Math, Sample, StdMath, StrictMath};
use crate::profile::Profile;
use std::marker::PhantomData;
use std::sync::OnceLock;

const SR: f64 = 48_000.0;

/// The reference nodes keep no state a test saves or restores.
macro_rules! reference_only {
    () => {
        fn reset(&mut self) {}
        fn snapshot(&self, _: &mut NodeState) {}
        fn restore(&mut self, _: &NodeState) -> Result<(), StateError> {
            Ok(())
        }
    };
}

/// The ring as it was: `⌊d⌋` by `floor`, both slots by `%`.
struct OldRing<S> {
    buf: Vec<S>,
    write: usize,
    max_delay: f64,
}

impl<S: Sample> OldRing<S> {
    fn new(max_time: f64) -> Self {
        let max_delay = crate::ops::delay::max_delay_samples(max_time, SR).unwrap();
        OldRing {
            buf: vec![S::ZERO; max_delay + 2],
            write: 0,
            max_delay: max_delay as f64,
        }
    }

    fn read(&self, d: f64) -> S {
        let len = self.buf.len();
        let mut d = d;
        if d.is_nan() || d < 1.0 {
            d = 1.0;
        }
        if d > self.max_delay {
            d = self.max_delay;
        }
        let whole = d.floor();
        let frac = S::from_f64(d - whole);
        let k = whole as usize;
        let a = self.buf[(self.write + len - k) % len];
        let b = self.buf[(self.write + len - k - 1) % len];
        a + frac * (b - a)
    }

    fn push(&mut self, x: S) {
        self.buf[self.write] = x;
        self.write += 1;
        if self.write == self.buf.len() {
            self.write = 0;
        }
    }
}

struct OldDelay<S> {
    line: OldRing<S>,
}

impl<S: Sample> NodeProcessor<S> for OldDelay<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let p = [0, 1, 2].map(|k| io.params.get(k));
        for i in 0..io.frames {
            let (time, feedback, mix) = (p[0].at(i), p[1].at(i), p[2].at(i));
            let x = io.inputs[0][i];
            let wet = self.line.read(time * SR);
            let fb = S::from_f64(if feedback.is_nan() {
                0.0
            } else {
                feedback.clamp(-0.999, 0.999)
            });
            let mix = if mix.is_nan() {
                0.0
            } else {
                mix.clamp(0.0, 1.0)
            };
            self.line.push(x + fb * wet);
            io.outputs[0][i] = S::from_f64(1.0 - mix) * x + S::from_f64(mix) * wet;
        }
    }
    reference_only!();
}

fn clamp_or(v: f64, lo: f64, hi: f64, nan: f64) -> f64 {
    if v.is_nan() {
        nan
    } else {
        v.clamp(lo, hi)
    }
}

fn blend<S: Sample>(dry: S, wet: S, mix: f64) -> S {
    let m = clamp_or(mix, 0.0, 1.0, 0.0);
    S::from_f64(1.0 - m) * dry + S::from_f64(m) * wet
}

/// The sweep as it was: per frame, `wet` gets the LFO phase (turns) and
/// calls the sine itself.
fn old_sweep<S: Sample>(
    phase: &mut u64,
    io: &mut Io<'_, S>,
    params: [usize; 6],
    mut wet: impl FnMut(S, f64, f64, [f64; 2], f64) -> (S, S),
) {
    let n = io.frames;
    let frames = Frames::new(params.map(|k| io.params.get(k)));
    for i in 0..n {
        let [rate, depth, own0, own1, ph, mix] = frames.at(i);
        let x = io.inputs[0][i];
        let (wl, wr) = wet(x, f64::from_phase(*phase), depth, [own0, own1], ph);
        io.outputs[0][i] = blend(x, wl, mix);
        io.outputs[1][i] = blend(x, wr, mix);
        *phase = phase.wrapping_add(Phasor::increment(rate, SR));
    }
}

fn lfo<M: Math>(turns: f64, offset: f64) -> f64 {
    M::sin::<f64>(TWO_PI * turns + offset)
}

struct OldChorus<S, M> {
    line: OldRing<S>,
    phase: u64,
    voices: usize,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for OldChorus<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        // rate, depth, delay, spread, phase, mix
        let (line, count) = (&mut self.line, self.voices);
        let voices = count as f64;
        let gain = S::from_f64(1.0 / voices);
        old_sweep(
            &mut self.phase,
            io,
            [0, 1, 2, 4, 5, 6],
            |x, turns, depth, own, ph| {
                let [delay, spread] = own;
                let spread = clamp_or(spread, 0.0, 1.0, 0.0);
                let (mut wl, mut wr) = (S::ZERO, S::ZERO);
                for v in 0..count {
                    let offset = TWO_PI * spread * (v as f64 / voices);
                    let dl = (delay + depth * lfo::<M>(turns, offset)) * SR;
                    let dr = (delay + depth * lfo::<M>(turns, offset + ph)) * SR;
                    wl += line.read(dl);
                    wr += line.read(dr);
                }
                line.push(x);
                (gain * wl, gain * wr)
            },
        );
    }
    reference_only!();
}

struct OldFlanger<S, M> {
    left: OldRing<S>,
    right: OldRing<S>,
    phase: u64,
    _m: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> NodeProcessor<S> for OldFlanger<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let (left, right) = (&mut self.left, &mut self.right);
        old_sweep(
            &mut self.phase,
            io,
            [0, 1, 2, 3, 4, 5],
            |x, turns, depth, own, ph| {
                let [delay, feedback] = own;
                let fb = S::from_f64(clamp_or(feedback, -0.99, 0.99, 0.0));
                let dl = (delay + depth * lfo::<M>(turns, 0.0)) * SR;
                let dr = (delay + depth * lfo::<M>(turns, ph)) * SR;
                let wl = left.read(dl);
                let wr = right.read(dr);
                left.push(x + fb * wl);
                right.push(x + fb * wr);
                (wl, wr)
            },
        );
    }
    reference_only!();
}

struct OldPhaser<S, M> {
    s: Vec<S>,
    stages: usize,
    phase: u64,
    _m: PhantomData<fn() -> M>,
}

fn old_coefficient<M: Math>(center: f64, depth: f64, lfo: f64) -> f64 {
    let f = center * M::coef_exp(core::f64::consts::LN_2 * depth * lfo);
    let f = clamp_or(f, 1.0, 0.49 * SR, 1.0);
    let t = M::coef_tan(core::f64::consts::PI * f / SR);
    (t - 1.0) / (t + 1.0)
}

fn old_chain<S: Sample>(s: &mut [S], a: S, fb: S, x: S) -> S {
    let (mut g, mut c) = (S::ONE, S::ZERO);
    for z in s.iter() {
        g = a * g;
        c = a * c + *z;
    }
    let mut y = (x + fb * c) / (S::ONE - fb * g);
    for z in s.iter_mut() {
        let out = a * y + *z;
        *z = y - a * out;
        y = out;
    }
    y
}

impl<S: Sample, M: Math> NodeProcessor<S> for OldPhaser<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        // rate, depth, center, feedback, phase, mix
        let (sl, sr) = self.s.split_at_mut(self.stages);
        old_sweep(
            &mut self.phase,
            io,
            [0, 1, 2, 4, 5, 6],
            |x, turns, depth, own, ph| {
                let [center, feedback] = own;
                let fb = S::from_f64(clamp_or(feedback, -0.99, 0.99, 0.0));
                let al = old_coefficient::<M>(center, depth, lfo::<M>(turns, 0.0));
                let ar = old_coefficient::<M>(center, depth, lfo::<M>(turns, ph));
                (
                    old_chain(sl, S::from_f64(al), fb, x),
                    old_chain(sr, S::from_f64(ar), fb, x),
                )
            },
        );
    }
    reference_only!();
}

/// Builds a reference node at a precision and math policy.
trait Reference {
    fn build<S: Sample, M: Math>(size: usize) -> Box<dyn NodeProcessor<S>>;
}

struct Delay;
impl Reference for Delay {
    fn build<S: Sample, M: Math>(_: usize) -> Box<dyn NodeProcessor<S>> {
        Box::new(OldDelay::<S> {
            line: OldRing::new(1.0),
        })
    }
}

struct Chorus;
impl Reference for Chorus {
    fn build<S: Sample, M: Math>(voices: usize) -> Box<dyn NodeProcessor<S>> {
        Box::new(OldChorus::<S, M> {
            line: OldRing::new(0.05 + 0.02),
            phase: 0,
            voices,
            _m: PhantomData,
        })
    }
}

struct Flanger;
impl Reference for Flanger {
    fn build<S: Sample, M: Math>(_: usize) -> Box<dyn NodeProcessor<S>> {
        Box::new(OldFlanger::<S, M> {
            left: OldRing::new(0.02 + 0.01),
            right: OldRing::new(0.02 + 0.01),
            phase: 0,
            _m: PhantomData,
        })
    }
}

struct Phaser;
impl Reference for Phaser {
    fn build<S: Sample, M: Math>(stages: usize) -> Box<dyn NodeProcessor<S>> {
        Box::new(OldPhaser::<S, M> {
            s: vec![S::ZERO; 2 * stages],
            stages,
            phase: 0,
            _m: PhantomData,
        })
    }
}

/// The reference at each profile's precision and math (f64 `libm`, f32
/// std, f32 fast).
fn reference<R: Reference>(profile: Profile, size: usize) -> AnyNode {
    match profile {
        Profile::Strict => AnyNode::F64(R::build::<f64, StrictMath>(size)),
        Profile::Repro => AnyNode::F32(R::build::<f32, StdMath>(size)),
        Profile::Live => AnyNode::F32(R::build::<f32, FastMath>(size)),
    }
}

/// Half a second (seconds 3 to 3.5) of the graph of `scenes/pluck-delay.json`
/// (its events left out), played node by node under strict: plucked notes
/// and their echoes, the delay line full (a steady state, not a start from
/// silence). The graph's own `delay` is the kernel under test, so it runs
/// as the reference.
fn pluck_delay_signal() -> &'static [f64] {
    static SIGNAL: OnceLock<Vec<f64>> = OnceLock::new();
    SIGNAL.get_or_init(|| {
        let n = (3.5 * SR) as usize;
        let num = Value::Number;
        let runner = |name: &str, set: &[(&str, Value)], inputs: usize| {
            let spec = crate::ops::lookup(name).unwrap();
            NodeRunner::new(
                spec,
                values_with(spec, set),
                Profile::Strict,
                None,
                SR,
                64,
                inputs,
            )
            .unwrap()
        };
        let clock = runner(
            "square",
            &[("freq", num(2.0)), ("amp", num(0.5)), ("duty", num(0.1))],
            0,
        )
        .run(&[], &[], n, &[64])
        .swap_remove(0);
        let adsr = crate::ops::lookup("adsr").unwrap();
        let env = runner(
            "adsr",
            &[
                ("attack", num(0.002)),
                ("decay", num(0.18)),
                ("sustain", num(0.0)),
                ("release", num(0.06)),
                ("gate", num(0.5)),
            ],
            0,
        )
        .run(&[], &[(adsr.index_of("gate"), clock)], n, &[64])
        .swap_remove(0);
        let tone = runner("saw", &[("freq", num(220.0)), ("amp", num(0.6))], 0)
            .run(&[], &[], n, &[64])
            .swap_remove(0);
        let vca = runner("multiply", &[], 2)
            .run(&[env, tone], &[], n, &[64])
            .swap_remove(0);
        // Lowpass is the biquad's default mode.
        let lp = runner("biquad", &[("cutoff", num(2400.0)), ("q", num(0.9))], 1)
            .run(&[vca], &[], n, &[64])
            .swap_remove(0);
        let mut echo = runner(
            "delay",
            &[
                ("time", num(0.375)),
                ("feedback", num(0.55)),
                ("mix", num(0.4)),
                ("max_time", num(1.0)),
            ],
            1,
        );
        *echo.node() = reference::<Delay>(Profile::Strict, 0);
        let x = echo.run(&[lp], &[], n, &[64]).swap_remove(0);
        let x = x[(3.0 * SR) as usize..].to_vec();
        assert!(x.iter().any(|v| v.abs() > 0.1), "the signal is not silent");
        x
    })
}

/// `spec` with `set` against reference `R` (built with `size`) on the
/// signal, under every profile, at blocks 1, 7, 64 and 4096, its params
/// constant and with `modulated` moved by a slow sine of `depth`: the same
/// bits. Repro and live stay within their parity bound of strict.
fn same_bits_as_the_reference<R: Reference>(
    spec: &'static OpSpec,
    set: &[(&str, f64)],
    size: usize,
    modulated: &str,
    depth: f64,
) {
    let x = pluck_delay_signal().to_vec();
    let n = x.len();
    let set: Vec<(&str, Value)> = set.iter().map(|(k, v)| (*k, Value::Number(*v))).collect();
    let mut values = values_with(spec, &set);
    for (k, p) in spec.params.iter().enumerate() {
        if let crate::ops::ParamKind::Integer { .. } = p.kind {
            values[k] = Value::Integer(size as i64);
        }
    }
    let wobble: Vec<f64> = (0..n)
        .map(|i| depth * libm::sin(i as f64 * 2.0 * core::f64::consts::PI * 0.7 / SR))
        .collect();
    let mut strict = Vec::new();
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        for mods in [vec![], vec![(spec.index_of(modulated), wobble.clone())]] {
            let run = |blocks: usize, old: bool| {
                let mut r =
                    NodeRunner::new(spec, values.clone(), profile, None, SR, 4096, 1).unwrap();
                if old {
                    *r.node() = reference::<R>(profile, size);
                }
                r.run(std::slice::from_ref(&x), &mods, n, &[blocks])
            };
            let want = run(64, true);
            for blocks in [1, 7, 64, 4096] {
                if let Some(d) = first_difference(&run(blocks, false), &want) {
                    panic!(
                        "{} {profile:?}, {modulated} modulated {}, block {blocks}: {d}",
                        spec.name,
                        !mods.is_empty()
                    );
                }
            }
            assert!(want[0].iter().any(|v| v.abs() > 0.05), "silent output");
            if profile == Profile::Strict {
                strict.push(want);
            } else {
                let s = &strict[usize::from(!mods.is_empty())];
                for (a, b) in want.iter().zip(s) {
                    let err: f64 = a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum();
                    let norm: f64 = b.iter().map(|q| q * q).sum();
                    let rel = (err / norm).sqrt();
                    let bound = profile.default_parity_bound();
                    assert!(
                        rel <= bound,
                        "{} {profile:?}: relative RMS {rel:e} > {bound:e}",
                        spec.name
                    );
                }
            }
        }
    }
}

#[test]
fn delay_gives_the_reference_kernels_bits() {
    same_bits_as_the_reference::<Delay>(
        &crate::ops::delay::DELAY,
        &[
            ("time", 0.0123),
            ("feedback", 0.6),
            ("mix", 0.5),
            ("max_time", 1.0),
        ],
        0,
        "time",
        0.004,
    );
}

#[test]
fn chorus_gives_the_reference_kernels_bits() {
    for voices in [2, 8] {
        same_bits_as_the_reference::<Chorus>(
            &super::CHORUS,
            &[
                ("rate", 1.7),
                ("depth", 0.003),
                ("delay", 0.012),
                ("spread", 0.8),
            ],
            voices,
            "spread",
            0.3,
        );
    }
}

#[test]
fn flanger_gives_the_reference_kernels_bits() {
    same_bits_as_the_reference::<Flanger>(
        &super::FLANGER,
        &[
            ("rate", 0.9),
            ("depth", 0.002),
            ("delay", 0.003),
            ("feedback", 0.7),
        ],
        0,
        "phase",
        1.0,
    );
}

#[test]
fn phaser_gives_the_reference_kernels_bits() {
    same_bits_as_the_reference::<Phaser>(
        &super::PHASER,
        &[
            ("rate", 1.3),
            ("depth", 2.5),
            ("center", 700.0),
            ("feedback", 0.5),
        ],
        6,
        "center",
        200.0,
    );
}

/// The line of `comb`, `allpass` and `pluck` as it was: `⌊d⌋` by `floor`,
/// every tap by `%`.
struct OldLine<S> {
    buf: Vec<S>,
    write: usize,
}

impl<S: Sample> OldLine<S> {
    fn tap(&self, k: usize) -> S {
        let len = self.buf.len();
        self.buf[(self.write + len - k) % len]
    }

    fn push(&mut self, x: S) {
        self.buf[self.write] = x;
        self.write += 1;
        if self.write == self.buf.len() {
            self.write = 0;
        }
    }

    fn linear(&self, d: f64) -> S {
        let whole = d.floor();
        let f = S::from_f64(d - whole);
        let k = whole as usize;
        let a = self.tap(k);
        a + f * (self.tap(k + 1) - a)
    }

    fn allpass(&self, d: f64, prev: &mut S) -> S {
        let k = (d - 0.5).floor();
        let f = d - k;
        let eta = S::from_f64((1.0 - f) / (1.0 + f));
        let k = k as usize;
        let y = eta * self.tap(k) + self.tap(k + 1) - eta * *prev;
        *prev = y;
        y
    }
}

/// Every tap, linear and allpass read of the fractional line, on the
/// signal, its delay swept over the whole line (whole numbers included),
/// at both precisions: the bits of the reference line.
fn fractional_line_matches<S: Sample>() {
    use crate::ops::fracline::Line;
    let x = pluck_delay_signal();
    let longest = 999;
    let mut line = Line::<S>::new(longest);
    let mut old = OldLine::<S> {
        buf: vec![S::ZERO; longest + 1],
        write: 0,
    };
    let (mut prev, mut old_prev) = (S::ZERO, S::ZERO);
    for (i, &v) in x.iter().enumerate() {
        let s = 0.5 + 0.5 * libm::sin(i as f64 * 0.001);
        let d = 1.5 + (longest as f64 - 2.5) * s;
        let d = if i % 5 == 0 { d.round() } else { d };
        let k = 1 + i % longest;
        let pairs = [
            (line.tap(k), old.tap(k)),
            (line.linear(d), old.linear(d)),
            (line.allpass(d, &mut prev), old.allpass(d, &mut old_prev)),
        ];
        for (what, (got, want)) in ["tap", "linear", "allpass"].iter().zip(pairs) {
            assert_eq!(
                got.to_f64().to_bits(),
                want.to_f64().to_bits(),
                "{what} at frame {i}, d {d}, k {k}"
            );
        }
        line.push(S::from_f64(v));
        old.push(S::from_f64(v));
    }
}

#[test]
fn fractional_lines_read_the_reference_bits() {
    fractional_line_matches::<f64>();
    fractional_line_matches::<f32>();
}
