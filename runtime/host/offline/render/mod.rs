//! Offline rendering: exactly N frames of the main bus into a WAV file,
//! with an optional SHA-256 of the samples at engine precision, levels
//! (peak, clipping, DC offset), snapshots written at chosen samples, and
//! renders that resume from a snapshot.
//!
//! A render never costs the user data: its output is checked before the
//! first block ([`crate::host::files::rules`]), written under a temporary
//! name or streamed ([`crate::host::files::write`]), cleaned up on every
//! failure and on SIGINT/SIGTERM ([`crate::host::files::signals`]), and
//! its header is RF64 when the file passes 4 GiB ([`crate::host::files::wav`]).
//!
//! | file | what it holds |
//! |---|---|
//! | `options` | the command's arguments, [`RenderOptions`] |
//! | `plan` | the plan, the length, the warnings and snapshots decided before the first block |
//! | `write` | what the player plays offline into the WAV ([`render_to_wav`], [`render_hash`]) |
//! | `report` | the summary, the input's and MIDI file's lines, `--json` |
//!
//! This file holds the command itself, [`render`].

mod options;
mod plan;
mod report;
mod write;

pub use options::{Container, RenderOptions};
pub use write::{render_hash, render_to_wav, RenderReport};

use crate::api::player::offline_player;
use crate::engine::ChangeFeed;
use crate::engine::Engine;
use crate::host::files::rules::{check_side_output, Inputs, Kind, Output};
use crate::host::files::signals::InterruptGuard;
use crate::host::files::wav::WavLayout;
use crate::host::offline::ahead::{self, Ahead};
use crate::host::offline::input::{open_early, open_input, protect};
use crate::host::offline::midi::{open_midi, protect_midi};
use crate::host::record::snapshot::{numbered_path, SnapshotContext, SnapshotFile, Written};
use crate::host::HostError;
use crate::scene::{self, Diagnostic};
use plan::{
    compile_for_render, render_inputs, render_length, resume_from, snapshot_stops,
    warn_before_render, Length,
};
use report::{input_json, json_summary, length_line, midi_lines, report_render, report_snapshots};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use write::{wav_layout, write_wav, WriteOptions};

/// The longest render, in seconds of audio: the one duration limit
/// ([`scene::MAX_DURATION_S`]) for `-d`, the scene's `duration`, `run
/// --duration` and a resumed render.
pub const MAX_RENDER_S: u64 = scene::MAX_DURATION_S;

/// The scene from standard input (`render -`): resources resolve from the
/// current directory.
fn read_stdin_scene() -> Result<(String, scene::Scene), HostError> {
    const FILE: &str = "<stdin>";
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| {
        HostError::Input(vec![Diagnostic::error(
            FILE,
            None,
            format!("cannot read the scene from standard input: {e}"),
        )])
    })?;
    let scene = scene::load_str(&text, FILE, Some(PathBuf::from("."))).map_err(HostError::Input)?;
    Ok((text, scene))
}

/// The scene with `--set-file`'s and then `--set`'s params written into
/// it (unchanged without either), loaded again under the name
/// `FILE (with --set)`.
fn with_sets(
    opts: &RenderOptions,
    text: String,
    scene: scene::Scene,
) -> Result<(String, scene::Scene), HostError> {
    let mut sets = Vec::new();
    if let Some(path) = &opts.set_file {
        sets.extend(read_set_file(path)?);
    }
    sets.extend(opts.set.iter().cloned());
    if sets.is_empty() {
        return Ok((text, scene));
    }
    let name = format!("{} (with --set)", scene.file);
    let edited = crate::api::set_params(&text, &sets).map_err(|e| {
        HostError::Input(vec![Diagnostic::error(
            &scene.file,
            None,
            format!("--set {e}"),
        )])
    })?;
    let scene =
        scene::load_str(&edited, &name, scene.dir().map(Into::into)).map_err(HostError::Input)?;
    Ok((edited, scene))
}

/// `--set-file`: a JSON object of `"node.param": value`, in its order.
fn read_set_file(path: &std::path::Path) -> Result<Vec<(String, serde_json::Value)>, HostError> {
    let file = path.display().to_string();
    let bad = |m: String| HostError::Input(vec![Diagnostic::error(&file, None, m)]);
    let text = scene::read_scene_text(path).map_err(HostError::Input)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("--set-file: not JSON: {e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(bad(
            "--set-file: expected one object of \"node.param\": value pairs, e.g. {\"lp.cutoff\": \"900Hz\"}".to_string(),
        ));
    };
    let mut out = Vec::with_capacity(map.len());
    for (key, v) in map {
        let (node, param) = key.rsplit_once('.').unwrap_or(("", ""));
        if node.is_empty() || param.is_empty() {
            return Err(bad(format!(
                "--set-file: `{key}` is not `node.param` (e.g. \"lp.cutoff\")"
            )));
        }
        out.push((key, v));
    }
    Ok(out)
}

/// `morphrt render`: compiles the scene (at the snapshot's block size and
/// seed when resuming), opens and checks the input, checks the output
/// before anything renders, carries the snapshot's state into the engine,
/// renders to the WAV, writing snapshots on the way, and reports on `log`
/// (the hash and the JSON summary go to `out`, or to `log` when `out`
/// carries the WAV).
pub fn render(
    opts: &RenderOptions,
    out: &mut (dyn Write + Send),
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let from_stdin = opts.scene.as_os_str() == "-";
    let (text, scene) = if from_stdin {
        read_stdin_scene()?
    } else {
        crate::host::read_scene(&opts.scene)?
    };
    let (text, scene) = with_sets(opts, text, scene)?;
    let snap = opts.resume.as_deref().map(SnapshotFile::read).transpose()?;
    // A scene without a `sample_rate` renders at its input's.
    let early = open_early(&opts.input, &scene, from_stdin);
    let input_rate = match &early {
        Some(Ok(wav)) => Some(wav.sample_rate()),
        _ => None,
    };
    let mut plan = compile_for_render(opts, &scene, snap.as_ref(), input_rate, log)?;
    let mut input = open_input(&opts.input, &plan, from_stdin, early, log)?;
    let mut conversions = plan.conversions.clone();
    conversions.extend(input.as_ref().and_then(|i| i.conversion.clone()));
    let sr = plan.sample_rate;
    let start = snap.as_ref().map_or(0, |s| s.clock);
    let midi = open_midi(&opts.midi, &plan, start)?;
    let midi_end = midi.as_ref().map(|m| m.end);
    let length = render_length(opts, &plan, snap.as_ref(), input.as_ref(), midi_end, log)?;
    let warnings = warn_before_render(opts, &mut plan, start, &length, log);
    let stops = snapshot_stops(opts, sr, start, length.most(sr), log)?;
    let several = stops.len() > 1;

    // Everything read, and where everything goes, is known: check the
    // output now, before any block renders.
    let mut inputs = render_inputs(opts, &plan, from_stdin);
    protect(&mut inputs, &opts.input);
    protect_midi(&mut inputs, &opts.midi);
    let flac = opts.container() == Container::Flac;
    if flac {
        crate::host::offline::flac_out::check_format(opts.sample_format())?;
    }
    let layout = wav_layout(plan.main.len(), sr, opts.sample_format(), length.least())?;
    let output = prepare_outputs(opts, &layout, &inputs, &stops, several)?;

    let context = if stops.is_empty() && snap.is_none() {
        None
    } else {
        Some(SnapshotContext::new(&plan, &text)?)
    };
    let latency = plan.latency;
    let threads = opts.threads.count(crate::host::files::threads::all_cores());
    // Half of a wide sum ahead on a thread of its own (`ahead.rs`), when
    // nothing but time moves what it plays, into a file (a render whose
    // part ahead spoils it keeps nothing and plays again without it).
    // Why nothing is put ahead, as `-v` says it (`None`: something may be).
    let mut not_ahead: Option<&str> = if threads < 2 {
        Some("one thread")
    } else if opts.threads.no_ahead {
        Some("--no-ahead")
    } else if snap.is_some() {
        Some("--resume")
    } else if !stops.is_empty() {
        Some("--snapshot-at")
    } else if midi.is_some() {
        Some("--midi")
    } else if opts.input.iter().any(|p| p.as_os_str() == "-") {
        // An input read twice (when the pass is played again) must be a file.
        Some("the input is standard input")
    } else if !matches!(
        output.dest,
        crate::host::files::rules::Destination::File { .. }
    ) {
        Some("the output is not a regular file")
    } else if !ahead::may_cut(&plan) {
        Some(ahead::not_cut_because(&plan))
    } else {
        None
    };
    let mut try_ahead = not_ahead.is_none();
    let settings = try_ahead.then(|| ahead::Settings::of(&plan));
    let no_cut = ahead::not_cut_because(&plan);
    // The pool's threshold `calibrate` measured for the scene on this
    // machine at the pool's thread count, as `run` plays with it (`check`
    // shows the plan at it).
    let calibrated = calibrated_threshold(opts, threads, (!from_stdin).then_some(&*text), &plan);
    let mut threshold_said = false;
    let mut whole = Some(plan);
    let mut output = Some(output);
    // Installed after a FIFO was opened (that open may wait for a reader,
    // and Ctrl-C there should simply end the process) and before the
    // temporary file exists; once for every pass, so that a signal during
    // a pass that is played again still stops the render.
    let guard = InterruptGuard::install();
    // Time spent on a pass that was played again.
    let mut wasted = Duration::ZERO;
    let mut written = Vec::new();
    let mut feed = midi
        .as_ref()
        .map(|m| ChangeFeed::with_notes(m.changes.clone(), m.notes.clone()));
    // The cut of the pass that played (`--json`'s `ahead`), and of one
    // given up (`ahead_given_up`).
    let mut played_cut: Option<ahead::Cut>;
    let mut given_up: Option<ahead::Cut> = None;
    let (player, ahead, report, tail, what, to_stdout) = loop {
        let output = match output.take() {
            Some(o) => o,
            None => prepare_outputs(opts, &layout, &inputs, &stops, several)?,
        };
        let plan = whole.as_ref().expect("the whole plan until it plays");
        let parts = settings
            .as_ref()
            .filter(|_| try_ahead)
            .and_then(|_| {
                ahead_parts(
                    opts,
                    plan,
                    &scene,
                    (input_rate, input.as_ref()),
                    length.most(sr),
                )
            })
            .transpose()?;
        let (mut engine, mut ahead) = match parts {
            Some((ahead, rest, cut)) => {
                if crate::host::term::verbose() {
                    let _ = writeln!(log, "ahead: {}", cut.describe());
                }
                played_cut = Some(cut);
                (rest, Some(ahead))
            }
            None => {
                played_cut = None;
                if crate::host::term::verbose() {
                    let why = not_ahead.unwrap_or(no_cut);
                    let who = match threads {
                        1 => "one thread plays".to_string(),
                        n => format!("{n} threads play"),
                    };
                    let _ = writeln!(log, "ahead: nothing ({why}); {who} every block");
                }
                (Engine::new(whole.take().expect("the whole plan")), None)
            }
        };
        let pool = if ahead.is_some() {
            threads - 1
        } else {
            threads
        };
        let workers = opts.threads.workers_of(pool, false)?;
        if let (Some(w), Some(ns)) = (&workers, calibrated(pool)) {
            w.set_min_work_ns(ns);
            if !std::mem::replace(&mut threshold_said, true) {
                let _ = writeln!(
                    log,
                    "thread threshold {:.1} µs (calibrated for this scene and machine)",
                    ns as f64 / 1e3
                );
            }
        }
        engine.set_workers(workers);
        if let Some(feed) = ahead.as_mut().and_then(Ahead::feed) {
            engine.set_input_feed(feed);
        }
        if let (Some(s), Some(cx)) = (&snap, &context) {
            resume_from(s, cx, &mut engine, log)?;
        }
        // The part ahead reads the input when there is one (`ahead.rs`).
        if let (Some(i), None) = (&input, &ahead) {
            engine.set_input_feed(i.feed());
        }
        let mut player = offline_player(engine);
        let mut tail = length.tail(start, latency, sr);
        if let (None, Some((t, _)), Length::Tail { input: Some(n), .. }) =
            (&input, &mut tail, length)
        {
            // The MIDI file's end is known before the render: the tail starts there.
            t.input_ended(n);
        }
        let to_stdout = output.is_stdout();
        let what = output.describe();
        let spoiled = ahead.as_ref().map(Ahead::spoiled);
        let keeps = |rest: &Engine| ahead.as_ref().is_none_or(|a| a.keeps(rest));
        let pass = Instant::now();
        let mut no_stdout = std::io::sink();
        let sink = output.start(if to_stdout { &mut *out } else { &mut no_stdout })?;
        let played = write_wav(
            &mut player,
            sink,
            &what,
            &layout,
            &WriteOptions {
                progress: true,
                stops: &stops,
                interrupt: Some(&guard),
                input: input.as_ref(),
                tail,
                flac,
                hash: opts.hash || opts.json,
                spoiled: spoiled.as_deref(),
                keeps: Some(&keeps),
            },
            feed.as_mut(),
            snapshot_writer(context.as_ref(), opts, several, &inputs, &mut written),
        );
        let end = player.engine().clock();
        let finished = ahead.map(|a| a.finish(end));
        match (played, finished) {
            (Ok((mut report, tail)), Some(ahead)) => {
                report.elapsed += wasted;
                break (player, ahead, report, tail, what, to_stdout);
            }
            (Ok((mut report, tail)), None) => {
                report.elapsed += wasted;
                break (player, None, report, tail, what, to_stdout);
            }
            (Err(e), Some(_)) if ahead::spoiled_error(&e) => {
                // Nothing was kept: the whole scene plays on one engine.
                let _ = writeln!(
                    log,
                    "note: what the part of the scene rendered ahead gave is not what the whole scene plays here (GUIDE.md, Threads); rendering the whole scene again on one engine"
                );
                wasted += pass.elapsed();
                try_ahead = false;
                not_ahead = Some("what the part ahead gave was not what the whole scene plays");
                given_up = played_cut.take();
                // The part ahead read the input: it is read again from its start.
                if input.is_some() {
                    let plan = whole.as_ref().expect("the whole plan until it plays");
                    input = open_input(&opts.input, plan, from_stdin, None, &mut std::io::sink())?;
                }
            }
            (Err(e), _) => return Err(with_snapshots_kept(e, &written, sr)),
        }
    };
    drop(guard);
    drop(whole);
    let engine = player.engine();
    let layout = WavLayout {
        frames: report.frames,
        ..layout
    };
    let length_text = match (&input, &midi) {
        // The input's line gives the length; the MIDI file's lines say
        // what it played.
        (Some(i), Some(m)) => Some(format!(
            "{}\n{}",
            length_line(opts, i, tail.as_ref(), &report, sr),
            midi_lines(m, feed.as_ref(), None, &report, sr)
        )),
        (Some(i), None) => Some(length_line(opts, i, tail.as_ref(), &report, sr)),
        (None, Some(m)) => Some(midi_lines(m, feed.as_ref(), tail.as_ref(), &report, sr)),
        (None, None) => None,
    };
    report_snapshots(&written, &stops, sr, log);
    for c in &conversions {
        let _ = writeln!(log, "converted: {c}");
    }
    report_render(
        engine,
        ahead::first_nan(engine, ahead.as_ref().zip(settings.as_ref())),
        &report,
        &layout,
        start,
        &what,
        length_text.as_deref(),
        log,
    );
    let json = opts.json.then(|| {
        let mut summary = json_summary(opts, engine, &report, &layout, start, &warnings);
        summary["threads"] = threads.into();
        // The threshold of the pool the render's blocks ran on (none: one
        // thread, or two with a part ahead).
        summary["thread_min_work_ns"] = engine
            .workers()
            .map_or(serde_json::Value::Null, |w| w.min_work_ns().into());
        let cut_json = |c: &Option<ahead::Cut>| {
            c.as_ref().map_or(
                serde_json::Value::Null,
                |c| serde_json::json!({ "sum": c.sum, "taken": c.taken, "edges": c.edges }),
            )
        };
        summary["ahead"] = cut_json(&played_cut);
        summary["ahead_given_up"] = cut_json(&given_up);
        summary["conversions"] = conversions
            .iter()
            .map(crate::graph::conversion_json)
            .collect();
        if let (Some(i), Some(m)) = (&input, summary.as_object_mut()) {
            m.insert("input".into(), input_json(i, tail.as_ref(), &report, sr));
        }
        if let (Some(midi), Some(m)) = (&midi, summary.as_object_mut()) {
            m.insert("midi".into(), midi.json(sr));
        }
        serde_json::to_string_pretty(&summary).expect("json")
    });
    let asked = json.or_else(|| report.hash.clone().filter(|_| opts.hash));
    if let Some(text) = asked {
        // Standard output carries the WAV with `-o -`: the hash and the
        // summary go to the log then, or straight to stderr under `-q`,
        // where the log keeps only errors but what was asked for still prints.
        let _ = match (to_stdout, crate::host::term::quiet()) {
            (false, _) => writeln!(out, "{text}"),
            (true, false) => writeln!(log, "{text}"),
            (true, true) => writeln!(std::io::stderr(), "{text}"),
        };
    }
    Ok(())
}

/// The part of the scene rendered ahead (`ahead.rs`), started, and the
/// plan of the rest; `None` when the scene cannot be cut or a part
/// compiles to other settings than the whole (the render then plays the
/// whole scene as it is).
fn ahead_parts(
    opts: &RenderOptions,
    plan: &crate::graph::Plan,
    scene: &scene::Scene,
    (input_rate, input): (
        Option<u32>,
        Option<&crate::host::offline::input::RenderInput>,
    ),
    frames: u64,
) -> Option<Result<(Ahead, Engine, ahead::Cut), HostError>> {
    let opts = opts.clone();
    let compile = move |part: &scene::Scene| {
        compile_for_render(&opts, part, None, input_rate, &mut std::io::sink()).ok()
    };
    let started = ahead::start_parts(plan, scene, compile, input.is_some(), frames)?;
    let (mut ahead, rest, cut) = match started {
        Ok(s) => s,
        Err(source) => {
            return Some(Err(HostError::Thread {
                what: ahead::WHAT,
                source,
            }))
        }
    };
    // Only once both parts fit: a cut given up plays the whole scene,
    // which reads the input from its start.
    if let Some(i) = input {
        ahead.read_input(i.feed());
    }
    Some(Ok((ahead, rest, cut)))
}

/// For a pool of so many threads, the threshold `calibrate` stored for the
/// scene of `text` compiled to `plan` on this machine, when it chose that
/// count and no `--thread-min-work-ns` is given (`None`: the pool keeps its
/// own). The store is read once, for a render on `threads` threads: its
/// pool has `threads`, or one fewer when the render is cut.
fn calibrated_threshold(
    opts: &RenderOptions,
    threads: usize,
    text: Option<&str>,
    plan: &crate::graph::Plan,
) -> impl Fn(usize) -> Option<u64> {
    use crate::host::machine::calibration::{stored_for, Threshold, ThresholdFrom};
    let stored = match text {
        Some(text) if threads >= 2 && opts.threads.min_work_ns.is_none() => {
            stored_for(text, plan).ok().flatten()
        }
        _ => None,
    };
    move |pool| {
        let t = Threshold::of(None, pool, stored.as_ref());
        matches!(t.from, ThresholdFrom::Calibrated(_)).then_some(t.ns)
    }
}

/// A render stopped by a signal after writing snapshots says they are
/// kept, and where (its output is not).
fn with_snapshots_kept(e: HostError, written: &[(u64, Written, Duration)], sr: u32) -> HostError {
    match e {
        HostError::Interrupted { signal, message } if !written.is_empty() => {
            let kept: Vec<String> = written
                .iter()
                .map(|(at, w, _)| {
                    format!("`{}` (at {:.2}s)", w.path.display(), *at as f64 / sr as f64)
                })
                .collect();
            let s = if kept.len() == 1 { "" } else { "s" };
            HostError::Interrupted {
                signal,
                message: format!(
                    "{message}; the snapshot{s} written before it kept: {}",
                    kept.join(", ")
                ),
            }
        }
        other => other,
    }
}

/// Writes a snapshot at each stop (`--snapshot-at`), noting what it wrote.
fn snapshot_writer<'a>(
    context: Option<&'a SnapshotContext>,
    opts: &'a RenderOptions,
    several: bool,
    inputs: &'a Inputs,
    written: &'a mut Vec<(u64, Written, Duration)>,
) -> impl FnMut(&Engine) -> Result<(), HostError> + 'a {
    move |e| {
        let (Some(cx), Some(base)) = (context, &opts.snapshot_out) else {
            return Ok(());
        };
        let path = numbered_path(base, e.clock(), several);
        let saving = Instant::now();
        let st = e.snapshot();
        let saved = saving.elapsed();
        let w = cx.write(&st, &path, inputs)?;
        written.push((e.clock(), w, saved));
        Ok(())
    }
}

/// Checks the WAV output and every snapshot's before anything renders.
fn prepare_outputs(
    opts: &RenderOptions,
    layout: &WavLayout,
    inputs: &Inputs,
    stops: &[u64],
    several: bool,
) -> Result<Output, HostError> {
    let kind = match opts.container() {
        Container::Wav => &Kind::RENDER,
        Container::Flac => &Kind::RENDER_FLAC,
    };
    let output = Output::prepare(
        &opts.output,
        inputs,
        layout.file_len().unwrap_or(u64::MAX),
        kind,
    )?;
    if let Some(base) = &opts.snapshot_out {
        for at in stops {
            let path = numbered_path(base, *at, several);
            check_side_output(&path, &Kind::SNAPSHOT, inputs, &output, "the WAV output")?;
        }
    }
    Ok(output)
}
