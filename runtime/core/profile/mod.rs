//! Execution profiles and what each one means.
//!
//! **Resolution.** The session profile is `--profile`, else the scene's
//! top-level `profile`, else repro (in `run` the keys s/r/l change it while
//! playing). A module's `profile` and a node's `profile_overrides` pin
//! nodes and win over it: node > module > scene > the profile's defaults
//! (`Overrides::over`). The block size is `--block-size`, else the
//! scene's `profile_config.block_size`, else the session profile's default,
//! fixed for the session; `--seed` replaces the scene's `seed`. A node's
//! *guarantee* is the weakest profile among itself and everything upstream
//! of it.
//!
//! | setting | strict | repro | live |
//! |---|---|---|---|
//! | guarantee | bit-exact across runs, builds, opt levels, block sizes | same build and CPU feature level → same bits | same inputs, seed and edit journal → same bits on the same build and CPU level |
//! | default precision | f64 | f32 | f32 |
//! | flush-to-zero / DAZ | off (IEEE denormals) | on | on |
//! | FMA | never | allowed | allowed |
//! | math (`MathKind`) | the pinned `libm`; `+ − × ÷ sqrt` | `std` | fast approximations (error ≤ 1e-4) on the signal path, never on coefficients |
//! | FFT provider, norm ([`FftProvider`], [`FftNorm`]) | the reference FFT, `ortho` | rustfft, `ortho` | rustfft, `backward` |
//! | FFT accuracy (rel. L2 vs an f64 naive DFT) | reproducible bit for bit; ≤ 1e-12 | ≤ 1e-6 (f32), 1e-12 (f64) | ≤ 1e-4 |
//! | noise seed (when a node draws noise) | required | required | taken from the clock if none, printed and journaled |
//! | default block size | 64 | 128 | 64 (`calibrate` chooses among 32 … 256) |
//! | oversampling (nonlinear ops) | 1× unless the node sets it | 2× | 1× unless the node is `critical` (then 2×) |
//! | iterative solvers | always `max_iterations` (default 32) | stop at 1e-6 | stop at 1e-4 |
//! | implicit precision casts (`CastRule`) | none: a `cast` node is required | f32 → f64 only | all; narrowing ones warned |
//! | a unit of the wrong dimension | error | error | warning |
//! | events ([`EventTiming`]) | sample-accurate | sample-accurate | block-accurate |
//! | an event between samples (`OffGrid`) | error | snapped to the nearest sample | applied at its block |
//! | parity bound vs strict (relative RMS) | — (the golden's hash) | 1e-3 | 3e-2 |
//!
//! **Events.** Sample-accurate: the param changes at exactly sample n.
//! Block-accurate: at floor(n/B)·B on the absolute sample clock.
//!
//! **Strict arithmetic.** Only `+ − × ÷ sqrt` and the pinned `libm`: no
//! `std` transcendentals, `powi` or `mul_add` (clippy's
//! `disallowed_methods` in `clippy.toml` bans them outside `dsp::math`).
//! Every sum has a fixed order that does not depend on the block size. An
//! operator declares its tier, the strongest profile it can honour; under
//! strict a node whose operator (or FFT provider) cannot be bit-exact is an
//! error.
//!
//! **FP mode** (flush-to-zero / DAZ) is per thread: one guard around every
//! engine block sets the session's mode and restores the caller's
//! ([`crate::dsp::fpmode`]); nodes pinned to another mode run in groups of
//! equal mode, switched between.
//!
//! **Parity.** repro and live are compared with strict as relative RMS
//! error, latency-aligned, excluding one block plus any ramp around each
//! event or switch (`bench/parity.rs` measures it), within the bound the
//! scene's golden records ([`Profile::default_parity_bound`] unless the
//! scene tightens or loosens it).

use crate::dsp::fft::{FftNorm, FftProvider};
use crate::dsp::{MathKind, Precision};

/// The largest block size a session may run at, wherever the size comes
/// from (`--block-size`, `profile_config.block_size`, a snapshot file): every
/// buffer of a plan is allocated at the block size, so this bounds memory.
/// The scene loader and the compiler both check against this one value.
pub const MAX_BLOCK_SIZE: usize = 8192;

/// An execution profile. Ordered by strength: `Live < Repro < Strict`, so the
/// weakest of several profiles is their `min`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Lowest latency: f32, fast approximations, block-accurate events.
    Live,
    /// Deterministic f32: the same bits on the same build and CPU feature level.
    Repro,
    /// Bit-exact f64 across runs, builds, opt levels and block sizes.
    Strict,
}

/// How an event's time maps onto the sample clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventTiming {
    /// The param changes at exactly the event's sample.
    SampleAccurate,
    /// The change takes effect at the start of the block holding the event.
    BlockAccurate,
}

/// What happens to an event time that is not a whole number of samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OffGrid {
    Error,
    SnapNearest,
    AtBlock,
}

/// Which precision changes may happen without an explicit `cast` node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CastRule {
    /// None: every precision change needs a `cast` node.
    ExplicitOnly,
    /// f32 → f64 is implicit (exact); f64 → f32 needs a `cast` node.
    WidenOnly,
    /// All implicit; narrowing ones are warned.
    All,
}

impl Profile {
    /// Every profile, strongest first.
    pub const ALL: [Profile; 3] = [Profile::Strict, Profile::Repro, Profile::Live];

    /// The name scenes and the command line use (`strict`, `repro`, `live`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::Repro => "repro",
            Profile::Live => "live",
        }
    }

    /// The profile of a name from [`Profile::name`], if it is one.
    pub fn parse(s: &str) -> Option<Profile> {
        match s {
            "strict" => Some(Profile::Strict),
            "repro" => Some(Profile::Repro),
            "live" => Some(Profile::Live),
            _ => None,
        }
    }

    /// [`Profile::parse`] with the error a command line shows (`--profile`).
    pub fn parse_arg(s: &str) -> Result<Profile, String> {
        Profile::parse(s)
            .ok_or_else(|| format!("`{s}` is not a profile (valid: strict, repro, live)"))
    }

    pub(crate) fn default_precision(self) -> Precision {
        match self {
            Profile::Strict => Precision::F64,
            Profile::Repro | Profile::Live => Precision::F32,
        }
    }

    pub(crate) fn math(self) -> MathKind {
        match self {
            Profile::Strict => MathKind::Strict,
            Profile::Repro => MathKind::Std,
            Profile::Live => MathKind::Fast,
        }
    }

    /// Flush-to-zero / denormals-are-zero.
    pub(crate) fn flush_to_zero(self) -> bool {
        !matches!(self, Profile::Strict)
    }

    pub(crate) fn default_block_size(self) -> usize {
        match self {
            Profile::Strict | Profile::Live => 64,
            Profile::Repro => 128,
        }
    }

    /// Whether events land on their sample or at the start of their block.
    pub fn event_timing(self) -> EventTiming {
        match self {
            Profile::Strict | Profile::Repro => EventTiming::SampleAccurate,
            Profile::Live => EventTiming::BlockAccurate,
        }
    }

    pub(crate) fn off_grid(self) -> OffGrid {
        match self {
            Profile::Strict => OffGrid::Error,
            Profile::Repro => OffGrid::SnapNearest,
            Profile::Live => OffGrid::AtBlock,
        }
    }

    pub(crate) fn cast_rule(self) -> CastRule {
        match self {
            Profile::Strict => CastRule::ExplicitOnly,
            Profile::Repro => CastRule::WidenOnly,
            Profile::Live => CastRule::All,
        }
    }

    /// Whether a param unit of the wrong dimension is an error (else a warning).
    pub(crate) fn unit_errors(self) -> bool {
        !matches!(self, Profile::Live)
    }

    /// Whether randomness needs an explicit seed (live auto-seeds).
    pub(crate) fn requires_seed(self) -> bool {
        !matches!(self, Profile::Live)
    }

    /// The default relative-RMS parity bound against strict.
    pub fn default_parity_bound(self) -> f64 {
        match self {
            Profile::Strict => 0.0,
            Profile::Repro => 1e-3,
            Profile::Live => 3e-2,
        }
    }

    /// Iterative solvers: default max iterations and tolerance (strict runs
    /// every iteration; tolerance `None` means no early exit).
    pub(crate) fn solver_tolerance(self) -> Option<f64> {
        match self {
            Profile::Strict => None,
            Profile::Repro => Some(1e-6),
            Profile::Live => Some(1e-4),
        }
    }

    /// What the profile guarantees, in one line (for `check`).
    pub(crate) fn guarantee_text(self) -> &'static str {
        match self {
            Profile::Strict => "bit-exact across runs, builds, opt levels, block sizes",
            Profile::Repro => "deterministic on the same build and CPU feature level",
            Profile::Live => "replayable from inputs, seed and edit journal",
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Keys a scene's `profile_config` or a node's/module's `profile_overrides`
/// may set. All optional; `None` inherits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub(crate) profile: Option<Profile>,
    pub(crate) precision: Option<Precision>,
    pub(crate) fft_provider: Option<String>,
    pub(crate) fft_norm: Option<String>,
    pub(crate) oversampling: Option<u32>,
    pub(crate) solver_tolerance: Option<f64>,
    pub(crate) max_iterations: Option<u32>,
}

impl Overrides {
    /// Keys allowed at every level.
    pub(crate) const KEYS: [&'static str; 7] = [
        "profile",
        "precision",
        "fft_provider",
        "fft_norm",
        "oversampling",
        "solver_tolerance",
        "max_iterations",
    ];
    /// Keys allowed only in the scene's top-level `profile_config`.
    pub(crate) const SCENE_ONLY_KEYS: [&'static str; 3] =
        ["block_size", "flush_to_zero", "rng_seed"];

    /// `self` where set, else `base`.
    pub(crate) fn over(&self, base: &Overrides) -> Overrides {
        Overrides {
            profile: self.profile.or(base.profile),
            precision: self.precision.or(base.precision),
            fft_provider: self
                .fft_provider
                .clone()
                .or_else(|| base.fft_provider.clone()),
            fft_norm: self.fft_norm.clone().or_else(|| base.fft_norm.clone()),
            oversampling: self.oversampling.or(base.oversampling),
            solver_tolerance: self.solver_tolerance.or(base.solver_tolerance),
            max_iterations: self.max_iterations.or(base.max_iterations),
        }
    }
}

/// A node's fully resolved execution settings.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeProfile {
    /// The profile the node runs under.
    pub profile: Profile,
    /// The precision it runs at.
    pub precision: Precision,
    pub(crate) math: MathKind,
    pub(crate) flush_to_zero: bool,
    pub(crate) oversampling: Option<u32>,
    pub(crate) solver_tolerance: Option<f64>,
    pub(crate) max_iterations: u32,
    pub(crate) fft_provider: Option<String>,
    pub(crate) fft_norm: Option<String>,
}

impl NodeProfile {
    /// Resolves a profile plus overrides. `flush_to_zero` is the scene-level
    /// setting, applied to non-strict nodes only (strict keeps IEEE denormals).
    pub(crate) fn resolve(profile: Profile, o: &Overrides, scene_ftz: Option<bool>) -> NodeProfile {
        NodeProfile {
            profile,
            precision: o.precision.unwrap_or(profile.default_precision()),
            math: profile.math(),
            flush_to_zero: match profile {
                Profile::Strict => false,
                _ => scene_ftz.unwrap_or(true),
            },
            oversampling: o.oversampling,
            solver_tolerance: o.solver_tolerance.or(profile.solver_tolerance()),
            max_iterations: o.max_iterations.unwrap_or(32),
            fft_provider: o.fft_provider.clone(),
            fft_norm: o.fft_norm.clone(),
        }
    }
}

impl NodeProfile {
    /// The FFT implementation: the override, else strict → reference,
    /// repro/live → rustfft.
    pub(crate) fn fft_provider(&self) -> FftProvider {
        self.fft_provider
            .as_deref()
            .and_then(FftProvider::parse)
            .unwrap_or(match self.profile {
                Profile::Strict => FftProvider::Reference,
                _ => FftProvider::RustFft,
            })
    }

    /// FFT normalisation: the override, else strict/repro → ortho, live → backward.
    pub(crate) fn fft_norm(&self) -> FftNorm {
        self.fft_norm
            .as_deref()
            .and_then(FftNorm::parse)
            .unwrap_or(match self.profile {
                Profile::Live => FftNorm::Backward,
                _ => FftNorm::Ortho,
            })
    }

    /// Oversampling factor for a nonlinear node: the node's own param, else
    /// the override, else the profile's rule (strict 1×, repro 2×, live 1×
    /// unless the node is marked `critical`, then 2×).
    pub(crate) fn oversampling_factor(&self, node_param: Option<u32>, critical: bool) -> u32 {
        node_param
            .or(self.oversampling)
            .unwrap_or(match self.profile {
                Profile::Strict => 1,
                Profile::Repro => 2,
                Profile::Live => {
                    if critical {
                        2
                    } else {
                        1
                    }
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weakest_is_min() {
        assert_eq!(Profile::Strict.min(Profile::Live), Profile::Live);
        assert_eq!(Profile::Repro.min(Profile::Strict), Profile::Repro);
    }

    #[test]
    fn table_matches_design() {
        assert_eq!(Profile::Strict.default_precision(), Precision::F64);
        assert_eq!(Profile::Repro.default_block_size(), 128);
        assert!(!Profile::Strict.flush_to_zero());
        assert!(Profile::Live.flush_to_zero());
        assert_eq!(Profile::Live.event_timing(), EventTiming::BlockAccurate);
        assert_eq!(Profile::Repro.off_grid(), OffGrid::SnapNearest);
        assert_eq!(Profile::Strict.cast_rule(), CastRule::ExplicitOnly);
    }

    #[test]
    fn overrides_layer() {
        let node = Overrides {
            precision: Some(Precision::F64),
            ..Default::default()
        };
        let module = Overrides {
            profile: Some(Profile::Strict),
            precision: Some(Precision::F32),
            ..Default::default()
        };
        let r = node.over(&module);
        assert_eq!(r.profile, Some(Profile::Strict));
        assert_eq!(r.precision, Some(Precision::F64));
    }
}
