//! What a render says when it is done: the summary lines on the log, the
//! input's and the MIDI file's lines, snapshots written, and the `--json`
//! summary.

use super::options::RenderOptions;
use super::write::RenderReport;
use crate::engine::ChangeFeed;
use crate::engine::Engine;
use crate::host::files::wav::WavLayout;
use crate::host::offline::input::{RenderInput, Tail};
use crate::host::offline::midi::RenderMidi;
use crate::host::record::snapshot::Written;
use crate::scene::{self, Diagnostic};
use std::io::Write;
use std::time::Duration;

/// The summary's length line for a render with input: which length was
/// used (`-d`, or the input's and the tail's).
pub(super) fn length_line(
    opts: &RenderOptions,
    input: &RenderInput,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> String {
    let s = |n: u64| n as f64 / sr as f64;
    let from = format!(
        "input from {} ({} ch, {})",
        input.shown,
        input.channels,
        input.format.describe()
    );
    match (tail, &opts.duration) {
        (Some(t), _) => {
            let (i, after) = t.split(report.frames);
            format!(
                "{from}; length: input {:.3} s + tail {:.3} s",
                s(i),
                s(after)
            )
        }
        (None, Some(d)) => format!("{from}; length: -d {}", d.text()),
        (None, None) => format!("{from}; length: the scene's duration"),
    }
}

/// The summary's MIDI lines: what was mapped, what could not land, and
/// the length (`-d`, the scene's duration, or the last event and the tail).
pub(super) fn midi_lines(
    midi: &RenderMidi,
    feed: Option<&ChangeFeed>,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> String {
    let mut lines = midi.error_lines();
    let lost = feed.map_or(&[][..], ChangeFeed::errors);
    for (at, e) in lost.iter().take(5) {
        lines.push(format!(
            "warning: a MIDI change at sample {at} did not land: {e}"
        ));
    }
    if lost.len() > 5 {
        lines.push(format!(
            "warning: {} more MIDI changes did not land",
            lost.len() - 5
        ));
    }
    let s = |n: u64| n as f64 / sr as f64;
    if let Some(n) = feed.map(ChangeFeed::pending).filter(|n| *n > 0) {
        lines.push(format!(
            "warning: {n} MIDI changes come after the render's end and did not play (the file's last event is at {:.3} s)",
            s(midi.end)
        ));
    }
    let length = match tail {
        Some(t) => {
            let (to, after) = t.split(report.frames);
            format!(
                "; length: last event {:.3} s + tail {:.3} s",
                s(to),
                s(after)
            )
        }
        None => String::new(),
    };
    lines.push(format!("{}{length}", midi.summary()));
    lines.join("\n")
}

/// `--json`'s `input`: the file, its shape, and the length's parts.
pub(super) fn input_json(
    input: &RenderInput,
    tail: Option<&Tail>,
    report: &RenderReport,
    sr: u32,
) -> serde_json::Value {
    let (input_frames, tail_frames) = tail.map_or((None, None), |t| {
        let (i, a) = t.split(report.frames);
        (Some(i), Some(a))
    });
    serde_json::json!({
        "file": input.shown.trim_matches('`'),
        "channels": input.channels,
        "format": input.format.describe(),
        "length": if tail.is_some() { "input+tail" } else { "duration" },
        "input_frames": input_frames,
        "tail_frames": tail_frames,
        "tail_s": tail_frames.map(|f| f as f64 / sr as f64),
    })
}

/// One line per snapshot written during the render, and a warning for
/// each one a render that ended with its tail did not reach.
pub(super) fn report_snapshots(
    written: &[(u64, Written, Duration)],
    stops: &[u64],
    sr: u32,
    log: &mut dyn Write,
) {
    for at in stops.iter().filter(|s| written.iter().all(|w| w.0 != **s)) {
        let _ = writeln!(
            log,
            "warning: no snapshot at sample {at} ({:.3}s): the render ended before it",
            *at as f64 / sr as f64
        );
    }
    for (at, w, saved) in written {
        let _ = writeln!(
            log,
            "snapshot at sample {at} ({:.3}s) written to {}: {} bytes, captured in {:.2} ms, written in {:.2} ms",
            *at as f64 / sr as f64,
            w.path.display(),
            w.bytes,
            saved.as_secs_f64() * 1e3,
            w.elapsed.as_secs_f64() * 1e3
        );
    }
}

/// What the render did: NaN/Inf replaced (`nan`: the first node, its
/// sample, the blocks, as [`first_nan`](crate::host::offline::ahead::first_nan) gives them), frames, profile, speed, levels.
#[allow(clippy::too_many_arguments)]
pub(super) fn report_render(
    engine: &Engine,
    nan: Option<(String, u64, u64)>,
    report: &RenderReport,
    layout: &WavLayout,
    start: u64,
    what: &str,
    length: Option<&str>,
    log: &mut dyn Write,
) {
    let sr = engine.sample_rate();
    if let Some((node, sample, blocks)) = nan {
        let _ = writeln!(
            log,
            "warning: node `{node}` produced NaN/Inf (first at sample {sample}); replaced with silence ({blocks} blocks affected)"
        );
    }
    let from = if start > 0 {
        format!(" from sample {start}")
    } else {
        String::new()
    };
    let rf64 = if layout.is_rf64() { " as RF64" } else { "" };
    let _ = writeln!(
        log,
        "rendered {} frames{from} ({:.3}s, {} ch, {} profile, block {}) to {what}{rf64} in {:.2}s ({:.1}x real time)",
        report.frames,
        report.frames as f64 / sr as f64,
        report.channels,
        engine.profile(),
        engine.block_size(),
        report.elapsed.as_secs_f64(),
        report.speed(sr)
    );
    if let Some(l) = length {
        let _ = writeln!(log, "{l}");
    }
    let _ = writeln!(log, "{}", report.levels.summary());
    if let Some(w) = report.levels.clip_warning() {
        let _ = writeln!(log, "{w}");
    }
}

/// `--json`: the render's summary, levels and the warnings printed before it.
pub(super) fn json_summary(
    opts: &RenderOptions,
    engine: &Engine,
    report: &RenderReport,
    layout: &WavLayout,
    start: u64,
    warnings: &[Diagnostic],
) -> serde_json::Value {
    let sr = engine.sample_rate();
    let duration_s = report.frames as f64 / sr as f64;
    let mut summary = serde_json::json!({
        "output": opts.output.display().to_string(),
        "format": opts.sample_format().name(),
        "container": match opts.container() {
            super::Container::Wav => "wav",
            super::Container::Flac => "flac",
        },
        "rf64": layout.is_rf64(),
        // A FLAC's size is known once written (none when streamed).
        "bytes": match opts.container() {
            super::Container::Wav => Some(layout.file_len().unwrap_or(u64::MAX)),
            super::Container::Flac => std::fs::metadata(&opts.output)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
        },
        "sample_rate": sr,
        "channels": report.channels,
        "start_frame": start,
        "frames": report.frames,
        "duration_s": duration_s,
        "profile": engine.profile().to_string(),
        "block_size": engine.block_size(),
        "hash": report.hash,
        "time_s": report.elapsed.as_secs_f64(),
        "rtf": report.elapsed.as_secs_f64() / duration_s,
        // The warnings printed before the render, as `check --json` gives them.
        "diagnostics": scene::Shown::new(warnings).json(),
        "truncated": scene::Shown::new(warnings).truncated(),
    });
    if let (Some(m), serde_json::Value::Object(levels)) =
        (summary.as_object_mut(), report.levels.json())
    {
        m.extend(levels);
    }
    summary
}
