//! Parity: whether a profile still computes what the scene means, checked
//! before anything is timed (a fast wrong answer is not a result).
//!
//! - strict: the SHA-256 of the render equals the scene's golden
//!   (`golden/scenes/<stem>.json`); the strict bits are a contract.
//! - repro and live: relative RMS error against a strict render of the
//!   same scene, latency-aligned, excluding a guard of at least one block
//!   plus any ramp around each event (where block-accurate live events
//!   legitimately differ), within the bound the golden records (defaults:
//!   [`Profile::default_parity_bound`]).
//!
//! The integration test over the shipped scenes and `morphrt bench` both
//! use these functions, so the numbers in the goldens' `measured_parity`
//! are the numbers `bench` prints.

use super::error::{BenchError, GoldenError};
use crate::api::player::offline_player;
use crate::engine::{BusRef, Engine};
use crate::graph::{compile, CompileOptions, EventAction, Plan};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::Scene;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Goldens cover the first 2 s of a scene …
pub const GOLDEN_SECONDS: u64 = 2;
/// … or 1 s where a strict direct convolution runs (ARCHITECTURE.md, *Goldens*).
pub const GOLDEN_SECONDS_CONVOLUTION: u64 = 1;
/// The smallest guard excluded either side of an event: the largest
/// default block size (repro's 128) with room to spare.
pub const MIN_GUARD: u64 = 256;
/// The block size goldens are recorded at (strict output is the same at
/// every block size).
pub const GOLDEN_BLOCK: usize = 64;

/// How many frames a scene's golden covers: [`GOLDEN_SECONDS`], or
/// [`GOLDEN_SECONDS_CONVOLUTION`] when the scene convolves.
pub fn golden_frames(plan: &Plan) -> u64 {
    let seconds = if plan.nodes.iter().any(|n| n.op.name == "convolution") {
        GOLDEN_SECONDS_CONVOLUTION
    } else {
        GOLDEN_SECONDS
    };
    seconds * plan.sample_rate as u64
}

/// The guard around each event for a render at `block_size`: one block,
/// and never less than [`MIN_GUARD`].
pub fn guard(block_size: usize) -> u64 {
    (block_size as u64).max(MIN_GUARD)
}

/// Sample ranges `[start, end)` excluded from parity: `guard` samples
/// before each event to `guard` plus its ramp after it.
pub fn excluded(plan: &Plan, guard: u64) -> Vec<(u64, u64)> {
    plan.events
        .iter()
        .map(|e| {
            let ramp = match e.action {
                EventAction::Set { ramp, .. } => ramp,
                EventAction::Discrete(_) => 0,
            };
            (e.sample.saturating_sub(guard), e.sample + guard + ramp)
        })
        .collect()
}

/// Relative RMS error of `x` against `reference` (per channel, summed over
/// channels): sqrt(Σ(r − x)² / Σr²). `x_lag` is `x`'s latency minus the
/// reference's, in samples: reference frame `i` is compared with `x` frame
/// `i + x_lag`, over the frames both have. Reference frames inside `skip`
/// are left out.
pub fn rel_rms(reference: &[Vec<f64>], x: &[Vec<f64>], x_lag: i64, skip: &[(u64, u64)]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (r, y) in reference.iter().zip(x) {
        for (i, a) in r.iter().enumerate() {
            let Some(b) = i.checked_add_signed(x_lag as isize).and_then(|j| y.get(j)) else {
                continue;
            };
            let i = i as u64;
            if skip.iter().any(|(s, e)| i >= *s && i < *e) {
                continue;
            }
            num += (a - b) * (a - b);
            den += a * a;
        }
    }
    (num / den.max(1e-300)).sqrt()
}

/// A scene's golden vector (`golden/scenes/<stem>.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Golden {
    /// The scene, relative to the repository (informational).
    #[serde(default)]
    pub scene: Option<String>,
    /// Frames the hash covers, from sample 0.
    pub frames: u64,
    pub sample_rate: u32,
    /// SHA-256 of the strict render (interleaved little-endian main-bus
    /// samples at engine precision), as `render --hash` prints it.
    pub sha256: String,
    /// The parity bounds the scene promises.
    pub parity: Bounds,
    /// What was measured when the golden was made.
    #[serde(default)]
    pub measured_parity: Option<Bounds>,
}

/// Relative RMS bounds against strict, per profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub repro: f64,
    pub live: f64,
}

impl Bounds {
    /// The bound for `profile` (strict: 0, i.e. bit-exact).
    pub fn get(&self, profile: Profile) -> f64 {
        match profile {
            Profile::Strict => 0.0,
            Profile::Repro => self.repro,
            Profile::Live => self.live,
        }
    }

    /// The defaults for a scene without a golden.
    pub fn defaults() -> Bounds {
        Bounds {
            repro: Profile::Repro.default_parity_bound(),
            live: Profile::Live.default_parity_bound(),
        }
    }
}

impl Golden {
    /// Reads a golden file.
    pub fn load(path: &Path) -> Result<Golden, GoldenError> {
        // Bytes, not a string: a byte that is not UTF-8 is then located by
        // the JSON reader like any other error.
        let bytes = std::fs::read(path).map_err(|source| GoldenError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let g: Golden =
            serde_json::from_slice(&bytes).map_err(|source| GoldenError::NotGolden {
                path: path.to_path_buf(),
                source,
            })?;
        let limit = crate::scene::max_duration_samples(g.sample_rate);
        if g.frames == 0 || g.frames > limit {
            return Err(GoldenError::Frames {
                path: path.to_path_buf(),
                frames: g.frames,
                limit,
                limit_text: crate::scene::duration_limit_text(g.sample_rate),
            });
        }
        Ok(g)
    }
}

/// Where a scene's golden lives unless `--golden` says otherwise:
/// `golden/scenes/<stem>.json` beside the scene's folder, so
/// `scenes/drone.json` finds `golden/scenes/drone.json` from any working
/// directory.
pub fn default_golden_path(scene: &Path) -> PathBuf {
    let stem = scene
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = match scene.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // `scenes/x.json` → `golden/…`, not `scenes/../golden/…`.
    let base = match (dir.file_name(), dir.parent()) {
        (Some(_), Some(up)) => up.to_path_buf(),
        _ => dir.join(".."),
    };
    base.join("golden")
        .join("scenes")
        .join(format!("{stem}.json"))
}

/// Which golden `bench` compares with.
#[derive(Clone, Debug)]
pub enum GoldenSource {
    /// `--golden FILE`: it must exist.
    File(PathBuf),
    /// [`default_golden_path`] of the scene: used when it exists.
    Default(PathBuf),
}

/// What the parity check found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParityReport {
    /// Timing happens only when this is true.
    pub passed: bool,
    pub profile: Profile,
    /// `golden-sha256` (strict against the golden), `block-size` (strict
    /// without a golden: the render at the bench block size against one at
    /// another) or `relative-rms` (repro and live against strict).
    pub method: String,
    /// Frames compared, from sample 0.
    pub frames: u64,
    /// The golden used, if any.
    pub golden: Option<String>,
    /// SHA-256 of the strict render.
    pub strict_sha256: String,
    /// What it had to equal: the golden's hash, or under `block-size` the
    /// hash at the other block size. `None` for repro/live without a golden.
    pub expected_sha256: Option<String>,
    /// Repro and live: the measured error and its bound.
    pub relative_rms: Option<f64>,
    pub bound: Option<f64>,
    /// One line for people: what was compared, and why it failed.
    pub summary: String,
}

/// A render kept in memory, with its hash at engine precision.
struct Rendered {
    channels: Vec<Vec<f64>>,
    sha256: String,
    latency: usize,
}

fn render(plan: Plan, frames: u64, keep: bool) -> Rendered {
    let latency = plan.latency;
    let mut player = offline_player(Engine::new(plan));
    let mut channels = vec![Vec::new(); if keep { player.engine().channels() } else { 0 }];
    let mut hasher = Sha256::new();
    let mut bytes = Vec::new();
    let played = player.play_frames(
        frames,
        &[],
        None,
        |_| Ok(()),
        |bus: BusRef<'_>| {
            bytes.clear();
            bus.write_le_interleaved(&mut bytes);
            hasher.update(&bytes);
            for (c, o) in channels.iter_mut().enumerate() {
                o.extend((0..bus.frames()).map(|i| bus.get(c, i)));
            }
            Ok::<(), std::convert::Infallible>(())
        },
        |_| {},
    );
    let Ok(()) = played;
    Rendered {
        channels,
        sha256: crate::host::files::digest::hex(&hasher.finalize()),
        latency,
    }
}

fn compile_as(
    scene: &Scene,
    base: &CompileOptions,
    profile: Profile,
    block_size: usize,
) -> Result<Plan, HostError> {
    let opts = CompileOptions {
        profile: Some(profile),
        block_size: Some(block_size),
        ..base.clone()
    };
    compile(scene, &opts).map_err(HostError::Input)
}

/// Checks `profile` at `block_size` against the golden or a strict render
/// (see the module docs). A scene that cannot run under strict cannot be
/// checked: that is an input error. Progress goes to `log`.
pub fn check(
    scene: &Scene,
    base: &CompileOptions,
    profile: Profile,
    block_size: usize,
    golden: &GoldenSource,
    log: &mut dyn Write,
) -> Result<ParityReport, HostError> {
    let found = find_golden(golden)?;
    let strict_block = if profile == Profile::Strict {
        block_size
    } else {
        GOLDEN_BLOCK
    };
    let strict_plan = compile_reference(scene, base, profile, strict_block)?;
    let frames = found
        .golden
        .as_ref()
        .map_or_else(|| golden_frames(&strict_plan), |g| g.frames);
    let sample_rate = strict_plan.sample_rate;
    let skip = excluded(&strict_plan, guard(block_size));
    let mut report = ParityReport {
        passed: false,
        profile,
        method: String::new(),
        frames,
        golden: found.name.clone(),
        strict_sha256: String::new(),
        expected_sha256: found.golden.as_ref().map(|g| g.sha256.clone()),
        relative_rms: None,
        bound: None,
        summary: String::new(),
    };
    let seconds = frames as f64 / sample_rate as f64;
    if let Some(g) = &found.golden {
        if g.sample_rate != sample_rate {
            report.method = "golden-sha256".to_string();
            report.summary = format!(
                "golden `{}` is for {} Hz, the scene runs at {sample_rate} Hz",
                found.name(),
                g.sample_rate
            );
            return Ok(report);
        }
    }
    let cmp = Comparison {
        scene,
        base,
        profile,
        block_size,
        frames,
        seconds,
        found,
    };
    let _ = writeln!(
        log,
        "parity: rendering {seconds:.2} s under strict (block {strict_block})"
    );
    let strict = render(strict_plan, frames, profile != Profile::Strict);
    report.strict_sha256 = strict.sha256.clone();
    if profile == Profile::Strict {
        match &cmp.found.golden {
            Some(g) => strict_against_golden(&cmp, g, &strict, &mut report),
            None => strict_across_block_sizes(&cmp, &strict, &mut report, log)?,
        }
    } else {
        against_strict(&cmp, &strict, &skip, &mut report, log)?;
    }
    Ok(report)
}

/// The golden a check compares with, if there is one.
struct FoundGolden {
    golden: Option<Golden>,
    /// Where it was read from, as the report names it.
    name: Option<String>,
    /// The default path where none was found.
    missing: Option<PathBuf>,
}

impl FoundGolden {
    /// The golden's name, or "" without one.
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// Where a golden was looked for in vain, for messages.
    fn missing(&self) -> std::path::Display<'_> {
        self.missing.as_deref().unwrap_or(Path::new("?")).display()
    }
}

/// Reads the golden `source` names: `--golden FILE` must be readable (a
/// usage error), a default path is used only if it exists.
fn find_golden(source: &GoldenSource) -> Result<FoundGolden, HostError> {
    let (golden, path, missing) = match source {
        GoldenSource::File(p) => (
            Some(Golden::load(p).map_err(|source| BenchError::Golden {
                source,
                named: true,
            })?),
            Some(p),
            None,
        ),
        GoldenSource::Default(p) if p.exists() => (
            Some(Golden::load(p).map_err(|source| BenchError::Golden {
                source,
                named: false,
            })?),
            Some(p),
            None,
        ),
        GoldenSource::Default(p) => (None, None, Some(p.clone())),
    };
    Ok(FoundGolden {
        golden,
        name: path.map(|p| p.display().to_string()),
        missing,
    })
}

/// Compiles the strict reference. When `profile` is not strict, each error
/// adds why the scene must also compile under strict.
fn compile_reference(
    scene: &Scene,
    base: &CompileOptions,
    profile: Profile,
    block_size: usize,
) -> Result<Plan, HostError> {
    compile_as(scene, base, Profile::Strict, block_size).map_err(|e| {
        let HostError::Input(mut ds) = e else {
            return e;
        };
        if profile != Profile::Strict {
            const WHY: &str =
                "parity compares with a strict render, so the scene must also compile under strict";
            for d in ds.iter_mut().filter(|d| d.is_error()) {
                d.help = Some(match d.help.take() {
                    Some(h) => format!("{h}; {WHY}"),
                    None => WHY.to_string(),
                });
            }
        }
        HostError::Input(ds)
    })
}

/// What one check compares, once the strict reference is compiled.
struct Comparison<'a> {
    scene: &'a Scene,
    base: &'a CompileOptions,
    profile: Profile,
    block_size: usize,
    frames: u64,
    /// `frames` in seconds, for messages.
    seconds: f64,
    found: FoundGolden,
}

/// Strict with a golden: the render's hash must be the golden's.
fn strict_against_golden(
    cmp: &Comparison<'_>,
    g: &Golden,
    strict: &Rendered,
    report: &mut ParityReport,
) {
    let seconds = cmp.seconds;
    let golden_ok = g.sha256 == strict.sha256;
    report.method = "golden-sha256".to_string();
    report.passed = golden_ok;
    report.summary = if golden_ok {
        format!(
            "strict render equals its golden ({seconds:.2} s, {})",
            cmp.found.name()
        )
    } else {
        format!(
            "strict render differs from its golden `{}` ({seconds:.2} s): sha256 {} instead of {}",
            cmp.found.name(),
            strict.sha256,
            g.sha256
        )
    };
}

/// Strict without a golden: it must at least be the same at another block
/// size.
fn strict_across_block_sizes(
    cmp: &Comparison<'_>,
    strict: &Rendered,
    report: &mut ParityReport,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let (block_size, seconds) = (cmp.block_size, cmp.seconds);
    let other = if block_size == 4096 {
        GOLDEN_BLOCK
    } else {
        4096
    };
    let _ = writeln!(
        log,
        "parity: no golden at {}; rendering strict again at block {other}",
        cmp.found.missing()
    );
    let again = render(
        compile_as(cmp.scene, cmp.base, Profile::Strict, other)?,
        cmp.frames,
        false,
    );
    report.method = "block-size".to_string();
    report.expected_sha256 = Some(again.sha256.clone());
    report.passed = again.sha256 == strict.sha256;
    report.summary = if report.passed {
        format!(
            "no golden (looked for {}); strict is the same at blocks {block_size} and {other} ({seconds:.2} s)",
            cmp.found.missing()
        )
    } else {
        format!(
            "strict differs between blocks {block_size} and {other} ({seconds:.2} s): sha256 {} and {}",
            strict.sha256, again.sha256
        )
    };
    Ok(())
}

/// Repro or live: the relative RMS error against the strict render (which
/// must equal its golden, if there is one) within the golden's bound.
fn against_strict(
    cmp: &Comparison<'_>,
    strict: &Rendered,
    skip: &[(u64, u64)],
    report: &mut ParityReport,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let (profile, block_size, seconds) = (cmp.profile, cmp.block_size, cmp.seconds);
    let golden = cmp.found.golden.as_ref();
    let golden_ok = golden.is_none_or(|g| g.sha256 == strict.sha256);
    let bound = golden
        .map_or_else(Bounds::defaults, |g| g.parity)
        .get(profile);
    let _ = writeln!(
        log,
        "parity: rendering {seconds:.2} s under {profile} (block {block_size})"
    );
    let candidate = render(
        compile_as(cmp.scene, cmp.base, profile, block_size)?,
        cmp.frames,
        true,
    );
    let lag = candidate.latency as i64 - strict.latency as i64;
    let err = rel_rms(&strict.channels, &candidate.channels, lag, skip);
    report.method = "relative-rms".to_string();
    report.relative_rms = Some(err);
    report.bound = Some(bound);
    let within = err <= bound;
    report.passed = golden_ok && within;
    let against = match &cmp.found.name {
        Some(g) => format!("strict (which equals its golden {g})"),
        None => format!(
            "strict (no golden at {}: default bound)",
            cmp.found.missing()
        ),
    };
    report.summary = if !golden_ok {
        format!(
            "the strict reference differs from its golden `{}` ({seconds:.2} s): sha256 {} instead of {}",
            cmp.found.name(),
            strict.sha256,
            golden.map(|g| g.sha256.as_str()).unwrap_or_default()
        )
    } else if within {
        format!("{profile} vs {against}: relative RMS {err:.3e} ≤ {bound:.1e} over {seconds:.2} s")
    } else {
        format!(
            "{profile} is {err:.3e} relative RMS from strict over {seconds:.2} s, above its bound {bound:.1e}{}",
            cmp.found
                .name
                .as_ref()
                .map(|g| format!(" (from {g})"))
                .unwrap_or_default()
        )
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rel_rms_aligns_by_latency_and_skips_ranges() {
        let r = vec![vec![1.0, 2.0, 3.0, 4.0]];
        assert_eq!(rel_rms(&r, &r, 0, &[]), 0.0);
        // The same signal one sample late compares equal once aligned.
        let late = vec![vec![0.0, 1.0, 2.0, 3.0, 4.0]];
        assert_eq!(rel_rms(&r, &late, 1, &[]), 0.0);
        assert!(rel_rms(&r, &late, 0, &[]) > 0.1);
        // An error only inside a skipped range does not count.
        let x = vec![vec![1.0, 9.0, 3.0, 4.0]];
        assert!(rel_rms(&r, &x, 0, &[]) > 0.5);
        assert_eq!(rel_rms(&r, &x, 0, &[(1, 2)]), 0.0);
        // sqrt((0.1² ) / (1+4+9+16)).
        let y = vec![vec![1.0, 2.0, 3.0, 4.1]];
        let e = rel_rms(&r, &y, 0, &[]);
        assert!((e - (0.01f64 / 30.0).sqrt()).abs() < 1e-12, "{e}");
    }

    #[test]
    fn the_default_golden_sits_beside_the_scene_folder() {
        let g = |s: &str| default_golden_path(Path::new(s));
        assert_eq!(
            g("scenes/drone.json"),
            Path::new("golden/scenes/drone.json")
        );
        assert_eq!(
            g("/work/x/scenes/drone.json"),
            Path::new("/work/x/golden/scenes/drone.json")
        );
        assert_eq!(
            g("scenes/bench/w1.json"),
            Path::new("scenes/golden/scenes/w1.json")
        );
        assert_eq!(g("drone.json"), Path::new("./../golden/scenes/drone.json"));
        assert_eq!(
            g("../drone.json"),
            Path::new("../../golden/scenes/drone.json")
        );
        assert_eq!(GOLDEN_SECONDS, 2);
        assert_eq!(guard(64), MIN_GUARD);
        assert_eq!(guard(1024), 1024);
    }
}
