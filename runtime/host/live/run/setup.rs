//! `run`'s setup, step by step: compiling the scene for the session (block
//! size, resume, deadlines), opening the device or the clock, the first
//! engine, the tap, and the files the session writes (capture, journal),
//! checked before the device opens.

use super::*;
use crate::engine::incoming::{Asked, Incoming, SessionFixed};
use crate::graph::{compile, CompileOptions};
use crate::host::files::error::FileError;
use crate::host::files::rules::{check_side_output, Inputs, Kind, Output};
use crate::host::live::device::{self, Device, DeviceError};
use crate::host::live::input;
use crate::host::live::session::LiveSession;
use crate::host::live::tap::{Existing, Tap, TapWriter};
use crate::host::machine;
use crate::host::machine::calibration;
use crate::host::record::journal::{self, Journal, Record};
use crate::host::record::snapshot::{SnapshotContext, SnapshotFile};
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::TimeArg;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The scene `run` plays, compiled for the session: its text, how it was
/// compiled (kept to compile again at the device's rate) and the snapshot
/// it resumes from.
pub(super) struct Compiled {
    pub(super) text: String,
    pub(super) scene: crate::scene::Scene,
    pub(super) copts: CompileOptions,
    pub(super) plan: crate::graph::Plan,
    pub(super) snap: Option<SnapshotFile>,
    /// The thread count and pool threshold of the scene's calibration,
    /// when there is one and `--threads` is not given or asks for the
    /// count it chose.
    pub(super) threads: Option<(usize, Option<u64>)>,
}

impl Compiled {
    /// Reads and compiles the scene: the block size given, the snapshot's,
    /// or (`auto`) the calibrated one; refuses a live session that cannot
    /// meet its deadline unless forced.
    pub(super) fn new(opts: &RunOptions, log: &mut dyn Write) -> Result<Compiled, HostError> {
        let auto = opts.block_size.as_deref() == Some("auto");
        let block_size = match opts.block_size.as_deref() {
            None | Some("auto") => None,
            Some(b) => Some(b.parse::<usize>().map_err(|_| {
                HostError::Usage(format!("--block-size takes a number or `auto`, not `{b}`"))
            })?),
        };
        let mut copts = CompileOptions {
            profile: opts.profile,
            block_size,
            seed: opts.seed,
            resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
            ..CompileOptions::default()
        };
        let (text, scene) = crate::host::read_scene(&opts.scene)?;
        let snap = resume_snapshot(opts, block_size, &mut copts)?;
        let mut plan = compile(&scene, &copts).map_err(HostError::Input)?;
        let found = calibration::stored_for(&text, &plan);
        let threads = match (&found, opts.threads.threads) {
            (Ok(Some((c, path))), None) => {
                let _ = writeln!(
                    log,
                    "threads {} (calibrated for this scene and machine, {})",
                    c.threads,
                    path.display()
                );
                Some((c.threads, c.min_work_ns))
            }
            // `--threads` as calibrated: the threshold measured with it.
            (Ok(Some((c, _))), Some(n)) if c.threads == usize::from(n) => {
                Some((c.threads, c.min_work_ns))
            }
            // Without a cache directory there is no store to speak of.
            (Err(e), None) if !auto && calibration::store_path().is_some() => {
                let _ = writeln!(log, "warning: threads 1 (cannot read calibrations: {e})");
                None
            }
            _ => None,
        };
        if auto {
            if let Some(b) = calibrated_block_size(&found, &plan, log) {
                if b != plan.block_size {
                    copts.block_size = Some(b);
                    plan = compile(&scene, &copts).map_err(HostError::Input)?;
                }
            }
        }
        check_deadlines(&plan, opts, log)?;
        Ok(Compiled {
            text,
            scene,
            copts,
            plan,
            snap,
            threads,
        })
    }
}

/// The snapshot of `--resume`, read; it fixes the block size and gives the
/// seed and profile unless the command line does.
pub(super) fn resume_snapshot(
    opts: &RunOptions,
    block_size: Option<usize>,
    copts: &mut CompileOptions,
) -> Result<Option<SnapshotFile>, HostError> {
    let snap = match &opts.resume {
        Some(p) => {
            let s = SnapshotFile::read(p)?;
            if let Some(b) = block_size.filter(|b| *b != s.block_size) {
                return Err(HostError::Usage(format!(
                    "--block-size {b} conflicts with snapshot `{}`, taken at block size {}",
                    s.origin(),
                    s.block_size
                )));
            }
            copts.block_size = Some(s.block_size);
            copts.seed = s.seed.or(opts.seed);
            copts.profile = opts.profile.or(Some(s.profile()));
            Some(s)
        }
        None => None,
    };
    Ok(snap)
}

/// Nodes whose worst case may miss the block deadline: an error under live
/// (unless `--force`), else a diagnostic each.
pub(super) fn check_deadlines(
    plan: &crate::graph::Plan,
    opts: &RunOptions,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let risks = crate::graph::deadline_risks(plan);
    if !risks.is_empty() {
        let lines: Vec<String> = risks.iter().map(|r| r.to_string()).collect();
        if plan.session_profile == crate::profile::Profile::Live && !opts.force {
            return Err(HostError::Usage(format!(
                "live cannot meet its block deadline with this scene:\n  {}\n  help: lower those settings, use a larger --block-size, or pass --force to play anyway",
                lines.join("\n  ")
            )));
        }
        for r in &risks {
            let _ = writeln!(log, "{}", r.diagnostic(&plan.file));
        }
    }
    Ok(())
}

/// The device `run` plays through, with its channel count and its id for
/// the status line.
pub(super) struct ChosenDevice {
    pub(super) device: Box<dyn Device>,
    pub(super) channels: usize,
    pub(super) id: String,
}

/// Opens `--device` (or the default output) through its backend for the
/// scene's rate and main bus; when the device plays another rate, the
/// scene is compiled again at that rate.
pub(super) fn open_device(
    opts: &RunOptions,
    compiled: &mut Compiled,
    log: &mut dyn Write,
) -> Result<ChosenDevice, HostError> {
    let Compiled {
        text,
        scene,
        copts,
        plan,
        ..
    } = compiled;
    let rate_pinned = serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("sample_rate").is_some());
    let opened = device::open_output(
        opts.device.as_deref(),
        &device::Request {
            sample_rate: plan.sample_rate,
            bus_channels: plan.main.len(),
            period: opts.period.unwrap_or(plan.block_size),
            rate_pinned,
            name: opts.name.clone(),
            connect: opts.connect.clone(),
            channel_names: scene.channel_names.clone(),
        },
    )?;
    for w in &opened.warnings {
        let _ = writeln!(log, "warning: {w}");
    }
    if opened.sample_rate != plan.sample_rate {
        let scene_rate = plan.sample_rate;
        copts.sample_rate = Some(opened.sample_rate);
        *plan = compile(scene, copts).map_err(|e| {
            // The scene itself is fine; the device's rate is the problem
            // (resources are not resampled).
            let first = e
                .iter()
                .find(|d| d.is_error())
                .map(|d| d.message.clone())
                .unwrap_or_default();
            HostError::Device(DeviceError::SceneRate {
                device_hz: opened.sample_rate,
                scene_hz: scene_rate,
                why: first,
            })
        })?;
    }
    Ok(ChosenDevice {
        device: opened.device,
        channels: opened.channels,
        id: opened.id,
    })
}

/// `--transport follow`: refused without `--device jack` or a scene
/// `tempo`; else the JACK client opened next reads the transport.
pub(super) fn follow_transport(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
) -> Result<(), HostError> {
    if opts.transport.is_none() {
        return Ok(());
    }
    if opts.device.as_deref() != Some(device::jack::JACK_DEVICE) {
        return Err(HostError::Usage(
            "--transport follow follows the JACK transport: it needs --device jack".to_string(),
        ));
    }
    if plan.tempo.is_none() {
        return Err(HostError::Usage(format!(
            "--transport follow sets the scene's tempo, and {} has no `tempo`: add `\"tempo\": \"120bpm\"` at its top level",
            opts.scene.display()
        )));
    }
    device::jack::follow_transport();
    Ok(())
}

/// `--duration` in frames at the scene's rate.
pub(super) fn duration_frames(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<Option<u64>, HostError> {
    match &opts.duration {
        Some(d) => Ok(Some(
            d.length(plan.sample_rate, plan.tempo.as_ref(), log)
                .map_err(HostError::Usage)?,
        )),
        None => Ok(None),
    }
}

/// Prints the plan's warnings (taken from it), and those about events the
/// duration cuts off.
pub(super) fn show_warnings(
    opts: &RunOptions,
    plan: &mut crate::graph::Plan,
    frames: Option<u64>,
    log: &mut dyn Write,
) {
    let mut warnings = std::mem::take(&mut plan.warnings);
    if let (Some(f), None) = (frames, &opts.resume) {
        let length = format!(
            "--duration {}",
            opts.duration
                .as_ref()
                .map(TimeArg::text)
                .unwrap_or_default()
        );
        warnings.extend(crate::graph::events_after_end(plan, f, &length));
    }
    if !warnings.is_empty() {
        let _ = writeln!(log, "{}", crate::scene::Shown::new(&warnings));
    }
}

/// The first engine, built from the plan (and resumed from the snapshot),
/// with what the live session keeps of the scene.
pub(super) struct FirstEngine {
    pub(super) text: String,
    /// The scene's own `profile`.
    pub(super) file_profile: Option<Profile>,
    pub(super) fixed: SessionFixed,
    pub(super) incoming: Incoming,
    /// The snapshot's clock, when resuming.
    pub(super) snap_clock: Option<u64>,
}

impl FirstEngine {
    pub(super) fn new(
        opts: &RunOptions,
        compiled: Compiled,
        log: &mut dyn Write,
    ) -> Result<FirstEngine, HostError> {
        let Compiled {
            text,
            scene,
            plan,
            snap,
            threads,
            ..
        } = compiled;
        let sr = plan.sample_rate;
        let mut fixed = SessionFixed::from_plan(
            &plan,
            crate::host::files::resources::Folders::shared(opts.resources.clone()),
        );
        let (default, min_work_ns) = threads.unwrap_or((1, None));
        fixed.workers = opts.threads.workers(default, true)?;
        if let (Some(w), Some(ns), None) = (&fixed.workers, min_work_ns, opts.threads.min_work_ns) {
            w.set_min_work_ns(ns);
            let _ = writeln!(
                log,
                "thread threshold {:.1} µs (calibrated for this scene and machine)",
                ns as f64 / 1e3
            );
        }
        if let Some(note) = fixed
            .workers
            .as_ref()
            .and_then(crate::host::files::threads::priority_note)
        {
            let _ = writeln!(log, "{note}");
        }
        let context = match &snap {
            Some(_) => Some(SnapshotContext::new(&plan, &text)?),
            None => None,
        };
        let mut incoming =
            Incoming::from_plan(plan, scene.profile, Vec::new()).asking(Asked::of(&scene));
        incoming.engine.set_workers(fixed.workers.clone());
        if let (Some(s), Some(cx)) = (&snap, &context) {
            let resumed = cx.resume(s, &mut incoming.engine)?;
            // Its events in beats are on the file's grid now: an edit's
            // events are compared with them there.
            incoming.retime_keys();
            for m in &resumed.messages {
                let _ = writeln!(log, "{m}");
            }
            let _ = writeln!(
                log,
                "resuming `{}` at {:.3}s: {} of {} nodes carried",
                s.origin(),
                resumed.clock as f64 / sr as f64,
                resumed.migration.carried,
                s.nodes.len()
            );
        }
        Ok(FirstEngine {
            text,
            file_profile: scene.profile,
            fixed,
            incoming,
            snap_clock: snap.as_ref().map(|s| s.clock),
        })
    }
}

/// The session's input from `--input FILE`, played as a capture device
/// would deliver it (converted to the session's rate, checked against the
/// channels `plan` reads), with what it tells the control thread; `None`
/// without `--input`.
pub(super) fn file_input(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<Option<input::file::Opened>, HostError> {
    match &opts.input {
        Some(path) => Ok(Some(input::file::open(path, plan, log)?)),
        None => Ok(None),
    }
}

/// Starts the tap of `--capture`: the writer, which creates the file under
/// its name (over an existing one only when the output was prepared to
/// replace it: `--overwrite`), and the tap for the player.
pub(super) fn start_tap(
    output: Option<Output>,
    channels: usize,
    sr: u32,
) -> Result<Option<(TapWriter, Tap)>, HostError> {
    let tap = match output {
        Some(output) => {
            let existing = if output.replace {
                Existing::Replace
            } else {
                Existing::Refuse
            };
            Some(TapWriter::start_at(
                output,
                existing,
                channels as u16,
                sr,
                4.0,
            )?)
        }
        None => None,
    };
    Ok(tap)
}

/// The block size of the stored calibration `found`, saying where it came
/// from; `None` (with a hint, or a warning when the store cannot be read)
/// when there is none.
pub(super) fn calibrated_block_size(
    found: &Result<Option<(calibration::Calibration, PathBuf)>, String>,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Option<usize> {
    match found {
        Ok(Some((c, path))) => {
            let _ = writeln!(
                log,
                "block size {} (auto: calibrated for this scene and machine, {})",
                c.block_size,
                path.display()
            );
            Some(c.block_size)
        }
        Ok(None) => {
            let _ = writeln!(
                log,
                "block size {} (auto: no calibration for this scene on this machine; `morphrt calibrate {}` measures one)",
                plan.block_size,
                plan.file
            );
            None
        }
        Err(e) => {
            let _ = writeln!(
                log,
                "warning: block size {} (auto: cannot read calibrations: {e})",
                plan.block_size
            );
            None
        }
    }
}

/// What a session reads, and its capture and journal, checked against it
/// and against each other.
pub(super) struct SessionFiles {
    pub(super) inputs: Inputs,
    pub(super) capture: Option<Output>,
    pub(super) journal: Option<Output>,
}

/// Checks the capture and the journal of `run` under the output rules: no
/// capture or journal over an input, nor over each other. A name that is
/// taken moves on to the next free numbered one ([`take_output`]) unless
/// `--overwrite`; a journal another session is writing is refused. A
/// journal given with `--journal` that cannot be written is an error; the
/// default one is a warning, and the session goes unjournaled.
pub(super) fn session_files(
    opts: &RunOptions,
    plan: &crate::graph::Plan,
    log: &mut dyn Write,
) -> Result<SessionFiles, HostError> {
    let mut inputs = Inputs::default();
    inputs.add("the scene", &opts.scene);
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    if let Some(p) = &opts.resume {
        inputs.add("the snapshot resumed from", p);
    }
    if let Some(p) = &opts.input {
        inputs.add("the input", p);
    }
    let capture = match &opts.capture {
        Some(path) => Some(take_output(
            path,
            opts.overwrite,
            None,
            log,
            |p, replace| Output::prepare_with(p, &inputs, 0, &Kind::CAPTURE, replace),
        )?),
        None => None,
    };
    if opts.no_journal {
        return Ok(SessionFiles {
            inputs,
            capture,
            journal: None,
        });
    }
    let path = opts
        .journal
        .clone()
        .or_else(|| journal::default_path(&opts.scene));
    let records_input = opts.input.is_some() || plan.input_width() > 0;
    let checked = path.map(|p| {
        let o = journal_output(&p, opts, &inputs, capture.as_ref(), log)?;
        if records_input {
            // The recorded input beside it is refused now, before the
            // journal exists, rather than once the session starts.
            let recorded = crate::host::record::input::recorded_name(&o.shown);
            Output::prepare_with(&recorded, &inputs, 0, &Kind::RECORDED_INPUT, true)?;
        }
        Ok::<Output, FileError>(o)
    });
    let journal = match checked {
        Some(Ok(o)) => Some(o),
        Some(Err(e)) if opts.journal.is_some() => return Err(e.into()),
        Some(Err(e)) => {
            let _ = writeln!(log, "warning: {e}; this session is not journaled");
            None
        }
        None => {
            let _ = writeln!(
                log,
                "warning: no data directory for journals on this system; use --journal FILE"
            );
            None
        }
    };
    Ok(SessionFiles {
        inputs,
        capture,
        journal,
    })
}

/// Where the journal `path` goes: never the capture's file (the name given
/// or the one taken), a numbered name when `path` is taken, and never a
/// journal another session is writing (it holds the journal's lock; the
/// final open checks again).
fn journal_output(
    path: &Path,
    opts: &RunOptions,
    inputs: &Inputs,
    capture: Option<&Output>,
    log: &mut dyn Write,
) -> Result<Output, FileError> {
    let clash = |with: &Path| FileError::Clash {
        path: path.to_path_buf(),
        what: Kind::JOURNAL.noun.to_string(),
        other: format!("the capture `{}`", with.display()),
    };
    if let Some(given) = opts.capture.as_deref().filter(|c| same_place(c, path)) {
        return Err(clash(given));
    }
    let taken = capture.map(|c| c.shown.as_path());
    let output = take_output(path, opts.overwrite, taken, log, |p, replace| {
        journal::prepare(p, inputs, replace)
    })?;
    if let Some(c) = capture {
        check_side_output(&output.shown, &Kind::JOURNAL, inputs, c, "the capture")?;
    }
    if let Some(holder) = crate::host::files::lock::writer_of(&output.shown) {
        return Err(FileError::InUse {
            path: output.shown.clone(),
            shown: output.named(),
            holder,
        });
    }
    Ok(output)
}

/// The highest number a take's name is given before `run` gives up.
const MAX_TAKE: u32 = 9999;

/// The output a take (the capture, the journal) goes to: `path` itself
/// when nothing is there, or with `--overwrite` (`overwrite`) even when a
/// file is; else the first free of `NAME-2.EXT`, `NAME-3.EXT`, … beside
/// it (never `avoid`, the other take's name), said on `log` before
/// anything plays. `prepare` checks a name under the output rules, with
/// whether it may replace a file; a name that is refused for another
/// reason than being taken (an input, a FIFO) is an error, as it is
/// without numbering. The name taken is created exclusively later, so a
/// file that appears there meanwhile is never replaced.
pub(super) fn take_output(
    path: &Path,
    overwrite: bool,
    avoid: Option<&Path>,
    log: &mut dyn Write,
    prepare: impl Fn(&Path, bool) -> Result<Output, FileError>,
) -> Result<Output, FileError> {
    if overwrite {
        return prepare(path, true);
    }
    let taken_as = match prepare(path, false) {
        Err(FileError::Exists { shown, .. }) => shown,
        other => return other,
    };
    for n in 2..=MAX_TAKE {
        let candidate = numbered(path, n);
        if avoid == Some(candidate.as_path()) || std::fs::symlink_metadata(&candidate).is_ok() {
            continue;
        }
        match prepare(&candidate, false) {
            Err(FileError::Exists { .. }) => continue,
            Err(e) => return Err(e),
            Ok(o) => {
                let _ = writeln!(
                    log,
                    "{}: {} ({} exists; --overwrite replaces it)",
                    o.kind.noun.trim_start_matches("the "),
                    candidate.display(),
                    path.display()
                );
                return Ok(o);
            }
        }
    }
    Err(FileError::Unsuitable {
        path: path.to_path_buf(),
        message: format!(
            "{taken_as} exists, and so does every numbered name up to `{}`; give --overwrite to replace it, or another name",
            numbered(path, MAX_TAKE).display()
        ),
    })
}

/// `take.wav` → `take-N.wav` (`journal` → `journal-N`), in the same directory.
pub(super) fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.file_stem().unwrap_or_default().to_os_string();
    name.push(format!("-{n}"));
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    path.with_file_name(name)
}

/// Whether two names given on the command line are the same place: the
/// same file name in the same directory (links to directories resolved).
fn same_place(a: &Path, b: &Path) -> bool {
    let place = |p: &Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        (
            std::fs::canonicalize(dir).ok(),
            p.file_name().map(|n| n.to_os_string()),
        )
    };
    a == b || place(a) == place(b)
}

/// Opens the journal at its checked output and writes the session's
/// header and first scene.
pub(super) fn start_journal(
    output: Output,
    inputs: &Inputs,
    opts: &RunOptions,
    session: &LiveSession,
    channels: usize,
    resumed_at: Option<u64>,
) -> Result<Journal, FileError> {
    let mut j = Journal::create(output, inputs)?;
    let (cpu, cpu_level) = machine::cpu_info();
    let fixed = session.fixed();
    j.write(&Record::Header {
        format: journal::FORMAT.to_string(),
        version: journal::VERSION,
        morphrt: env!("CARGO_PKG_VERSION").to_string(),
        build: machine::build_id(),
        cpu,
        cpu_level,
        scene: opts.scene.display().to_string(),
        block_size: fixed.block_size,
        sample_rate: fixed.sample_rate,
        seed: fixed.seed,
        auto_seed: fixed.auto_seed,
        profile: session.profile(),
        channels,
        period: opts.period,
        resource_dirs: opts
            .resources
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
    })?;
    let resources = j.resources(session.resources())?;
    j.write(&Record::Scene {
        text: session.text().to_string(),
        resources,
    })?;
    if let (Some(clock), Some(file)) = (resumed_at, &opts.resume) {
        let kept = j.resources(&[("snapshot".to_string(), file.clone())])?;
        j.write(&Record::Resume {
            snapshot: kept.into_iter().next().expect("one record per file"),
            clock,
        })?;
    }
    Ok(j)
}
