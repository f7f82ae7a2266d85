//! Stored calibrations: the live block size `morphrt calibrate` chose for a
//! scene on this machine, which `run --block-size auto` plays with, and the
//! thread count and threshold it chose at that block size, which `run`
//! plays with when `--threads` is not given (and the threshold when
//! `--threads` asks for that count; `check` and `bench` show and time the
//! pool with it).
//!
//! One small JSON file in the platform's cache directory
//! (`$XDG_CACHE_HOME/morphrt/calibration.json` on Linux) holds one entry per
//! (machine key, scene hash, sample rate). A calibration measured on
//! another machine, another build or an edited scene does not match, so
//! `run` asks for a new one instead of trusting stale numbers.

use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind};
use crate::host::files::write::write_file;
use crate::host::machine::MachineKey;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// Identifies the file format.
pub const FORMAT: &str = "morphrt-calibration";
/// The format version this build reads and writes.
pub const VERSION: u32 = 1;

/// One block size's measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockP99 {
    pub block_size: usize,
    /// 99th percentile of the time to process one block, in microseconds.
    pub p99_us: f64,
    /// The block's real-time deadline (`block_size / sample_rate`).
    pub deadline_us: f64,
}

/// One thread count's measurement at the recommended block size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadP99 {
    /// Threads in all (1: the audio thread alone).
    pub threads: usize,
    /// The pool's threshold ([`crate::engine::Workers::min_work_ns`]) it
    /// ran with; `None` for one thread.
    pub min_work_ns: Option<u64>,
    /// 99th percentile of the time to process one block, in microseconds.
    pub p99_us: f64,
}

/// A stored calibration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Where and with what it was measured.
    pub machine: MachineKey,
    /// The scene file as given on the command line (for people reading the file).
    pub scene: String,
    /// [`crate::host::machine::scene_sha256`] of the scene and its resources.
    pub scene_sha256: String,
    pub sample_rate: u32,
    /// The recommended block size.
    pub block_size: usize,
    /// Whether `block_size` met the target (p99 under half its deadline);
    /// when no candidate did, the largest is recommended anyway.
    pub meets_target: bool,
    /// Every candidate's measurement, smallest block first.
    pub blocks: Vec<BlockP99>,
    /// The recommended thread count (1 in a calibration stored before
    /// threads were measured).
    #[serde(default = "one")]
    pub threads: usize,
    /// The pool's threshold chosen with `threads` (`None` for one thread).
    #[serde(default)]
    pub min_work_ns: Option<u64>,
    /// What handing an empty level to the pool and waiting for it took,
    /// in nanoseconds (the median; `None` on a one-core machine).
    #[serde(default)]
    pub handoff_ns: Option<f64>,
    /// Every thread count and threshold measured at `block_size`.
    #[serde(default)]
    pub thread_runs: Vec<ThreadP99>,
    /// Seconds since the Unix epoch.
    pub measured_at: u64,
}

fn one() -> usize {
    1
}

/// The most threads a stored calibration may recommend.
pub const MAX_THREADS: usize = u16::MAX as usize;

#[derive(Serialize, Deserialize)]
struct StoreFile {
    format: String,
    version: u32,
    entries: Vec<Calibration>,
}

/// The store's default location; `None` on a system without a cache directory.
pub fn store_path() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("morphrt").join("calibration.json"))
}

/// Why the store could not be read or written.
#[derive(Debug)]
pub enum StoreError {
    /// The file exists but could not be read.
    Read { path: PathBuf, source: io::Error },
    /// The file is not a store this build reads: `message` says how.
    Format { path: PathBuf, message: String },
    /// The store could not be written.
    Write(FileError),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Read { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            StoreError::Format { message, .. } => f.write_str(message),
            StoreError::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Read { source, .. } => Some(source),
            StoreError::Write(e) => Some(e),
            StoreError::Format { .. } => None,
        }
    }
}

impl From<StoreError> for crate::host::HostError {
    fn from(e: StoreError) -> crate::host::HostError {
        match e {
            StoreError::Write(f) => f.into(),
            other => crate::host::HostError::Store(other),
        }
    }
}

/// Every entry of the store at `path`; none when the file does not exist.
pub fn load(path: &Path) -> Result<Vec<Calibration>, StoreError> {
    // Read only a regular file: a FIFO in its place would block forever.
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            return Err(StoreError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "`{}` is {}, not a calibration store; remove it (morphrt keeps its calibrations in a regular file there)",
                    path.display(),
                    crate::scene::resource::file_kind(&m)
                ),
            });
        }
    }
    // Bytes, not a string: a byte that is not UTF-8 is then located by the
    // JSON reader like any other error.
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let format = |message: String| StoreError::Format {
        path: path.to_path_buf(),
        message,
    };
    let file: StoreFile = serde_json::from_slice(&text).map_err(|e| {
        format(format!(
            "`{}` is not a calibration store: {e}",
            path.display()
        ))
    })?;
    if file.format != FORMAT || file.version != VERSION {
        return Err(format(format!(
            "`{}` is a `{}` v{} file; this build reads `{FORMAT}` v{VERSION}",
            path.display(),
            file.format,
            file.version
        )));
    }
    let max = crate::profile::MAX_BLOCK_SIZE;
    if let Some((k, c)) = file
        .entries
        .iter()
        .enumerate()
        .find(|(_, c)| !(1..=max).contains(&c.block_size))
    {
        return Err(format(format!(
            "`{}`: entry {k} (`{}`) recommends block size {}; a block size is 1 … {max}",
            path.display(),
            c.scene,
            c.block_size
        )));
    }
    if let Some((k, c)) = file
        .entries
        .iter()
        .enumerate()
        .find(|(_, c)| !(1..=MAX_THREADS).contains(&c.threads))
    {
        return Err(format(format!(
            "`{}`: entry {k} (`{}`) recommends {} threads; a thread count is 1 … {MAX_THREADS}",
            path.display(),
            c.scene,
            c.threads
        )));
    }
    Ok(file.entries)
}

/// The stored calibration for this machine, scene and rate, if any.
pub fn lookup(
    path: &Path,
    machine: &MachineKey,
    scene_sha256: &str,
    sample_rate: u32,
) -> Result<Option<Calibration>, StoreError> {
    Ok(load(path)?.into_iter().find(|c| {
        c.machine == *machine && c.scene_sha256 == scene_sha256 && c.sample_rate == sample_rate
    }))
}

/// The calibration stored on this machine for the scene of `text`
/// (compiled to `plan`: its resources and rate), with the store's path;
/// `None` without a store or an entry for it. The error says why the store
/// could not be read (or that the system has no cache directory). Never
/// measures: calibrating takes seconds nobody asked for.
pub fn stored_for(
    text: &str,
    plan: &crate::graph::Plan,
) -> Result<Option<(Calibration, PathBuf)>, String> {
    (|| -> Result<_, Box<dyn std::error::Error>> {
        let path = store_path().ok_or("no cache directory on this system")?;
        if !path.exists() {
            // No store: nothing to hash the scene's resources for.
            return Ok(None);
        }
        let sha = crate::host::machine::scene_sha256(text.as_bytes(), &plan.resources)?;
        let found = lookup(&path, &MachineKey::current(), &sha, plan.sample_rate)?;
        Ok(found.map(|c| (c, path)))
    })()
    .map_err(|e| e.to_string())
}

/// The threshold of a pool ([`crate::engine::Workers::min_work_ns`]) and
/// where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub ns: u64,
    pub from: ThresholdFrom,
}

/// Where a pool's threshold comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ThresholdFrom {
    /// `--thread-min-work-ns`.
    Asked,
    /// The scene's calibration on this machine (the store's path), which
    /// chose the same thread count.
    Calibrated(PathBuf),
    /// [`crate::engine::MIN_WORK_NS`].
    Default,
}

impl Threshold {
    /// The threshold a pool of `threads` threads plays a scene with: the
    /// one asked for; else the one `calibrate` measured and stored for the
    /// scene (`stored`) when it chose this thread count; else the default.
    pub fn of(
        asked: Option<u64>,
        threads: usize,
        stored: Option<&(Calibration, PathBuf)>,
    ) -> Threshold {
        if let Some(ns) = asked {
            return Threshold {
                ns,
                from: ThresholdFrom::Asked,
            };
        }
        match stored {
            Some((c, path)) if c.threads == threads && c.min_work_ns.is_some() => Threshold {
                ns: c.min_work_ns.unwrap_or(crate::engine::MIN_WORK_NS),
                from: ThresholdFrom::Calibrated(path.clone()),
            },
            _ => Threshold {
                ns: crate::engine::MIN_WORK_NS,
                from: ThresholdFrom::Default,
            },
        }
    }

    /// [`of`](Self::of) for the scene of `text` compiled to `plan` (none:
    /// read from standard input), its calibration looked up only when no
    /// threshold is asked for.
    pub fn for_scene(
        asked: Option<u64>,
        threads: usize,
        text: Option<&str>,
        plan: &crate::graph::Plan,
    ) -> Threshold {
        let stored = match (asked, text) {
            (None, Some(text)) => stored_for(text, plan).ok().flatten(),
            _ => None,
        };
        Threshold::of(asked, threads, stored.as_ref())
    }

    /// Where it comes from, in words: `the default`, `as asked`,
    /// `calibrated for this scene and machine`.
    pub fn whence(&self) -> &'static str {
        match self.from {
            ThresholdFrom::Asked => "as asked",
            ThresholdFrom::Calibrated(_) => "calibrated for this scene and machine",
            ThresholdFrom::Default => "the default",
        }
    }

    /// Where it comes from, as `check --json` names it: `option`,
    /// `calibration`, `default`.
    pub fn key(&self) -> &'static str {
        match self.from {
            ThresholdFrom::Asked => "option",
            ThresholdFrom::Calibrated(_) => "calibration",
            ThresholdFrom::Default => "default",
        }
    }
}

/// Adds `cal` to the store, replacing an entry with the same key. The file
/// goes through the one writer (a temporary name, synced and renamed into
/// place), so a failed write never loses the other entries. An unreadable
/// store is replaced.
pub fn save(path: &Path, cal: &Calibration) -> Result<(), StoreError> {
    let mut entries = load(path).unwrap_or_default();
    entries.retain(|c| {
        !(c.machine == cal.machine
            && c.scene_sha256 == cal.scene_sha256
            && c.sample_rate == cal.sample_rate)
    });
    entries.push(cal.clone());
    let file = StoreFile {
        format: FORMAT.to_string(),
        version: VERSION,
        entries,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Write(FileError::io(
                dir,
                format!("cannot create `{}`", dir.display()),
                e,
            ))
        })?;
    }
    let text = serde_json::to_string_pretty(&file).expect("calibrations serialise") + "\n";
    write_file(path, &Inputs::default(), &Kind::CALIBRATION, |w| {
        w.write_all(text.as_bytes())
    })
    .map(drop)
    .map_err(StoreError::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_cannot_be_read_keeps_its_io_error_and_exits_1() {
        use std::error::Error;
        let e = crate::host::HostError::from(StoreError::Read {
            path: "cal.json".into(),
            source: io::Error::from_raw_os_error(libc::EACCES),
        });
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string().starts_with("error: cannot read `cal.json`: "),
            "{e}"
        );
        let io = e
            .source()
            .and_then(Error::source)
            .and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(io.and_then(io::Error::raw_os_error), Some(libc::EACCES));
    }

    fn cal(scene_sha256: &str, block_size: usize) -> Calibration {
        Calibration {
            machine: MachineKey::current(),
            scene: "a.json".to_string(),
            scene_sha256: scene_sha256.to_string(),
            sample_rate: 48000,
            block_size,
            meets_target: true,
            blocks: vec![BlockP99 {
                block_size,
                p99_us: 10.0,
                deadline_us: 1000.0,
            }],
            threads: 1,
            min_work_ns: None,
            handoff_ns: None,
            thread_runs: Vec::new(),
            measured_at: 0,
        }
    }

    #[test]
    fn entries_are_found_by_their_whole_key_and_replaced_in_place() {
        let dir = std::env::temp_dir().join(format!("morphrt-calib-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub").join("calibration.json");
        let me = MachineKey::current();
        assert_eq!(lookup(&path, &me, "aa", 48000).unwrap(), None);
        save(&path, &cal("aa", 64)).unwrap();
        save(&path, &cal("bb", 128)).unwrap();
        save(&path, &cal("aa", 32)).unwrap();
        assert_eq!(load(&path).unwrap().len(), 2);
        assert_eq!(
            lookup(&path, &me, "aa", 48000)
                .unwrap()
                .map(|c| c.block_size),
            Some(32)
        );
        assert_eq!(lookup(&path, &me, "aa", 44100).unwrap(), None);
        let other = MachineKey {
            cores: me.cores + 1,
            ..me.clone()
        };
        assert_eq!(lookup(&path, &other, "aa", 48000).unwrap(), None);
        std::fs::write(&path, "{ not json").unwrap();
        assert!(lookup(&path, &me, "aa", 48000).is_err());
        save(&path, &cal("aa", 64)).unwrap();
        assert_eq!(load(&path).unwrap().len(), 1);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["calibration.json"], "no temporary file is left");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
