//! `morphrt calibrate`: the smallest live block size this machine can run a
//! scene at with room to spare, stored for `run --block-size auto`.
//!
//! Smaller blocks mean less latency but more per-block overhead and less
//! slack for a slow block. A block size is good enough when the 99th
//! percentile of its block times stays under [`TARGET_LOAD`] of its
//! deadline: the other half is left for the device, the OS and whatever
//! else the machine does.

use super::timing::{time_blocks, BlockStats};
use crate::graph::{compile, CompileOptions};
use crate::host::machine::calibration::{self, BlockP99, Calibration};
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

/// Measures every candidate block size under live and stores the choice.
pub fn measure(opts: &CalibrateOptions, log: &mut dyn Write) -> Result<CalibrateReport, HostError> {
    if opts.runs == 0 {
        return Err(HostError::Usage("--runs must be at least 1".to_string()));
    }
    let (text, scene) = crate::host::read_scene(&opts.scene)?;
    let mut blocks = Vec::new();
    let mut first = None;
    for (i, &block) in CANDIDATES.iter().enumerate() {
        let mut plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(Profile::Live),
                block_size: Some(block),
                seed: opts.seed,
                resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
                ..CompileOptions::default()
            },
        )
        .map_err(HostError::Input)?;
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
    let (_, sample_rate, scene_sha256) = first.expect("there are candidates");
    let (block_size, meets_target) = recommend(&blocks).expect("there are candidates");
    let calibration = Calibration {
        machine: MachineKey::current(),
        scene: opts.scene.display().to_string(),
        scene_sha256,
        sample_rate,
        block_size,
        meets_target,
        blocks,
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
        match &self.stored {
            Some(p) => s += &format!("stored in {p}; `morphrt run --block-size auto` uses it\n"),
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
}
