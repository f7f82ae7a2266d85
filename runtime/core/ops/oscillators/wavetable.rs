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
//! linear: at a 5 kHz fundamental at 48 kHz (the 256-sample tables of
//! level 2) the alias products of linear interpolation measure −71 dB
//! and Hermite's below −100 dB, where the operator promises −80 dB (the
//! test `alias_products_at_5_khz_are_80_db_down_and_hermite_is_why`
//! measures both).

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
    if !(ratio >= 1.0) {
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
        if tables == 0 || amps.len() % tables != 0 {
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
        if frames == 0 || frames % size != 0 {
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
        Some(_) if !harmonics.is_empty() => {
            Err("give `file` or `harmonics`, not both".to_string())
        }
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
    cost: |p, _| by_profile(p, [9.0, 7.0, 7.0]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<WavetableOp>,
};
