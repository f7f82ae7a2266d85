//! What a render runs, decided before its first block: the compiled plan
//! (under a snapshot's settings when resuming), its length (frames, or an
//! input's or MIDI file's end and the tail), the warnings printed first,
//! the `--snapshot-at` samples, the files it reads, and the state a
//! resumed render carries.

use super::options::RenderOptions;
use crate::engine::Engine;
use crate::graph::{compile, CompileOptions, Plan};
use crate::host::files::rules::Inputs;
use crate::host::offline::error::RenderError;
use crate::host::offline::input::{RenderInput, Tail, TAIL_MAX_S};
use crate::host::record::snapshot::{SnapshotContext, SnapshotFile};
use crate::host::HostError;
use crate::scene::{self, Diagnostic};
use std::io::Write;
use std::time::Instant;

/// The plan a render runs, at `input_rate` when given (the input's, for a
/// scene that sets no rate): compiled under the arguments, or under the
/// snapshot's settings when resuming (a `--block-size` or `--seed` that
/// disagrees with the snapshot's is refused). `-v` says what it resolved.
pub(super) fn compile_for_render(
    opts: &RenderOptions,
    scene: &scene::Scene,
    snap: Option<&SnapshotFile>,
    input_rate: Option<u32>,
    log: &mut dyn Write,
) -> Result<Plan, HostError> {
    let copts = match snap {
        Some(s) => {
            if let Some(b) = opts.block_size.filter(|b| *b != s.block_size) {
                return Err(RenderError::ConflictsWithSnapshot {
                    flag: "--block-size",
                    given: b as u64,
                    snapshot: s.origin(),
                    taken: "at block size",
                    value: s.block_size as u64,
                }
                .into());
            }
            if let Some(seed) = opts.seed.filter(|x| s.seed.is_some_and(|y| y != *x)) {
                return Err(RenderError::ConflictsWithSnapshot {
                    flag: "--seed",
                    given: seed,
                    snapshot: s.origin(),
                    taken: "with seed",
                    value: s.seed.unwrap_or_default(),
                }
                .into());
            }
            let mut c = s.compile_options(opts.profile, opts.resources.clone());
            c.seed = c.seed.or(opts.seed);
            c
        }
        None => CompileOptions {
            profile: opts.profile,
            block_size: opts.block_size,
            seed: opts.seed,
            resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
            ..CompileOptions::default()
        },
    };
    let copts = CompileOptions {
        sample_rate: input_rate,
        ..copts
    };
    let compiling = Instant::now();
    let plan = compile(scene, &copts).map_err(HostError::Input)?;
    let compiled = compiling.elapsed();
    if crate::host::term::verbose() {
        let _ = writeln!(log, "{}", crate::host::verbose_plan(&plan));
        let _ = writeln!(
            log,
            "note: compiled in {:.1} ms",
            compiled.as_secs_f64() * 1e3
        );
    }
    Ok(plan)
}

/// How long a render is.
#[derive(Clone, Copy, Debug)]
pub(super) enum Length {
    /// Exactly this many frames: `-d`, the scene's duration, 10 s.
    Frames(u64),
    /// The input's length (`input` frames, when known before reading) and
    /// the scene's latency, then its tail ([`Tail`]).
    Tail { input: Option<u64>, latency: u64 },
}

impl Length {
    /// The least it writes: the header written first carries this.
    pub(super) fn least(&self) -> u64 {
        match *self {
            Length::Frames(n) => n,
            Length::Tail { input, latency } => input.map_or(0, |n| n + latency),
        }
    }

    /// The tail, and the most the render runs, when it ends with one.
    pub(super) fn tail(&self, start: u64, latency: usize, sr: u32) -> Option<(Tail, u64)> {
        match self {
            Length::Tail { .. } => Some((Tail::new(start, latency, sr), self.most(sr))),
            Length::Frames(_) => None,
        }
    }

    /// The most it may write, within the render limit.
    pub(super) fn most(&self, sr: u32) -> u64 {
        match *self {
            Length::Frames(n) => n,
            Length::Tail {
                input: Some(n),
                latency,
            } => (n + latency + TAIL_MAX_S * sr as u64).min(max_frames(sr)),
            Length::Tail { input: None, .. } => max_frames(sr),
        }
    }
}

/// How many frames to render: `-d`; else with an input its length and the
/// tail; else the scene's duration (else 10 s), less what a resumed
/// snapshot already rendered; within the render limit.
pub(super) fn render_length(
    opts: &RenderOptions,
    plan: &Plan,
    snap: Option<&SnapshotFile>,
    input: Option<&RenderInput>,
    midi_end: Option<u64>,
    log: &mut dyn Write,
) -> Result<Length, HostError> {
    let sr = plan.sample_rate;
    if let Some(d) = &opts.duration {
        return d
            .length(sr, plan.tempo.as_ref(), log)
            .map(Length::Frames)
            .map_err(HostError::Usage);
    }
    if let Some(i) = input {
        let latency = plan.latency as u64;
        if let Some(n) = i.frames.filter(|n| n + latency > max_frames(sr)) {
            return Err(over_limit(
                format!("the input {} ({n} frames)", i.shown),
                sr,
            ));
        }
        return Ok(Length::Tail {
            input: i.frames,
            latency,
        });
    }
    let start = snap.map_or(0, |s| s.clock);
    if let (None, Some(end)) = (plan.duration, midi_end) {
        let latency = plan.latency as u64;
        if end + latency > max_frames(sr) {
            return Err(over_limit(
                format!("the MIDI file (its last event at sample {end})"),
                sr,
            ));
        }
        return Ok(Length::Tail {
            input: Some(end.saturating_sub(start)),
            latency,
        });
    }
    let total = plan.duration.unwrap_or(10 * sr as u64);
    if total > max_frames(sr) {
        return Err(over_limit(
            format!(
                "the duration of scene `{}` ({} s)",
                plan.file,
                total as f64 / sr as f64
            ),
            sr,
        ));
    }
    if total <= start {
        return Err(RenderError::PastEnd {
            snapshot: snap.map(|s| s.origin()).unwrap_or_default(),
            at_s: start as f64 / sr as f64,
            end_s: total as f64 / sr as f64,
        }
        .into());
    }
    Ok(Length::Frames(total - start))
}

/// The render limit in samples at `sr`.
pub(super) fn max_frames(sr: u32) -> u64 {
    scene::max_duration_samples(sr)
}

/// The error for a length over [`MAX_RENDER_S`]; `what` says whose.
pub(super) fn over_limit(what: String, sr: u32) -> HostError {
    RenderError::TooLong {
        what,
        limit: scene::duration_limit_text(sr),
    }
    .into()
}

/// The compile's warnings, plus events past the end and a render slower
/// than real time, printed before the first block; returned for `--json`.
pub(super) fn warn_before_render(
    opts: &RenderOptions,
    plan: &mut Plan,
    start: u64,
    length: &Length,
    log: &mut dyn Write,
) -> Vec<Diagnostic> {
    let mut warnings = std::mem::take(&mut plan.warnings);
    let named = match (&opts.duration, length) {
        (Some(d), _) => format!("-d {}", d.text()),
        (None, Length::Tail { .. }) if opts.input.is_empty() => {
            "the MIDI file's last event and the tail".to_string()
        }
        (None, Length::Tail { .. }) => "the input's length and the tail".to_string(),
        (None, _) if plan.duration.is_some() => "the scene's duration".to_string(),
        (None, _) => "the default length of 10 s".to_string(),
    };
    let frames = length.least();
    // A tail's end is not known yet: only events past its longest end are.
    let end = match length {
        Length::Tail { input: None, .. } => None,
        _ => Some(start + length.most(plan.sample_rate)),
    };
    if let Some(end) = end {
        warnings.extend(crate::graph::events_after_end(plan, end, &named));
    }
    warnings.extend(crate::graph::slow_render_warning(plan, frames));
    if !warnings.is_empty() {
        let _ = writeln!(log, "{}", scene::Shown::new(&warnings));
    }
    warnings
}

/// The samples `--snapshot-at` names, sorted, each inside the render.
pub(super) fn snapshot_stops(
    opts: &RenderOptions,
    sr: u32,
    start: u64,
    frames: u64,
    log: &mut dyn Write,
) -> Result<Vec<u64>, HostError> {
    let mut stops: Vec<u64> = Vec::new();
    for t in &opts.snapshot_at {
        let at = t.length(sr, None, log).map_err(HostError::Usage)?;
        if at < start || at > start + frames {
            return Err(RenderError::SnapshotOutside {
                time: t.to_string(),
                at,
                start,
                end: start + frames,
            }
            .into());
        }
        stops.push(at);
    }
    stops.sort_unstable();
    stops.dedup();
    Ok(stops)
}

/// Every file the render reads, which no output may replace: the scene,
/// its resources, the snapshot resumed from.
pub(super) fn render_inputs(opts: &RenderOptions, plan: &Plan, from_stdin: bool) -> Inputs {
    let mut inputs = Inputs::default();
    if from_stdin {
        inputs.add_stdin("the scene (read from standard input)");
    } else {
        inputs.add("the scene", &opts.scene);
    }
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    if let Some(p) = &opts.resume {
        inputs.add("the snapshot resumed from", p);
    }
    inputs
}

/// Carries a snapshot's state into the fresh engine and says what carried.
pub(super) fn resume_from(
    s: &SnapshotFile,
    cx: &SnapshotContext,
    engine: &mut Engine,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let resumed = cx.resume(s, engine)?;
    for m in &resumed.messages {
        let _ = writeln!(log, "{m}");
    }
    let _ = writeln!(
        log,
        "resuming `{}` at sample {} ({:.3}s) under {}: {} of {} nodes carried",
        s.origin(),
        resumed.clock,
        resumed.clock as f64 / engine.sample_rate() as f64,
        engine.profile(),
        resumed.migration.carried,
        s.nodes.len()
    );
    Ok(())
}
