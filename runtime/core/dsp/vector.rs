//! Block kernels written to vectorise, and the CPU-feature dispatch that
//! picks a wider instruction set for them at run time.
//!
//! Each kernel is plain loops over the block with no per-sample branch or
//! call, computed in lanes whatever the instruction set; every lane does the
//! same operations in the same order (no FMA: Rust never contracts
//! `a * b + c`), so the output is the same bits on every [`SimdLevel`] and
//! never depends on the vector width. The level is chosen once, when a node
//! is built.

use super::sample::Sample;

/// Samples a kernel computes side by side.
pub(crate) const LANES: usize = 8;

/// The instruction sets a kernel can run with, narrowest first: a name to
/// ask for ([`SimdLevel::at_most`]) and to dispatch on ([`SimdLevel::isa`]).
/// Holding one proves nothing about the CPU; a [`SimdLevel`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Isa {
    /// The build's own target (SSE2 on a default x86-64 build).
    Base,
    /// x86-64 with AVX2 and FMA (every AVX2 CPU has both; a kernel may
    /// fuse multiply-adds where its profile allows, [`SimdLevel::has_fma`]).
    Avx2,
    /// x86-64 with AVX-512F and AVX-512DQ as well as AVX2. A kernel without
    /// an AVX-512 form runs its AVX2 one ([`SimdLevel::has_avx2`]).
    Avx512,
}

/// The instruction set a kernel runs with: an `Isa` this CPU is known to
/// have. Its field is private and every constructor checks the CPU
/// (`detect`, `at_most`,
/// [`available`](Self::available)) or asks for nothing
/// (`BASE`), so a kernel that takes a `SimdLevel` may enter
/// `#[target_feature]` code for its `isa` soundly.
///
/// ```compile_fail
/// use morphrt::dsp::vector::{Isa, SimdLevel};
/// let forged = SimdLevel(Isa::Avx512); // private: only detection makes one
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimdLevel(Isa);

/// The CPU features the levels need, as detected (or, in tests, injected).
#[derive(Clone, Copy, Debug)]
struct Features {
    avx2: bool,
    fma: bool,
    avx512f: bool,
    avx512dq: bool,
}

impl Features {
    /// This CPU's (the first call asks the CPU; later ones read a cache).
    fn of_cpu() -> Features {
        #[cfg(target_arch = "x86_64")]
        {
            Features {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                avx512dq: std::arch::is_x86_feature_detected!("avx512dq"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Features {
            avx2: false,
            fma: false,
            avx512f: false,
            avx512dq: false,
        }
    }

    /// The widest level these features run.
    fn top(self) -> Isa {
        match self {
            Features {
                avx2: true,
                fma: true,
                avx512f: true,
                avx512dq: true,
            } => Isa::Avx512,
            Features {
                avx2: true,
                fma: true,
                ..
            } => Isa::Avx2,
            _ => Isa::Base,
        }
    }
}

/// The environment variable that caps the widest instruction set the
/// kernels use: `base`, `avx2` or `avx512` (any case). A CPU with AVX-512
/// then runs the AVX2 kernels, say, and plays the repro and live bits a
/// CPU with AVX2 alone plays: those depend on the level the kernels run
/// at, strict's on nothing. It never raises the level past what the CPU
/// has. Kernels that compute the same bits at every level (the
/// convolution's, the strict resampler's) may still use what the CPU has,
/// and so does the FFT library repro and live use, whose bits may then
/// differ from a CPU without AVX under `base`.
/// Read once, by the first node built; unset or empty caps nothing,
/// and neither does a value this build does not know, which a host
/// refuses with [`isa_cap`] before building anything.
pub const ISA_VAR: &str = "MORPHRT_ISA";

/// The cap [`ISA_VAR`] asks for: `None` when it is unset or empty, the
/// level's name when it is one, and the error to show when it is not.
pub fn isa_cap() -> Result<Option<&'static str>, String> {
    let value = std::env::var(ISA_VAR).ok();
    parse_cap(value.as_deref()).map(|cap| cap.map(|isa| SimdLevel(isa).name()))
}

/// `value` of [`ISA_VAR`] as a cap (`None`: no cap).
fn parse_cap(value: Option<&str>) -> Result<Option<Isa>, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match value.to_ascii_lowercase().as_str() {
        "base" => Ok(Some(Isa::Base)),
        "avx2" => Ok(Some(Isa::Avx2)),
        "avx512" => Ok(Some(Isa::Avx512)),
        _ => Err(format!(
            "{ISA_VAR}={value:?} is not an instruction set morphrt knows: use base, avx2 or avx512, or unset it"
        )),
    }
}

/// The widest level [`ISA_VAR`] allows (every level when it asks for none
/// or for one it does not name), read once per process.
fn env_cap() -> Isa {
    static CAP: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        parse_cap(std::env::var(ISA_VAR).ok().as_deref())
            .ok()
            .flatten()
            .unwrap_or(Isa::Avx512)
    })
}

impl SimdLevel {
    /// The build's own target: every CPU the binary runs on has it.
    pub(crate) const BASE: SimdLevel = SimdLevel(Isa::Base);

    /// The widest level this CPU runs, no wider than [`ISA_VAR`] allows. Call
    /// it while building a node, not per block.
    pub(crate) fn detect() -> SimdLevel {
        SimdLevel(Features::of_cpu().top().min(env_cap()))
    }

    /// The level's name as [`ISA_VAR`] spells it: `base`, `avx2` or
    /// `avx512`.
    pub fn name(self) -> &'static str {
        match self.0 {
            Isa::Base => "base",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// `requested`, or the widest level this CPU runs if that is narrower:
    /// never a level the CPU lacks.
    #[cfg(test)]
    pub(crate) fn at_most(requested: Isa) -> SimdLevel {
        Self::at_most_with(requested, Features::of_cpu())
    }

    #[cfg(test)]
    fn at_most_with(requested: Isa, cpu: Features) -> SimdLevel {
        SimdLevel(requested.min(cpu.top()))
    }

    /// The instruction set, to dispatch on.
    pub(crate) fn isa(self) -> Isa {
        self.0
    }

    /// Whether this level runs AVX2 code (`Avx2` and `Avx512`).
    pub(crate) fn has_avx2(self) -> bool {
        self.0 >= Isa::Avx2
    }

    /// Whether this level has FMA instructions (`Avx2` and `Avx512`).
    pub(crate) fn has_fma(self) -> bool {
        self.0 >= Isa::Avx2
    }

    /// Every level this CPU runs, narrowest first (for tests and benchmarks
    /// that compare them).
    pub fn available() -> impl Iterator<Item = SimdLevel> {
        let top = SimdLevel::detect();
        [Isa::Base, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .map(SimdLevel)
            .filter(move |l| *l <= top)
    }
}

/// 2π, and the odd Taylor coefficients of sin(2π·v) in powers of v.
const TAU: f64 = 2.0 * core::f64::consts::PI;
const K1: f32 = TAU as f32;
const K3: f32 = (-TAU * TAU * TAU / 6.0) as f32;
const K5: f32 = (TAU * TAU * TAU * TAU * TAU / 120.0) as f32;
const K7: f32 = (-TAU * TAU * TAU * TAU * TAU * TAU * TAU / 5040.0) as f32;
const K9: f32 = (TAU * TAU * TAU * TAU * TAU * TAU * TAU * TAU * TAU / 362880.0) as f32;

/// sin(2π·t) for t in [0, 1), without a call or a branch: reflect t to
/// v ∈ [-¼, ¼] (exactly: t has at most 24 significant bits), then an odd
/// polynomial to v⁹ (absolute error ≤ 4e-6; live's fast math, see
/// [`crate::dsp::math`], allows 1e-4).
#[inline(always)]
pub(crate) fn sin_turns(t: f32) -> f32 {
    // sin(2πt) = sin(π − 2πt) = sin(2πw), w ∈ (−½, ½].
    let w = 0.5 - t;
    // sin(2πw) = sin(2π(±½ − w)): fold |w| > ¼ into [−¼, ¼].
    let half = if w < 0.0 { -0.5 } else { 0.5 };
    let v = if w.abs() > 0.25 { half - w } else { w };
    let v2 = v * v;
    v * (K1 + v2 * (K3 + v2 * (K5 + v2 * (K7 + v2 * K9))))
}

/// A u64 fixed-point phase as a fraction of a cycle in [0, 1): its top 24
/// bits, exact in f32 (the same value as `f32::from_phase`, through a 32-bit
/// conversion the vector units have).
#[inline(always)]
pub(crate) fn phase_turns(phase: u64) -> f32 {
    ((phase >> 40) as u32 as i32) as f32 * (1.0 / 16777216.0)
}

/// A phase offset in turns (any finite number; NaN counts as 0) as a u64
/// fixed-point fraction of a cycle, to 2^-32 of a cycle. No call, no branch.
#[inline]
pub(crate) fn turns_to_phase(turns: f64) -> u64 {
    let whole = turns as i64;
    let frac = turns - whole as f64;
    ((frac * 4294967296.0) as i64 as u64) << 32
}

/// cos and sin of 2π·k/256 for k < 256, rounded once to f32 (computed at
/// compile time in f64 by [`cis_f64`]): the coarse step of [`turn_cis`].
static CIS256: [[f32; 2]; 256] = {
    let mut t = [[0.0f32; 2]; 256];
    let mut k = 0;
    while k < 256 {
        let (c, s) = cis_f64(k as f64 * (TAU / 256.0));
        t[k] = [c as f32, s as f32];
        k += 1;
    }
    t
};

/// (cos x, sin x) in f64 for x in [−2π, 2π], for the tables: x folded into
/// [−π, π] (one exact-enough subtraction), then both Taylor series to x^30
/// by Horner's scheme (truncation below 1e-17 there). Only `+ − × ÷`, so it
/// runs at compile time and gives the same bits everywhere.
const fn cis_f64(x: f64) -> (f64, f64) {
    let x = if x > core::f64::consts::PI {
        x - TAU
    } else if x < -core::f64::consts::PI {
        x + TAU
    } else {
        x
    };
    let x2 = x * x;
    // cos x = 1 − x²/(1·2)·(1 − x²/(3·4)·(1 − …)).
    let mut c = 1.0f64;
    let mut m = 30;
    while m >= 2 {
        let k = m as f64;
        c = 1.0 - x2 / (k * (k - 1.0)) * c;
        m -= 2;
    }
    // sin x = x·(1 − x²/(2·3)·(1 − x²/(4·5)·(1 − …))).
    let mut s = 1.0f64;
    let mut m = 29;
    while m >= 3 {
        let k = m as f64;
        s = 1.0 - x2 / (k * (k - 1.0)) * s;
        m -= 2;
    }
    (c, x * s)
}

/// 2π / 2^32 in f32: the fine step of [`turn_cis`] per unit of its 24 bits.
const FINE: f32 = (TAU / 4294967296.0) as f32;

/// (cos, sin)(2π·phase) for a u64 phase, in f32, without a branch: the top
/// 8 bits pick 2π·k/256 from [`CIS256`], the next 24 give the rest
/// δ ∈ [0, 2π/256), whose cos and sin are 1 − δ²/2 and δ − δ³/6
/// (truncation ≤ 2e-8 and ≤ 1e-10 there), then one complex product. Error
/// against the exact phase ≤ 4e-7 per component (a test measures it; the
/// phase below 2^-32 of a cycle is dropped, ≤ 1.5e-9 of it).
#[inline(always)]
pub(crate) fn turn_cis(phase: u64) -> (f32, f32) {
    let [c0, s0] = CIS256[(phase >> 56) as usize];
    let d = (((phase >> 32) as u32 & 0x00ff_ffff) as i32) as f32 * FINE;
    let d2 = d * d;
    let cd = 1.0 + d2 * -0.5;
    let sd = d + d * (d2 * (-1.0 / 6.0));
    (c0 * cd - s0 * sd, s0 * cd + c0 * sd)
}

/// Samples between two re-seeds of [`sine_block`]: the grid of anchors.
pub(crate) const SEGMENT: usize = 64;

/// Steps within a quarter of a segment: the j of w^j a sample reads.
pub(crate) const QUARTER: usize = 16;

/// What [`sine_block`] needs of an increment, computed once per frequency
/// change (no allocation; kept in the node): `w^j = e^{2πi·j·inc/2^64}`
/// for j < [`QUARTER`], and w^(16q) for the quarters q < 4 of a segment,
/// each computed in f64 and rounded once to f32; and how to place a phase
/// on the grid. Three cache lines: the steps, then the quarters and the
/// fields a kernel reads first.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct SineSteps {
    /// Re and Im of w^j, j < 16.
    re: [f32; QUARTER],
    im: [f32; QUARTER],
    /// Re and Im of w^(16q), q < 4 (w^0 = 1).
    qre: [f32; 4],
    qim: [f32; 4],
    /// The increment these steps are for.
    inc: u64,
    /// `inc = odd · 2^shift` (0 for `inc = 0`).
    shift: u32,
    /// The inverse of `odd` mod 2^64 (0 for `inc = 0`).
    inv: u64,
}

impl Default for SineSteps {
    fn default() -> Self {
        SineSteps::new(0)
    }
}

impl SineSteps {
    /// Where the increment and the grid's fields lie in the struct (the
    /// line a kernel reads before the steps themselves).
    pub(crate) const HEADER: usize = std::mem::offset_of!(SineSteps, inc);

    pub(crate) fn new(inc: u64) -> SineSteps {
        // The steps of `inc = 0` (w = 1), then those of `inc`.
        let mut s = SineSteps {
            re: [1.0; QUARTER],
            im: [0.0; QUARTER],
            qre: [1.0; 4],
            qim: [0.0; 4],
            inc: 0,
            shift: 0,
            inv: 0,
        };
        s.set(inc);
        s
    }

    /// The increment the steps are for.
    #[inline]
    pub(crate) fn inc(&self) -> u64 {
        self.inc
    }

    /// Recompute the steps for `inc` (a no-op when it is the current one's).
    /// Bounded work: one `libm::sincos` and 48 complex products in f64.
    #[inline]
    pub(crate) fn set(&mut self, inc: u64) {
        if inc != self.inc {
            self.recompute(inc);
        }
    }

    #[cold]
    #[inline(never)]
    fn recompute(&mut self, inc: u64) {
        self.inc = inc;
        if inc == 0 {
            (self.shift, self.inv) = (0, 0);
        } else {
            self.shift = inc.trailing_zeros();
            let odd = inc >> self.shift;
            // Newton's iteration for the inverse mod 2^64: `odd` is its own
            // inverse to 3 bits, and each step doubles the correct bits.
            let mut inv = odd;
            for _ in 0..5 {
                inv = inv.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inv)));
            }
            self.inv = inv;
        }
        // w = e^{iθ}, θ the increment as a signed fraction of a cycle.
        let theta = (inc as i64) as f64 * (TAU / 18446744073709551616.0);
        let (ws, wc) = libm::sincos(theta);
        let (mut c, mut s) = (1.0f64, 0.0f64);
        // Exact angles repeat when 64·inc wraps to 0 (the period divides
        // 64): each step is then the one a period earlier, bit for bit.
        let period = if self.shift > 58 {
            1usize << (64 - self.shift)
        } else {
            SEGMENT
        };
        let (mut re, mut im) = ([0f32; SEGMENT], [0f32; SEGMENT]);
        for j in 0..=3 * QUARTER {
            if j >= period {
                re[j] = re[j - period];
                im[j] = im[j - period];
                continue;
            }
            re[j] = c as f32;
            im[j] = s as f32;
            (c, s) = (c * wc - s * ws, s * wc + c * ws);
        }
        self.re.copy_from_slice(&re[..QUARTER]);
        self.im.copy_from_slice(&im[..QUARTER]);
        for q in 0..4 {
            (self.qre[q], self.qim[q]) = (re[QUARTER * q], im[QUARTER * q]);
        }
    }

    /// Where `phase` lies on the grid of anchors: the number of samples
    /// since the last one, in [0, 64). The grid is a function of the phase
    /// alone: with `inc = odd · 2^shift`, `(phase >> shift) · odd⁻¹` goes up
    /// by exactly 1 per sample, so its low 6 bits count samples whatever
    /// the blocks were (when 64·inc wraps to 0 only the bits below the
    /// period are, and the rest do not change the output: the anchor
    /// phase and the steps repeat with the period).
    #[inline(always)]
    pub(crate) fn position(&self, phase: u64) -> usize {
        ((phase >> self.shift).wrapping_mul(self.inv) & (SEGMENT as u64 - 1)) as usize
    }
}

/// (amp·cos, amp·sin) at an anchor's phase plus the offset.
#[inline(always)]
fn seed(anchor: u64, offset: u64, amp: f32) -> (f32, f32) {
    let (c, s) = turn_cis(anchor.wrapping_add(offset));
    (amp * c, amp * s)
}

/// An anchor's seed (a, b) = amp·z moved to quarter `q` of its segment:
/// amp·z·w^(16q), one complex product in f32 (for q = 0 the product with
/// 1 gives a and b back; every kernel computes it the same way).
#[inline(always)]
fn quarter(steps: &SineSteps, (a, b): (f32, f32), q: usize) -> (f32, f32) {
    let (wr, wi) = (steps.qre[q & 3], steps.qim[q & 3]);
    (a * wr - b * wi, b * wr + a * wi)
}

/// One quarter's samples from step `j0` on: `a·Im(w^j) + b·Re(w^j)`
/// (added to `out` with `ADD`).
#[inline(always)]
fn quarter_samples<S: Sample, const ADD: bool>(
    steps: &SineSteps,
    (a, b): (f32, f32),
    j0: usize,
    out: &mut [S],
) {
    let (im, re) = (&steps.im[j0..], &steps.re[j0..]);
    for ((o, ti), tr) in out.iter_mut().zip(im).zip(re) {
        let v = a * *ti + b * *tr;
        *o = if ADD {
            *o + S::from_f32(v)
        } else {
            S::from_f32(v)
        };
    }
}

/// The live `sine` kernel, in lanes: the r-th sample after an anchor, r =
/// 16q + j, is `a·Im(w^j) + b·Re(w^j)` = amp·Im(z·w^(16q)·w^j) with
/// (a, b) = amp·z·w^(16q) ([`quarter`]), z = (cos, sin)(2π·anchor) (see
/// [`sine_block`]). `ADD`: each sample is added to what `out` holds
/// (`out[i] + sample`) instead of written.
#[inline(always)]
fn sine_block_lanes<S: Sample, const ADD: bool>(
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    let inc = steps.inc;
    let mut r = steps.position(phase);
    let span = inc.wrapping_mul(SEGMENT as u64);
    let mut anchor = phase.wrapping_sub(inc.wrapping_mul(r as u64));
    let mut done = 0;
    while done < out.len() {
        let z = seed(anchor, offset, amp);
        while r < SEGMENT && done < out.len() {
            let (q, j0) = (r / QUARTER, r % QUARTER);
            let len = (QUARTER - j0).min(out.len() - done);
            let ab = quarter(steps, z, q);
            quarter_samples::<S, ADD>(steps, ab, j0, &mut out[done..done + len]);
            done += len;
            r += len;
        }
        r = 0;
        anchor = anchor.wrapping_add(span);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sine_block_avx2<S: Sample, const ADD: bool>(
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    sine_block_lanes::<S, ADD>(steps, phase, offset, amp, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f")]
unsafe fn sine_block_avx512<S: Sample, const ADD: bool>(
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    sine_block_lanes::<S, ADD>(steps, phase, offset, amp, out)
}

#[inline(always)]
fn sine_block_at<S: Sample, const ADD: bool>(
    level: SimdLevel,
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    #[cfg(target_arch = "x86_64")]
    match level.isa() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        Isa::Avx2 => return unsafe { sine_block_avx2::<S, ADD>(steps, phase, offset, amp, out) },
        Isa::Avx512 => {
            return unsafe { sine_block_avx512::<S, ADD>(steps, phase, offset, amp, out) }
        }
        Isa::Base => {}
    }
    let _ = level;
    sine_block_lanes::<S, ADD>(steps, phase, offset, amp, out)
}

/// `out[i] ≈ amp · sin(2π · (phase + i·inc + offset))`, the phases u64
/// fractions of a cycle and `inc` the one `steps` were set for: the live
/// `sine` kernel. Every 64 samples on a grid of anchors that depends on the
/// phase alone ([`SineSteps::position`]), z = (cos, sin)(2π·(anchor +
/// offset)) is seeded from the exact phase ([`turn_cis`]); the r-th sample
/// after an anchor, r = 16q + j, is amp·Im((z·w^(16q))·w^j), with w^(16q)
/// and w^j from the steps (one complex product per quarter, so the steps
/// are 20 values, not 64). So each sample is a function of its own phase,
/// `inc`, `amp` and `offset`: the same bits whatever the blocks (and the
/// phase kept in the node is still the exact u64 one), with no error
/// carried from sample to sample (≤ 1e-6 against sin of the exact phase; a
/// test measures it). Two products and a sum per sample, the same
/// operations at every level, so the same bits.
pub(crate) fn sine_block<S: Sample>(
    level: SimdLevel,
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    sine_block_at::<S, false>(level, steps, phase, offset, amp, out)
}

/// [`sine_block`]'s samples added to `out` (`out[i] = out[i] + sample`,
/// the sample rounded to `S` first): the same bits as writing them to a
/// buffer of their own and adding that buffer, without the buffer.
pub(crate) fn sine_block_add<S: Sample>(
    level: SimdLevel,
    steps: &SineSteps,
    phase: u64,
    offset: u64,
    amp: f32,
    out: &mut [S],
) {
    sine_block_at::<S, true>(level, steps, phase, offset, amp, out)
}

/// One node of [`sine_group`]: its steps, its phase at the first frame
/// (which must be on the grid of anchors: [`SineSteps::position`] 0), its
/// phase offset and its amp.
#[derive(Clone, Copy)]
pub(crate) struct SineMember<'a> {
    pub(crate) steps: &'a SineSteps,
    pub(crate) phase: u64,
    pub(crate) offset: u64,
    pub(crate) amp: f32,
}

/// Where [`sine_group`] puts its members' samples.
pub(crate) enum SineOut<'a, 'b, S> {
    /// Member k's samples written to `outs[k]`.
    Each(&'a mut [&'b mut [S]]),
    /// Every member's samples added to one buffer in member order (the
    /// first member's written, not added, when `first`).
    Sum(&'a mut [S], bool),
}

#[inline(always)]
fn sine_group_lanes<S: Sample>(members: &[SineMember<'_>], n: usize, mut out: SineOut<'_, '_, S>) {
    let len = members.len().min(64);
    let (mut sa, mut sb) = ([0f32; 64], [0f32; 64]);
    for (c, from) in (0..n).step_by(SEGMENT).enumerate() {
        let to = (from + SEGMENT).min(n);
        // Every member's seed for this chunk, side by side.
        for k in 0..len {
            let m = &members[k];
            let anchor = m
                .phase
                .wrapping_add(m.steps.inc.wrapping_mul((c * SEGMENT) as u64));
            (sa[k], sb[k]) = seed(anchor, m.offset, m.amp);
        }
        if to - from == SEGMENT {
            if let SineOut::Sum(dst, first) = &mut out {
                sum_segment(members, &sa, &sb, &mut dst[from..to], *first);
                continue;
            }
        }
        for k in 0..len {
            let st = members[k].steps;
            let (dst, add) = match &mut out {
                SineOut::Each(outs) => (&mut outs[k][from..to], false),
                SineOut::Sum(dst, first) => (&mut dst[from..to], !(*first && k == 0)),
            };
            for (q, part) in dst.chunks_mut(QUARTER).enumerate() {
                let ab = quarter(st, (sa[k], sb[k]), q);
                if add {
                    quarter_samples::<S, true>(st, ab, 0, part);
                } else {
                    quarter_samples::<S, false>(st, ab, 0, part);
                }
            }
        }
    }
}

/// A whole segment of every member summed into `dst` (64 frames), the
/// sum kept in registers across the members: the same additions, in
/// member order, as adding each member's samples to `dst` in turn.
#[inline(always)]
fn sum_segment<S: Sample>(
    members: &[SineMember<'_>],
    sa: &[f32; 64],
    sb: &[f32; 64],
    dst: &mut [S],
    first: bool,
) {
    if dst.len() == SEGMENT {
        sum_quarters::<S, 4>(members, (sa, sb), 0, dst, first);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sine_group_avx2<S: Sample>(
    members: &[SineMember<'_>],
    n: usize,
    out: SineOut<'_, '_, S>,
) {
    sine_group_lanes(members, n, out)
}

/// Full quarters `q0..q0 + NQ` of one segment of every member summed into
/// `dst` (`NQ`·16 frames), the sum kept in registers across the members:
/// the same additions, in member order, as adding each member's samples
/// to `dst` in turn.
// Indexed loops of a constant length: the compiler keeps the sum in
// registers (with iterators over the slices it does not, ~35 % slower).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn sum_quarters<S: Sample, const NQ: usize>(
    members: &[SineMember<'_>],
    (sa, sb): (&[f32; 64], &[f32; 64]),
    q0: usize,
    dst: &mut [S],
    first: bool,
) {
    let len = NQ * QUARTER;
    let mut acc = [S::ZERO; SEGMENT];
    acc[..len].copy_from_slice(&dst[..len]);
    for (k, m) in members.iter().enumerate().take(64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(ahead) = members.get(k + 4) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let at = (ahead.steps as *const SineSteps).cast::<u8>();
            for line in 0..3 {
                // SAFETY: prefetches only hint the cache (in bounds here).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64 * line).cast()) };
            }
        }
        let st = m.steps;
        for q in 0..NQ {
            let (a, b) = quarter(st, (sa[k], sb[k]), q0 + q);
            let acc = &mut acc[QUARTER * q..QUARTER * (q + 1)];
            if k == 0 && first {
                for j in 0..QUARTER {
                    acc[j] = S::from_f32(a * st.im[j] + b * st.re[j]);
                }
            } else {
                for j in 0..QUARTER {
                    acc[j] += S::from_f32(a * st.im[j] + b * st.re[j]);
                }
            }
        }
    }
    dst[..len].copy_from_slice(&acc[..len]);
}

#[inline(always)]
fn sine_span_lanes<S: Sample>(
    members: &[SineMember<'_>],
    from: usize,
    to: usize,
    dst: &mut [S],
    first: bool,
) {
    let len = members.len().min(64);
    let (mut sa, mut sb) = ([0f32; 64], [0f32; 64]);
    let mut at = from;
    while at < to {
        let c = at / SEGMENT;
        let end = ((c + 1) * SEGMENT).min(to);
        for k in 0..len {
            let m = &members[k];
            let anchor = m
                .phase
                .wrapping_add(m.steps.inc.wrapping_mul((c * SEGMENT) as u64));
            (sa[k], sb[k]) = seed(anchor, m.offset, m.amp);
        }
        let q0 = (at - c * SEGMENT) / QUARTER;
        let part = &mut dst[at - from..end - from];
        let seeds = (&sa, &sb);
        let whole = part.len() / QUARTER;
        match whole {
            4 => sum_quarters::<S, 4>(&members[..len], seeds, q0, part, first),
            3 => sum_quarters::<S, 3>(&members[..len], seeds, q0, part, first),
            2 => sum_quarters::<S, 2>(&members[..len], seeds, q0, part, first),
            1 => sum_quarters::<S, 1>(&members[..len], seeds, q0, part, first),
            _ => {}
        }
        // A last quarter cut short by the chunk's end, member by member.
        let rest = &mut part[whole * QUARTER..];
        if !rest.is_empty() {
            for (k, m) in members[..len].iter().enumerate() {
                let ab = quarter(m.steps, (sa[k], sb[k]), q0 + whole);
                if first && k == 0 {
                    quarter_samples::<S, false>(m.steps, ab, 0, rest);
                } else {
                    quarter_samples::<S, true>(m.steps, ab, 0, rest);
                }
            }
        }
        at = end;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sine_span_avx2<S: Sample>(
    members: &[SineMember<'_>],
    from: usize,
    to: usize,
    dst: &mut [S],
    first: bool,
) {
    sine_span_lanes(members, from, to, dst, first)
}

/// Frames `from..to` of a chunk of up to 64 members on the grid of anchors
/// (each `phase` its phase at the chunk's first frame, position 0) summed
/// into `dst` (`to − from` frames) in member order, the first member's
/// written when `first`: the same bits as those frames of [`sine_group`]'s
/// sum over the whole chunk, so a chunk may be cut into spans summed apart
/// (on different threads). `from` must be a multiple of 16 (a quarter).
pub(crate) fn sine_group_span<S: Sample>(
    level: SimdLevel,
    members: &[SineMember<'_>],
    (from, to): (usize, usize),
    dst: &mut [S],
    first: bool,
) {
    debug_assert!(members.iter().all(|m| m.steps.position(m.phase) == 0));
    debug_assert!(from.is_multiple_of(QUARTER) && dst.len() == to - from);
    #[cfg(target_arch = "x86_64")]
    match level.isa() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        // The AVX2 build on AVX-512 too: see `sine_group`.
        Isa::Avx2 | Isa::Avx512 => return unsafe { sine_span_avx2(members, from, to, dst, first) },
        Isa::Base => {}
    }
    let _ = level;
    sine_span_lanes(members, from, to, dst, first)
}

/// [`sine_block`] for up to 64 nodes at once, the same bits: each 64-frame
/// chunk's seeds for all members side by side, then each member's samples.
/// Every member's phase must be on the grid (position 0), so each chunk
/// is one anchor's.
pub(crate) fn sine_group<S: Sample>(
    level: SimdLevel,
    members: &[SineMember<'_>],
    n: usize,
    out: SineOut<'_, '_, S>,
) {
    debug_assert!(members.iter().all(|m| m.steps.position(m.phase) == 0));
    #[cfg(target_arch = "x86_64")]
    match level.isa() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        // The AVX2 build on AVX-512 too: the same operations (no FMA in
        // either), and the 512-bit build of this kernel, one register per
        // quarter, rendered W1 under live 11 % slower than the 256-bit one
        // on an AVX-512 Xeon (benches/README.md, Threads).
        Isa::Avx2 | Isa::Avx512 => return unsafe { sine_group_avx2(members, n, out) },
        Isa::Base => {}
    }
    let _ = level;
    sine_group_lanes(members, n, out)
}

/// Whether a sample is one every output format holds: finite, and no
/// larger in magnitude than `f32::MAX`. In f32 that is `is_finite`; in f64
/// it also rules out the magnitudes an f32 WAV would write as infinities,
/// so the engine's NaN/Inf rule names and silences the same node in every
/// profile.
#[inline(always)]
pub(crate) fn fits_f32<S: Sample>(x: S) -> bool {
    x.abs() <= S::from_f64(f32::MAX as f64)
}

/// Whether every sample [`fits_f32`]. In f32: the largest magnitude's bits
/// (sign cleared) below infinity's, an integer maximum (one plain vector
/// loop, no branch); in f64 a comparison per sample, in lanes. Always
/// inlined, so the AVX2 caller's copy is built with AVX2.
#[inline(always)]
pub(crate) fn all_finite<S: Sample>(x: &[S]) -> bool {
    if S::PRECISION == crate::dsp::Precision::F64 {
        let mut ok = [true; LANES];
        let mut chunks = x.chunks_exact(LANES);
        for c in &mut chunks {
            for (o, v) in ok.iter_mut().zip(c) {
                *o &= fits_f32(*v);
            }
        }
        return chunks.remainder().iter().all(|v| fits_f32(*v)) && ok.iter().all(|o| *o);
    }
    const MAGNITUDE: u32 = 0x7fff_ffff;
    // SAFETY: `S` is f32 (its precision says so), which has u32's size
    // and alignment, and every bit pattern is a u32.
    let bits = unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<u32>(), x.len()) };
    // (An integer maximum taken in any order is the same: the compiler
    // takes it in vector lanes.)
    bits.iter().fold(0, |t, b| t.max(b & MAGNITUDE)) < f32::INFINITY.to_bits()
}

/// Transposes a 16 × 16 block of f32 in place (`m[i][j]` ↔ `m[j][i]`):
/// moves data only, so any kernel that runs on the transposed block gives
/// the same bits. Unpacks, in-lane shuffles and 128-bit lane shuffles, 64
/// in all, instead of 256 scalar moves.
///
/// # Safety
/// The CPU must have AVX-512F (as a `SimdLevel` of [`Isa::Avx512`] shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
#[cfg(test)]
pub(crate) unsafe fn transpose16_avx512(m: &mut [[f32; 16]; 16]) {
    use std::arch::x86_64::*;
    let p = m.as_mut_ptr() as *mut f32;
    let r: [__m512; 16] = core::array::from_fn(|i| _mm512_loadu_ps(p.add(16 * i)));
    for (i, v) in transpose16_regs(r).into_iter().enumerate() {
        _mm512_storeu_ps(p.add(16 * i), v);
    }
}

/// The 16 × 16 transpose of [`transpose16_avx512`] on rows in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn transpose16_regs(
    r: [std::arch::x86_64::__m512; 16],
) -> [std::arch::x86_64::__m512; 16] {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved by element, then by pairs of elements.
    let mut t = [_mm512_setzero_ps(); 16];
    for k in 0..8 {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    let mut u = [_mm512_setzero_ps(); 16];
    for k in 0..4 {
        let (a, b, c, d) = (t[4 * k], t[4 * k + 1], t[4 * k + 2], t[4 * k + 3]);
        u[4 * k] = _mm512_shuffle_ps::<0x44>(a, c);
        u[4 * k + 1] = _mm512_shuffle_ps::<0xEE>(a, c);
        u[4 * k + 2] = _mm512_shuffle_ps::<0x44>(b, d);
        u[4 * k + 3] = _mm512_shuffle_ps::<0xEE>(b, d);
    }
    // Now 128-bit lanes: first across groups of four rows, then of eight.
    let mut v = [_mm512_setzero_ps(); 16];
    for h in 0..2 {
        for k in 0..4 {
            let (a, b) = (u[8 * h + k], u[8 * h + 4 + k]);
            v[8 * h + k] = _mm512_shuffle_f32x4::<0x88>(a, b);
            v[8 * h + 4 + k] = _mm512_shuffle_f32x4::<0xDD>(a, b);
        }
    }
    let mut w = [_mm512_setzero_ps(); 16];
    for k in 0..8 {
        let (a, b) = (v[k], v[8 + k]);
        w[k] = _mm512_shuffle_f32x4::<0x88>(a, b);
        w[8 + k] = _mm512_shuffle_f32x4::<0xDD>(a, b);
    }
    w
}

/// Frames `at..at + 16` of 16 rows (`rows[l]`, at least `at + 16` long
/// each) transposed into `m`: `m[t][l] = rows[l][at + t]`. The rows load
/// straight into [`transpose16_avx512`]'s registers.
///
/// # Safety
/// The CPU must have AVX-512F (as a `SimdLevel` of [`Isa::Avx512`] shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn transpose16_in_avx512(rows: &[&[f32]], at: usize, m: &mut [[f32; 16]; 16]) {
    use std::arch::x86_64::*;
    let r: [__m512; 16] = core::array::from_fn(|l| _mm512_loadu_ps(rows[l][at..at + 16].as_ptr()));
    for (row, v) in m.iter_mut().zip(transpose16_regs(r)) {
        _mm512_storeu_ps(row.as_mut_ptr(), v);
    }
}

/// `m` transposed out to frames `at..at + 16` of 16 rows (`rows[l][at +
/// t] = m[t][l]`, each row at least `at + 16` long), the inverse of
/// [`transpose16_in_avx512`]. With `sum`, the rows are also added into
/// it in row order, from registers (`first`: the first row is copied into
/// it, not added).
///
/// # Safety
/// The CPU must have AVX-512F (as a `SimdLevel` of [`Isa::Avx512`] shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn transpose16_out_avx512(
    m: &[[f32; 16]; 16],
    rows: &mut [&mut [f32]],
    at: usize,
    sum: Option<&mut [f32; 16]>,
    first: bool,
) {
    use std::arch::x86_64::*;
    let r: [__m512; 16] = core::array::from_fn(|t| _mm512_loadu_ps(m[t].as_ptr()));
    let w = transpose16_regs(r);
    for (row, v) in rows.iter_mut().zip(w) {
        _mm512_storeu_ps(row[at..at + 16].as_mut_ptr(), v);
    }
    if let Some(acc) = sum {
        let mut a = if first {
            w[0]
        } else {
            _mm512_loadu_ps(acc.as_ptr())
        };
        for (l, v) in w.into_iter().enumerate() {
            if l > 0 || !first {
                a = _mm512_add_ps(a, v);
            }
        }
        _mm512_storeu_ps(acc.as_mut_ptr(), a);
    }
}

/// Sixteen f64 lanes as two AVX-512 vectors (lanes 0–7 and 8–15): the
/// coefficients and state of 16 biquads side by side.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Lanes16([std::arch::x86_64::__m512d; 2]);

#[cfg(target_arch = "x86_64")]
impl Lanes16 {
    pub(crate) const ZERO: Lanes16 =
        // SAFETY: sixteen f64 zeros are two vectors of eight f64 zeros.
        Lanes16(unsafe {
            std::mem::transmute::<[f64; 16], [std::arch::x86_64::__m512d; 2]>([0.0; 16])
        });

    /// The 16 values of `x` (its length must be 16).
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) unsafe fn load(x: &[f64]) -> Lanes16 {
        use std::arch::x86_64::*;
        assert_eq!(x.len(), 16);
        let p = x.as_ptr();
        Lanes16([_mm512_loadu_pd(p), _mm512_loadu_pd(p.add(8))])
    }

    /// Writes the 16 lanes to `x` (its length must be 16).
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) unsafe fn store(self, x: &mut [f64]) {
        use std::arch::x86_64::*;
        assert_eq!(x.len(), 16);
        let p = x.as_mut_ptr();
        _mm512_storeu_pd(p, self.0[0]);
        _mm512_storeu_pd(p.add(8), self.0[1]);
    }
}

/// One transposed-direct-form-II step of 16 biquads side by side, their
/// f32 samples in `row` (in, then out), coefficients `c` = `[b0, b1, b2,
/// a1, a2]` and state `z1`, `z2` in f64: lane `l` computes what a node
/// alone computes, in the same order, so the same bits. `FUSED`:
/// y = fma(b0, x, z1); z1 = fma(−a1, y, fma(b1, x, z2));
/// z2 = fma(−a2, y, b2·x). Else y = b0·x + z1, z2 = b2·x − a2·y and z1 =
/// (b1·x − a1·y) + z2, or (b1·x + z2) − a1·y when `short`.
///
/// # Safety
/// The CPU must have AVX-512F (as a `SimdLevel` of [`Isa::Avx512`] shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f")]
#[inline]
pub(crate) unsafe fn biquad_step16_avx512<const FUSED: bool>(
    short: bool,
    c: &[Lanes16; 5],
    z1: &mut Lanes16,
    z2: &mut Lanes16,
    row: &mut [f32; 16],
) {
    use std::arch::x86_64::*;
    // Each half of the row widens straight from memory, and narrows
    // straight back (no shuffle to split or join the halves).
    let p = row.as_mut_ptr();
    let mut y = [
        _mm512_cvtps_pd(_mm256_loadu_ps(p)),
        _mm512_cvtps_pd(_mm256_loadu_ps(p.add(8))),
    ];
    for (h, yh) in y.iter_mut().enumerate() {
        let x = *yh;
        let [b0, b1, b2, a1, a2] = [c[0].0[h], c[1].0[h], c[2].0[h], c[3].0[h], c[4].0[h]];
        let (s1, s2) = (z1.0[h], z2.0[h]);
        let out = if FUSED {
            let out = _mm512_fmadd_pd(b0, x, s1);
            z1.0[h] = _mm512_fnmadd_pd(a1, out, _mm512_fmadd_pd(b1, x, s2));
            z2.0[h] = _mm512_fnmadd_pd(a2, out, _mm512_mul_pd(b2, x));
            out
        } else {
            let out = _mm512_add_pd(_mm512_mul_pd(b0, x), s1);
            let (b1x, a1y) = (_mm512_mul_pd(b1, x), _mm512_mul_pd(a1, out));
            z1.0[h] = if short {
                _mm512_sub_pd(_mm512_add_pd(b1x, s2), a1y)
            } else {
                _mm512_add_pd(_mm512_sub_pd(b1x, a1y), s2)
            };
            z2.0[h] = _mm512_sub_pd(_mm512_mul_pd(b2, x), _mm512_mul_pd(a2, out));
            out
        };
        *yh = out;
    }
    _mm256_storeu_ps(p, _mm512_cvtpd_ps(y[0]));
    _mm256_storeu_ps(p.add(8), _mm512_cvtpd_ps(y[1]));
}

/// The 8 × 8 transpose of f32 rows in AVX2 registers (`r[i][j]` →
/// `w[j][i]`): unpacks, in-lane shuffles and 128-bit lane swaps, 24 in
/// all. Moves data only.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn transpose8_regs(
    r: [std::arch::x86_64::__m256; 8],
) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    let mut t = [_mm256_setzero_ps(); 8];
    for k in 0..4 {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    let mut u = [_mm256_setzero_ps(); 8];
    for k in 0..2 {
        let (a, b, c, d) = (t[4 * k], t[4 * k + 1], t[4 * k + 2], t[4 * k + 3]);
        u[4 * k] = _mm256_shuffle_ps::<0x44>(a, c);
        u[4 * k + 1] = _mm256_shuffle_ps::<0xEE>(a, c);
        u[4 * k + 2] = _mm256_shuffle_ps::<0x44>(b, d);
        u[4 * k + 3] = _mm256_shuffle_ps::<0xEE>(b, d);
    }
    let mut w = [_mm256_setzero_ps(); 8];
    for k in 0..4 {
        w[k] = _mm256_permute2f128_ps::<0x20>(u[k], u[4 + k]);
        w[4 + k] = _mm256_permute2f128_ps::<0x31>(u[k], u[4 + k]);
    }
    w
}

/// Frames `at..at + 8` of 8 rows (`rows[l]`, at least `at + 8` long each)
/// transposed into `m`: `m[t][l] = rows[l][at + t]`, as
/// [`transpose16_in_avx512`] does with 16.
///
/// # Safety
/// The CPU must have AVX2 (as a `SimdLevel` of [`Isa::Avx2`] or wider shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn transpose8_in_avx2(rows: &[&[f32]], at: usize, m: &mut [[f32; 8]; 8]) {
    use std::arch::x86_64::*;
    let r: [__m256; 8] = core::array::from_fn(|l| _mm256_loadu_ps(rows[l][at..at + 8].as_ptr()));
    for (row, v) in m.iter_mut().zip(transpose8_regs(r)) {
        _mm256_storeu_ps(row.as_mut_ptr(), v);
    }
}

/// `m` transposed out to frames `at..at + 8` of 8 rows, and added into
/// `sum` in row order from registers, as [`transpose16_out_avx512`] does
/// with 16.
///
/// # Safety
/// The CPU must have AVX2 (as a `SimdLevel` of [`Isa::Avx2`] or wider shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn transpose8_out_avx2(
    m: &[[f32; 8]; 8],
    rows: &mut [&mut [f32]],
    at: usize,
    sum: Option<&mut [f32; 8]>,
    first: bool,
) {
    use std::arch::x86_64::*;
    let r: [__m256; 8] = core::array::from_fn(|t| _mm256_loadu_ps(m[t].as_ptr()));
    let w = transpose8_regs(r);
    for (row, v) in rows.iter_mut().zip(w) {
        _mm256_storeu_ps(row[at..at + 8].as_mut_ptr(), v);
    }
    if let Some(acc) = sum {
        let mut a = if first {
            w[0]
        } else {
            _mm256_loadu_ps(acc.as_ptr())
        };
        for (l, v) in w.into_iter().enumerate() {
            if l > 0 || !first {
                a = _mm256_add_ps(a, v);
            }
        }
        _mm256_storeu_ps(acc.as_mut_ptr(), a);
    }
}

/// Eight f64 lanes as two AVX2 vectors (lanes 0–3 and 4–7): the
/// coefficients and state of 8 biquads side by side.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Lanes8([std::arch::x86_64::__m256d; 2]);

#[cfg(target_arch = "x86_64")]
impl Lanes8 {
    pub(crate) const ZERO: Lanes8 =
        // SAFETY: eight f64 zeros are two vectors of four f64 zeros.
        Lanes8(unsafe {
            std::mem::transmute::<[f64; 8], [std::arch::x86_64::__m256d; 2]>([0.0; 8])
        });

    /// The 8 values of `x` (its length must be 8).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) unsafe fn load(x: &[f64]) -> Lanes8 {
        use std::arch::x86_64::*;
        assert_eq!(x.len(), 8);
        let p = x.as_ptr();
        Lanes8([_mm256_loadu_pd(p), _mm256_loadu_pd(p.add(4))])
    }

    /// Writes the 8 lanes to `x` (its length must be 8).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(crate) unsafe fn store(self, x: &mut [f64]) {
        use std::arch::x86_64::*;
        assert_eq!(x.len(), 8);
        let p = x.as_mut_ptr();
        _mm256_storeu_pd(p, self.0[0]);
        _mm256_storeu_pd(p.add(4), self.0[1]);
    }
}

/// [`biquad_step16_avx512`] on 8 biquads with AVX2: the same operations
/// in the same order in each lane, so the same bits.
///
/// # Safety
/// The CPU must have AVX2 and FMA (as a `SimdLevel` of [`Isa::Avx2`] or
/// wider shows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn biquad_step8_avx2<const FUSED: bool>(
    short: bool,
    c: &[Lanes8; 5],
    z1: &mut Lanes8,
    z2: &mut Lanes8,
    row: &mut [f32; 8],
) {
    use std::arch::x86_64::*;
    let p = row.as_mut_ptr();
    let mut y = [
        _mm256_cvtps_pd(_mm_loadu_ps(p)),
        _mm256_cvtps_pd(_mm_loadu_ps(p.add(4))),
    ];
    for (h, yh) in y.iter_mut().enumerate() {
        let x = *yh;
        let [b0, b1, b2, a1, a2] = [c[0].0[h], c[1].0[h], c[2].0[h], c[3].0[h], c[4].0[h]];
        let (s1, s2) = (z1.0[h], z2.0[h]);
        let out = if FUSED {
            let out = _mm256_fmadd_pd(b0, x, s1);
            z1.0[h] = _mm256_fnmadd_pd(a1, out, _mm256_fmadd_pd(b1, x, s2));
            z2.0[h] = _mm256_fnmadd_pd(a2, out, _mm256_mul_pd(b2, x));
            out
        } else {
            let out = _mm256_add_pd(_mm256_mul_pd(b0, x), s1);
            let (b1x, a1y) = (_mm256_mul_pd(b1, x), _mm256_mul_pd(a1, out));
            z1.0[h] = if short {
                _mm256_sub_pd(_mm256_add_pd(b1x, s2), a1y)
            } else {
                _mm256_add_pd(_mm256_sub_pd(b1x, a1y), s2)
            };
            z2.0[h] = _mm256_sub_pd(_mm256_mul_pd(b2, x), _mm256_mul_pd(a2, out));
            out
        };
        *yh = out;
    }
    _mm_storeu_ps(p, _mm256_cvtpd_ps(y[0]));
    _mm_storeu_ps(p.add(4), _mm256_cvtpd_ps(y[1]));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `f` compiled with AVX2 where `level` has it (a plain loop inside it
/// vectorises eight f32 or four f64 wide), else as the build's target.
/// Only the instructions differ: Rust never contracts `a * b + c`, so the
/// values are the same at every level. For the passes around the nodes
/// (conversions, copies, checks); kernels with explicit intrinsics
/// dispatch on [`SimdLevel::isa`] themselves. Give it an
/// `#[inline(always)]` closure: one not inlined into the AVX2 function is
/// compiled for the build's target, as if called without it.
#[inline(always)]
pub(crate) fn at_level<R>(level: SimdLevel, f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if level.has_avx2() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        return unsafe { avx2(f) };
    }
    let _ = level;
    f()
}

/// [`all_finite`] with the instruction set of `level`: the same answer.
#[inline]
pub(crate) fn all_finite_at<S: Sample>(level: SimdLevel, x: &[S]) -> bool {
    at_level(
        level,
        #[inline(always)]
        || all_finite(x),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_isa_variable_names_a_cap_in_any_case_and_refuses_what_it_does_not_know() {
        assert_eq!(parse_cap(None), Ok(None));
        assert_eq!(parse_cap(Some("")), Ok(None));
        assert_eq!(parse_cap(Some("  ")), Ok(None));
        assert_eq!(parse_cap(Some("base")), Ok(Some(Isa::Base)));
        assert_eq!(parse_cap(Some("AVX2")), Ok(Some(Isa::Avx2)));
        assert_eq!(parse_cap(Some(" avx512 ")), Ok(Some(Isa::Avx512)));
        for bad in ["avx", "sse2", "x86-64-v3", "avx-512"] {
            let e = parse_cap(Some(bad)).unwrap_err();
            assert!(
                e.contains(ISA_VAR) && e.contains(bad) && e.contains("base, avx2 or avx512"),
                "{e}"
            );
        }
        let names: Vec<&str> = [Isa::Base, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .map(|i| SimdLevel(i).name())
            .collect();
        for name in names {
            assert_eq!(
                parse_cap(Some(name)).map(|c| c.map(|i| SimdLevel(i).name())),
                Ok(Some(name))
            );
        }
    }

    /// The fast sine against libm's sin over 2^20 phases spread over the
    /// cycle, including the fold points: within the 1e-4 live's fast math
    /// allows, and within the polynomial's own 4e-6.
    #[test]
    fn sin_turns_within_documented_error_of_libm() {
        let mut worst = 0.0f64;
        let mut check = |t: f32| {
            let want = libm::sin(TAU * t as f64);
            worst = worst.max((sin_turns(t) as f64 - want).abs());
        };
        for i in 0..(1u32 << 20) {
            check(i as f32 / (1u32 << 20) as f32);
        }
        for t in [0.0f32, 0.25, 0.5, 0.75, 1.0 - 1.0 / 16777216.0] {
            check(t);
            check((t - 1.0 / 16777216.0).max(0.0));
        }
        assert!(worst <= 4e-6, "worst error {worst}");
    }

    #[test]
    fn phase_turns_is_the_f32_phase_mapping() {
        let mut p = 0x0123_4567_89ab_cdefu64;
        for _ in 0..100_000 {
            p = rand_philox::splitmix64(p);
            assert_eq!(phase_turns(p), <f32 as Sample>::from_phase(p));
        }
        assert_eq!(phase_turns(u64::MAX), <f32 as Sample>::from_phase(u64::MAX));
    }

    #[test]
    fn turns_to_phase_wraps_whole_cycles() {
        assert_eq!(turns_to_phase(0.0), 0);
        assert_eq!(turns_to_phase(0.25), 1 << 62);
        assert_eq!(turns_to_phase(3.5), 1 << 63);
        assert_eq!(turns_to_phase(-0.25), 3 << 62);
        assert_eq!(turns_to_phase(f64::NAN), 0);
    }

    /// sin(2π·(phase + offset)) for a u64 phase, the oracle of the tests
    /// below: libm's sin of the exact phase (reduced exactly in u64, then
    /// to [−½, ½) of a cycle so its rounding to f64 is below 1e-16).
    fn exact_sin(phase: u64) -> f64 {
        libm::sin(TAU * ((phase as i64) as f64 / 18446744073709551616.0))
    }

    fn exact_cos(phase: u64) -> f64 {
        libm::cos(TAU * ((phase as i64) as f64 / 18446744073709551616.0))
    }

    #[test]
    fn the_compile_time_cis_is_libm_to_1e_15() {
        for k in 0..=512 {
            let x = k as f64 * (TAU / 512.0);
            let (c, s) = cis_f64(x);
            assert!((c - libm::cos(x)).abs() <= 1e-15, "cos {x}");
            assert!((s - libm::sin(x)).abs() <= 1e-15, "sin {x}");
        }
    }

    /// turn_cis against libm at random phases, at both ends of every coarse
    /// step, and at the quarter turns: each component within 4e-7.
    #[test]
    fn turn_cis_within_its_error_of_libm() {
        let mut worst = 0.0f64;
        let mut check = |p: u64| {
            let (c, s) = turn_cis(p);
            worst = worst
                .max((c as f64 - exact_cos(p)).abs())
                .max((s as f64 - exact_sin(p)).abs());
        };
        let mut z = 17u64;
        for _ in 0..2_000_000 {
            z = rand_philox::splitmix64(z);
            check(z);
        }
        for k in 0..256u64 {
            for d in [0u64, 1, 1 << 32, (1 << 56) - (1 << 32), (1 << 56) - 1] {
                check((k << 56).wrapping_add(d));
            }
        }
        eprintln!("turn_cis: worst error {worst:e}");
        assert!(worst <= 4e-7, "worst error {worst:e}");
    }

    /// The grid of anchors moves by one sample per sample, from the phase
    /// alone: position(phase + inc) = position(phase) + 1 mod 64 (mod the
    /// period, when it divides 64).
    #[test]
    fn the_anchor_grid_counts_samples() {
        let mut z = 3u64;
        let mut incs = vec![
            0u64,
            1,
            u64::MAX,
            1 << 63,
            1 << 62,
            3 << 59,
            1 << 58,
            5 << 57,
        ];
        for _ in 0..200 {
            z = rand_philox::splitmix64(z);
            incs.push(z >> (z % 64));
        }
        for inc in incs {
            let steps = SineSteps::new(inc);
            let period = if inc == 0 {
                1
            } else if inc.trailing_zeros() > 58 {
                1 << (64 - inc.trailing_zeros())
            } else {
                64
            };
            z = rand_philox::splitmix64(z);
            let mut p = z;
            let mut r = steps.position(p);
            for _ in 0..300 {
                p = p.wrapping_add(inc);
                let next = steps.position(p);
                assert_eq!(next % period, (r + 1) % 64 % period, "inc {inc:#x}");
                r = next;
            }
        }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Random increments (some with many trailing zeros: periods that
    /// divide 64), phases, offsets and lengths (to 4096, remainders
    /// included): the same bits at every level this CPU has, and the same
    /// bits rendered in one call or split into calls anywhere.
    #[test]
    fn sine_block_same_bits_at_every_level_and_any_split() {
        let mut z = 5u64;
        let mut steps = SineSteps::default();
        for case in 0..300 {
            z = rand_philox::splitmix64(z);
            let inc = match case % 5 {
                0 => z >> (z % 64),
                1 => z & !((1 << 59) - 1),
                _ => z,
            };
            steps.set(inc);
            z = rand_philox::splitmix64(z);
            let (phase, offset) = (
                z,
                rand_philox::splitmix64(z) & ((case % 2) as u64).wrapping_neg(),
            );
            let len = if case % 7 == 0 {
                4096
            } else {
                (z >> 40) as usize % 300
            };
            let mut want = vec![f32::NAN; len];
            sine_block(SimdLevel::BASE, &steps, phase, offset, 0.5, &mut want);
            for level in SimdLevel::available() {
                let mut got = vec![f32::NAN; len];
                sine_block(level, &steps, phase, offset, 0.5, &mut got);
                assert_eq!(bits(&got), bits(&want), "len {len}, {level:?}");
                let mut done = 0;
                while done < len {
                    z = rand_philox::splitmix64(z);
                    let n = (1 + (z % 150) as usize).min(len - done);
                    let p = phase.wrapping_add(inc.wrapping_mul(done as u64));
                    sine_block(level, &steps, p, offset, 0.5, &mut got[done..done + n]);
                    done += n;
                }
                assert_eq!(bits(&got), bits(&want), "split, len {len}, {level:?}");
            }
        }
    }

    /// The kernel over 10 s at 48 kHz (blocks of 64 to 4096) at rates from
    /// near 0 to Nyquist, both signs, with and without an offset, against
    /// libm's sin of the exact u64 phase: worst error ≤ 1e-6 (live allows
    /// 1e-4), with nothing carried from block to block or sample to sample.
    #[test]
    fn sine_block_within_1e_6_of_the_exact_phase_over_10_s() {
        const SR: f64 = 48000.0;
        let frames = 480_000usize;
        let blocks = [64usize, 4096, 1, 7, 300, 64, 4096, 129];
        let mut out = vec![0.0f32; 4096];
        let mut worst_all = 0.0f64;
        for hz in [
            0.0, 0.001, 0.37, 100.0, 440.0, 1000.0, 1500.0, 12000.0, 17_000.25, 23_999.9, 24_000.0,
            -0.001, -440.5, -23_999.0,
        ] {
            let inc = {
                let c = hz / SR;
                ((c - libm::floor(c)) * 18446744073709551616.0) as u64
            };
            let steps = SineSteps::new(inc);
            for (phase0, offset) in [(0u64, 0u64), (0x9e37_79b9_7f4a_7c15, 3 << 61)] {
                let (mut phase, mut done, mut worst) = (phase0, 0usize, 0.0f64);
                for &b in blocks.iter().cycle() {
                    let n = b.min(frames - done);
                    sine_block(
                        SimdLevel::detect(),
                        &steps,
                        phase,
                        offset,
                        1.0,
                        &mut out[..n],
                    );
                    for (k, y) in out[..n].iter().enumerate() {
                        let p = phase.wrapping_add(inc.wrapping_mul(k as u64));
                        worst = worst.max((*y as f64 - exact_sin(p.wrapping_add(offset))).abs());
                    }
                    phase = phase.wrapping_add(inc.wrapping_mul(n as u64));
                    done += n;
                    if done == frames {
                        break;
                    }
                }
                eprintln!("sine_block {hz} Hz, offset {offset:#x}: worst error {worst:e}");
                worst_all = worst_all.max(worst);
            }
        }
        assert!(worst_all <= 1e-6, "worst error {worst_all:e}");
    }

    /// The kernel this one replaced (a polynomial per sample), kept here
    /// only for [`sine_kernel_ns_per_sample`].
    #[inline(always)]
    fn poly_block_lanes(phase: u64, inc: u64, amp: f32, out: &mut [f32]) {
        let (h0, l0) = ((phase >> 32) as u32, phase as u32 as u64);
        let (hi, li) = ((inc >> 32) as u32, inc as u32 as u64);
        for (i, o) in out.iter_mut().enumerate() {
            let k = i as u32;
            let carry = ((l0 + k as u64 * li) >> 32) as u32;
            let top = h0.wrapping_add(k.wrapping_mul(hi)).wrapping_add(carry);
            let t = ((top >> 8) as i32) as f32 * (1.0 / 16777216.0);
            *o = amp * sin_turns(t);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn poly_block_avx2(phase: u64, inc: u64, amp: f32, out: &mut [f32]) {
        poly_block_lanes(phase, inc, amp, out)
    }

    fn poly_block(level: SimdLevel, phase: u64, inc: u64, amp: f32, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if level.has_avx2() {
            // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
            return unsafe { poly_block_avx2(phase, inc, amp, out) };
        }
        poly_block_lanes(phase, inc, amp, out)
    }

    /// ns per sample of the per-sample polynomial (A, its AVX2 loop) and of
    /// this kernel (B) at each level, 256 oscillators at W1's frequencies
    /// in blocks of 64 (on the grid from phase 0) and of 63 (off it), A and
    /// B interleaved 40 times, the best of each (the machine may be shared).
    /// `cargo test --release --lib sine_kernel_ns_per_sample -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn sine_kernel_ns_per_sample() {
        use std::hint::black_box;
        use std::time::Instant;
        const N_OSC: usize = 256;
        let top = SimdLevel::detect();
        let incs: Vec<u64> = (0..N_OSC)
            .map(|i| ((100.0 + 7.3 * i as f64) / 48000.0 * 18446744073709551616.0) as u64)
            .collect();
        let steps: Vec<SineSteps> = incs.iter().map(|&i| SineSteps::new(i)).collect();
        let mut out = vec![0.0f32; N_OSC * 64];
        // None: the polynomial; Some(level): this kernel at that level.
        let mut kernels = vec![None];
        kernels.extend(SimdLevel::available().skip(1).map(Some));
        for block in [64usize, 63] {
            let rounds = 2_000_000 / (N_OSC * block);
            let mut phases = vec![0u64; N_OSC];
            let mut best = vec![f64::INFINITY; kernels.len()];
            for _round in 0..40 {
                for (k, b) in kernels.iter().zip(best.iter_mut()) {
                    let t0 = Instant::now();
                    for _ in 0..rounds {
                        for (o, ((p, &inc), st)) in
                            phases.iter_mut().zip(&incs).zip(&steps).enumerate()
                        {
                            let y = &mut out[o * 64..o * 64 + block];
                            match k {
                                None => poly_block(top, *p, inc, 0.004, y),
                                Some(level) => sine_block(*level, st, *p, 0, 0.004, y),
                            }
                            *p = p.wrapping_add(inc.wrapping_mul(block as u64));
                        }
                        black_box(&mut out);
                    }
                    let samples = (rounds * N_OSC * block) as f64;
                    *b = b.min(t0.elapsed().as_secs_f64() * 1e9 / samples);
                }
            }
            for (k, b) in kernels.iter().zip(&best) {
                eprintln!(
                    "blocks of {block}: {:<22} {b:.3} ns/sample, {:.2}x the polynomial's speed",
                    match k {
                        None => "polynomial (Avx2)".to_string(),
                        Some(l) => format!("anchors+steps ({l:?})"),
                    },
                    best[0] / b
                );
            }
        }
    }

    /// The AVX-512 transpose is the transpose, whatever the values.
    #[test]
    fn transpose16_is_the_transpose() {
        if SimdLevel::detect().isa() != Isa::Avx512 {
            return;
        }
        let mut m = [[0f32; 16]; 16];
        for (i, row) in m.iter_mut().enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = (i * 16 + j) as f32 + 0.5;
            }
        }
        m[3][7] = f32::NAN;
        let want: Vec<u32> = (0..256).map(|k| m[k % 16][k / 16].to_bits()).collect();
        // SAFETY: detect saw AVX-512F.
        unsafe { transpose16_avx512(&mut m) };
        let got: Vec<u32> = m.iter().flatten().map(|x| x.to_bits()).collect();
        assert_eq!(got, want);
    }

    /// `run(fused, short, c, rows)`, a vector step of `W` biquads from zero
    /// state over `rows` (returning the rows out and the state left), in
    /// its three orders (fused, live's reassociated, strict's), against
    /// each lane's recursion written out in scalar f64: the same bits over
    /// 300 frames of random samples and `W` different filters.
    #[allow(clippy::disallowed_methods)] // the fused oracle
    #[allow(clippy::needless_range_loop)] // lane l of five coefficient rows
    fn biquad_step_runs_each_lanes_own_recursion<const W: usize>(
        run: impl Fn(bool, bool, &[[f64; W]; 5], &mut [[f32; W]]) -> ([f64; W], [f64; W]),
    ) {
        let mut r = 7u64;
        let mut uniform = move || {
            r = r
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        // Stable poles of radius < 1: a1 = −2ρcos θ, a2 = ρ².
        let mut c = [[0f64; W]; 5];
        for l in 0..W {
            let (rho, theta) = (0.5 + 0.499 * uniform().abs(), 3.0 * uniform().abs());
            c[0][l] = uniform();
            c[1][l] = uniform();
            c[2][l] = uniform();
            c[3][l] = -2.0 * rho * libm::cos(theta);
            c[4][l] = rho * rho;
        }
        for (fused, short) in [(true, false), (false, true), (false, false)] {
            let mut rows = vec![[0f32; W]; 300];
            rows.iter_mut()
                .flatten()
                .for_each(|x| *x = uniform() as f32);
            let mut want = rows.clone();
            let mut z = [[0f64; 2]; W];
            for row in want.iter_mut() {
                for (l, w) in row.iter_mut().enumerate() {
                    let x = *w as f64;
                    let [b0, b1, b2, a1, a2] = [c[0][l], c[1][l], c[2][l], c[3][l], c[4][l]];
                    let [z1, z2] = &mut z[l];
                    let y;
                    if fused {
                        y = b0.mul_add(x, *z1);
                        *z1 = (-a1).mul_add(y, b1.mul_add(x, *z2));
                        *z2 = (-a2).mul_add(y, b2 * x);
                    } else {
                        y = b0 * x + *z1;
                        *z1 = if short {
                            (b1 * x + *z2) - a1 * y
                        } else {
                            b1 * x - a1 * y + *z2
                        };
                        *z2 = b2 * x - a2 * y;
                    }
                    *w = y as f32;
                }
            }
            let (z1, z2) = run(fused, short, &c, &mut rows);
            let bits = |v: &[[f32; W]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&rows), bits(&want), "fused {fused}, short {short}");
            for l in 0..W {
                assert_eq!(z1[l].to_bits(), z[l][0].to_bits());
                assert_eq!(z2[l].to_bits(), z[l][1].to_bits());
            }
        }
    }

    #[test]
    fn the_avx512_biquad_step_runs_each_lanes_own_recursion_bit_for_bit() {
        if SimdLevel::detect().isa() != Isa::Avx512 {
            return;
        }
        biquad_step_runs_each_lanes_own_recursion::<16>(|fused, short, c, rows| {
            // SAFETY (each call): detect saw AVX-512F.
            let cs = unsafe { c.map(|v| Lanes16::load(&v)) };
            let (mut s1, mut s2) = (Lanes16::ZERO, Lanes16::ZERO);
            for row in rows.iter_mut() {
                unsafe {
                    if fused {
                        biquad_step16_avx512::<true>(short, &cs, &mut s1, &mut s2, row);
                    } else {
                        biquad_step16_avx512::<false>(short, &cs, &mut s1, &mut s2, row);
                    }
                }
            }
            let (mut z1, mut z2) = ([0f64; 16], [0f64; 16]);
            unsafe {
                s1.store(&mut z1);
                s2.store(&mut z2);
            }
            (z1, z2)
        });
    }

    #[test]
    fn the_avx2_biquad_step_runs_each_lanes_own_recursion_bit_for_bit() {
        if !SimdLevel::detect().has_fma() {
            return;
        }
        biquad_step_runs_each_lanes_own_recursion::<8>(|fused, short, c, rows| {
            // SAFETY (each call): the level has AVX2 and FMA.
            let cs = unsafe { c.map(|v| Lanes8::load(&v)) };
            let (mut s1, mut s2) = (Lanes8::ZERO, Lanes8::ZERO);
            for row in rows.iter_mut() {
                unsafe {
                    if fused {
                        biquad_step8_avx2::<true>(short, &cs, &mut s1, &mut s2, row);
                    } else {
                        biquad_step8_avx2::<false>(short, &cs, &mut s1, &mut s2, row);
                    }
                }
            }
            let (mut z1, mut z2) = ([0f64; 8], [0f64; 8]);
            unsafe {
                s1.store(&mut z1);
                s2.store(&mut z2);
            }
            (z1, z2)
        });
    }

    /// The AVX2 transposes in and out (with and without a sum, first or
    /// not) move each value to its place, NaN and all, and the sum adds
    /// the rows in order.
    #[test]
    fn the_avx2_transposes_in_and_out_are_the_transpose() {
        if !SimdLevel::detect().has_avx2() {
            return;
        }
        let src: Vec<Vec<f32>> = (0..8)
            .map(|l| (0..19).map(|t| (l * 100 + t) as f32 + 0.25).collect())
            .collect();
        let mut src = src;
        src[5][9] = f32::NAN;
        let rows: Vec<&[f32]> = src.iter().map(|r| r.as_slice()).collect();
        let mut m = [[0f32; 8]; 8];
        // SAFETY: the level has AVX2; every row is at least 3 + 8 long.
        unsafe { transpose8_in_avx2(&rows, 3, &mut m) };
        for (t, row) in m.iter().enumerate() {
            for (l, x) in row.iter().enumerate() {
                assert_eq!(
                    x.to_bits(),
                    src[l][3 + t].to_bits(),
                    "in: frame {t}, row {l}"
                );
            }
        }
        for (first, start) in [(true, f32::NAN), (false, 0.5)] {
            let mut out = vec![vec![0f32; 12]; 8];
            let mut acc = [start; 8];
            let mut outs: Vec<&mut [f32]> = out.iter_mut().map(|r| r.as_mut_slice()).collect();
            // SAFETY: as above; every output is at least 4 + 8 long.
            unsafe { transpose8_out_avx2(&m, &mut outs, 4, Some(&mut acc), first) };
            for l in 0..8 {
                assert_eq!(out[l][..4], [0.0; 4]);
                for t in 0..8 {
                    assert_eq!(out[l][4 + t].to_bits(), m[t][l].to_bits(), "out: {l}, {t}");
                }
            }
            for t in 0..8 {
                let mut want = if first { m[t][0] } else { start + m[t][0] };
                for x in &m[t][1..] {
                    want += x;
                }
                assert_eq!(
                    acc[t].to_bits(),
                    want.to_bits(),
                    "sum, first {first}: frame {t}"
                );
            }
        }
    }

    /// The instructions each level needs, written out here (an oracle apart
    /// from `Features::top`).
    fn needs(isa: Isa) -> Features {
        let (avx2, avx512) = (isa >= Isa::Avx2, isa == Isa::Avx512);
        Features {
            avx2,
            fma: avx2,
            avx512f: avx512,
            avx512dq: avx512,
        }
    }

    /// Whatever is asked for, on any CPU (every combination of the four
    /// features injected): the level given is one whose instructions the
    /// CPU has, the one asked for if the CPU has it, else the widest it has.
    #[test]
    fn a_level_above_the_cpus_is_clamped_to_what_it_runs() {
        let all = [Isa::Base, Isa::Avx2, Isa::Avx512];
        for bits in 0..16u8 {
            let cpu = Features {
                avx2: bits & 1 != 0,
                avx512f: bits & 2 != 0,
                avx512dq: bits & 4 != 0,
                fma: bits & 8 != 0,
            };
            let runs = |isa: Isa| {
                let need = needs(isa);
                (!need.avx2 || cpu.avx2)
                    && (!need.fma || cpu.fma)
                    && (!need.avx512f || cpu.avx512f)
                    && (!need.avx512dq || cpu.avx512dq)
            };
            let widest = all.into_iter().filter(|i| runs(*i)).max().unwrap();
            for requested in all {
                let got = SimdLevel::at_most_with(requested, cpu).isa();
                let want = if runs(requested) { requested } else { widest };
                assert_eq!(got, want, "{requested:?} asked of {cpu:?}");
                assert!(runs(got), "{got:?} given to {cpu:?}");
            }
        }
        // This CPU: `at_most` of the widest is `detect`, and every level
        // `available` lists is one `at_most` gives back unchanged.
        assert_eq!(SimdLevel::at_most(Isa::Avx512), SimdLevel::detect());
        for level in SimdLevel::available() {
            assert_eq!(SimdLevel::at_most(level.isa()), level);
        }
        assert_eq!(SimdLevel::at_most(Isa::Base), SimdLevel::BASE);
    }

    /// Up to 64 members with random increments, phases on the grid,
    /// offsets and amps, each level this CPU has, written one buffer per
    /// member and summed into one: the same bits as `sine_block` at the
    /// base level, member by member (and added in member order).
    #[test]
    fn sine_group_same_bits_as_sine_block_at_every_level() {
        let mut z = 17u64;
        for case in 0..40 {
            let count = 1 + case % 64;
            let n = [64usize, 128, 200, 1, 63, 4096][case % 6];
            let mut steps = Vec::new();
            let mut members = Vec::new();
            for _ in 0..count {
                z = rand_philox::splitmix64(z);
                let inc = if z.is_multiple_of(3) {
                    z >> (z % 64)
                } else {
                    z
                };
                steps.push(SineSteps::new(inc));
            }
            for st in &steps {
                z = rand_philox::splitmix64(z);
                let phase = z.wrapping_sub(st.inc.wrapping_mul(st.position(z) as u64));
                let offset = rand_philox::splitmix64(z) & ((case % 2) as u64).wrapping_neg();
                let amp = 0.001 + (z >> 40) as f32 / (1u64 << 24) as f32;
                members.push(SineMember {
                    steps: st,
                    phase,
                    offset,
                    amp,
                });
            }
            let mut want = vec![vec![f32::NAN; n]; count];
            let mut want_sum = vec![f32::NAN; n];
            for (k, m) in members.iter().enumerate() {
                sine_block(
                    SimdLevel::BASE,
                    m.steps,
                    m.phase,
                    m.offset,
                    m.amp,
                    &mut want[k],
                );
                if k == 0 {
                    want_sum.copy_from_slice(&want[0]);
                } else {
                    for (s, x) in want_sum.iter_mut().zip(&want[k]) {
                        *s += *x;
                    }
                }
            }
            for level in SimdLevel::available() {
                let mut got = vec![vec![f32::NAN; n]; count];
                let mut outs: Vec<&mut [f32]> = got.iter_mut().map(|v| &mut v[..]).collect();
                sine_group(level, &members, n, SineOut::Each(&mut outs));
                for k in 0..count {
                    assert_eq!(bits(&got[k]), bits(&want[k]), "{level:?}, member {k}");
                }
                let mut sum = vec![f32::NAN; n];
                sine_group(level, &members, n, SineOut::Sum(&mut sum, true));
                assert_eq!(bits(&sum), bits(&want_sum), "{level:?}, summed");
            }
        }
    }

    #[test]
    fn all_finite_finds_any_nan_or_infinity() {
        let mut x = vec![0.5f32; 99];
        x[3] = f32::MAX;
        x[4] = -f32::MAX;
        x[5] = f32::MIN_POSITIVE / 2.0;
        assert!(all_finite(&x));
        for level in SimdLevel::available() {
            assert!(all_finite_at(level, &x), "{level:?}");
        }
        for (i, bad) in [
            (0, f32::NAN),
            (66, f32::INFINITY),
            (31, f32::NEG_INFINITY),
            (64, -f32::NAN),
            (98, f32::NAN),
            (95, f32::INFINITY),
        ] {
            x[i] = bad;
            assert!(!all_finite(&x), "{bad} at {i}");
            for level in SimdLevel::available() {
                assert!(!all_finite_at(level, &x), "{bad} at {i}, {level:?}");
            }
            x[i] = 0.5;
        }
    }
}
