//! `morphrt calibrate`: the smallest live block size this machine can run a
//! scene at with room to spare, stored for `run --block-size auto`.
//!
//! Smaller blocks mean less latency but more per-block overhead and less
//! slack for a slow block. A block size is good enough when the 99th
//! percentile of its block times stays under [`TARGET_LOAD`] of its
//! deadline: the other half is left for the device, the OS and whatever
//! else the machine does.
//!
//! At the block size chosen, it then measures the scene with more threads
//! (up to every core, at most [`MAX_CALIBRATED_THREADS`]): first what
//! handing the worker pool a level costs on this machine
//! ([`Workers::handoff_ns`]), then the scene at each thread count with
//! the pool's threshold ([`Workers::min_work_ns`]) at
//! [`THRESHOLD_MULTIPLES`] of that cost, the counts in turn, round after
//! round. More threads are recommended only when their p99 is under
//! [`THREAD_GAIN`] of one thread's; `run` plays with the recommended count
//! and threshold when `--threads` is not given.

use super::timing::{time_blocks, BlockStats};
use crate::engine::Workers;
use crate::graph::{compile, CompileOptions};
use crate::host::machine::calibration::{self, BlockP99, Calibration, ThreadP99};
use crate::host::machine::{self, MachineKey};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// The live block sizes tried, smallest first (live's range, 32 … 256, in
/// the profile table of [`crate::profile`]).
pub const CANDIDATES: [usize; 4] = [32, 64, 128, 256];
/// The largest p99 block time, as a fraction of the deadline, that counts
/// as safe.
pub const TARGET_LOAD: f64 = 0.5;
/// Seconds of audio per run unless `-d` says otherwise.
pub const DEFAULT_SECONDS: u64 = 5;
/// Runs per block size unless `--runs` says otherwise.
pub const DEFAULT_RUNS: usize = 2;

/// The most threads calibrate tries.
pub const MAX_CALIBRATED_THREADS: usize = 8;
/// More threads are recommended only when their p99 is under this
/// fraction of one thread's.
pub const THREAD_GAIN: f64 = 0.9;
/// The pool thresholds tried with each thread count, as multiples of the
/// measured hand-off.
pub const THRESHOLD_MULTIPLES: [f64; 3] = [1.0, 4.0, 16.0];
/// Hand-offs measured, each a level of one step per thread.
const HANDOFF_ROUNDS: usize = 2000;
/// What each step of a measured hand-off does, in nanoseconds of spinning.
const HANDOFF_STEP_NS: u64 = 2000;

/// What `morphrt calibrate` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct CalibrateOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    /// Audio per run and block size, e.g. 5s.
    #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
    pub duration: Option<TimeArg>,
    /// Runs per block size.
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
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Measure and report without storing the result.
    #[arg(long = "no-store")]
    pub no_store: bool,
}

/// What calibrate measured and chose.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrateReport {
    /// The stored entry (measurements, choice, machine key, scene hash).
    pub calibration: Calibration,
    /// Where it was stored; `None` with `--no-store` or without a cache directory.
    pub stored: Option<String>,
    pub target_load: f64,
}

/// The recommended block: the smallest candidate whose p99 stays under
/// [`TARGET_LOAD`] of its deadline, else the largest. Returns it and
/// whether it met the target.
pub fn recommend(blocks: &[BlockP99]) -> Option<(usize, bool)> {
    blocks
        .iter()
        .find(|b| b.p99_us < TARGET_LOAD * b.deadline_us)
        .map(|b| (b.block_size, true))
        .or_else(|| blocks.last().map(|b| (b.block_size, false)))
}

/// The recommended threads and threshold: the measurement with more than
/// one thread whose p99 is lowest, when it is under [`THREAD_GAIN`] of one
/// thread's; else one thread.
pub fn recommend_threads(runs: &[ThreadP99]) -> (usize, Option<u64>) {
    let one = runs.iter().find(|r| r.threads == 1).map(|r| r.p99_us);
    let best = runs
        .iter()
        .filter(|r| r.threads > 1)
        .min_by(|a, b| a.p99_us.total_cmp(&b.p99_us));
    match (one, best) {
        (Some(one), Some(b)) if b.p99_us < THREAD_GAIN * one => (b.threads, b.min_work_ns),
        _ => (1, None),
    }
}

/// The scene at `block` on 1 … `max_threads` threads, each count with each
/// threshold of [`THRESHOLD_MULTIPLES`] of the pool's measured hand-off,
/// `runs` rounds taking the settings in turn. Returns the hand-off (None
/// with one thread) and every setting's p99.
fn measure_threads(
    plan: crate::graph::Plan,
    frames: u64,
    runs: usize,
    max_threads: usize,
    log: &mut dyn Write,
) -> (Option<f64>, Vec<ThreadP99>) {
    let (block, sample_rate) = (plan.block_size, plan.sample_rate);
    let mut settings: Vec<(Option<Workers>, ThreadP99)> = vec![(
        None,
        ThreadP99 {
            threads: 1,
            min_work_ns: None,
            p99_us: 0.0,
        },
    )];
    let mut handoff = None;
    for threads in 2..=max_threads {
        let pool = match Workers::try_new(threads) {
            Ok(pool) => pool,
            Err(e) => {
                let _ = writeln!(log, "calibrate: {threads} threads: not measured: {e}");
                break;
            }
        };
        let h = pool.handoff_ns(HANDOFF_ROUNDS, HANDOFF_STEP_NS);
        let _ = writeln!(
            log,
            "calibrate: {threads} threads: handing the pool a level takes {:.1} µs",
            h / 1e3
        );
        if threads == 2 {
            handoff = Some(h);
        }
        for m in THRESHOLD_MULTIPLES {
            settings.push((
                Some(pool.clone()),
                ThreadP99 {
                    threads,
                    min_work_ns: Some((h * m).round().max(1.0) as u64),
                    p99_us: 0.0,
                },
            ));
        }
    }
    let mut engine = crate::engine::Engine::new(plan);
    let mut times: Vec<Vec<u64>> = vec![Vec::new(); settings.len()];
    for _ in 0..runs {
        for (k, (pool, t)) in settings.iter().enumerate() {
            if let (Some(p), Some(ns)) = (pool, t.min_work_ns) {
                p.set_min_work_ns(ns);
            }
            engine.set_workers(pool.clone());
            engine.reset();
            time_blocks(&mut engine, frames, &mut times[k]);
        }
    }
    engine.set_workers(None);
    let runs = settings
        .into_iter()
        .zip(&mut times)
        .map(|((_, mut t), times)| {
            t.p99_us = BlockStats::from_times(times, block, sample_rate).p99_us;
            let _ = writeln!(
                log,
                "calibrate: block {block:>3}, {} thread{}{}: p99 {:.1} µs",
                t.threads,
                if t.threads == 1 { "" } else { "s" },
                t.min_work_ns
                    .map(|ns| format!(", threshold {:.1} µs", ns as f64 / 1e3))
                    .unwrap_or_default(),
                t.p99_us
            );
            t
        })
        .collect();
    (handoff, runs)
}

/// The scene compiled under live at `block`.
fn live_plan(
    scene: &crate::scene::Scene,
    opts: &CalibrateOptions,
    block: usize,
) -> Result<crate::graph::Plan, HostError> {
    compile(
        scene,
        &CompileOptions {
            profile: Some(Profile::Live),
            block_size: Some(block),
            seed: opts.seed,
            resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
            ..CompileOptions::default()
        },
    )
    .map_err(HostError::Input)
}

/// Measures every candidate block size under live and stores the choice.
pub fn measure(opts: &CalibrateOptions, log: &mut dyn Write) -> Result<CalibrateReport, HostError> {
    if opts.runs == 0 {
        return Err(HostError::Usage("--runs must be at least 1".to_string()));
    }
    let (text, scene) = crate::host::read_scene(&opts.scene)?;
    let mut blocks = Vec::new();
    let mut first = None;
    for (i, &block) in CANDIDATES.iter().enumerate() {
        let mut plan = live_plan(&scene, opts, block)?;
        let warnings = std::mem::take(&mut plan.warnings);
        if i == 0 {
            if !warnings.is_empty() {
                let _ = writeln!(log, "{}", crate::scene::Shown::new(&warnings));
            }
            let frames = match &opts.duration {
                Some(d) => d
                    .length(plan.sample_rate, plan.tempo.as_ref(), log)
                    .map_err(HostError::Usage)?,
                None => DEFAULT_SECONDS * plan.sample_rate as u64,
            };
            let sha = machine::scene_sha256(text.as_bytes(), &plan.resources)
                .map_err(super::error::BenchError::from)?;
            first = Some((frames, plan.sample_rate, sha));
        }
        let (frames, sample_rate, _) = first.as_ref().expect("set by the first candidate");
        let mut engine = crate::engine::Engine::new(plan);
        let mut times = Vec::new();
        for _ in 0..opts.runs {
            engine.reset();
            time_blocks(&mut engine, *frames, &mut times);
        }
        let stats = BlockStats::from_times(&mut times, block, *sample_rate);
        let _ = writeln!(
            log,
            "calibrate: block {block:>3}: p99 {:.1} µs of {:.1} µs ({:.1} %)",
            stats.p99_us,
            stats.deadline_us,
            stats.p99_load() * 100.0
        );
        blocks.push(BlockP99 {
            block_size: block,
            p99_us: stats.p99_us,
            deadline_us: stats.deadline_us,
        });
    }
    let (frames, sample_rate, scene_sha256) = first.expect("there are candidates");
    let (block_size, meets_target) = recommend(&blocks).expect("there are candidates");
    let max_threads = crate::host::files::threads::all_cores().min(MAX_CALIBRATED_THREADS);
    let (handoff_ns, thread_runs) = if max_threads >= 2 {
        let plan = live_plan(&scene, opts, block_size)?;
        measure_threads(plan, frames, opts.runs, max_threads, log)
    } else {
        (None, Vec::new())
    };
    let (threads, min_work_ns) = recommend_threads(&thread_runs);
    let calibration = Calibration {
        machine: MachineKey::current(),
        scene: opts.scene.display().to_string(),
        scene_sha256,
        sample_rate,
        block_size,
        meets_target,
        blocks,
        threads,
        min_work_ns,
        handoff_ns,
        thread_runs,
        measured_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    let stored = if !opts.no_store {
        match calibration::store_path() {
            Some(path) => {
                calibration::save(&path, &calibration)?;
                Some(path.display().to_string())
            }
            None => {
                let _ = writeln!(
                    log,
                    "warning: no cache directory on this system; the calibration is not stored"
                );
                None
            }
        }
    } else {
        None
    };
    Ok(CalibrateReport {
        calibration,
        stored,
        target_load: TARGET_LOAD,
    })
}

impl CalibrateReport {
    /// The report for people.
    pub fn text(&self) -> String {
        let c = &self.calibration;
        let m = &c.machine;
        let mut s = format!(
            "calibrate {} (live, {} Hz); scene sha256 {}; {} build, morphrt {}; {} ({}), {} cores\n",
            c.scene,
            c.sample_rate,
            &c.scene_sha256[..16.min(c.scene_sha256.len())],
            m.build,
            m.version,
            m.cpu,
            m.cpu_level,
            m.cores
        );
        s += "  block  p99 (µs)  deadline (µs)  p99/deadline\n";
        for b in &c.blocks {
            s += &format!(
                "  {:>5}  {:>8.1}  {:>13.1}  {:>11.1}%{}\n",
                b.block_size,
                b.p99_us,
                b.deadline_us,
                b.p99_us / b.deadline_us * 100.0,
                if b.block_size == c.block_size {
                    "  ←"
                } else {
                    ""
                }
            );
        }
        s += &if c.meets_target {
            format!(
                "recommended block size: {} (the smallest whose p99 stays under {:.0} % of its deadline)\n",
                c.block_size,
                self.target_load * 100.0
            )
        } else {
            format!(
                "recommended block size: {} — but no block size kept its p99 under {:.0} % of its deadline; expect dropouts\n",
                c.block_size,
                self.target_load * 100.0
            )
        };
        if !c.thread_runs.is_empty() {
            s += &format!(
                "  at block {}: handing the worker pool a level takes {:.1} µs\n  threads  threshold (µs)  p99 (µs)\n",
                c.block_size,
                c.handoff_ns.unwrap_or(0.0) / 1e3
            );
            for t in &c.thread_runs {
                let chosen = t.threads == c.threads && t.min_work_ns == c.min_work_ns;
                s += &format!(
                    "  {:>7}  {:>14}  {:>8.1}{}\n",
                    t.threads,
                    t.min_work_ns
                        .map(|ns| format!("{:.1}", ns as f64 / 1e3))
                        .unwrap_or_else(|| "-".to_string()),
                    t.p99_us,
                    if chosen { "  ←" } else { "" }
                );
            }
            s += &if c.threads > 1 {
                format!(
                    "recommended threads: {} (p99 under {:.0} % of one thread's)\n",
                    c.threads,
                    THREAD_GAIN * 100.0
                )
            } else {
                format!(
                    "recommended threads: 1 (no thread count brought p99 under {:.0} % of one thread's)\n",
                    THREAD_GAIN * 100.0
                )
            };
        }
        match &self.stored {
            Some(p) => s += &format!("stored in {p}; `morphrt run --block-size auto` uses its block size, `run` without `--threads` its threads\n"),
            None => s += "not stored\n",
        }
        s
    }
}

/// `morphrt calibrate`: the table (or JSON) on `out`, progress on `log`.
pub fn calibrate(
    opts: &CalibrateOptions,
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
    written.map_err(HostError::stdout("cannot write the report"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(block_size: usize, p99_us: f64) -> BlockP99 {
        BlockP99 {
            block_size,
            p99_us,
            deadline_us: block_size as f64 / 48.0 * 1000.0,
        }
    }

    #[test]
    fn the_smallest_block_under_half_its_deadline_wins() {
        // Deadlines: 32 → 666.7 µs, 64 → 1333.3 µs, 128 → 2666.7 µs.
        assert_eq!(
            recommend(&[b(32, 400.0), b(64, 600.0), b(128, 700.0)]),
            Some((64, true))
        );
        assert_eq!(recommend(&[b(32, 10.0), b(64, 20.0)]), Some((32, true)));
        // Exactly half is not under half.
        let half = BlockP99 {
            block_size: 48,
            p99_us: 500.0,
            deadline_us: 1000.0,
        };
        assert_eq!(recommend(&[half, b(64, 1.0)]), Some((64, true)));
        assert_eq!(recommend(&[b(32, 900.0), b(64, 1500.0)]), Some((64, false)));
        assert_eq!(recommend(&[]), None);
    }

    fn t(threads: usize, min_work_ns: Option<u64>, p99_us: f64) -> ThreadP99 {
        ThreadP99 {
            threads,
            min_work_ns,
            p99_us,
        }
    }

    #[test]
    fn more_threads_are_recommended_only_under_nine_tenths_of_one_thread_s_p99() {
        let one = t(1, None, 100.0);
        // The lowest p99 wins, with its threshold.
        let runs = [
            one.clone(),
            t(2, Some(500), 80.0),
            t(2, Some(2000), 60.0),
            t(4, Some(500), 70.0),
        ];
        assert_eq!(recommend_threads(&runs), (2, Some(2000)));
        // Exactly 90 % is not under it; just under is.
        assert_eq!(
            recommend_threads(&[one.clone(), t(2, Some(9), 90.0)]),
            (1, None)
        );
        assert_eq!(
            recommend_threads(&[one.clone(), t(3, Some(9), 89.9)]),
            (3, Some(9))
        );
        // Slower with threads, or nothing but one thread measured: one.
        assert_eq!(
            recommend_threads(&[one.clone(), t(2, Some(9), 150.0)]),
            (1, None)
        );
        assert_eq!(recommend_threads(&[one]), (1, None));
        assert_eq!(recommend_threads(&[]), (1, None));
    }
}
