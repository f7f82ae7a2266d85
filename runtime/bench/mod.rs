//! Measuring: `morphrt bench` (parity first, then timing) and `morphrt
//! calibrate` (the live block size for this machine).
//!
//! A timing is only worth something next to what it measured, so every
//! report carries its [`ComparisonKey`]: the scene's hash, the profile,
//! block size and sample rate, and the machine and build
//! ([`MachineKey`]). And a timing of wrong output is worth nothing, so
//! `bench` checks [`parity`] before it times anything and refuses to time
//! a scene that fails it.

pub mod calibrate;
pub mod error;
pub mod parity;
pub mod timing;

use crate::graph::{compile, CompileOptions, Plan};
use crate::host::machine::{self, MachineKey};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use error::BenchError;
use parity::{GoldenSource, ParityReport};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use timing::Timing;

/// Seconds of audio per timed run unless `-d` says otherwise: long enough
/// for thousands of blocks, short enough to repeat (`--duration`'s help
/// text says 5 s).
pub const DEFAULT_SECONDS: u64 = 5;
/// Timed runs unless `--runs` says otherwise.
pub const DEFAULT_RUNS: usize = 5;

/// What a timing depends on; two reports compare only when their keys do.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonKey {
    /// The scene file as given.
    pub scene: String,
    /// [`machine::scene_sha256`]: the scene text and its resources.
    pub scene_sha256: String,
    pub profile: Profile,
    pub block_size: usize,
    pub sample_rate: u32,
    #[serde(flatten)]
    pub machine: MachineKey,
}

impl ComparisonKey {
    /// The key of `plan` (compiled from `scene_text`) on this machine.
    pub fn of(scene: &str, scene_text: &[u8], plan: &Plan) -> Result<ComparisonKey, HostError> {
        Ok(ComparisonKey {
            scene: scene.to_string(),
            scene_sha256: machine::scene_sha256(scene_text, &plan.resources)
                .map_err(BenchError::from)?,
            profile: plan.session_profile,
            block_size: plan.block_size,
            sample_rate: plan.sample_rate,
            machine: MachineKey::current(),
        })
    }

    /// One line for people.
    pub fn line(&self) -> String {
        format!(
            "{}, block {}, {} Hz; scene sha256 {}; {} build, morphrt {}; {} ({}), {} cores",
            self.profile,
            self.block_size,
            self.sample_rate,
            &self.scene_sha256[..16.min(self.scene_sha256.len())],
            self.machine.build,
            self.machine.version,
            self.machine.cpu,
            self.machine.cpu_level,
            self.machine.cores
        )
    }
}

/// What `morphrt bench` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    /// Session profile: strict, repro or live (default: the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Audio per timed run, e.g. 5s, 500ms (default 5 s).
    #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
    pub duration: Option<TimeArg>,
    /// Block size in frames (default: the scene's, else the profile's).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    // `--threads`: timed at N threads (default 1); the plan at N threads
    // goes to stderr first.
    #[command(flatten)]
    pub threads: crate::host::files::threads::ThreadArgs,
    /// Timed runs.
    #[arg(long, default_value_t = DEFAULT_RUNS)]
    pub runs: usize,
    /// Replace the scene's seed (noise is a pure function of seed, node id and sample).
    ///
    /// An unsigned integer 0 … 18446744073709551615; a value outside that
    /// range says so.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// The golden to check strict against (default:
    /// golden/scenes/<stem>.json beside the scene's folder; without
    /// one, strict is checked across block sizes instead).
    #[arg(long)]
    pub golden: Option<PathBuf>,
    /// Machine-readable output.
    ///
    /// The same report as one JSON object: `key`, `parity`, `timing` (null
    /// when parity failed) and `ci` (null without `--ci`); its layout is in
    /// benches/README.md.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when an --assert-* bound is missed, saying by how much.
    ///
    /// Exits 1 when the median real-time factor is below `--assert-rtf X`
    /// or the block p99 is above `--assert-p99-us Y` µs.
    #[arg(long)]
    pub ci: bool,
    /// With --ci: the median real-time factor must be at least X.
    #[arg(long = "assert-rtf", requires = "ci", value_name = "X")]
    pub assert_rtf: Option<f64>,
    /// With --ci: the 99th-percentile block time must be at most Y µs.
    #[arg(long = "assert-p99-us", requires = "ci", value_name = "Y")]
    pub assert_p99_us: Option<f64>,
}

/// One `--ci` assertion and how it went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// `rtf_median` (must be ≥ bound) or `block_p99_us` (must be ≤ bound).
    pub name: String,
    pub bound: f64,
    pub value: f64,
    pub passed: bool,
    /// By how much it missed, in the value's unit (0 when it passed).
    pub miss: f64,
    /// One line for people.
    pub summary: String,
}

/// The `--ci` verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CiReport {
    pub passed: bool,
    pub checks: Vec<Check>,
}

/// Everything `bench` found: the JSON that `--json` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    pub key: ComparisonKey,
    pub parity: ParityReport,
    /// `None` when parity failed (nothing was timed).
    pub timing: Option<Timing>,
    /// `None` without `--ci`.
    pub ci: Option<CiReport>,
    /// The worker pool the timing ran with; `None` on one thread.
    pub pool: Option<PoolReport>,
}

/// `bench --threads N`'s pool: its threads and threshold, and where the
/// threshold comes from (`option`, `calibration`, `default`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolReport {
    pub threads: usize,
    pub min_work_ns: u64,
    pub min_work_from: &'static str,
}

/// Checks parity and, when it holds, times the scene. Parity failing is
/// not an `Err`: the report says so and has no timing.
pub fn measure(opts: &BenchOptions, log: &mut dyn Write) -> Result<BenchReport, HostError> {
    if opts.runs == 0 {
        return Err(HostError::Usage("--runs must be at least 1".to_string()));
    }
    let (text, scene) = crate::host::read_scene(&opts.scene)?;
    let base = CompileOptions {
        seed: opts.seed,
        resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
        ..CompileOptions::default()
    };
    let mut plan = compile(
        &scene,
        &CompileOptions {
            profile: opts.profile,
            block_size: opts.block_size,
            ..base.clone()
        },
    )
    .map_err(HostError::Input)?;
    if !plan.warnings.is_empty() {
        let _ = writeln!(log, "{}", crate::scene::Shown::new(&plan.warnings));
        plan.warnings.clear();
    }
    if plan.input_width() > 0 {
        // Silence costs what a signal does under repro and live, but not
        // under strict, where a decaying signal's subnormals are slow.
        let _ = writeln!(
            log,
            "warning: scene `{}` reads audio input, which bench feeds silence: its figures are for a silent input",
            plan.file
        );
    }
    let frames = match &opts.duration {
        Some(d) => d
            .length(plan.sample_rate, plan.tempo.as_ref(), log)
            .map_err(HostError::Usage)?,
        None => DEFAULT_SECONDS * plan.sample_rate as u64,
    };
    let key = ComparisonKey::of(&opts.scene.display().to_string(), text.as_bytes(), &plan)?;
    let golden = match &opts.golden {
        Some(g) => GoldenSource::File(g.clone()),
        None => GoldenSource::Default(parity::default_golden_path(&opts.scene)),
    };
    let parity = parity::check(&scene, &base, key.profile, key.block_size, &golden, log)?;
    if !parity.passed {
        return Ok(BenchReport {
            key,
            parity,
            timing: None,
            ci: None,
            pool: None,
        });
    }
    // The pool's threshold as `run` plays the scene with it: the one asked
    // for, else the one `calibrate` stored for this count, else the default.
    let threshold = opts.threads.threads.map(|t| {
        use crate::host::machine::calibration::Threshold;
        let asked = opts.threads.min_work_ns;
        (
            t,
            Threshold::for_scene(asked, usize::from(t), Some(&text), &plan),
        )
    });
    let mut engine = crate::engine::Engine::new(plan);
    let workers = opts.threads.workers(1, false)?;
    if let Some((t, at)) = &threshold {
        let _ = write!(
            log,
            "{}",
            crate::host::files::threads::threads_text(&engine, usize::from(*t), at.ns, at.whence())
        );
        if let Some(w) = &workers {
            w.set_min_work_ns(at.ns);
        }
    }
    engine.set_workers(workers);
    let timing = timing::time_engine(&mut engine, frames, opts.runs, log);
    let ci = opts.ci.then(|| ci_checks(opts, &timing));
    let pool = threshold.filter(|(t, _)| *t > 1).map(|(t, at)| PoolReport {
        threads: usize::from(t),
        min_work_ns: at.ns,
        min_work_from: at.key(),
    });
    Ok(BenchReport {
        key,
        parity,
        timing: Some(timing),
        ci,
        pool,
    })
}

fn ci_checks(opts: &BenchOptions, t: &Timing) -> CiReport {
    let mut checks = Vec::new();
    if let Some(bound) = opts.assert_rtf {
        let value = t.rtf.median;
        let passed = value >= bound;
        let miss = if passed { 0.0 } else { bound - value };
        checks.push(Check {
            name: "rtf_median".to_string(),
            bound,
            value,
            passed,
            miss,
            summary: if passed {
                format!("median real-time factor {value:.2} ≥ {bound}")
            } else {
                format!(
                    "median real-time factor {value:.2} is below --assert-rtf {bound}: short by {miss:.3} ({:.1} % of the bound)",
                    miss / bound * 100.0
                )
            },
        });
    }
    if let Some(bound) = opts.assert_p99_us {
        let value = t.block.p99_us;
        let passed = value <= bound;
        let miss = if passed { 0.0 } else { value - bound };
        checks.push(Check {
            name: "block_p99_us".to_string(),
            bound,
            value,
            passed,
            miss,
            summary: if passed {
                format!("block p99 {value:.1} µs ≤ {bound} µs")
            } else {
                format!(
                    "block p99 {value:.1} µs is above --assert-p99-us {bound}: over by {miss:.1} µs ({:.1} % of the bound)",
                    miss / bound * 100.0
                )
            },
        });
    }
    CiReport {
        passed: checks.iter().all(|c| c.passed),
        checks,
    }
}

/// Rows of the node table printed before the rest are summed up.
const NODE_ROWS: usize = 10;

impl BenchReport {
    /// The report for people.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let k = &self.key;
        s += &format!("bench {}\n  key: {}\n", k.scene, k.line());
        s += &format!(
            "parity: {} — {}\n",
            if self.parity.passed { "ok" } else { "FAILED" },
            self.parity.summary
        );
        let Some(t) = &self.timing else {
            s += "timing: not run (parity failed)\n";
            return s;
        };
        s += &format!("timing: {} run(s) × {:.2} s\n", t.runs, t.seconds_per_run);
        s += &format!(
            "  real-time factor  min {:.2}  median {:.2}  (seconds of audio per second)\n",
            t.rtf.min, t.rtf.median
        );
        let b = &t.block;
        s += &format!(
            "  block (µs)        p50 {:.1}  p95 {:.1}  p99 {:.1}  max {:.1}  deadline {:.1}\n",
            b.p50_us, b.p95_us, b.p99_us, b.max_us, b.deadline_us
        );
        s += &format!(
            "                    p99 is {:.1} % of the deadline; {} of {} blocks over it\n",
            b.p99_load() * 100.0,
            b.over_deadline,
            b.blocks
        );
        if t.nan_events > 0 {
            s += &format!(
                "  warning: {} block(s) produced NaN/Inf (replaced by silence)\n",
                t.nan_events
            );
        }
        s += "nodes (a separate run with per-node timers):\n";
        let w = t
            .nodes
            .iter()
            .take(NODE_ROWS)
            .map(|n| n.id.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        s += &format!(
            "  {:<w$}  {:<14} {:>7}  {:>10}  {:>10}\n",
            "node", "op", "share", "ns/sample", "iterations"
        );
        for n in t.nodes.iter().take(NODE_ROWS) {
            s += &format!(
                "  {:<w$}  {:<14} {:>6.1}%  {:>10.2}  {:>10}\n",
                n.id,
                n.op,
                n.share * 100.0,
                n.ns_per_sample,
                n.iterations
            );
        }
        if t.nodes.len() > NODE_ROWS {
            let rest = &t.nodes[NODE_ROWS..];
            s += &format!(
                "  … {} more nodes: {:.1}% together, {:.2} ns/sample\n",
                rest.len(),
                rest.iter().map(|n| n.share).sum::<f64>() * 100.0,
                rest.iter().map(|n| n.ns_per_sample).sum::<f64>()
            );
        }
        if t.ops.len() < t.nodes.len() {
            s += "  by operator:\n";
            for o in &t.ops {
                s += &format!(
                    "  {:<w$}  {:<14} {:>6.1}%  {:>10.2}  {:>10}\n",
                    format!("{}×", o.nodes),
                    o.op,
                    o.share * 100.0,
                    o.ns_per_sample,
                    o.iterations
                );
            }
        }
        s += &format!(
            "  outside the nodes (events, ramps, main bus): {:.1}% of block time\n",
            t.outside_nodes_share * 100.0
        );
        if !t.lane_groups.is_empty() {
            let grouped: usize = t.lane_groups.iter().map(|g| g.nodes).sum();
            let list: Vec<String> = t
                .lane_groups
                .iter()
                .map(|g| format!("{} ×{}", g.op, g.nodes))
                .collect();
            s += &format!(
                "  lane groups: {} ({grouped} of {} nodes run in groups)\n",
                list.join(", "),
                t.nodes.len()
            );
        }
        if let Some(ci) = &self.ci {
            s += &format!("ci: {}\n", if ci.passed { "ok" } else { "FAILED" });
            for c in &ci.checks {
                s += &format!(
                    "  {} {}\n",
                    if c.passed { "ok  " } else { "MISS" },
                    c.summary
                );
            }
        }
        s
    }
}

/// `morphrt bench`: the report on `out` (JSON with `--json`), progress on
/// `log`. A failed parity check, or with `--ci` a missed assertion, is a
/// runtime failure (exit 1) that says what missed and by how much.
pub fn bench(
    opts: &BenchOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let report = measure(opts, log)?;
    let written = if opts.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialise")
        )
    } else {
        write!(out, "{}", report.text())
    };
    written.map_err(HostError::stdout("cannot write the report"))?;
    if !report.parity.passed {
        return Err(BenchError::Parity {
            summary: report.parity.summary,
        }
        .into());
    }
    if let Some(ci) = report.ci.filter(|c| !c.passed) {
        let misses: Vec<String> = ci
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.summary.clone())
            .collect();
        return Err(BenchError::Ci { misses }.into());
    }
    Ok(())
}
