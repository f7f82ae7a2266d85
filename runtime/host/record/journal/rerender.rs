//! Rendering a journal offline ([`rerender`]): the scene and every
//! handover compiled again from the journal's text, resources pinned to
//! the copies beside it, the recorded input and control changes fed at
//! their samples, through the same handover code and device output stage.

use super::error::{JournalError, Problem};
use super::read::{read, Session};
use super::{control_changes, note_changes, KeptResource, Record};
use crate::api::player::Scripted;
use crate::engine::incoming::{Incoming, ScriptedChange, ScriptedNote, SessionFixed};
use crate::graph::Resolver;
use crate::host::files::digest::sha256_hex;
use crate::host::files::resources::Folders;
use crate::host::record::input::RecordedInputFile;
use crate::host::HostError;
use crate::profile::Profile;
use crate::scene::Diagnostic;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Binds each resource reference to the journal's copy, checking its SHA-256.
fn pin(
    dir: &Path,
    list: &[KeptResource],
    journal: &Path,
) -> Result<Vec<(String, PathBuf)>, JournalError> {
    let mut out = Vec::new();
    for r in list {
        let copy = dir.join(&r.copy);
        let bytes = match crate::scene::resource::read_regular(&copy) {
            Ok(bytes) => bytes,
            Err(source) => {
                let problem = Problem::CopyUnreadable {
                    reference: r.reference.clone(),
                    path: r.path.clone(),
                    copy,
                    source,
                };
                return Err(JournalError::new(journal, problem));
            }
        };
        let sha = sha256_hex(&bytes);
        if sha != r.sha256 {
            let problem = Problem::CopyChanged {
                reference: r.reference.clone(),
                copy,
                sha256: sha,
                expected: r.sha256.clone(),
            };
            return Err(JournalError::new(journal, problem));
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

/// What a replay compiles and schedules from: the journal's header,
/// its resource directories, the recorded input and the changes the
/// scripted deck lands at their samples.
struct Rebuild<'a> {
    /// The journal, for messages.
    path: &'a Path,
    /// Where the journal's copies are.
    dir: &'a Path,
    /// The scene's path as the session named it (its resources resolve
    /// beside it when no copy pins them).
    scene_path: PathBuf,
    /// The recorded `--resources` directories that still exist.
    dirs: Vec<PathBuf>,
    fixed: SessionFixed,
    channels: usize,
    recorded: Option<RecordedInputFile>,
    changes: Vec<ScriptedChange>,
    notes: Vec<ScriptedNote>,
    /// The samples of snapshots taken inside a block: the replay cuts
    /// its blocks there too.
    snapshots: Vec<u64>,
}

impl<'a> Rebuild<'a> {
    /// The replay's fixed settings, from the header `read` checked.
    fn new(path: &'a Path, session: &'a Session) -> Result<(Rebuild<'a>, Profile), HostError> {
        let Some(Record::Header {
            scene,
            block_size,
            sample_rate,
            seed,
            auto_seed,
            profile,
            channels,
            resource_dirs,
            ..
        }) = session.records.first().cloned()
        else {
            unreachable!("read checked the header");
        };
        // The journal keeps a copy of every resource it read, so a recorded
        // `--resources` directory that is gone (another machine) is skipped
        // rather than refused as it would be on the command line.
        let dirs: Vec<PathBuf> = resource_dirs
            .iter()
            .map(PathBuf::from)
            .filter(|d| d.is_dir())
            .collect();
        let recorded = recorded_input(session, path, channels_of(session), sample_rate)?;
        let snapshots = session
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Snapshot { at, .. } => Some(*at),
                _ => None,
            })
            .collect();
        let mut rebuild = Rebuild {
            path,
            dir: &session.dir,
            scene_path: PathBuf::from(&scene),
            dirs,
            fixed: SessionFixed {
                block_size,
                sample_rate,
                seed,
                auto_seed,
                resolver: None,
                workers: None,
            },
            channels,
            recorded,
            // Control changes land as the deck plays, handovers included.
            changes: control_changes(&session.records),
            notes: note_changes(&session.records),
            snapshots,
        };
        rebuild.fixed.resolver = rebuild.folders(Vec::new());
        Ok((rebuild, profile))
    }

    /// The resolver of a scene: its resources pinned to the journal's
    /// copies, the recorded directories for the rest.
    fn folders(&self, pinned: Vec<(String, PathBuf)>) -> Option<Arc<dyn Resolver>> {
        Some(Arc::new(Folders {
            dirs: self.dirs.clone(),
            pinned,
        }))
    }

    /// Compiles a scene of the journal under `profile`, its resources
    /// pinned to the copies, fed the recorded input when it reads one.
    fn compile(
        &mut self,
        text: &str,
        resources: &[KeptResource],
        profile: Profile,
    ) -> Result<Incoming, HostError> {
        self.fixed.resolver = self.folders(pin(self.dir, resources, self.path)?);
        let mut inc =
            Incoming::compile(text, &self.scene_path, &self.fixed, profile).map_err(|mut d| {
                d.insert(
                    0,
                    Diagnostic::error(
                        &self.path.display().to_string(),
                        None,
                        "a scene in the journal no longer compiles with this build".to_string(),
                    ),
                );
                HostError::Input(d)
            })?;
        if let Some(r) = self
            .recorded
            .as_ref()
            .filter(|_| inc.engine.input_channels() > 0)
        {
            inc.engine.set_input_feed(
                r.feed()
                    .map_err(|e| JournalError::new(self.path, Problem::RecordedInput(e)))?,
            );
        }
        Ok(inc)
    }

    /// The deck that plays the first scene, with every change scheduled.
    fn scripted(&self, inc: Incoming) -> Scripted {
        let mut d = Scripted::new(inc, self.channels);
        d.schedule(self.changes.iter().cloned());
        d.schedule_notes(self.notes.iter().cloned());
        d.split_at(self.snapshots.iter().copied());
        d
    }
}

/// Renders a journal offline: the same handovers at the same N and S with
/// the same fades, the same device output stage and stop fade; every
/// engine on `workers` when given (the same bytes at any count).
pub fn rerender(
    path: &Path,
    until: Option<u64>,
    workers: Option<crate::engine::Workers>,
) -> Result<Replay, HostError> {
    let session = read(path)?;
    let mut warnings = session.warnings.clone();
    let (mut rebuild, profile) = Rebuild::new(path, &session)?;
    rebuild.fixed.workers = workers;
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
                deck = Some(rebuild.scripted(inc));
            }
        }
        match r {
            Record::Scene { text, resources } => {
                scene_inc = Some(rebuild.compile(text, resources, profile)?);
            }
            Record::Resume { snapshot, .. } => {
                let Some(inc) = scene_inc.as_mut() else {
                    let problem = Problem::BeforeScene("a resume record");
                    return Err(JournalError::new(path, problem).into());
                };
                let copy = pin(&session.dir, std::slice::from_ref(snapshot), path)?;
                let snap = crate::host::record::snapshot::SnapshotFile::read(&copy[0].1)?;
                let state = snap.state()?;
                inc.engine.migrate(&state, state.clock);
            }
            Record::Handover {
                profile,
                saved_at,
                swap_at,
                fade,
                text,
                resources,
                ..
            } => {
                let Some(d) = deck.as_mut() else {
                    let problem = Problem::BeforeScene("a handover");
                    return Err(JournalError::new(path, problem).into());
                };
                if until.is_some_and(|u| *saved_at >= u) {
                    break;
                }
                let inc = rebuild.compile(text, resources, *profile)?;
                if let Err(e) = d.handover_at(inc, *saved_at, *swap_at, *fade) {
                    return Err(JournalError::new(path, Problem::Handover(e)).into());
                }
            }
            Record::Stop { at, fade } => stop = Some((*at, *fade)),
            Record::End { frames } => end = Some(*frames),
            _ => {}
        }
    }
    if let Some(inc) = scene_inc.take() {
        deck = Some(rebuild.scripted(inc));
    }
    let Some(mut deck) = deck else {
        return Err(JournalError::new(path, Problem::NoScene).into());
    };
    let (channels, sample_rate) = (rebuild.channels, rebuild.fixed.sample_rate);
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
        let problem = Problem::ControlChange {
            at: *at,
            error: e.to_string(),
        };
        return Err(JournalError::new(path, problem).into());
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
) -> Result<Option<RecordedInputFile>, JournalError> {
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
        .map_err(|e| JournalError::new(journal, Problem::RecordedInput(e)))
}

/// The last sample a journal's records reach (a handover with its fade):
/// where the replay of a journal without an end record stops.
pub(super) fn last_sample(records: &[Record]) -> u64 {
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
pub(super) fn no_end(last: u64, sample_rate: u32) -> String {
    format!(
        "the journal has no end record (the session was cut off): its last record is at {:.3}s (sample {last})",
        last as f64 / sample_rate.max(1) as f64
    )
}

/// A replay is at most as long as a render may be.
pub(super) fn check_length(path: &Path, frames: u64, sample_rate: u32) -> Result<(), JournalError> {
    let limit = crate::scene::max_duration_samples(sample_rate);
    if frames > limit {
        let problem = Problem::TooLong {
            frames,
            limit: crate::scene::duration_limit_text(sample_rate),
        };
        return Err(JournalError::new(path, problem));
    }
    Ok(())
}
