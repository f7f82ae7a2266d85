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
//! Around the panels (`--width` × `--height` a channel, so one pixel
//! column is always a width-th of the range) margins hold the text, in the
//! embedded 8×8 bitmap font of [`crate::host::offline::canvas`] (doubled
//! from 800 × 300 up), never over the data:
//! - a title line: the file's name, the session profile (or "WAV file"),
//!   the sample rate, the channel count and the plotted range;
//! - left of each waveform its scale (`+1`, `0`, `-1`), left of each
//!   spectrogram its frequencies (`100 Hz`, `1 kHz`, …);
//! - right of each waveform the channel's name (`L`/`R` for two channels,
//!   else `ch 1`, `ch 2`, …), right of each spectrogram a colour bar of its
//!   dB scale with its levels;
//! - tick marks under every panel at a round time step (1, 2 or 5 × 10ⁿ
//!   seconds), labelled along the bottom (`0.5 s`).
//!
//! Tick counts follow from the pixels (see [`crate::host::offline::axes`]),
//! and the picture is the same bytes for the same input.
//!
//! The PNG is written under the output rules ([`crate::host::files::rules`])
//! by the one writer ([`crate::host::files::write`]): never over the scene
//! or a resource it reads, a missing directory refused before anything
//! renders, a regular file written under a temporary name and renamed into
//! place.

use crate::api::player::offline_player;
use crate::engine::Engine;
use crate::graph::{compile, CompileOptions};
use crate::host::files::rules::{check_extension, Inputs, Kind, Output};
use crate::host::offline::axes::{self, Tick};
use crate::host::offline::canvas::{fit, text_width, Canvas, Rgb, GLYPH};
use crate::host::offline::error::{PictureError, RenderError};
use crate::host::offline::render::MAX_RENDER_S;
use crate::host::HostError;
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
/// Limits of the panels' width, in pixels.
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
    /// A scene (JSON) or an audio file (WAV, AIFF, FLAC, MP3, Ogg Vorbis,
    /// told by its first bytes).
    pub input: PathBuf,
    /// The PNG file (must end in .png; never a file the plot reads), or
    /// `-` for standard output.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Start of the plotted range, e.g. 1.5s, 250ms, 4800samples (default 0).
    ///
    /// A range is at most 10 minutes, held in memory; one that is empty,
    /// reversed or past the end is refused (exit 2).
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
    ///
    /// An unsigned integer 0 … 18446744073709551615; a value outside that
    /// range says so.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Block size of a scene's render (default: the scene's, else the profile's).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Width of the panels in pixels (one column per width-th of the range); the labels' margins come on top.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Height of each channel's waveform and spectrogram together, in pixels (margins come on top).
    #[arg(long, default_value_t = 400)]
    pub height: u32,
    /// The spectrogram's frequency axis: log (20 Hz … Nyquist) or linear (0 … Nyquist).
    #[arg(long = "freq-scale", value_enum, default_value = "log")]
    pub freq_scale: FreqScale,
}

/// The plotted audio: the window's samples plus up to half an FFT of
/// context on each side, for the spectrogram at the window's edges.
struct Audio {
    /// What the samples are, for the title: `"repro profile"`, `"WAV file"`.
    source: String,
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
pub fn plot(
    opts: &PlotOptions,
    out: &mut (dyn Write + Send),
    log: &mut dyn Write,
) -> Result<(), HostError> {
    check_extension(&opts.output, &Kind::PLOT)?;
    for (what, v, (lo, hi)) in [
        ("--width", opts.width, WIDTH_RANGE),
        ("--height", opts.height, HEIGHT_RANGE),
    ] {
        if !(lo..=hi).contains(&v) {
            return Err(RenderError::PictureSize {
                flag: what,
                value: v,
                lo,
                hi,
            }
            .into());
        }
    }
    let mut inputs = Inputs::default();
    let (output, audio) = if is_audio(&opts.input) {
        read_wav(opts, &mut inputs, log)?
    } else {
        render_scene(opts, &mut inputs, log)?
    };
    let (png, (width, height)) = draw(&audio, opts, log)?;
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
        width,
        height,
        png.len()
    );
    Ok(())
}

/// Whether `p` is an audio file rather than a scene: its first bytes are
/// those of a format read (WAV, AIFF, FLAC, MP3, Ogg), or its name ends in
/// `.wav` (so a damaged WAV is refused as one). Only a regular file is
/// opened to look (a FIFO would wait for a writer).
fn is_audio(p: &Path) -> bool {
    use crate::host::files::media::{sniff, Sniffed};
    use std::io::Read;
    if has_extension(p, "wav") {
        return true;
    }
    let Ok(file) = crate::scene::resource::open_regular(p) else {
        return false;
    };
    let mut head = Vec::with_capacity(12);
    let _ = file.take(12).read_to_end(&mut head);
    sniff(&head) != Sniffed::Unknown
}

fn has_extension(p: &Path, ext: &str) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// An upper bound of the PNG's size, for the free-space check: the panels
/// and more than the margins' text can take.
fn png_bound(opts: &PlotOptions, channels: u64) -> u64 {
    let cell = (GLYPH * text_scale(opts)) as u64;
    let width = opts.width as u64 + 40 * cell;
    let height = channels * (opts.height as u64 + 6 * cell) + 6 * cell;
    let raw = width * height * 3;
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
            .position(sr, None, log)
            .map_err(|e| HostError::Usage(format!("--from {t}: {e}")))?,
        None => 0,
    };
    let to = match &opts.to {
        Some(t) => t
            .position(sr, None, log)
            .map_err(|e| HostError::Usage(format!("--to {t}: {e}")))?,
        None => total,
    };
    let secs = |n: u64| n as f64 / sr as f64;
    let end = format!(
        "the end is {:.3}s ({total} samples at {sr} Hz)",
        secs(total)
    );
    if to > total {
        return Err(RenderError::PastTheEnd {
            to: opts
                .to
                .as_ref()
                .map(TimeArg::text)
                .unwrap_or_default()
                .to_string(),
            file: opts.input.clone(),
            end,
        }
        .into());
    }
    if from >= to {
        return Err(RenderError::EmptyWindow {
            from: opts.from.as_ref().map_or("0", TimeArg::text).to_string(),
            from_s: secs(from),
            to: opts
                .to
                .as_ref()
                .map_or("(the end)", TimeArg::text)
                .to_string(),
            to_s: secs(to),
        }
        .into());
    }
    if to - from > MAX_WINDOW_S * sr as u64 {
        return Err(RenderError::WindowTooLong {
            seconds: secs(to - from),
            max_s: MAX_WINDOW_S,
        }
        .into());
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
        return Err(RenderError::SceneFlagForWav {
            flag,
            file: opts.input.clone(),
        }
        .into());
    }
    inputs.add("the WAV file", &opts.input);
    let file = opts.input.display().to_string();
    let data = crate::host::files::resources::read_wav(&opts.input)
        .map_err(|e| HostError::Input(vec![Diagnostic::error(&file, None, e.to_string())]))?;
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
            source: "WAV file".into(),
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
        resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
        ..CompileOptions::default()
    };
    let mut plan = compile(&scene, &copts).map_err(HostError::Input)?;
    for w in std::mem::take(&mut plan.warnings) {
        let _ = writeln!(log, "{w}");
    }
    if plan.input_width() > 0 {
        let _ = writeln!(
            log,
            "warning: scene `{}` reads audio input, which plot renders as silence: render it with `--input FILE.wav` and plot that WAV",
            plan.file
        );
    }
    let sr = plan.sample_rate;
    let profile = plan.session_profile;
    let total = match &opts.duration {
        Some(d) => d.length(sr, None, log).map_err(HostError::Usage)?,
        None => plan.duration.unwrap_or(10 * sr as u64),
    };
    if total > MAX_RENDER_S * sr as u64 {
        return Err(RenderError::PlotTooLong {
            seconds: total as f64 / sr as f64,
            max_s: MAX_RENDER_S,
        }
        .into());
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
    let engine = Engine::new(plan);
    let mut channels = vec![Vec::with_capacity((end - first) as usize); engine.channels()];
    let mut clock = 0u64;
    offline_player(engine)
        .play_frames(
            end,
            &[],
            None,
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
            source: format!("{} profile", profile.name()),
            sample_rate: sr,
            channels,
            first,
            from,
            to,
        },
    ))
}

const BACKGROUND: Rgb = [16, 20, 24];
const PANEL: Rgb = [28, 34, 42];
const WAVE: Rgb = [120, 200, 255];
const CLIPPED: Rgb = [255, 70, 60];
const ZERO_LINE: Rgb = [60, 70, 80];
const TICK: Rgb = [150, 150, 150];
const TEXT: Rgb = [230, 230, 230];

/// How many pixels each pixel of the 8×8 font takes: 2 in a picture of at
/// least 800 × 300 panel pixels a channel, else 1.
fn text_scale(opts: &PlotOptions) -> u32 {
    if opts.width >= 800 && opts.height >= 300 {
        2
    } else {
        1
    }
}

/// The spectrogram's frequency axis over `rows` pixel rows, low at the bottom.
struct FreqAxis {
    scale: FreqScale,
    /// The frequency at the bottom edge of a log axis: 20 Hz, or one bin.
    lo: f64,
    nyquist: f64,
    rows: u32,
}

impl FreqAxis {
    fn new(scale: FreqScale, sr: u32, nfft: usize, rows: u32) -> FreqAxis {
        FreqAxis {
            scale,
            lo: 20.0f64.max(sr as f64 / nfft as f64),
            nyquist: sr as f64 / 2.0,
            rows,
        }
    }

    /// The frequency at height `y` (0 is the top edge, `rows` the bottom).
    fn at(&self, y: f64) -> f64 {
        let k = 1.0 - y / self.rows as f64;
        match self.scale {
            FreqScale::Linear => self.nyquist * k,
            FreqScale::Log => self.lo * libm::pow(self.nyquist / self.lo, k),
        }
    }

    /// The pixel row that shows `f`.
    fn row(&self, f: f64) -> u32 {
        let k = match self.scale {
            FreqScale::Linear => f / self.nyquist,
            FreqScale::Log => libm::log(f / self.lo) / libm::log(self.nyquist / self.lo),
        };
        let y = libm::floor((1.0 - k) * self.rows as f64).max(0.0) as u32;
        y.min(self.rows - 1)
    }

    /// Labelled frequencies at least `min_px` apart, as ticks.
    fn ticks(&self, min_px: u32) -> Vec<Tick> {
        let values = match self.scale {
            FreqScale::Linear => axes::linear_values(0.0, self.nyquist, self.rows, min_px, &[]),
            FreqScale::Log => axes::log_values(self.lo, self.nyquist, self.rows, min_px),
        };
        values
            .into_iter()
            .map(|f| Tick {
                at: self.row(f),
                label: axes::hz_label(f),
            })
            .collect()
    }
}

/// What the picture's text says, worked out from the panels' sizes before
/// the margins around them (which are sized to hold it).
struct Labels {
    title: String,
    channels: Vec<String>,
    time_step: f64,
    /// Along the bottom, offsets from the panels' left edge.
    time: Vec<Tick>,
    /// Beside each waveform, offsets from its top.
    amplitude: Vec<Tick>,
    /// Beside each spectrogram, offsets from its top.
    freq: Vec<Tick>,
    /// Beside each spectrogram's colour bar, offsets from its top.
    level: Vec<Tick>,
}

impl Labels {
    fn new(audio: &Audio, opts: &PlotOptions, freq: &FreqAxis, wave_h: u32, scale: u32) -> Labels {
        let sr = audio.sample_rate as f64;
        let cell = GLYPH * scale;
        let (from, to) = (audio.from as f64 / sr, audio.to as f64 / sr);
        let (time_step, time) = axes::time_ticks(from, to, opts.width, cell);
        let amplitude = axes::linear_values(-1.0, 1.0, wave_h, 3 * cell, &[])
            .into_iter()
            .rev()
            .map(|v| Tick {
                at: ((1.0 - v) * 0.5 * (wave_h as f64 - 1.0)).round() as u32,
                label: axes::amplitude_label(v),
            })
            .collect();
        let (lo, hi) = DB_RANGE;
        let level_steps = [10.0, 20.0, 30.0, 40.0, 60.0, 120.0];
        let level = axes::linear_values(lo, hi, freq.rows, 3 * cell, &level_steps)
            .into_iter()
            .rev()
            .map(|db| Tick {
                at: ((hi - db) / (hi - lo) * (freq.rows as f64 - 1.0)).round() as u32,
                label: axes::db_label(db),
            })
            .collect();
        let nch = audio.channels.len();
        let channels = (1..=nch)
            .map(|c| match (nch, c) {
                (2, 1) => "L".to_string(),
                (2, _) => "R".to_string(),
                _ => format!("ch {c}"),
            })
            .collect();
        let name = opts.input.file_name().unwrap_or(opts.input.as_os_str());
        let title = format!(
            "{}: {}, {} Hz, {nch} ch, {from:.3} - {to:.3} s",
            name.to_string_lossy(),
            audio.source,
            audio.sample_rate
        );
        Labels {
            title,
            channels,
            time_step,
            time,
            amplitude,
            freq: freq.ticks(3 * cell),
            level,
        }
    }
}

/// Where each part of the picture goes, in pixels: a title line, then per
/// channel a waveform above a spectrogram (`--width` × `--height` between
/// them), with the level and frequency labels on the left, the channel's
/// name and a colour bar of the spectrogram's dB scale on the right, and
/// the time labels along the bottom.
struct Layout {
    scale: u32,
    /// The panels' left edge and width.
    left: u32,
    width: u32,
    /// The first waveform's top edge.
    top: u32,
    wave_h: u32,
    spec_h: u32,
    /// Rows between a channel's two panels (holding tick marks), and
    /// between one channel's spectrogram and the next one's waveform.
    gap: u32,
    channel_gap: u32,
    /// The whole picture.
    size: (u32, u32),
}

impl Layout {
    fn new(opts: &PlotOptions, nch: u32, labels: &Labels, wave_h: u32, scale: u32) -> Layout {
        let (cell, pad, tick) = (GLYPH * scale, 4 * scale, 4 * scale);
        let widest = |ticks: &[Tick]| ticks.iter().map(|t| text_width(&t.label, scale)).max();
        let left_labels = widest(&labels.amplitude)
            .max(widest(&labels.freq))
            .unwrap_or(0);
        let left = pad + left_labels + pad + tick;
        let level_labels = widest(&labels.level).unwrap_or(0);
        let channel_labels = labels.channels.iter().map(|s| text_width(s, scale)).max();
        let right = pad
            + channel_labels
                .unwrap_or(0)
                .max(BAR * scale + tick + pad + level_labels)
            + pad;
        let (gap, channel_gap) = (tick + 2 * scale, tick + 2 * pad);
        let top = pad + cell + pad;
        let bottom = tick + pad + cell + pad;
        let height = top + nch * (opts.height + gap) + nch.saturating_sub(1) * channel_gap + bottom;
        Layout {
            scale,
            left,
            width: opts.width,
            top,
            wave_h,
            spec_h: opts.height - wave_h,
            gap,
            channel_gap,
            size: (left + opts.width + right, height),
        }
    }

    /// The top edge of channel `c`'s waveform.
    fn wave_y(&self, c: usize) -> u32 {
        let channel = self.wave_h + self.gap + self.spec_h + self.channel_gap;
        self.top + c as u32 * channel
    }

    /// The top edge of channel `c`'s spectrogram.
    fn spec_y(&self, c: usize) -> u32 {
        self.wave_y(c) + self.wave_h + self.gap
    }

    /// The right edge of the panels, where the right margin starts.
    fn right(&self) -> u32 {
        self.left + self.width
    }
}

/// The colour bar's width, in font pixels.
const BAR: u32 = 12;

/// The samples column `x` of `w` covers: `[from + x·len/w, from + (x+1)·len/w)`,
/// at least one.
fn span(audio: &Audio, w: u32, x: u32) -> (u64, u64) {
    let len = audio.to - audio.from;
    let a = audio.from + x as u64 * len / w as u64;
    let b = audio.from + (x as u64 + 1) * len / w as u64;
    (a, b.max(a + 1))
}

/// Draws the picture and encodes it as PNG; also returns its size.
fn draw(
    audio: &Audio,
    opts: &PlotOptions,
    log: &mut dyn Write,
) -> Result<(Vec<u8>, (u32, u32)), HostError> {
    let failed = |e: PictureError| HostError::from(RenderError::Picture(e));
    let scale = text_scale(opts);
    let nfft = fft_size(audio.sample_rate);
    let wave_h = (opts.height * 2 / 5).max(16);
    let freq = FreqAxis::new(
        opts.freq_scale,
        audio.sample_rate,
        nfft,
        opts.height - wave_h,
    );
    let labels = Labels::new(audio, opts, &freq, wave_h, scale);
    let layout = Layout::new(opts, audio.channels.len() as u32, &labels, wave_h, scale);
    let mut canvas = Canvas::new(layout.size.0, layout.size.1, BACKGROUND);
    let mut stft = Stft::new(nfft);
    for c in 0..audio.channels.len() {
        draw_waveform(&mut canvas, audio, c, &layout);
        draw_spectrogram(&mut canvas, audio, c, &layout, &freq, &mut stft).map_err(failed)?;
    }
    draw_labels(&mut canvas, &layout, &labels, audio.channels.len());
    let _ = writeln!(
        log,
        "waveform: min/max per column, ±1 full scale; spectrogram: {nfft}-point Hann, {} frequency axis, {} … {} dB (viridis); time ticks every {}s from {:.3}s",
        opts.freq_scale.name(),
        DB_RANGE.0,
        DB_RANGE.1,
        labels.time_step,
        audio.from as f64 / audio.sample_rate as f64
    );
    let (w, h) = canvas.size();
    let png = encode_png(canvas.rgb(), w, h).map_err(failed)?;
    Ok((png, (w, h)))
}

/// Channel `c`'s waveform: min/max per column, −1 at the bottom, +1 at
/// the top, on a faint zero line.
fn draw_waveform(canvas: &mut Canvas, audio: &Audio, c: usize, layout: &Layout) {
    let (x0, y0, w, h) = (
        layout.left as i64,
        layout.wave_y(c) as i64,
        layout.width,
        layout.wave_h,
    );
    canvas.fill(x0, y0, w, h, PANEL);
    let y_of = |v: f64| ((1.0 - v.clamp(-1.0, 1.0)) * 0.5 * (h as f64 - 1.0)).round() as i64;
    canvas.fill(x0, y0 + y_of(0.0), w, 1, ZERO_LINE);
    for x in 0..w {
        let (a, b) = span(audio, w, x);
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
        let top = y_of(hi);
        canvas.fill(
            x0 + x as i64,
            y0 + top,
            1,
            (y_of(lo) - top + 1) as u32,
            colour,
        );
    }
}

/// The short-time Fourier transform of one column: a Hann-windowed FFT
/// and its buffers.
struct Stft {
    fft: std::sync::Arc<dyn realfft::RealToComplex<f64>>,
    window: Vec<f64>,
    /// A full-scale sine peaks at 0 dB: |X_k| · 2 / Σw.
    scale: f64,
    frame: Vec<f64>,
    spectrum: Vec<realfft::num_complex::Complex<f64>>,
    scratch: Vec<realfft::num_complex::Complex<f64>>,
    /// The last frame's level per bin, dB.
    db: Vec<f64>,
}

impl Stft {
    fn new(nfft: usize) -> Stft {
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(nfft);
        let window: Vec<f64> = (0..nfft)
            .map(|i| 0.5 - 0.5 * libm::cos(2.0 * core::f64::consts::PI * i as f64 / nfft as f64))
            .collect();
        Stft {
            scale: 2.0 / window.iter().sum::<f64>(),
            window,
            frame: fft.make_input_vec(),
            spectrum: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            db: vec![0.0; nfft / 2 + 1],
            fft,
        }
    }

    /// The level of each bin of channel `c` in the frame centred on sample `centre`.
    fn column(&mut self, audio: &Audio, c: usize, centre: i64) -> Result<&[f64], PictureError> {
        let start = centre - self.frame.len() as i64 / 2;
        for (i, s) in self.frame.iter_mut().enumerate() {
            *s = audio.at(c, start + i as i64) * self.window[i];
        }
        self.fft
            .process_with_scratch(&mut self.frame, &mut self.spectrum, &mut self.scratch)
            .map_err(PictureError::Fft)?;
        for (d, z) in self.db.iter_mut().zip(&self.spectrum) {
            let mag = (z.re * z.re + z.im * z.im).sqrt() * self.scale;
            *d = 20.0 * libm::log10(mag.max(1e-12));
        }
        Ok(&self.db)
    }
}

/// The viridis colour of `db` on the spectrogram's scale.
fn level_colour(db: f64) -> Rgb {
    let t = ((db - DB_RANGE.0) / (DB_RANGE.1 - DB_RANGE.0)).clamp(0.0, 1.0);
    let RGBColor(r, g, b) = ViridisRGB.get_color(t as f32);
    [r, g, b]
}

/// Channel `c`'s spectrogram: one STFT frame centred on each column, each
/// pixel row showing the loudest bin it spans.
fn draw_spectrogram(
    canvas: &mut Canvas,
    audio: &Audio,
    c: usize,
    layout: &Layout,
    freq: &FreqAxis,
    stft: &mut Stft,
) -> Result<(), PictureError> {
    let (x0, y0) = (layout.left as i64, layout.spec_y(c) as i64);
    let bin_hz = audio.sample_rate as f64 / (2 * (stft.db.len() - 1)) as f64;
    let last = stft.db.len() - 1;
    let row_bins: Vec<(usize, usize)> = (0..freq.rows)
        .map(|y| {
            let top = freq.at(y as f64) / bin_hz;
            let bottom = freq.at(y as f64 + 1.0) / bin_hz;
            let lo = bottom.round().max(0.0) as usize;
            let hi = (top.round() as usize).max(lo).min(last);
            (lo.min(last), hi)
        })
        .collect();
    for x in 0..layout.width {
        let (a, b) = span(audio, layout.width, x);
        let db = stft.column(audio, c, ((a + b) / 2) as i64)?;
        for (y, &(lo, hi)) in row_bins.iter().enumerate() {
            let level = db[lo..=hi]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            canvas.set(x0 + x as i64, y0 + y as i64, level_colour(level));
        }
    }
    Ok(())
}

/// Everything outside the panels: the title, tick marks and their labels,
/// the channels' names and the colour bars.
fn draw_labels(canvas: &mut Canvas, layout: &Layout, labels: &Labels, nch: usize) {
    let s = layout.scale;
    let (cell, pad, tick) = (GLYPH * s, 4 * s as i64, 4 * s);
    let title = fit(&labels.title, layout.size.0 - layout.left - pad as u32, s);
    canvas.text(layout.left as i64, pad, &title, s, TEXT);
    for c in 0..nch {
        let (wave_y, spec_y) = (layout.wave_y(c) as i64, layout.spec_y(c) as i64);
        for (y, h, ticks) in [
            (wave_y, layout.wave_h, &labels.amplitude),
            (spec_y, layout.spec_h, &labels.freq),
        ] {
            let x = layout.left as i64 - tick as i64;
            side_labels(canvas, PanelEdge { x, y, h }, ticks, s, Side::Left);
        }
        let right = layout.right() as i64 + pad;
        canvas.text(right, wave_y, &labels.channels[c], s, TEXT);
        for y in 0..layout.spec_h {
            let db = DB_RANGE.1 - (DB_RANGE.1 - DB_RANGE.0) * y as f64 / (layout.spec_h - 1) as f64;
            canvas.fill(right, spec_y + y as i64, BAR * s, 1, level_colour(db));
        }
        let bar_right = right + (BAR * s) as i64;
        let edge = PanelEdge {
            x: bar_right,
            y: spec_y,
            h: layout.spec_h,
        };
        side_labels(canvas, edge, &labels.level, s, Side::Right);
        // Time tick marks below both panels.
        for y in [wave_y + layout.wave_h as i64, spec_y + layout.spec_h as i64] {
            for t in &labels.time {
                canvas.fill(layout.left as i64 + t.at as i64, y, 1, tick, TICK);
            }
        }
    }
    let y =
        layout.spec_y(nch.saturating_sub(1)) as i64 + layout.spec_h as i64 + (tick as i64) + pad;
    let items: Vec<(i64, u32)> = labels
        .time
        .iter()
        .map(|t| (layout.left as i64 + t.at as i64, text_width(&t.label, s)))
        .collect();
    let placed = axes::place(&items, 0, layout.size.0 as i64, cell);
    for (t, x) in labels.time.iter().zip(placed) {
        if let Some(x) = x {
            canvas.text(x, y, &t.label, s, TEXT);
        }
    }
}

/// Which side of a panel or colour bar its labels are on.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

/// Where a panel's side labels go: the x their tick marks start at,
/// beside a panel whose top is row `y` and which is `h` rows high.
#[derive(Clone, Copy)]
struct PanelEdge {
    x: i64,
    y: i64,
    h: u32,
}

/// Tick marks going out from `edge` and their labels beyond them, each
/// centred on its tick unless that would cross the panel's top or bottom
/// or come near another label.
fn side_labels(canvas: &mut Canvas, edge: PanelEdge, ticks: &[Tick], s: u32, side: Side) {
    let PanelEdge { x, y, h } = edge;
    let (cell, tick, pad) = (GLYPH * s, 4 * s as i64, 4 * s as i64);
    let items: Vec<(i64, u32)> = ticks.iter().map(|t| (y + t.at as i64, cell)).collect();
    let placed = axes::place(&items, y, y + h as i64, s);
    for (t, top) in ticks.iter().zip(placed) {
        canvas.fill(x, y + t.at as i64, tick as u32, 1, TICK);
        let Some(top) = top else { continue };
        let width = text_width(&t.label, s) as i64;
        let left = match side {
            Side::Left => x - pad - width,
            Side::Right => x + tick + pad,
        };
        canvas.text(left, top, &t.label, s, TEXT);
    }
}

/// An RGB8 image as PNG.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, PictureError> {
    let mut png = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(PictureError::Png)?;
        writer.write_image_data(rgb).map_err(PictureError::Png)?;
    }
    Ok(png)
}
