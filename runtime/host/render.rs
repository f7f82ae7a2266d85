//! Offline rendering: exactly N frames of the main bus into a WAV file
//! (hound), with an optional SHA-256 of the samples at engine precision.

use crate::engine::{BusRef, Engine};
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
    run_blocks(
        engine,
        frames,
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
