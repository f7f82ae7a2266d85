//! The journal of a live session, and its replay.
//!
//! `run` appends one JSON object per line (JSON Lines), flushed per record,
//! with a progress record (the sample clock) every second of audio, synced
//! to disk, so a session cut off by a crash still replays up to its last
//! complete record: [`read`] drops a last line cut short with a warning
//! naming it, and [`rerender`] plays a journal without an end record up to
//! its last record's sample, saying so. The journal holds what the handover did (see [`crate::engine::incoming`]:
//! the capture sample N, the swap sample S and the fade of every edit and
//! profile switch, with the full scene text), every rejected edit, the
//! stop fade and the end sample, and a copy of every resource beside it,
//! stored by SHA-256 so that many sessions on one impulse response keep it
//! once. `replay` renders it offline through the same handover code
//! ([`Scripted`]) and the same device output stage, and reproduces the
//! device output bit for bit on the same build and CPU feature level.

use crate::engine::incoming::{Incoming, Scripted, ScriptedControl, ScriptedNote, SessionFixed};
use crate::graph::{NoteAction, Resolver};
use crate::host::files::digest::sha256_hex;
use crate::host::files::error::FileError;
use crate::host::files::resources::Folders;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::wav::{WavFormat, WavLayout};
use crate::host::files::write::write_file;
use crate::host::machine::{build_id, cpu_info};
use crate::host::record::input::RecordedInputFile;
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::Diagnostic;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The journal format this build writes and reads.
pub const FORMAT: &str = "morphrt-journal";
pub const VERSION: u32 = 1;

/// A resource a scene read, kept with the journal: its reference, the file,
/// its SHA-256 and the copy kept beside the journal (relative to the
/// journal's directory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptResource {
    pub reference: String,
    pub path: String,
    pub sha256: String,
    pub copy: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The control changes of a journal, in sample order (journal order
/// within a sample), for a scripted replay to land where they landed.
pub fn control_changes(records: &[Record]) -> Vec<ScriptedControl> {
    let mut v: Vec<ScriptedControl> = records
        .iter()
        .filter_map(|r| match r {
            Record::Control {
                at,
                node,
                param,
                value,
                ramp,
                ..
            } => Some(ScriptedControl {
                sample: *at,
                node: node.clone(),
                param: param.clone(),
                value: *value,
                ramp: *ramp,
            }),
            _ => None,
        })
        .collect();
    v.sort_by_key(|c| c.sample);
    v
}

/// The notes of a journal, in sample order (journal order within a
/// sample), for a scripted replay to play where they landed.
pub fn note_changes(records: &[Record]) -> Vec<ScriptedNote> {
    let mut v: Vec<ScriptedNote> = records
        .iter()
        .filter_map(|r| match r {
            Record::Note {
                at, module, action, ..
            } => Some(ScriptedNote {
                sample: *at,
                module: module.clone(),
                action: *action,
            }),
            _ => None,
        })
        .collect();
    v.sort_by_key(|n| n.sample);
    v
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The session's constants; the first line.
    Header {
        format: String,
        version: u32,
        morphrt: String,
        /// SHA-256 of the executable that ran the session.
        build: String,
        cpu: String,
        /// The CPU feature level (x86-64-v2/v3/v4, or the architecture).
        cpu_level: String,
        scene: String,
        block_size: usize,
        sample_rate: u32,
        seed: Option<u64>,
        profile: Profile,
        channels: usize,
        period: Option<usize>,
        resource_dirs: Vec<String>,
    },
    /// The scene the session started with.
    Scene {
        text: String,
        resources: Vec<KeptResource>,
    },
    /// The session resumed from a snapshot (kept beside the journal) before
    /// it started playing.
    Resume { snapshot: KeptResource, clock: u64 },
    /// An applied edit or profile switch: captured at N, swapped at S.
    Handover {
        reason: String,
        from: Option<Profile>,
        to: Option<Profile>,
        profile: Profile,
        captured_at: u64,
        swap_at: u64,
        fade: u64,
        text: String,
        resources: Vec<KeptResource>,
    },
    /// An edit that did not compile (the running graph kept playing).
    Rejected {
        at: u64,
        error: String,
        text: String,
    },
    /// A snapshot written while playing, holding the state at sample `at`:
    /// inside a block when a timetag asked for that sample, the audio
    /// thread then cutting the block there, and `replay` cutting it too.
    Snapshot { at: u64, file: String },
    /// The session reads an input, recorded beside the journal in `file`
    /// (relative to the journal's directory; `format` is `i16`, `i24` or
    /// `f32`) from engine sample `start`, the session's first; `source` is
    /// where it came from (a file, a device). Written before it plays.
    Input {
        file: String,
        source: String,
        channels: usize,
        format: String,
        start: u64,
    },
    /// The recorded input is complete: `frames` frames, SHA-256 `sha256`
    /// of the whole file (`replay` refuses a file that differs).
    InputEnd { frames: u64, sha256: String },
    /// A control message (OSC, MIDI) changed `node`'s `param` to `value`
    /// from engine sample `at`, gliding over `ramp` samples; `from` is the
    /// message as it arrived. `replay` applies it at that sample.
    Control {
        at: u64,
        node: String,
        param: String,
        value: crate::graph::ControlValue,
        #[serde(default, skip_serializing_if = "is_zero")]
        ramp: u64,
        from: String,
    },
    /// A control message (OSC, MIDI) played a note on voice module
    /// `module` at engine sample `at`: `action` as the engine took it
    /// (its key the bits of the pitch in Hz); `from` is the message as it
    /// arrived. `replay` plays it at that sample.
    Note {
        at: u64,
        module: String,
        action: NoteAction,
        from: String,
    },
    /// A control message that changed nothing, and why (the clock `at` it
    /// was refused at).
    ControlError {
        at: u64,
        from: String,
        error: String,
    },
    /// The session had played up to sample `at` (written every second of
    /// audio, so a session cut off by a crash replays up to there).
    Progress { at: u64 },
    /// The stop fade began at frame `at` and lasted `fade` frames.
    Stop { at: u64, fade: u64 },
    /// The session ended after `frames` device frames.
    End { frames: u64 },
}

impl Record {
    /// The sample the record happened at, for timelines.
    pub fn at(&self) -> Option<u64> {
        match self {
            Record::Handover { swap_at, .. } => Some(*swap_at),
            Record::Rejected { at, .. }
            | Record::Control { at, .. }
            | Record::Note { at, .. }
            | Record::ControlError { at, .. }
            | Record::Snapshot { at, .. }
            | Record::Progress { at }
            | Record::Stop { at, .. } => Some(*at),
            Record::End { frames } => Some(*frames),
            _ => None,
        }
    }
}

/// Where `run` journals by default: the platform's data directory.
pub fn default_path(scene: &Path) -> Option<PathBuf> {
    let stem = scene
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene".to_string());
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    dirs::data_dir().map(|d| {
        d.join("morphrt")
            .join("journals")
            .join(format!("{secs}-{}-{stem}.jsonl", std::process::id()))
    })
}

/// An open journal, appended to as the session goes.
pub struct Journal {
    path: PathBuf,
    /// The journal for messages: "the journal `j.jsonl`".
    named: String,
    file: std::io::BufWriter<std::fs::File>,
    /// Where resource copies go: `resources/` beside the journal.
    store: PathBuf,
    /// What the session reads, which no copy may replace; grows with the
    /// resources edits add.
    inputs: Inputs,
}

/// Checks where a journal goes, under the output rules: never one of
/// `inputs` (the scene, its resources, the snapshot resumed from), never a
/// device, a FIFO or a directory. Creates its directory, which the data
/// directory's default may not have yet. Unless `replace`, an existing
/// file is [`FileError::Exists`] and the journal will be created
/// exclusively ([`Output::prepare_new`]).
pub fn prepare(path: &Path, inputs: &Inputs, replace: bool) -> Result<Output, FileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            FileError::io(
                dir,
                format!("cannot create `{}` for the journal", dir.display()),
                e,
            )
        })?;
    }
    Output::prepare_with(path, inputs, 0, &Kind::JOURNAL, replace)
}

impl Journal {
    /// Creates the journal at a checked output (see [`prepare`]), which it
    /// appends to in place: a killed session leaves every record written
    /// before it. `inputs` are the session's, which resource copies must
    /// not replace either.
    pub fn create(output: Output, inputs: &Inputs) -> Result<Journal, FileError> {
        let path = output.shown.clone();
        let named = output.named();
        let file = output.open_in_place()?;
        let store = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join("resources");
        Ok(Journal {
            path,
            named,
            file: std::io::BufWriter::new(file),
            store,
            inputs: inputs.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and flushes it to the operating system.
    pub fn write(&mut self, r: &Record) -> Result<(), FileError> {
        let line = serde_json::to_string(r).expect("journal records serialise");
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|e| FileError::io(&self.path, format!("cannot write {}", self.named), e))
    }

    /// Appends a progress record (the session has played up to sample
    /// `at`) and syncs the journal to disk, so that what it says survives
    /// a power cut as well as a killed process.
    pub fn progress(&mut self, at: u64) -> Result<(), FileError> {
        self.write(&Record::Progress { at })?;
        self.file
            .get_ref()
            .sync_data()
            .map_err(|e| FileError::io(&self.path, format!("cannot sync {}", self.named), e))
    }

    /// Keeps a copy of each resource beside the journal (once per content),
    /// each written whole through the one writer.
    pub fn resources(
        &mut self,
        list: &[(String, PathBuf)],
    ) -> Result<Vec<KeptResource>, FileError> {
        let mut out = Vec::with_capacity(list.len());
        for (reference, path) in list {
            let bytes = std::fs::read(path).map_err(|e| {
                FileError::io(
                    path,
                    format!("cannot read `{}` to journal it", path.display()),
                    e,
                )
            })?;
            self.inputs
                .add(&format!("resource `{reference}`, read from"), path);
            let sha = sha256_hex(&bytes);
            let ext = path
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            let name = format!("{sha}{ext}");
            let dest = self.store.join(&name);
            if !dest.is_file() {
                std::fs::create_dir_all(&self.store).map_err(|e| {
                    FileError::io(
                        &self.store,
                        format!("cannot create `{}`", self.store.display()),
                        e,
                    )
                })?;
                write_file(&dest, &self.inputs, &Kind::JOURNAL_COPY, |w| {
                    w.write_all(&bytes)
                })?;
            }
            out.push(KeptResource {
                reference: reference.clone(),
                path: path.display().to_string(),
                sha256: sha,
                copy: format!("resources/{name}"),
            });
        }
        Ok(out)
    }
}

/// A journal read back.
#[derive(Debug)]
pub struct Session {
    pub records: Vec<Record>,
    /// Problems that do not stop a replay (a truncated last line, another build).
    pub warnings: Vec<String>,
    pub dir: PathBuf,
}

fn bad(path: &Path, line: Option<usize>, msg: impl std::fmt::Display) -> HostError {
    let at = match line {
        Some(l) => format!("{}:{l}", path.display()),
        None => path.display().to_string(),
    };
    HostError::Input(vec![Diagnostic::error(&at, None, msg.to_string())])
}

/// Reads a journal. A last line cut short (a session killed while writing
/// it: no newline at its end) is dropped with a warning naming it;
/// anything else that does not parse is an error naming the line.
pub fn read(path: &Path) -> Result<Session, HostError> {
    let bytes = crate::scene::resource::read_regular(path)
        .map_err(|e| bad(path, None, format!("cannot read the journal: {e}")))?;
    let (records, mut warnings) = parse_lines(path, &bytes)?;
    match records.first() {
        Some(Record::Header {
            format,
            version,
            morphrt,
            build,
            cpu_level,
            channels,
            ..
        }) => {
            if format != FORMAT || *version != VERSION {
                return Err(bad(
                    path,
                    Some(1),
                    format!("`{format}` version {version} is not a journal this build reads ({FORMAT} version {VERSION})"),
                ));
            }
            if !(1..=u16::MAX as usize).contains(channels) {
                return Err(bad(
                    path,
                    Some(1),
                    format!(
                        "the header's `channels` is {channels}; a device has 1 … {} channels",
                        u16::MAX
                    ),
                ));
            }
            if morphrt != env!("CARGO_PKG_VERSION") {
                warnings.push(format!(
                    "the session ran on morphrt {morphrt}, this is {}: repro and live stretches may differ in their last bits; strict stays exact",
                    env!("CARGO_PKG_VERSION")
                ));
            } else if *build != build_id() || *cpu_level != cpu_info().1 {
                warnings.push(
                    "the session ran on another build or CPU feature level: repro and live stretches may differ in their last bits; strict stays exact"
                        .to_string(),
                );
            }
        }
        _ => {
            return Err(bad(
                path,
                Some(1),
                "the journal does not start with a header record",
            ))
        }
    }
    if !records.iter().any(|r| matches!(r, Record::Scene { .. })) {
        return Err(bad(path, None, "the journal has no scene record"));
    }
    Ok(Session {
        records,
        warnings,
        dir: path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    })
}

/// The records of a journal's text, one per line. The last line, when it
/// has no newline (every record is written with one) or stops in the
/// middle of a value, is a record cut short: a warning, not an error.
fn parse_lines(path: &Path, bytes: &[u8]) -> Result<(Vec<Record>, Vec<String>), HostError> {
    let terminated = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
    let n = lines.len();
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        let last = i + 1 == n;
        match parse_line(line) {
            Ok(Some(r)) => records.push(r),
            Ok(None) => {}
            Err((eof, _)) if last && (eof || !terminated) => {
                warnings.push(cut_short(path, i + 1));
            }
            Err((_, message)) => return Err(bad(path, Some(i + 1), message)),
        }
    }
    Ok((records, warnings))
}

/// One line of a journal: a record, nothing (a blank line), or why not,
/// with whether it stops in the middle of a value.
fn parse_line(line: &[u8]) -> Result<Option<Record>, (bool, String)> {
    let text = std::str::from_utf8(line).map_err(|e| {
        let at = e.valid_up_to() + 1;
        (
            false,
            format!("not a journal record: byte {at} of the line is not UTF-8 text"),
        )
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| (e.is_eof(), format!("not a journal record: {e}")))
}

/// The warning for a last line cut short.
fn cut_short(path: &Path, line: usize) -> String {
    format!(
        "{}:{line}: the journal ends in the middle of a record (the session was cut off); replaying up to the record before it",
        path.display()
    )
}

/// Binds each resource reference to the journal's copy, checking its SHA-256.
fn pin(
    dir: &Path,
    list: &[KeptResource],
    journal: &Path,
) -> Result<Vec<(String, PathBuf)>, HostError> {
    let mut out = Vec::new();
    for r in list {
        let copy = dir.join(&r.copy);
        let bytes = crate::scene::resource::read_regular(&copy).map_err(|e| {
            bad(
                journal,
                None,
                format!(
                    "resource `{}` ({}): its copy `{}` cannot be read: {e}",
                    r.reference,
                    r.path,
                    copy.display()
                ),
            )
        })?;
        let sha = sha256_hex(&bytes);
        if sha != r.sha256 {
            return Err(bad(
                journal,
                None,
                format!(
                    "resource `{}`: its copy `{}` has changed (SHA-256 {sha}, the journal says {})",
                    r.reference,
                    copy.display(),
                    r.sha256
                ),
            ));
        }
        out.push((r.reference.clone(), copy));
    }
    Ok(out)
}

/// What a replay produced.
pub struct Replay {
    /// Interleaved device samples, exactly as the device got them.
    pub samples: Vec<f32>,
    pub channels: usize,
    pub sample_rate: u32,
    pub frames: u64,
    pub warnings: Vec<String>,
}

/// Renders a journal offline: the same handovers at the same N and S with
/// the same fades, the same device output stage and stop fade.
pub fn rerender(path: &Path, until: Option<u64>) -> Result<Replay, HostError> {
    let session = read(path)?;
    let mut warnings = session.warnings.clone();
    let Some(Record::Header {
        scene,
        block_size,
        sample_rate,
        seed,
        profile,
        channels,
        resource_dirs,
        ..
    }) = session.records.first().cloned()
    else {
        unreachable!("read checked the header");
    };
    let scene_path = PathBuf::from(&scene);
    // The journal keeps a copy of every resource it read, so a recorded
    // `--resources` directory that is gone (another machine) is skipped
    // rather than refused as it would be on the command line.
    let dirs: Vec<PathBuf> = resource_dirs
        .iter()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .collect();
    let folders = |pinned: Vec<(String, PathBuf)>| -> Option<Arc<dyn Resolver>> {
        Some(Arc::new(Folders {
            dirs: dirs.clone(),
            pinned,
        }))
    };
    let mut fixed = SessionFixed {
        block_size,
        sample_rate,
        seed,
        resolver: folders(Vec::new()),
    };
    let compile = |text: &str, fixed: &SessionFixed, p: Profile| -> Result<Incoming, HostError> {
        Incoming::compile(text, &scene_path, fixed, p).map_err(|mut d| {
            d.insert(
                0,
                Diagnostic::error(
                    &path.display().to_string(),
                    None,
                    "a scene in the journal no longer compiles with this build".to_string(),
                ),
            );
            HostError::Input(d)
        })
    };
    let recorded = recorded_input(&session, path, channels_of(&session), sample_rate)?;
    let compile = |text: &str, fixed: &SessionFixed, p: Profile| -> Result<Incoming, HostError> {
        let mut inc = compile(text, fixed, p)?;
        if let Some(r) = recorded
            .as_ref()
            .filter(|_| inc.engine.input_channels() > 0)
        {
            inc.engine
                .set_input_feed(r.feed().map_err(|e| bad(path, None, e))?);
        }
        Ok(inc)
    };
    // Control changes land as the deck plays, handovers included.
    let changes = control_changes(&session.records);
    let notes = note_changes(&session.records);
    // A snapshot taken inside a block cut it there: the replay cuts it too.
    let snapshots: Vec<u64> = session
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Snapshot { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    let scripted = |inc: Incoming, channels: usize| {
        let mut d = Scripted::new(inc, channels);
        d.schedule(changes.iter().cloned());
        d.schedule_notes(notes.iter().cloned());
        d.split_at(snapshots.iter().copied());
        d
    };
    let mut deck: Option<Scripted> = None;
    let mut end: Option<u64> = None;
    let mut stop: Option<(u64, u64)> = None;
    let mut scene_inc: Option<Incoming> = None;
    for r in &session.records {
        if !matches!(
            r,
            Record::Scene { .. }
                | Record::Resume { .. }
                | Record::Header { .. }
                | Record::Input { .. }
        ) {
            if let Some(inc) = scene_inc.take() {
                deck = Some(scripted(inc, channels));
            }
        }
        match r {
            Record::Scene { text, resources } => {
                fixed.resolver = folders(pin(&session.dir, resources, path)?);
                scene_inc = Some(compile(text, &fixed, profile)?);
            }
            Record::Resume { snapshot, .. } => {
                let Some(inc) = scene_inc.as_mut() else {
                    return Err(bad(path, None, "a resume record before the scene record"));
                };
                let copy = pin(&session.dir, std::slice::from_ref(snapshot), path)?;
                let snap = crate::host::record::snapshot::SnapshotFile::read(&copy[0].1)?;
                let state = snap.state()?;
                inc.engine.migrate(&state, state.clock);
            }
            Record::Handover {
                profile,
                captured_at,
                swap_at,
                fade,
                text,
                resources,
                ..
            } => {
                let Some(d) = deck.as_mut() else {
                    return Err(bad(path, None, "a handover before the scene record"));
                };
                if until.is_some_and(|u| *captured_at >= u) {
                    break;
                }
                fixed.resolver = folders(pin(&session.dir, resources, path)?);
                let inc = compile(text, &fixed, *profile)?;
                if let Err(e) = d.handover_at(inc, *captured_at, *swap_at, *fade) {
                    return Err(bad(path, None, e));
                }
            }
            Record::Stop { at, fade } => stop = Some((*at, *fade)),
            Record::End { frames } => end = Some(*frames),
            _ => {}
        }
    }
    if let Some(inc) = scene_inc.take() {
        deck = Some(scripted(inc, channels));
    }
    let Some(mut deck) = deck else {
        return Err(bad(path, None, "the journal has no scene record"));
    };
    // A resumed session's device frame 0 is the snapshot's sample.
    let start = deck.start();
    let frames = match (end, until) {
        (_, Some(u)) => u.min(end.unwrap_or(u)),
        (Some(e), None) => e,
        (None, None) => {
            let last = last_sample(&session.records);
            warnings.push(format!(
                "{}; replaying up to there",
                no_end(last, sample_rate)
            ));
            last.saturating_sub(start)
        }
    };
    check_length(path, frames, sample_rate)?;
    deck.play_to(start.saturating_add(frames));
    if let Some((at, e)) = deck.control_errors().first() {
        return Err(bad(
            path,
            None,
            format!("a control change recorded at sample {at} does not fit the session: {e}"),
        ));
    }
    let samples = deck.into_device_samples(frames, stop);
    Ok(Replay {
        samples,
        channels,
        sample_rate,
        frames,
        warnings,
    })
}

/// The input channels the session's recorded input has, from its record.
fn channels_of(session: &Session) -> usize {
    session
        .records
        .iter()
        .find_map(|r| match r {
            Record::Input { channels, .. } => Some(*channels),
            _ => None,
        })
        .unwrap_or(0)
}

/// The journal's recorded input, checked (present, and unchanged when the
/// journal's end says its SHA-256), or `None` when the session read none.
/// A missing or changed file is refused naming it.
fn recorded_input(
    session: &Session,
    journal: &Path,
    channels: usize,
    sample_rate: u32,
) -> Result<Option<RecordedInputFile>, HostError> {
    let Some((file, start)) = session.records.iter().find_map(|r| match r {
        Record::Input { file, start, .. } => Some((file, *start)),
        _ => None,
    }) else {
        return Ok(None);
    };
    let sha = session.records.iter().find_map(|r| match r {
        Record::InputEnd { sha256, .. } => Some(sha256.as_str()),
        _ => None,
    });
    RecordedInputFile::check(&session.dir, file, start, channels, sample_rate, sha)
        .map(Some)
        .map_err(|e| bad(journal, None, e))
}

/// The last sample a journal's records reach (a handover with its fade):
/// where the replay of a journal without an end record stops.
fn last_sample(records: &[Record]) -> u64 {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Handover { swap_at, fade, .. } => Some(swap_at.saturating_add(*fade)),
            Record::End { .. } => None,
            r => r.at(),
        })
        .max()
        .unwrap_or(0)
}

/// What a journal without an end record says of itself.
fn no_end(last: u64, sample_rate: u32) -> String {
    format!(
        "the journal has no end record (the session was cut off): its last record is at {:.3}s (sample {last})",
        last as f64 / sample_rate.max(1) as f64
    )
}

/// Writes a replay as a 32-bit float WAV to a checked output: a regular
/// file under a temporary name, renamed into place when complete, or
/// streamed to a FIFO, a device or standard output (the header carries the
/// final sizes up front, RF64 past 4 GiB; below that the bytes are what
/// hound writes).
pub fn write_wav(r: &Replay, output: Output, stdout: &mut dyn Write) -> Result<(), HostError> {
    let layout = WavLayout {
        channels: u16::try_from(r.channels).map_err(|_| {
            HostError::Runtime(format!("{} channels do not fit a WAV file", r.channels))
        })?,
        sample_rate: r.sample_rate,
        format: WavFormat::F32,
        frames: r.samples.len() as u64 / r.channels.max(1) as u64,
    };
    let header = layout.header().ok_or_else(|| {
        HostError::Runtime(format!("{} frames do not fit any WAV file", layout.frames))
    })?;
    output.write_with(stdout, |w| {
        w.write_all(&header)?;
        for chunk in r.samples.chunks(1 << 14) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|s| s.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Every file a replay reads: the journal, and the copies of resources and
/// snapshots it keeps beside it, none of which its output may replace.
pub fn inputs(journal: &Path, session: &Session) -> Inputs {
    let mut inputs = Inputs::default();
    inputs.add("the journal", journal);
    for r in &session.records {
        let kept: &[KeptResource] = match r {
            Record::Scene { resources, .. } | Record::Handover { resources, .. } => resources,
            Record::Resume { snapshot, .. } => std::slice::from_ref(snapshot),
            Record::Input { file, .. } => {
                inputs.add("the session's recorded input", &session.dir.join(file));
                &[]
            }
            _ => &[],
        };
        for k in kept {
            inputs.add(
                &format!("the journal's copy of `{}`", k.reference),
                &session.dir.join(&k.copy),
            );
        }
    }
    inputs
}

/// The session's timeline, one line per event, for `replay --info`. Every
/// time and sample is the session's: from 0 when it started playing. The
/// journal records edits, rejections and snapshots on the engine's clock,
/// which a session resumed from a snapshot starts at the snapshot's
/// sample: those are shifted back by it, and the resume line says where on
/// the scene's timeline the session started.
pub fn timeline(path: &Path) -> Result<String, HostError> {
    let s = read(path)?;
    let mut out = String::new();
    let mut rate = 48_000.0;
    // The engine clock at the session's first frame.
    let origin = s
        .records
        .iter()
        .find_map(|r| match r {
            Record::Resume { clock, .. } => Some(*clock),
            _ => None,
        })
        .unwrap_or(0);
    let session = |n: u64| n.saturating_sub(origin);
    for w in &s.warnings {
        out += &format!("warning: {w}\n");
    }
    if !s.records.iter().any(|r| matches!(r, Record::End { .. })) {
        let sample_rate = match s.records.first() {
            Some(Record::Header { sample_rate, .. }) => *sample_rate,
            _ => 48_000,
        };
        let last = no_end(last_sample(&s.records), sample_rate);
        out += &format!("warning: {last}; `replay` plays it up to there\n");
    }
    for r in &s.records {
        let t = |n: u64, rate: f64| format!("{:>9.3} s", n as f64 / rate);
        let line = match r {
            Record::Header {
                morphrt,
                cpu,
                cpu_level,
                scene,
                block_size,
                sample_rate,
                seed,
                profile,
                channels,
                ..
            } => {
                rate = *sample_rate as f64;
                format!(
                    "session of {scene}: morphrt {morphrt}, {profile}, {sample_rate} Hz, block {block_size}, {channels} ch, seed {}, on {cpu} ({cpu_level})",
                    seed.map_or("none".to_string(), |s| s.to_string())
                )
            }
            Record::Resume { snapshot, clock } => format!(
                "{}  resumed from snapshot {} at sample {clock} ({:.3} s) of the scene's timeline; times and samples here are the session's, from 0 when it started playing",
                t(0, rate),
                snapshot.path,
                *clock as f64 / rate
            ),
            Record::Scene { resources, .. } => format!(
                "{}  start ({} resource{})",
                t(0, rate),
                resources.len(),
                if resources.len() == 1 { "" } else { "s" }
            ),
            Record::Handover {
                reason,
                from,
                to,
                captured_at,
                swap_at,
                fade,
                ..
            } => {
                let what = match (reason.as_str(), from, to) {
                    ("switch", Some(f), Some(t)) => format!("switch {f} → {t}"),
                    _ => "edit".to_string(),
                };
                let (n, s) = (session(*captured_at), session(*swap_at));
                format!(
                    "{}  {what} (captured at {n}, swapped at {s}, fade {fade})",
                    t(s, rate)
                )
            }
            Record::Rejected { at, error, .. } => format!(
                "{}  rejected edit: {}",
                t(session(*at), rate),
                error.lines().next().unwrap_or("")
            ),
            Record::Snapshot { at, file } => {
                format!("{}  snapshot {file}", t(session(*at), rate))
            }
            Record::Control {
                at,
                node,
                param,
                value,
                from,
                ..
            } => format!(
                "{}  control {node}.{param} = {} ({from})",
                t(session(*at), rate),
                value.as_f64()
            ),
            Record::Note {
                at,
                module,
                action,
                from,
            } => format!(
                "{}  note {} ({from})",
                t(session(*at), rate),
                action.text(module)
            ),
            Record::ControlError { at, from, error } => format!(
                "{}  control refused: {from}: {error}",
                t(session(*at), rate)
            ),
            Record::Input {
                file,
                source,
                channels,
                format,
                ..
            } => format!(
                "{}  input from {source} ({channels} ch, {format}), recorded in {file}",
                t(0, rate)
            ),
            Record::InputEnd { frames, .. } => {
                format!("{}  input recorded: {frames} frames", t(*frames, rate))
            }
            // One a second: the timeline is the events between them.
            Record::Progress { .. } => continue,
            Record::Stop { at, fade } => format!("{}  stop (fade {fade} frames)", t(*at, rate)),
            Record::End { frames } => format!("{}  end ({frames} frames)", t(*frames, rate)),
        };
        out += &line;
        out.push('\n');
    }
    Ok(out)
}

/// What `morphrt replay` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct ReplayOptions {
    /// The journal (`.jsonl`) that `run` wrote.
    pub journal: PathBuf,
    /// Output WAV file.
    ///
    /// An output like `render -o`, under the same rules: free space checked
    /// up front, a regular file replaced only when complete, `-o -`
    /// streams.
    #[arg(short = 'o', long = "output", required_unless_present = "info")]
    pub output: Option<PathBuf>,
    /// Stop at this time of the session (e.g. 30s, 1440000samples).
    #[arg(allow_hyphen_values = true, long)]
    pub until: Option<crate::scene::TimeArg>,
    /// Print the session's timeline (edits, switches, rejected edits) instead.
    ///
    /// In session time, from 0 when it started playing; a session resumed
    /// from a snapshot says once where on the scene's timeline it started.
    #[arg(long)]
    pub info: bool,
}

/// The size of the WAV a replay writes, when the journal says how long the
/// session was (its end record, or `--until`), so that the output's free
/// space is checked up front, as `render` checks it; else 0 (not checked).
/// A session longer than a replay renders is refused here, before that.
fn replay_len(path: &Path, session: &Session, until: Option<u64>) -> Result<u64, HostError> {
    let Some(Record::Header {
        channels,
        sample_rate,
        ..
    }) = session.records.first()
    else {
        return Ok(0);
    };
    let end = session.records.iter().rev().find_map(|r| match r {
        Record::End { frames } => Some(*frames),
        _ => None,
    });
    let Some(frames) = until.map_or(end, |u| Some(end.map_or(u, |e| e.min(u)))) else {
        return Ok(0);
    };
    check_length(path, frames, *sample_rate)?;
    let layout = WavLayout {
        channels: u16::try_from(*channels).unwrap_or(u16::MAX),
        sample_rate: *sample_rate,
        format: WavFormat::F32,
        frames,
    };
    Ok(layout.file_len().unwrap_or(0))
}

/// A replay is at most as long as a render may be.
fn check_length(path: &Path, frames: u64, sample_rate: u32) -> Result<(), HostError> {
    let limit = crate::scene::max_duration_samples(sample_rate);
    if frames > limit {
        return Err(bad(
            path,
            None,
            format!(
                "the session is {frames} frames long, more than a replay renders ({}); replay a part of it with --until",
                crate::scene::duration_limit_text(sample_rate)
            ),
        ));
    }
    Ok(())
}

/// `morphrt replay`: the timeline (`--info`) or the re-rendered session.
pub fn replay(opts: &ReplayOptions, log: &mut dyn Write) -> Result<(), HostError> {
    let journal = opts.journal.as_path();
    if let Some(holder) = crate::host::files::lock::writer_of(journal) {
        let _ = writeln!(
            log,
            "note: `{}` is still being written by {holder} (the session is playing): this is the session up to its last record so far",
            journal.display()
        );
    }
    if opts.info {
        print!("{}", timeline(journal)?);
        return Ok(());
    }
    let Some(out) = opts.output.as_deref() else {
        return Err(HostError::Usage(
            "replay needs -o OUT.wav (or --info)".to_string(),
        ));
    };
    let session = read(journal)?;
    let until = match &opts.until {
        Some(t) => {
            let rate = match session.records.first() {
                Some(Record::Header { sample_rate, .. }) => *sample_rate,
                _ => 48_000,
            };
            Some(t.length(rate, None, log).map_err(HostError::Usage)?)
        }
        None => None,
    };
    // Where the WAV goes is checked before the replay renders.
    let needed = replay_len(journal, &session, until)?;
    let output = Output::prepare(out, &inputs(journal, &session), needed, &Kind::REPLAY)?;
    let what = output.describe();
    let t0 = std::time::Instant::now();
    let r = rerender(journal, until)?;
    for w in &r.warnings {
        let _ = writeln!(log, "warning: {w}");
    }
    write_wav(&r, output, &mut std::io::stdout())?;
    let secs = r.frames as f64 / r.sample_rate as f64;
    let _ = writeln!(
        log,
        "replayed {} frames ({secs:.2}s, {} ch) to {what} in {:.2}s ({:.1}x real time)",
        r.frames,
        r.channels,
        t0.elapsed().as_secs_f64(),
        secs / t0.elapsed().as_secs_f64().max(1e-9)
    );
    Ok(())
}
