//! Offline rendering: exactly N frames of the main bus into a WAV file
//! (hound), with an optional SHA-256 of the samples at engine precision,
//! snapshots written at chosen samples, and renders that resume from a
//! snapshot.

pub mod interrupt;
pub mod output;
pub mod wav;

use super::snapshot::{numbered_path, SnapshotContext, SnapshotFile};
use super::HostError;
use crate::engine::{BusRef, Engine};
use crate::graph::{compile, CompileOptions};
use crate::profile::Profile;
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The WAV sample format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WavFormat {
    F32,
    I24,
    I16,
}

impl WavFormat {
    pub fn parse(s: &str) -> Option<WavFormat> {
        match s {
            "f32" => Some(WavFormat::F32),
            "i24" => Some(WavFormat::I24),
            "i16" => Some(WavFormat::I16),
            _ => None,
        }
    }
}

/// Integer PCM: scale by 2^(bits−1)−1, round half to even, clamp; no dither.
#[inline]
pub fn to_int(x: f64, bits: u32) -> i32 {
    let full = ((1i64 << (bits - 1)) - 1) as f64;
    let v = (x * full).round_ties_even();
    v.clamp(-full - 1.0, full) as i32
}

/// What a render did.
#[derive(Clone, Debug)]
pub struct RenderReport {
    pub frames: u64,
    pub channels: usize,
    /// Lower-case hex SHA-256 of the interleaved LE main-bus samples.
    pub hash: String,
    pub elapsed: Duration,
}

impl RenderReport {
    /// Seconds of audio rendered per second of wall time.
    pub fn speed(&self, sample_rate: u32) -> f64 {
        self.frames as f64 / sample_rate as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs the engine for exactly `frames` frames, calling `sink` with each block.
pub fn run_blocks(
    engine: &mut Engine,
    frames: u64,
    mut sink: impl FnMut(BusRef<'_>),
    mut progress: impl FnMut(u64),
) {
    let block = engine.block_size() as u64;
    let mut done = 0;
    while done < frames {
        let n = block.min(frames - done) as usize;
        engine.process_block(n);
        sink(engine.bus());
        done += n as u64;
        progress(done);
    }
}

/// Runs the engine for exactly `frames` frames from its clock, stopping at
/// each sample of `stops` (absolute, ascending; those outside the render are
/// ignored) to call `at_stop` there, between blocks.
///
/// Blocks end on the absolute grid (multiples of the block size) and at the
/// stops: a render that starts at a snapshot's sample takes exactly the
/// steps the render that wrote the snapshot took after it, and from a
/// fresh engine without stops the steps are those of [`run_blocks`].
pub fn run_blocks_with_stops<E>(
    engine: &mut Engine,
    frames: u64,
    stops: &[u64],
    mut at_stop: impl FnMut(&Engine) -> Result<(), E>,
    mut sink: impl FnMut(BusRef<'_>),
    mut progress: impl FnMut(u64),
) -> Result<(), E> {
    let block = engine.block_size() as u64;
    let start = engine.clock();
    let end = start + frames;
    let mut stops = stops
        .iter()
        .copied()
        .filter(|s| (start..=end).contains(s))
        .peekable();
    loop {
        let clock = engine.clock();
        while stops.next_if(|s| *s <= clock).is_some() {
            at_stop(engine)?;
        }
        if clock >= end {
            return Ok(());
        }
        let mut to = (clock / block + 1) * block;
        to = to.min(end);
        if let Some(s) = stops.peek() {
            to = to.min(*s);
        }
        engine.process_block((to - clock) as usize);
        sink(engine.bus());
        progress(to - start);
    }
}

/// Renders into memory: one f64 vector per channel (exact for both precisions).
pub fn render_to_vec(engine: &mut Engine, frames: u64) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::with_capacity(frames as usize); engine.channels()];
    run_blocks(
        engine,
        frames,
        |bus| {
            for (c, o) in out.iter_mut().enumerate() {
                o.extend((0..bus.frames()).map(|i| bus.get(c, i)));
            }
        },
        |_| {},
    );
    out
}

/// Adds one block of the bus to the hash (interleaved LE bytes at bus precision).
fn hash_block(hasher: &mut Sha256, bytes: &mut Vec<u8>, bus: BusRef<'_>) {
    bytes.clear();
    bus.write_le_interleaved(bytes);
    hasher.update(&bytes[..]);
}

/// Renders and hashes without writing a file.
pub fn render_hash(engine: &mut Engine, frames: u64) -> String {
    let mut hasher = Sha256::new();
    let mut bytes = Vec::new();
    run_blocks(
        engine,
        frames,
        |bus| hash_block(&mut hasher, &mut bytes, bus),
        |_| {},
    );
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Renders `frames` into a WAV file at `path`. The file is written under a
/// temporary name and renamed into place only when complete, so a failed
/// render never leaves a truncated file or destroys an existing one.
pub fn render_to_wav(
    engine: &mut Engine,
    path: &Path,
    frames: u64,
    format: WavFormat,
    show_progress: bool,
) -> Result<RenderReport, String> {
    render_to_wav_with_stops(engine, path, frames, format, show_progress, &[], |_| Ok(()))
}

/// [`render_to_wav`] from the engine's clock, calling `at_stop` exactly at
/// each sample of `stops` (see [`run_blocks_with_stops`]); an error there
/// abandons the render (no WAV file is left).
pub fn render_to_wav_with_stops(
    engine: &mut Engine,
    path: &Path,
    frames: u64,
    format: WavFormat,
    show_progress: bool,
    stops: &[u64],
    at_stop: impl FnMut(&Engine) -> Result<(), String>,
) -> Result<RenderReport, String> {
    let spec = hound::WavSpec {
        channels: engine.channels() as u16,
        sample_rate: engine.sample_rate(),
        bits_per_sample: match format {
            WavFormat::F32 => 32,
            WavFormat::I24 => 24,
            WavFormat::I16 => 16,
        },
        sample_format: match format {
            WavFormat::F32 => hound::SampleFormat::Float,
            _ => hound::SampleFormat::Int,
        },
    };
    let tmp = temp_path(path);
    let mut writer = hound::WavWriter::create(&tmp, spec)
        .map_err(|e| format!("cannot create `{}`: {e}", tmp.display()))?;
    let mut hasher = Sha256::new();
    let mut bytes = Vec::new();
    let mut err: Option<String> = None;
    let start = Instant::now();
    let progress = show_progress && std::io::stderr().is_terminal();
    let mut last_print = Instant::now();
    let sr = engine.sample_rate() as f64;
    let stopped = run_blocks_with_stops(
        engine,
        frames,
        stops,
        at_stop,
        |bus| {
            hash_block(&mut hasher, &mut bytes, bus);
            if err.is_some() {
                return;
            }
            for i in 0..bus.frames() {
                for c in 0..bus.channels() {
                    let x = bus.get(c, i);
                    let r = match format {
                        WavFormat::F32 => writer.write_sample(x as f32),
                        WavFormat::I24 => writer.write_sample(to_int(x, 24)),
                        WavFormat::I16 => writer.write_sample(to_int(x, 16) as i16),
                    };
                    if let Err(e) = r {
                        err = Some(format!("cannot write `{}`: {e}", tmp.display()));
                        return;
                    }
                }
            }
        },
        |done| {
            if progress && (last_print.elapsed() > Duration::from_millis(100) || done == frames) {
                last_print = Instant::now();
                let pct = done as f64 * 100.0 / frames.max(1) as f64;
                let mut e = std::io::stderr();
                let _ = write!(
                    e,
                    "\rrendering {pct:5.1}%  {:.2}s / {:.2}s",
                    done as f64 / sr,
                    frames as f64 / sr
                );
                if done == frames {
                    let _ = writeln!(e);
                }
            }
        },
    );
    let elapsed = start.elapsed();
    if let Err(e) = stopped {
        err = err.or(Some(e));
    }
    if let Some(e) = err {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    writer.finalize().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot finish `{}`: {e}", tmp.display())
    })?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot move the render into `{}`: {e}", path.display())
    })?;
    Ok(RenderReport {
        frames,
        channels: engine.channels(),
        hash: hex(&hasher.finalize()),
        elapsed,
    })
}

/// What `morphrt render` was asked to do.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// The scene file.
    pub scene: PathBuf,
    /// The WAV file to write (it appears only when the render completes).
    pub output: PathBuf,
    /// `--profile` (default: the snapshot's when resuming, else the scene's).
    pub profile: Option<Profile>,
    /// `-d`: the length to write (default: the scene's duration, else 10 s;
    /// when resuming, what remains of it after the snapshot).
    pub duration: Option<String>,
    /// The WAV sample format.
    pub format: WavFormat,
    /// `--seed`; when resuming it must agree with the snapshot's.
    pub seed: Option<u64>,
    /// `--block-size`; when resuming it must agree with the snapshot's.
    pub block_size: Option<usize>,
    /// Print the SHA-256 of the main-bus samples.
    pub hash: bool,
    /// `--resources` directories.
    pub resources: Vec<PathBuf>,
    /// Times on the scene's timeline (absolute, also when resuming) at which
    /// to write a snapshot.
    pub snapshot_at: Vec<String>,
    /// Where: the file itself for one time, else numbered by sample
    /// ([`numbered_path`]).
    pub snapshot_out: Option<PathBuf>,
    /// Continue from this snapshot: the WAV holds only the continuation.
    pub resume: Option<PathBuf>,
}

/// `morphrt render`: compiles the scene (at the snapshot's block size and
/// seed when resuming), carries the snapshot's state into the engine,
/// renders to the WAV file, writing snapshots on the way, and reports on
/// `log` (the hash goes to `out`).
pub fn render(
    opts: &RenderOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let (text, scene) = super::read_scene(&opts.scene)?;
    let snap = opts.resume.as_deref().map(SnapshotFile::read).transpose()?;
    let copts = match &snap {
        Some(s) => {
            if let Some(b) = opts.block_size.filter(|b| *b != s.block_size) {
                return Err(HostError::Usage(format!(
                    "--block-size {b} conflicts with snapshot `{}`, taken at block size {}; a resumed render keeps the snapshot's",
                    s.origin(),
                    s.block_size
                )));
            }
            if let Some(seed) = opts.seed.filter(|x| s.seed.is_some_and(|y| y != *x)) {
                return Err(HostError::Usage(format!(
                    "--seed {seed} conflicts with snapshot `{}`, taken with seed {}; a resumed render keeps the snapshot's",
                    s.origin(),
                    s.seed.unwrap_or_default()
                )));
            }
            let mut c = s.compile_options(opts.profile, opts.resources.clone());
            c.seed = c.seed.or(opts.seed);
            c
        }
        None => CompileOptions {
            profile: opts.profile,
            block_size: opts.block_size,
            seed: opts.seed,
            resource_dirs: opts.resources.clone(),
            ..CompileOptions::default()
        },
    };
    let mut plan = compile(&scene, &copts).map_err(HostError::Input)?;
    for w in std::mem::take(&mut plan.warnings) {
        let _ = writeln!(log, "{w}");
    }
    let sr = plan.sample_rate;
    let start = snap.as_ref().map_or(0, |s| s.clock);
    let frames = match &opts.duration {
        Some(d) => super::run::parse_duration(d, sr, log)?,
        None => {
            let total = plan.duration.unwrap_or(10 * sr as u64);
            if total <= start {
                return Err(HostError::Usage(format!(
                    "snapshot `{}` is at {:.3}s, at or past the scene's end ({:.3}s): give -d to render on",
                    snap.as_ref().map(|s| s.origin()).unwrap_or_default(),
                    start as f64 / sr as f64,
                    total as f64 / sr as f64
                )));
            }
            total - start
        }
    };
    let mut stops: Vec<u64> = Vec::new();
    for t in &opts.snapshot_at {
        let at = super::run::parse_duration(t, sr, log)?;
        if at < start || at > start + frames {
            return Err(HostError::Usage(format!(
                "--snapshot-at {t} (sample {at}) is outside the render (samples {start} … {})",
                start + frames
            )));
        }
        stops.push(at);
    }
    stops.sort_unstable();
    stops.dedup();
    let context = if stops.is_empty() && snap.is_none() {
        None
    } else {
        Some(SnapshotContext::new(&plan, &text)?)
    };
    let mut engine = Engine::new(plan);
    if let (Some(s), Some(cx)) = (&snap, &context) {
        let resumed = cx.resume(s, &mut engine)?;
        for m in &resumed.messages {
            let _ = writeln!(log, "{m}");
        }
        let _ = writeln!(
            log,
            "resuming `{}` at sample {} ({:.3}s) under {}: {} of {} nodes carried",
            s.origin(),
            resumed.clock,
            resumed.clock as f64 / sr as f64,
            engine.profile(),
            resumed.migration.carried,
            s.nodes.len()
        );
    }
    let several = stops.len() > 1;
    let mut written = Vec::new();
    let report = render_to_wav_with_stops(
        &mut engine,
        &opts.output,
        frames,
        opts.format,
        true,
        &stops,
        |e| {
            let (Some(cx), Some(base)) = (&context, &opts.snapshot_out) else {
                return Ok(());
            };
            let path = numbered_path(base, e.clock(), several);
            let captured = Instant::now();
            let st = e.snapshot();
            let capture = captured.elapsed();
            let w = cx.write(&st, &path).map_err(|err| err.to_string())?;
            written.push((e.clock(), w, capture));
            Ok(())
        },
    )
    .map_err(HostError::Runtime)?;
    for (at, w, capture) in &written {
        let _ = writeln!(
            log,
            "snapshot at sample {at} ({:.3}s) written to {}: {} bytes, captured in {:.2} ms, written in {:.2} ms",
            *at as f64 / sr as f64,
            w.path.display(),
            w.bytes,
            capture.as_secs_f64() * 1e3,
            w.elapsed.as_secs_f64() * 1e3
        );
    }
    if let Some((node, sample)) = engine.stats().first_nan {
        let _ = writeln!(
            log,
            "warning: node `{}` produced NaN/Inf (first at sample {sample}); replaced with silence ({} blocks affected)",
            engine.node_id(node),
            engine.stats().nan_events
        );
    }
    if opts.hash {
        let _ = writeln!(out, "{}", report.hash);
    }
    let from = if start > 0 {
        format!(" from sample {start}")
    } else {
        String::new()
    };
    let _ = writeln!(
        log,
        "rendered {} frames{from} ({:.3}s, {} ch, {} profile, block {}) to {} in {:.2}s ({:.1}x real time)",
        report.frames,
        report.frames as f64 / sr as f64,
        report.channels,
        engine.profile(),
        engine.block_size(),
        opts.output.display(),
        report.elapsed.as_secs_f64(),
        report.speed(sr)
    );
    Ok(())
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "render.wav".into());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_conversion_rounds_half_even_and_clamps() {
        assert_eq!(to_int(1.0, 16), 32767);
        assert_eq!(to_int(-1.0, 16), -32767);
        assert_eq!(to_int(2.0, 16), 32767);
        assert_eq!(to_int(-2.0, 16), -32768);
        // 0.5/32767 scales to exactly 0.5 → rounds to 0 (even); 1.5 → 2.
        assert_eq!(to_int(0.5 / 32767.0, 16), 0);
        assert_eq!(to_int(1.5 / 32767.0, 16), 2);
        assert_eq!(to_int(1.0, 24), 8388607);
    }
}
