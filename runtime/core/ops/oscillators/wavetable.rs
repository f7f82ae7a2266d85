//! `wavetable`: an oscillator reading a set of single-cycle tables,
//! band-limited by one table per octave, morphing between tables.
//!
//! **Source.** The tables come from a WAV resource (`file`, channel 0, its
//! frames cut into tables of `table_size` frames) or from harmonic
//! amplitudes written in the scene (`harmonics`, split into `tables` equal
//! runs; harmonic k of a table is `a_k · sin(2πk·phase)`). Either way each
//! table becomes its spectrum: bins 0 … N/2 − 1 of a table of N frames
//! (the reference FFT, forward-normalised), or the written amplitudes.
//!
//! **Levels.** Level j serves the octave of fundamentals
//! `(nyquist/2^(j+1), nyquist/2^j]` and keeps only the harmonics below
//! Nyquist at the top of that octave: k ≤ 2^j − 1 (the fundamental alone at
//! level 0). Its tables are `level_len(j)` samples long — at least 16
//! samples per period of its highest harmonic up to 8192 samples — and are
//! built from the kept bins by an inverse reference FFT when the node is
//! built, never on the audio thread. Levels stop where the source has no
//! more harmonics to drop. All of it is f64 with the pinned libm (the
//! FFT's twiddles), rounded once to the node's precision.
//!
//! **Reading.** The phase is the oscillators' u64 accumulator. The level
//! comes from the frequency (`floor(log2(nyquist/|freq|))`, read from the
//! exponent bits, so no transcendental); the sample between table entries
//! is a 4-point cubic Hermite (Catmull–Rom) interpolation; `position` ∈
//! [0, 1] picks a point between the first and the last table, and the two
//! tables either side of it are crossfaded linearly. Hermite rather than
//! linear: at a 5 kHz fundamental at 48 kHz (a saw's 256-sample tables of
//! level 2) the worst alias product of linear interpolation measures
//! −83 dB, 3 dB inside the −80 dB the operator promises, and Hermite's
//! −120 dB (the test
//! `alias_products_at_5_khz_are_80_db_down_and_hermite_is_why` measures
//! both); the low octaves' tables have fewer samples a period of their top
//! harmonic (16 down to 2), where that margin is what is left.

use super::{freq_lints, Phasor, AMP, AMP_PARAM, FREQ, FREQ_PARAM};
use crate::dsp::fft::{plan_real, Complex, FftNorm, FftProvider};
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, AudioData, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const POSITION: usize = WAVETABLE.index_of("position");
const FILE: usize = WAVETABLE.index_of("file");
const TABLE_SIZE: usize = WAVETABLE.index_of("table_size");
const HARMONICS: usize = WAVETABLE.index_of("harmonics");
const TABLES: usize = WAVETABLE.index_of("tables");
const _: () = assert!(WAVETABLE.index_of("freq") == FREQ && WAVETABLE.index_of("amp") == AMP);

/// The shortest and the longest level table.
const MIN_LEN: usize = 256;
const MAX_LEN: usize = 8192;
/// The most harmonics a table may hold: level 12's, whose 8192-sample
/// tables hold 4095 below their own Nyquist.
const MAX_HARMONICS: usize = 4095;
/// The most tables in a set.
const MAX_TABLES: usize = 256;
/// Samples stored around each table so the interpolator never wraps: one
/// before (the last), two after (the first two).
const GUARD: usize = 3;

/// The length of level `j`'s tables: 32·2^j (16 samples a period of its
/// highest harmonic, 2^j), within [`MIN_LEN`, `MAX_LEN`].
pub(super) fn level_len(j: usize) -> usize {
    (1usize << (j + 5).min(20)).clamp(MIN_LEN, MAX_LEN)
}

/// The highest harmonic level `j` keeps: the largest below Nyquist at the
/// top of its octave, `nyquist/2^j`, so 2^j − 1; the fundamental at level 0.
pub(super) fn level_harmonics(j: usize) -> usize {
    ((1usize << j.min(20)) - 1).max(1)
}

/// The level that plays `freq` at `sample_rate`: ⌊log2(nyquist/|freq|)⌋,
/// from the exponent of the quotient (exact), within `0 … levels − 1`; 0
/// above Nyquist (the fundamental alone, which aliases as a sine does).
pub(super) fn level_of(freq: f64, sample_rate: f64, levels: usize) -> usize {
    let ratio = 0.5 * sample_rate / freq.abs();
    if ratio.is_nan() || ratio < 1.0 {
        return 0;
    }
    if ratio.is_infinite() {
        return levels - 1;
    }
    let exponent = ((ratio.to_bits() >> 52) & 0x7ff) as usize - 1023;
    exponent.min(levels - 1)
}

/// A table set's spectra: per table, bin k of `2·Re(X_k·e^{2πik·phase})`
/// summed with `X_0` (the forward-normalised DFT of one period).
pub(super) struct Spectra {
    pub(super) bins: Vec<Vec<Complex<f64>>>,
}

impl Spectra {
    /// From written amplitudes: harmonic k (1-based, `a[k − 1]`) of each
    /// of `tables` equal runs is `a_k·sin(2πk·phase)`, so `X_k = −i·a_k/2`.
    pub(super) fn from_harmonics(amps: &[f64], tables: usize) -> Result<Spectra, String> {
        let amps: &[f64] = if amps.is_empty() { &[1.0] } else { amps };
        if tables == 0 || !amps.len().is_multiple_of(tables) {
            return Err(format!(
                "`harmonics` has {} amplitudes, which do not split into `tables` = {tables} equal runs",
                amps.len()
            ));
        }
        let per = amps.len() / tables;
        if per > MAX_HARMONICS {
            return Err(format!(
                "`harmonics` gives {per} harmonics a table; a table holds at most {MAX_HARMONICS}"
            ));
        }
        let bins = amps
            .chunks(per)
            .map(|run| {
                let mut b = vec![Complex::new(0.0, 0.0)];
                b.extend(run.iter().map(|a| Complex::new(0.0, -0.5 * a)));
                b
            })
            .collect();
        Ok(Spectra { bins })
    }

    /// From a WAV resource: channel 0 cut into tables of `size` frames (a
    /// power of two), each analysed by the reference FFT; bins 0 … size/2 − 1.
    pub(super) fn from_audio(file: &AudioData, size: usize) -> Result<Spectra, String> {
        let name = file.path.display();
        if !size.is_power_of_two() || size < 4 {
            return Err(format!(
                "`table_size` = {size} is not a power of two of at least 4 (e.g. 2048)"
            ));
        }
        let frames = file.frames();
        if frames == 0 || !frames.is_multiple_of(size) {
            return Err(format!(
                "`{name}` has {frames} frames, not a whole number of tables of `table_size` = {size} frames"
            ));
        }
        if frames / size > MAX_TABLES {
            return Err(format!(
                "`{name}` holds {} tables of {size} frames; a set holds at most {MAX_TABLES}",
                frames / size
            ));
        }
        let keep = (size / 2).min(MAX_HARMONICS + 1);
        let mut fft = plan_real::<f64>(FftProvider::Reference, size, FftNorm::Forward);
        let mut input = vec![0.0; size];
        let mut output = vec![Complex::new(0.0, 0.0); size / 2 + 1];
        let bins = file.channels[0]
            .chunks(size)
            .map(|chunk| {
                input.copy_from_slice(chunk);
                fft.forward(&mut input, &mut output);
                output[..keep].to_vec()
            })
            .collect();
        Ok(Spectra { bins })
    }

    /// The highest harmonic any table holds.
    fn top_harmonic(&self) -> usize {
        self.bins.iter().map(|b| b.len() - 1).max().unwrap_or(0)
    }

    /// Level `j` of table `t`: the kept bins through the inverse reference
    /// FFT, `level_len(j)` samples of one period.
    pub(super) fn level_table(&self, t: usize, j: usize) -> Vec<f64> {
        let len = level_len(j);
        let mut bins = vec![Complex::new(0.0, 0.0); len / 2 + 1];
        let kept = level_harmonics(j).min(self.bins[t].len() - 1);
        bins[..=kept].copy_from_slice(&self.bins[t][..=kept]);
        let mut fft = plan_real::<f64>(FftProvider::Reference, len, FftNorm::Forward);
        let mut out = vec![0.0; len];
        fft.inverse(&mut bins, &mut out);
        out
    }

    /// The number of levels: until one keeps every harmonic of the set.
    pub(super) fn levels(&self) -> usize {
        let top = self.top_harmonic();
        (0..).find(|&j| level_harmonics(j) >= top).unwrap_or(0) + 1
    }
}

/// Every level of every table, each with its guard samples, at `S`.
struct TableSet<S> {
    data: Vec<S>,
    /// Where level j starts in `data`; its table t is `level_len(j) +
    /// GUARD` samples at `offsets[j] + t·(level_len(j) + GUARD)`.
    offsets: Vec<usize>,
    tables: usize,
}

impl<S: Sample> TableSet<S> {
    fn new(spectra: &Spectra) -> TableSet<S> {
        let (levels, tables) = (spectra.levels(), spectra.bins.len());
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(levels);
        for j in 0..levels {
            offsets.push(data.len());
            for t in 0..tables {
                let y = spectra.level_table(t, j);
                let n = y.len();
                data.push(S::from_f64(y[n - 1]));
                data.extend(y.iter().map(|v| S::from_f64(*v)));
                data.push(S::from_f64(y[0]));
                data.push(S::from_f64(y[1]));
            }
        }
        TableSet {
            data,
            offsets,
            tables,
        }
    }

    fn levels(&self) -> usize {
        self.offsets.len()
    }

    /// Table `t` of level `j`, guards included (entry i of the period is at i + 1).
    #[inline]
    fn table(&self, j: usize, t: usize) -> &[S] {
        let n = level_len(j) + GUARD;
        let at = self.offsets[j] + t * n;
        &self.data[at..at + n]
    }
}

/// The 4-point cubic Hermite (Catmull–Rom) interpolation of `p` (with its
/// guards) at entry `i` plus `x` ∈ [0, 1).
#[inline]
pub(super) fn hermite<S: Sample>(p: &[S], i: usize, x: S) -> S {
    let (p0, p1, p2, p3) = (p[i], p[i + 1], p[i + 2], p[i + 3]);
    let half = S::from_f64(0.5);
    let c1 = half * (p2 - p0);
    let c2 = p0 - S::from_f64(2.5) * p1 + (p2 + p2) - half * p3;
    let c3 = half * (p3 - p0) + S::from_f64(1.5) * (p1 - p2);
    ((c3 * x + c2) * x + c1) * x + p1
}

struct Wavetable<S, M> {
    set: TableSet<S>,
    phasor: Phasor,
    sample_rate: f64,
    /// The frequency `level` was found for, and that level.
    level_freq: f64,
    level: usize,
    _p: PhantomData<fn() -> (S, M)>,
}

impl<S: Sample, M: Math> Wavetable<S, M> {
    /// One sample at the current phase, frequency and position.
    #[inline]
    fn sample(&mut self, freq: f64, position: f64) -> S {
        if freq.to_bits() != self.level_freq.to_bits() {
            self.level_freq = freq;
            self.level = level_of(freq, self.sample_rate, self.set.levels());
        }
        let j = self.level;
        let bits = level_len(j).trailing_zeros();
        let phase = self.phasor.phase;
        let i = (phase >> (64 - bits)) as usize;
        let x = S::from_phase(phase << bits);
        let last = self.set.tables - 1;
        let at = position * last as f64;
        let t = (at as usize).min(last);
        let v0 = hermite(self.set.table(j, t), i, x);
        let fade = at - t as f64;
        if t == last || fade == 0.0 {
            return v0;
        }
        let v1 = hermite(self.set.table(j, t + 1), i, x);
        v0 + S::from_f64(fade) * (v1 - v0)
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Wavetable<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        let position = io.params.get(POSITION);
        let out = &mut io.outputs[0][..n];
        for (i, o) in out.iter_mut().enumerate() {
            let f = freq.at(i);
            self.phasor.set_freq(f, self.sample_rate);
            let v = self.sample(f, position.at(i));
            *o = S::from_f64(amp.at(i)) * v;
            self.phasor.advance();
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.phasor.phase = st.get_u64("phase")?;
        Ok(())
    }

    /// Finite tables (finite amplitudes or samples) times a finite `amp`.
    fn always_finite(&self) -> bool {
        true
    }
}

/// The spectra a node with these static values plays.
pub(super) fn spectra(values: &[Value]) -> Result<Spectra, String> {
    let file = match values.get(FILE) {
        Some(Value::Resource(f)) if !f.channels.is_empty() => Some(f),
        _ => None,
    };
    let harmonics = match values.get(HARMONICS) {
        Some(Value::Gains(g)) => g.as_slice(),
        _ => &[],
    };
    let int = |i: usize, default: usize| match values.get(i) {
        Some(Value::Integer(v)) => usize::try_from(*v).unwrap_or(0),
        _ => default,
    };
    match file {
        Some(_) if !harmonics.is_empty() => Err("give `file` or `harmonics`, not both".to_string()),
        Some(f) => Spectra::from_audio(f, int(TABLE_SIZE, 2048)),
        None => Spectra::from_harmonics(harmonics, int(TABLES, 1)),
    }
}

struct WavetableOp;
impl Operator for WavetableOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let set = TableSet::new(&spectra(cx.values)?);
        Ok(Box::new(Wavetable::<S, M> {
            set,
            phasor: Phasor::default(),
            sample_rate: cx.sample_rate,
            level_freq: f64::NAN,
            level: 0,
            _p: PhantomData,
        }))
    }
}

pub(crate) static WAVETABLE: OpSpec = OpSpec {
    name: "wavetable",
    doc: "Wavetable oscillator: single-cycle tables from a WAV resource (`file`, channel 0 cut into \
          tables of `table_size` frames) or from harmonic amplitudes (`harmonics`, split into \
          `tables` equal runs; harmonic k is a sine; neither given: a sine). Band-limited by one \
          table per octave keeping the harmonics below Nyquist at the octave's top, built when \
          the node is; read with cubic Hermite interpolation; `position` (0 … 1) morphs from the \
          first table to the last, crossfading adjacent tables.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        FREQ_PARAM,
        AMP_PARAM,
        number(
            "position",
            Dimension::Scalar,
            0.0,
            0.0,
            1.0,
            "where in the table set to read (0 first table, 1 last)",
        ),
        ParamSpec {
            name: "file",
            kind: ParamKind::OptionalResource,
            doc: "a WAV of single-cycle tables (\"@resource:NAME\"), channel 0",
            settable_by_events: false,
        },
        ParamSpec {
            name: "table_size",
            kind: ParamKind::Integer {
                default: 2048,
                min: 4,
                max: 65536,
            },
            doc: "frames per table in `file` (a power of two)",
            settable_by_events: false,
        },
        ParamSpec {
            name: "harmonics",
            kind: ParamKind::Gains,
            doc: "sine amplitudes of harmonics 1, 2, … of each table, the tables one after another (instead of `file`)",
            settable_by_events: false,
        },
        ParamSpec {
            name: "tables",
            kind: ParamKind::Integer {
                default: 1,
                min: 1,
                max: MAX_TABLES as i64,
            },
            doc: "how many tables `harmonics` holds",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [10.1, 9.6, 9.6]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<WavetableOp>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::{PROFILES, SR};
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::values_with;
    use std::sync::Arc;

    const TAU: f64 = core::f64::consts::TAU;

    /// Harmonic k of the oracle: a naive sum of sines at `len` points, the
    /// angle of point m reduced exactly (`k·m mod len`).
    fn oracle_table(amps: &[f64], len: usize, top: usize) -> Vec<f64> {
        (0..len)
            .map(|m| {
                amps.iter()
                    .enumerate()
                    .take(top)
                    .map(|(i, a)| a * libm::sin(TAU * (((i + 1) * m) % len) as f64 / len as f64))
                    .sum()
            })
            .collect()
    }

    fn saw_amps(n: usize) -> Vec<f64> {
        (1..=n).map(|k| 1.0 / k as f64).collect()
    }

    /// Each level keeps exactly the harmonics below Nyquist at the top of
    /// its octave, and its table is the naive sum of those sines.
    #[test]
    fn each_level_keeps_the_harmonics_below_nyquist_at_its_octave_top() {
        let amps = saw_amps(600);
        let spectra = Spectra::from_harmonics(&amps, 1).unwrap();
        let nyquist = 0.5 * SR;
        assert_eq!(spectra.levels(), 11, "levels until one keeps 600 harmonics");
        for j in 0..spectra.levels() {
            let top = nyquist / (1u64 << j) as f64;
            let kept = level_harmonics(j);
            if j > 0 {
                assert!(kept as f64 * top < nyquist && (kept + 1) as f64 * top >= nyquist);
            }
            let got = spectra.level_table(0, j);
            let want = oracle_table(&amps, level_len(j), kept);
            let err = got
                .iter()
                .zip(&want)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(err < 1e-12, "level {j}: {err:e}");
            // A frequency in the octave reads this level.
            assert_eq!(level_of(top, SR, 11), j);
            assert_eq!(level_of(top * 0.5000001, SR, 11), j);
        }
        assert_eq!(level_of(30_000.0, SR, 11), 0);
        assert_eq!(level_of(0.0, SR, 11), 10);
        assert_eq!(level_of(1.0, SR, 11), 10);
    }

    /// A WAV of two tables: each level holds the file's harmonics below its
    /// cut, sines and cosines alike (the oracle: a naive DFT of the frames,
    /// then the naive sum of the kept harmonics).
    #[test]
    fn tables_from_a_wav_are_its_band_limited_frames() {
        let size = 64;
        let frame = |t: usize, m: usize| {
            let x = m as f64 / size as f64;
            0.1 * t as f64
                + libm::sin(TAU * x)
                + 0.5 * libm::cos(TAU * 3.0 * x)
                + (0.2 + 0.1 * t as f64) * libm::sin(TAU * 9.0 * x + 0.3)
                + 0.05 * libm::cos(TAU * 20.0 * x)
        };
        let samples: Vec<f64> = (0..2)
            .flat_map(|t| (0..size).map(move |m| frame(t, m)))
            .collect();
        let file = AudioData {
            path: "set.wav".into(),
            sample_rate: 48000,
            channels: vec![samples.clone()],
        };
        let spectra = Spectra::from_audio(&file, size).unwrap();
        for t in 0..2 {
            let x = &samples[t * size..(t + 1) * size];
            // Naive DFT: c_k = (1/N)·Σ x_m e^{−2πikm/N}.
            let coef = |k: usize| {
                let (mut re, mut im) = (0.0, 0.0);
                for (m, v) in x.iter().enumerate() {
                    let a = TAU * ((k * m) % size) as f64 / size as f64;
                    re += v * libm::cos(a);
                    im -= v * libm::sin(a);
                }
                (re / size as f64, im / size as f64)
            };
            for j in 0..spectra.levels() {
                let len = level_len(j);
                let kept = level_harmonics(j).min(size / 2 - 1);
                let want: Vec<f64> = (0..len)
                    .map(|m| {
                        let mut y = coef(0).0;
                        for k in 1..=kept {
                            let (re, im) = coef(k);
                            let a = TAU * ((k * m) % len) as f64 / len as f64;
                            y += 2.0 * (re * libm::cos(a) - im * libm::sin(a));
                        }
                        y
                    })
                    .collect();
                let got = spectra.level_table(t, j);
                let err = got
                    .iter()
                    .zip(&want)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(err < 1e-12, "table {t} level {j}: {err:e}");
            }
        }
        assert_eq!(spectra.levels(), 6, "31 harmonics: levels 0 … 5");
    }

    /// The test's own reading of a table (its guards added): Hermite at
    /// `i + x`, or linear.
    fn read(table: &[f64], phase: f64, hermite: bool) -> f64 {
        let n = table.len();
        let at = phase * n as f64;
        let i = at.floor() as usize % n;
        let x = at - at.floor();
        let p = |k: isize| table[(i as isize + k).rem_euclid(n as isize) as usize];
        if !hermite {
            return p(0) + x * (p(1) - p(0));
        }
        let (p0, p1, p2, p3) = (p(-1), p(0), p(1), p(2));
        let c1 = 0.5 * (p2 - p0);
        let c2 = p0 - 2.5 * p1 + 2.0 * p2 - 0.5 * p3;
        let c3 = 0.5 * (p3 - p0) + 1.5 * (p1 - p2);
        ((c3 * x + c2) * x + c1) * x + p1
    }

    fn node(set: &[(&str, Value)], freq: f64, frames: usize) -> Vec<f64> {
        let mut set = set.to_vec();
        set.push(("freq", Value::Number(freq)));
        let spec: &'static OpSpec = &WAVETABLE;
        crate::ops::harness::NodeRunner::new(
            spec,
            values_with(spec, &set),
            Profile::Strict,
            Some(Precision::F64),
            SR,
            512,
            0,
        )
        .unwrap()
        .run(&[], &[], frames, &[64, 7, 300, 1, 128])
        .remove(0)
    }

    /// Strict output is the oracle tables read by Hermite at the exact
    /// phase (375 Hz: a binary fraction of the sample rate), the adjacent
    /// tables crossfaded at `position`: within rounding.
    #[test]
    fn strict_output_reads_the_oracle_tables_and_crossfades_them() {
        let a: Vec<f64> = saw_amps(40);
        let b: Vec<f64> = (1..=40)
            .map(|k| if k % 2 == 1 { 1.0 / k as f64 } else { 0.0 })
            .collect();
        let c: Vec<f64> = (1..=40).map(|k| if k == 2 { 1.0 } else { 0.0 }).collect();
        let harmonics: Vec<f64> = [a.clone(), b.clone(), c.clone()].concat();
        let level = level_of(375.0, SR, 7);
        let len = level_len(level);
        let kept = level_harmonics(level);
        let tables: Vec<Vec<f64>> = [&a, &b, &c]
            .iter()
            .map(|amps| oracle_table(amps, len, kept))
            .collect();
        for (position, amp) in [(0.0, 0.8), (0.25, 1.0), (0.5, 0.5), (0.9, 1.0), (1.0, 1.0)] {
            let set = [
                ("harmonics", Value::Gains(harmonics.clone())),
                ("tables", Value::Integer(3)),
                ("position", Value::Number(position)),
                ("amp", Value::Number(amp)),
            ];
            let got = node(&set, 375.0, 2000);
            let at = position * 2.0;
            let t = (at as usize).min(2);
            let fade = at - t as f64;
            for (k, y) in got.iter().enumerate() {
                let phase = (k % 128) as f64 / 128.0;
                let v0 = read(&tables[t], phase, true);
                let v = if t == 2 {
                    v0
                } else {
                    v0 + fade * (read(&tables[t + 1], phase, true) - v0)
                };
                assert!(
                    (y - amp * v).abs() < 1e-12,
                    "position {position} k {k}: {y} vs {}",
                    amp * v
                );
            }
        }
    }

    /// Peak amplitude of the component at `bin` cycles per `x.len()`
    /// samples (a naive DFT, angles reduced exactly).
    fn dft_amp(x: &[f64], bin: usize) -> f64 {
        let n = x.len();
        let (mut re, mut im) = (0.0, 0.0);
        for (i, v) in x.iter().enumerate() {
            let a = TAU * ((bin * i) % n) as f64 / n as f64;
            re += v * libm::cos(a);
            im -= v * libm::sin(a);
        }
        2.0 * (re * re + im * im).sqrt() / n as f64
    }

    /// The worst bin that is no harmonic below Nyquist, in dB relative to
    /// the fundamental, of one second of a 5 kHz tone at 48 kHz: it repeats
    /// every 48 samples, so all its power lies on the 1 kHz bins (checked:
    /// they hold all of it, to 1e-10), of which the 5 kHz ones are
    /// harmonics.
    fn worst_alias_db(x: &[f64]) -> f64 {
        assert_eq!(x.len(), 48000);
        let power = |j: usize| {
            let a = dft_amp(x, 1000 * j);
            if j == 0 || j == 24 {
                a * a / 4.0
            } else {
                a * a / 2.0
            }
        };
        let p: Vec<f64> = (0..=24).map(power).collect();
        let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
        let total: f64 = p.iter().sum();
        assert!(
            (total / mean_square - 1.0).abs() < 1e-10,
            "the 1 kHz bins hold {total} of {mean_square}"
        );
        let worst = (0..=24)
            .filter(|j| j % 5 != 0)
            .map(|j| p[j])
            .fold(0.0f64, f64::max);
        10.0 * libm::log10(worst / p[5])
    }

    /// At a 5 kHz fundamental a saw's table set aliases at most −80 dB in
    /// every bin, read by Hermite; read linearly from the same level table
    /// (the test's own reading) the aliases are 30 dB louder.
    #[test]
    fn alias_products_at_5_khz_are_80_db_down_and_hermite_is_why() {
        let amps = saw_amps(1000);
        let set = [("harmonics", Value::Gains(amps.clone()))];
        let out = node(&set, 5000.0, 48000);
        let hermite = worst_alias_db(&out);
        let j = level_of(5000.0, SR, 10);
        let table = oracle_table(&amps, level_len(j), level_harmonics(j));
        let linear: Vec<f64> = (0..48000u64)
            .map(|k| read(&table, ((k * 5) % 48) as f64 / 48.0, false))
            .collect();
        let linear = worst_alias_db(&linear);
        eprintln!("5 kHz wavetable alias: hermite {hermite:.1} dB, linear {linear:.1} dB");
        assert!(hermite <= -80.0, "hermite {hermite:.1} dB");
        assert!(linear - hermite >= 30.0, "linear {linear:.1} dB");
        // Without the levels (every harmonic of the 8192-sample table, as
        // the lowest octave plays it) a 5 kHz saw aliases loudly.
        let full = oracle_table(&amps, 8192, 1000);
        let naive: Vec<f64> = (0..48000u64)
            .map(|k| read(&full, ((k * 5) % 48) as f64 / 48.0, true))
            .collect();
        let naive = worst_alias_db(&naive);
        eprintln!("5 kHz wavetable without levels: {naive:.1} dB");
        assert!(naive > -40.0, "{naive:.1} dB");
    }

    #[test]
    fn a_wavetable_without_a_source_plays_a_sine() {
        let got = node(&[], 375.0, 256);
        for (k, y) in got.iter().enumerate() {
            let want = libm::sin(TAU * (k % 128) as f64 / 128.0);
            assert!((y - want).abs() < 1e-9, "k {k}: {y} vs {want}");
        }
    }

    #[test]
    fn a_bad_source_is_a_clear_error() {
        let spec: &'static OpSpec = &WAVETABLE;
        let build = |set: &[(&str, Value)]| {
            crate::ops::harness::NodeRunner::new(
                spec,
                values_with(spec, set),
                Profile::Strict,
                None,
                SR,
                64,
                0,
            )
            .err()
            .unwrap_or_default()
        };
        let file = |frames: usize| {
            Value::Resource(Arc::new(AudioData {
                path: "set.wav".into(),
                sample_rate: 48000,
                channels: vec![vec![0.5; frames]],
            }))
        };
        assert_eq!(
            build(&[("file", file(64)), ("harmonics", Value::Gains(vec![1.0]))]),
            "give `file` or `harmonics`, not both"
        );
        assert_eq!(
            build(&[("file", file(3000)), ("table_size", Value::Integer(2048))]),
            "`set.wav` has 3000 frames, not a whole number of tables of `table_size` = 2048 frames"
        );
        assert_eq!(
            build(&[("file", file(300)), ("table_size", Value::Integer(100))]),
            "`table_size` = 100 is not a power of two of at least 4 (e.g. 2048)"
        );
        assert_eq!(
            build(&[
                ("harmonics", Value::Gains(vec![1.0; 5])),
                ("tables", Value::Integer(2))
            ]),
            "`harmonics` has 5 amplitudes, which do not split into `tables` = 2 equal runs"
        );
        assert_eq!(build(&[("file", file(4096))]), "");
    }

    /// Every profile, at the range's ends of `freq`, `position` and `amp`:
    /// finite, within |amp| times the largest sum of a table's |amplitudes|
    /// (which bounds the table) times 1.25, the sum of Catmull–Rom's |weights|
    /// at its worst (x = ½).
    #[test]
    fn extreme_params_give_bounded_finite_output() {
        let harmonics = Value::Gains([saw_amps(50), vec![0.0; 49], vec![1.0]].concat());
        let bound: f64 = saw_amps(50).iter().sum();
        for (profile, precision) in PROFILES {
            for freq in [0.0, 1e-3, 20.0, 23_999.0, 24_000.0, 1e6, -1e6] {
                for position in [0.0, 0.5, 1.0] {
                    let values = values_with(
                        &WAVETABLE,
                        &[
                            ("harmonics", harmonics.clone()),
                            ("tables", Value::Integer(2)),
                            ("freq", Value::Number(freq)),
                        ],
                    );
                    let mut r = crate::ops::harness::NodeRunner::new(
                        &WAVETABLE,
                        values,
                        profile,
                        Some(precision),
                        SR,
                        64,
                        0,
                    )
                    .unwrap();
                    *r.param_state(POSITION) = crate::ops::ParamState::constant(position);
                    *r.param_state(AMP) = crate::ops::ParamState::constant(1e6);
                    let out = r.run(&[], &[], 2000, &[64]).remove(0);
                    let peak = out.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                    assert!(
                        out.iter().all(|x| x.is_finite()) && peak <= 1e6 * 1.25 * bound,
                        "{profile:?} {freq} Hz position {position}: {peak}"
                    );
                }
            }
        }
    }
}
