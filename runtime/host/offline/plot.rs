//! `morphrt plot`: a picture of a scene's main bus (rendered into memory
//! through the offline render path) or of a WAV file, to look at instead of
//! listening for a click.
//!
//! The picture has, per channel, two panels over the same time axis:
//! - a waveform: for each pixel column the minimum and maximum sample of the
//!   samples it covers, so a single-sample click still shows as a full
//!   stroke; the scale is −1 … +1 (full scale), with a faint zero line, and
//!   columns that reach beyond full scale are drawn red;
//! - a spectrogram: the STFT magnitude (Hann window, centred on each column)
//!   in dB relative to a full-scale sine, from −120 dB (dark) to 0 dB
//!   (bright) through the viridis colour map, low frequencies at the bottom,
//!   on a log (20 Hz … Nyquist) or linear (0 … Nyquist) axis; each pixel row
//!   shows the loudest bin it spans.
//!
//! The picture has no text (no fonts, so no system libraries): tick marks
//! along the bottom of each panel mark time at a round step (1, 2 or 5 ×
//! 10ⁿ seconds) that the command prints, with the plotted range.
//!
//! The PNG is written under the output rules ([`crate::host::files::rules`])
//! by the one writer ([`crate::host::files::write`]): never over the scene
//! or a resource it reads, a missing directory refused before anything
//! renders, a regular file written under a temporary name and renamed into
//! place.

use crate::engine::try_run_blocks_with_stops;
use crate::engine::Engine;
use crate::graph::{compile, CompileOptions};
use crate::host::files::rules::{check_extension, Inputs, Kind, Output};
use crate::host::offline::render::MAX_RENDER_S;
use crate::host::HostError;
use crate::ops::AudioData;
use crate::profile::Profile;
use crate::scene::Diagnostic;
use crate::scene::TimeArg;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use realfft::RealFftPlanner;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The longest stretch one picture shows, in seconds: the window is held
/// in memory as f64 (10 minutes of stereo at 48 kHz is 460 MB), while a
/// render may run much longer to reach it.
pub const MAX_WINDOW_S: u64 = 10 * 60;
/// Picture width limits, in pixels.
pub const WIDTH_RANGE: (u32, u32) = (64, 16384);
/// Limits of the height of one channel's pair of panels, in pixels.
pub const HEIGHT_RANGE: (u32, u32) = (64, 4096);
/// The spectrogram's floor and ceiling, dB relative to a full-scale sine.
pub const DB_RANGE: (f64, f64) = (-120.0, 0.0);

/// The spectrogram's frequency axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FreqScale {
    /// 20 Hz (or one bin) … Nyquist, logarithmic.
    Log,
    /// 0 … Nyquist.
    Linear,
}

impl FreqScale {
    pub fn name(self) -> &'static str {
        match self {
            FreqScale::Log => "log",
            FreqScale::Linear => "linear",
        }
    }
}

/// What `morphrt plot` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct PlotOptions {
    /// A scene (JSON) or a .wav file.
    pub input: PathBuf,
    /// The PNG file (must end in .png; never a file the plot reads), or
    /// `-` for standard output.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Start of the plotted range, e.g. 1.5s, 250ms, 4800samples (default 0).
    #[arg(allow_hyphen_values = true, long)]
    pub from: Option<TimeArg>,
    /// End of the plotted range (default: the end).
    #[arg(allow_hyphen_values = true, long)]
    pub to: Option<TimeArg>,
    /// Session profile of a scene: strict, repro or live (default: the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// How long a scene runs (default: its duration, else 10s).
    #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
    pub duration: Option<TimeArg>,
    /// Replace a scene's seed.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Block size of a scene's render (default: the scene's, else the profile's).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Picture width in pixels (one column per width-th of the range).
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Height of each channel's waveform and spectrogram, in pixels.
    #[arg(long, default_value_t = 400)]
    pub height: u32,
    /// The spectrogram's frequency axis: log (20 Hz … Nyquist) or linear (0 … Nyquist).
    #[arg(long = "freq-scale", value_enum, default_value = "log")]
    pub freq_scale: FreqScale,
}

/// The plotted audio: the window's samples plus up to half an FFT of
/// context on each side, for the spectrogram at the window's edges.
struct Audio {
    sample_rate: u32,
    /// One vector per channel, covering samples `first ..`.
    channels: Vec<Vec<f64>>,
    /// The absolute sample index of `channels[_][0]`.
    first: u64,
    /// The plotted window, absolute samples.
    from: u64,
    to: u64,
}

impl Audio {
    /// Sample `n` (absolute) of channel `c`, zero outside what is held.
    fn at(&self, c: usize, n: i64) -> f64 {
        let k = n - self.first as i64;
        if k < 0 {
            return 0.0;
        }
        self.channels[c].get(k as usize).copied().unwrap_or(0.0)
    }
}

/// `morphrt plot`: checks the output, renders or reads the audio, draws it
/// and writes the PNG; a summary goes to `log`.
pub fn plot(opts: &PlotOptions, out: &mut dyn Write, log: &mut dyn Write) -> Result<(), HostError> {
    check_extension(&opts.output, &Kind::PLOT)?;
    for (what, v, (lo, hi)) in [
        ("--width", opts.width, WIDTH_RANGE),
        ("--height", opts.height, HEIGHT_RANGE),
    ] {
        if !(lo..=hi).contains(&v) {
            return Err(HostError::Usage(format!(
                "{what} {v} is out of range (valid: {lo} … {hi} pixels)"
            )));
        }
    }
    let mut inputs = Inputs::default();
    let (output, audio) = if has_extension(&opts.input, "wav") {
        read_wav(opts, &mut inputs, log)?
    } else {
        render_scene(opts, &mut inputs, log)?
    };
    let png = draw(&audio, opts, log)?;
    let what = output.describe();
    output.write_all(&png, out)?;
    let sr = audio.sample_rate as f64;
    let _ = writeln!(
        log,
        "plotted {} ch of `{}`, {:.3}s … {:.3}s (samples {} … {}) to {what}: {}×{} pixels, {} bytes",
        audio.channels.len(),
        opts.input.display(),
        audio.from as f64 / sr,
        audio.to as f64 / sr,
        audio.from,
        audio.to,
        opts.width,
        opts.height * audio.channels.len() as u32,
        png.len()
    );
    Ok(())
}

fn has_extension(p: &Path, ext: &str) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// An upper bound of the PNG's size, for the free-space check.
fn png_bound(opts: &PlotOptions, channels: u64) -> u64 {
    let raw = opts.width as u64 * opts.height as u64 * channels * 3;
    raw + raw / 100 + 4096
}

/// The plotted window `[from, to)` within `total` samples, refused when it
/// is empty, reversed or past the end.
fn window(
    opts: &PlotOptions,
    sr: u32,
    total: u64,
    log: &mut dyn Write,
) -> Result<(u64, u64), HostError> {
    let from = match &opts.from {
        Some(t) => t
            .position(sr, log)
            .map_err(|e| HostError::Usage(format!("--from {t}: {e}")))?,
        None => 0,
    };
    let to = match &opts.to {
        Some(t) => t
            .position(sr, log)
            .map_err(|e| HostError::Usage(format!("--to {t}: {e}")))?,
        None => total,
    };
    let secs = |n: u64| n as f64 / sr as f64;
    let end = format!(
        "the end is {:.3}s ({total} samples at {sr} Hz)",
        secs(total)
    );
    if to > total {
        return Err(HostError::Usage(format!(
            "--to {} is beyond the end of `{}`: {end}",
            opts.to.as_ref().map(TimeArg::text).unwrap_or_default(),
            opts.input.display()
        )));
    }
    if from >= to {
        return Err(HostError::Usage(format!(
            "--from {} ({:.3}s) is not before --to {} ({:.3}s): nothing to plot",
            opts.from.as_ref().map_or("0", TimeArg::text),
            secs(from),
            opts.to.as_ref().map_or("(the end)", TimeArg::text),
            secs(to)
        )));
    }
    if to - from > MAX_WINDOW_S * sr as u64 {
        return Err(HostError::Usage(format!(
            "{:.3}s is more than one picture shows ({MAX_WINDOW_S} s at most); choose a shorter range with --from/--to",
            secs(to - from)
        )));
    }
    Ok((from, to))
}

/// The FFT length of the spectrogram at `sr`: about 43 ms (2048 at 48 kHz).
fn fft_size(sr: u32) -> usize {
    (sr as usize / 24).next_power_of_two().clamp(256, 16384)
}

/// Reads the WAV file after checking the output (and that no scene option
/// was given).
fn read_wav(
    opts: &PlotOptions,
    inputs: &mut Inputs,
    log: &mut dyn Write,
) -> Result<(Output, Audio), HostError> {
    let scene_only = [
        ("--profile", opts.profile.is_some()),
        ("--seed", opts.seed.is_some()),
        ("--block-size", opts.block_size.is_some()),
        ("--resources", !opts.resources.is_empty()),
        ("-d", opts.duration.is_some()),
    ];
    if let Some((flag, _)) = scene_only.iter().find(|(_, given)| *given) {
        return Err(HostError::Usage(format!(
            "{flag} applies to a scene; `{}` is a WAV file, plotted as it is",
            opts.input.display()
        )));
    }
    inputs.add("the WAV file", &opts.input);
    let file = opts.input.display().to_string();
    let data = AudioData::load(&opts.input)
        .map_err(|e| HostError::Input(vec![Diagnostic::error(&file, None, e)]))?;
    let total = data.frames() as u64;
    if total == 0 {
        return Err(HostError::Input(vec![Diagnostic::error(
            &file,
            None,
            format!("`{file}` holds no samples; there is nothing to plot"),
        )]));
    }
    let (from, to) = window(opts, data.sample_rate, total, log)?;
    let bound = png_bound(opts, data.channels.len() as u64);
    let output = Output::prepare(&opts.output, inputs, bound, &Kind::PLOT)?;
    Ok((
        output,
        Audio {
            sample_rate: data.sample_rate,
            channels: data.channels,
            first: 0,
            from,
            to,
        },
    ))
}

/// Compiles the scene, checks the output, then renders up to the window's
/// end (plus context for the spectrogram), keeping only what is plotted.
fn render_scene(
    opts: &PlotOptions,
    inputs: &mut Inputs,
    log: &mut dyn Write,
) -> Result<(Output, Audio), HostError> {
    let (_, scene) = crate::host::read_scene(&opts.input)?;
    let copts = CompileOptions {
        profile: opts.profile,
        block_size: opts.block_size,
        seed: opts.seed,
        resource_dirs: opts.resources.clone(),
        ..CompileOptions::default()
    };
    let mut plan = compile(&scene, &copts).map_err(HostError::Input)?;
    for w in std::mem::take(&mut plan.warnings) {
        let _ = writeln!(log, "{w}");
    }
    let sr = plan.sample_rate;
    let total = match &opts.duration {
        Some(d) => d.length(sr, log).map_err(HostError::Usage)?,
        None => plan.duration.unwrap_or(10 * sr as u64),
    };
    if total > MAX_RENDER_S * sr as u64 {
        return Err(HostError::Usage(format!(
            "{:.3}s is longer than the render limit of 24 h ({MAX_RENDER_S} s)",
            total as f64 / sr as f64
        )));
    }
    let (from, to) = window(opts, sr, total, log)?;
    inputs.add("the scene", &opts.input);
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    let output = Output::prepare(
        &opts.output,
        inputs,
        png_bound(opts, plan.main.len() as u64),
        &Kind::PLOT,
    )?;

    let half = fft_size(sr) as u64 / 2;
    let first = from.saturating_sub(half);
    let end = (to + half).min(total);
    let mut engine = Engine::new(plan);
    let mut channels = vec![Vec::with_capacity((end - first) as usize); engine.channels()];
    let mut clock = 0u64;
    try_run_blocks_with_stops(
        &mut engine,
        end,
        &[],
        |_| Ok::<(), ()>(()),
        |bus| {
            for i in 0..bus.frames() {
                let n = clock + i as u64;
                if n >= first {
                    for (c, ch) in channels.iter_mut().enumerate() {
                        ch.push(bus.get(c, i));
                    }
                }
            }
            clock += bus.frames() as u64;
            Ok(())
        },
        |_| {},
    )
    .expect("the sink does not fail");
    Ok((
        output,
        Audio {
            sample_rate: sr,
            channels,
            first,
            from,
            to,
        },
    ))
}

/// The time step between tick marks: 1, 2 or 5 × 10ⁿ seconds, giving at
/// most about ten ticks over `seconds`.
pub fn tick_step(seconds: f64) -> f64 {
    let raw = seconds / 10.0;
    let base = libm::pow(10.0, libm::floor(libm::log10(raw)) - 1.0);
    let mut step = base;
    for m in [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0] {
        step = m * base;
        if step >= raw * (1.0 - 1e-9) {
            break;
        }
    }
    step
}

const BACKGROUND: RGBColor = RGBColor(16, 20, 24);
const WAVE: RGBColor = RGBColor(120, 200, 255);
const CLIPPED: RGBColor = RGBColor(255, 70, 60);
const ZERO_LINE: RGBColor = RGBColor(60, 70, 80);
const TICK: RGBColor = RGBColor(200, 200, 200);

/// Draws the picture and encodes it as PNG.
fn draw(audio: &Audio, opts: &PlotOptions, log: &mut dyn Write) -> Result<Vec<u8>, HostError> {
    let w = opts.width;
    let nch = audio.channels.len() as u32;
    let h = opts.height * nch;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    let sr = audio.sample_rate;
    let len = audio.to - audio.from;
    let seconds = len as f64 / sr as f64;
    let step = tick_step(seconds);
    let nfft = fft_size(sr);
    let failed = |e: String| HostError::Runtime(format!("cannot draw the picture: {e}"));
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&BACKGROUND).map_err(|e| failed(e.to_string()))?;
        let rows = root.split_evenly((nch as usize, 1));
        let wave_h = (opts.height * 2 / 5).max(16);
        // Column x covers samples [from + x·len/w, from + (x+1)·len/w).
        let span = |x: u32| {
            let a = audio.from + x as u64 * len / w as u64;
            let b = audio.from + (x as u64 + 1) * len / w as u64;
            (a, b.max(a + 1))
        };
        let ticks: Vec<i32> = {
            let mut t = (audio.from as f64 / sr as f64 / step).ceil() * step;
            let mut v = Vec::new();
            while t <= audio.to as f64 / sr as f64 + 1e-12 {
                let x = ((t * sr as f64 - audio.from as f64) / len as f64 * w as f64).round();
                v.push((x as i32).min(w as i32 - 1));
                t += step;
            }
            v
        };
        let mut planner = RealFftPlanner::<f64>::new();
        let fft = planner.plan_fft_forward(nfft);
        let window: Vec<f64> = (0..nfft)
            .map(|i| 0.5 - 0.5 * libm::cos(2.0 * core::f64::consts::PI * i as f64 / nfft as f64))
            .collect();
        // A full-scale sine peaks at 0 dB: |X_k| · 2 / Σw.
        let scale = 2.0 / window.iter().sum::<f64>();
        let mut frame = fft.make_input_vec();
        let mut spectrum = fft.make_output_vec();
        let mut scratch = fft.make_scratch_vec();
        for (c, row) in rows.iter().enumerate() {
            let (wave, spec) = row.split_vertically(wave_h);
            let spec_h = row.dim_in_pixel().1.saturating_sub(wave_h);
            // Waveform: min/max per column, −1 at the bottom, +1 at the top.
            let y_of = |v: f64| {
                let v = v.clamp(-1.0, 1.0);
                ((1.0 - v) * 0.5 * (wave_h as f64 - 1.0)).round() as i32
            };
            let mid = y_of(0.0);
            wave.draw(&PathElement::new(
                vec![(0, mid), (w as i32 - 1, mid)],
                ZERO_LINE,
            ))
            .map_err(|e| failed(e.to_string()))?;
            for x in 0..w {
                let (a, b) = span(x);
                let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                for n in a..b.min(audio.to) {
                    let v = audio.at(c, n as i64);
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                if lo > hi {
                    continue;
                }
                let colour = if hi > 1.0 || lo < -1.0 { CLIPPED } else { WAVE };
                for y in y_of(hi)..=y_of(lo) {
                    wave.draw_pixel((x as i32, y), &colour)
                        .map_err(|e| failed(e.to_string()))?;
                }
            }
            // Spectrogram: one STFT frame centred on each column.
            let nyquist = sr as f64 / 2.0;
            let bin_hz = sr as f64 / nfft as f64;
            let f_lo = 20.0f64.max(bin_hz);
            let freq_at = |y: f64| {
                let k = 1.0 - y / spec_h as f64; // 0 at the bottom, 1 at the top
                match opts.freq_scale {
                    FreqScale::Linear => nyquist * k,
                    FreqScale::Log => f_lo * libm::pow(nyquist / f_lo, k),
                }
            };
            // Each pixel row spans bins [lo, hi].
            let row_bins: Vec<(usize, usize)> = (0..spec_h)
                .map(|y| {
                    let top = freq_at(y as f64) / bin_hz;
                    let bottom = freq_at(y as f64 + 1.0) / bin_hz;
                    let lo = bottom.round().max(0.0) as usize;
                    let hi = (top.round() as usize).max(lo).min(nfft / 2);
                    (lo.min(nfft / 2), hi)
                })
                .collect();
            let mut db = vec![0.0; nfft / 2 + 1];
            for x in 0..w {
                let (a, b) = span(x);
                let centre = ((a + b) / 2) as i64;
                let start = centre - nfft as i64 / 2;
                for (i, s) in frame.iter_mut().enumerate() {
                    *s = audio.at(c, start + i as i64) * window[i];
                }
                fft.process_with_scratch(&mut frame, &mut spectrum, &mut scratch)
                    .map_err(|e| failed(e.to_string()))?;
                for (d, z) in db.iter_mut().zip(&spectrum) {
                    let mag = (z.re * z.re + z.im * z.im).sqrt() * scale;
                    *d = 20.0 * libm::log10(mag.max(1e-12));
                }
                for (y, &(lo, hi)) in row_bins.iter().enumerate() {
                    let level = db[lo..=hi]
                        .iter()
                        .copied()
                        .fold(f64::NEG_INFINITY, f64::max);
                    let t = ((level - DB_RANGE.0) / (DB_RANGE.1 - DB_RANGE.0)).clamp(0.0, 1.0);
                    let colour = ViridisRGB.get_color(t as f32);
                    spec.draw_pixel((x as i32, y as i32), &colour)
                        .map_err(|e| failed(e.to_string()))?;
                }
            }
            // Time ticks along the bottom of both panels.
            for &x in &ticks {
                for (area, bottom) in [(&wave, wave_h as i32 - 1), (&spec, spec_h as i32 - 1)] {
                    area.draw(&PathElement::new(vec![(x, bottom - 5), (x, bottom)], TICK))
                        .map_err(|e| failed(e.to_string()))?;
                }
            }
            // A separator above each channel but the first.
            if c > 0 {
                wave.draw(&PathElement::new(vec![(0, 0), (w as i32 - 1, 0)], TICK))
                    .map_err(|e| failed(e.to_string()))?;
            }
        }
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    let _ = writeln!(
        log,
        "waveform: min/max per column, ±1 full scale; spectrogram: {nfft}-point Hann, {} frequency axis, {} … {} dB (viridis); time ticks every {}s from {:.3}s",
        opts.freq_scale.name(),
        DB_RANGE.0,
        DB_RANGE.1,
        step,
        audio.from as f64 / sr as f64
    );
    encode_png(&rgb, w, h).map_err(failed)
}

/// An RGB8 image as PNG.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    let mut png = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    }
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_round_and_give_at_most_about_ten_ticks() {
        for (seconds, want) in [
            (1.0, 0.1),
            (2.0, 0.2),
            (4.0, 0.5),
            (10.0, 1.0),
            (0.02, 0.002),
        ] {
            let step = tick_step(seconds);
            assert!((step - want).abs() < want * 1e-9, "{seconds}s: {step}");
        }
    }
}
