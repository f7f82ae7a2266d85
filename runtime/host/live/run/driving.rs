//! What drives a playing session from the control thread: the file
//! watcher, the journal (with a progress record every second of audio, so
//! a session cut off by a crash replays up to its last second), the keys,
//! `w` snapshots, `t` per-node timing ([`super::timing`]) and the stop signals (SIGINT, SIGTERM, SIGHUP stop the
//! session as `q` does), as the control loop's [`Driver`].

use super::timing::NodeTiming;
use super::*;
use crate::engine::incoming::block_start;
use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::signals::{signal_name, InterruptGuard};
use crate::host::live::control::Driver;
use crate::host::live::device::jack;
use crate::host::live::input::file::FileInputStatus;
use crate::host::live::input::history::{history, History, HISTORY_SECONDS};
use crate::host::live::input::record::{stored_format, InputRecorder};
use crate::host::live::input::{InputFormat, LiveInput};
use crate::host::live::keys::{Command, Input, KeyListener};
use crate::host::live::player::{Meters, Player, Switches, TimingLink};
use crate::host::live::remote_in::RemoteHub;
use crate::host::live::session::{LiveSession, Reason};
use crate::host::live::tap::Existing;
use crate::host::live::transport::Transport;
use crate::host::live::watch::FileWatcher;
use crate::host::record::input::recorded_name;
use crate::host::record::journal::{Journal, Record};
use crate::host::remote::{Command as RemoteCommand, Reply};
use crate::host::HostError;
use crate::profile::{EventTiming, Profile};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

/// The control side of a `run`: the live session plus the watcher and keys.
pub(super) struct LiveDriver {
    pub(super) session: LiveSession,
    pub(super) journal: Option<Journal>,
    /// Handovers, rejections and snapshots already journaled.
    pub(super) journaled: (usize, usize, usize),
    /// Snapshot files (`w`) are named after this stem.
    pub(super) snapshot_stem: PathBuf,
    pub(super) watcher: Option<FileWatcher>,
    pub(super) commands: Option<Receiver<Input>>,
    pub(super) controls: Arc<Switches>,
    pub(super) scene: PathBuf,
    pub(super) watched: Vec<PathBuf>,
    /// The playing engine's nodes by time, read when playback ended with
    /// timing on.
    pub(super) node_times: Vec<crate::engine::NodeTime>,
    /// Per-node timing, turned on and off by `t`.
    pub(super) timing: NodeTiming,
    pub(super) meters: Arc<Meters>,
    /// Catches the stop signals until the first one arrives.
    pub(super) signals: InterruptGuard,
    /// The stop signal that ended the session, once the loop saw it.
    pub(super) signal: Option<i32>,
    /// The session's clock at device frame 0 (a resumed session's snapshot).
    pub(super) clock_start: u64,
    /// The sample of the last progress record, and the gap between two.
    pub(super) progressed: u64,
    pub(super) progress_every: u64,
    /// The session's input, its history and its recording, if it has one.
    pub(super) input: Option<SessionInput>,
    /// Control in: what the transports send.
    pub(super) hub: RemoteHub,
    /// Timetagged profile switches and snapshots, with the sample they
    /// ask for, until the clock comes near it.
    pub(super) timed: Vec<(u64, RemoteCommand, Option<Reply>)>,
    /// Snapshots asked for over control in, answered with the file once
    /// one is written; and the snapshots written when they were asked.
    pub(super) snapshot_replies: Vec<Reply>,
    pub(super) snapshots_seen: usize,
    /// The transports running (`--osc`, `--midi`), ticked with the
    /// session and stopped when dropped.
    pub(super) transports: Vec<Box<dyn Transport>>,
    /// `--transport follow`: the bits of the JACK transport's tempo last
    /// handed to the session (0: none yet).
    pub(super) transport_tempo: Option<u64>,
    /// Reads the keys until dropped (after everything above).
    pub(super) _keys: KeyListener,
}

/// The session's input as the control side sees it: the history the
/// callback writes, the file it is recorded in beside the journal, and
/// what the source says of itself (a file's end).
pub(super) struct SessionInput {
    pub(super) history: History,
    format: InputFormat,
    /// What `--input FILE` tells (its end, frames read late).
    status: Option<Arc<FileInputStatus>>,
    /// The source for messages and the journal: the file as given.
    source: String,
    recorder: Option<InputRecorder>,
    /// Said once each: the end of the file, frames read late so far.
    said_end: bool,
    said_late: u64,
}

impl SessionInput {
    /// Gives `live` to the player with a history of its input starting at
    /// the player's clock; the control side keeps the reading end.
    pub(super) fn attach(
        p: &mut Player,
        live: Box<dyn LiveInput>,
        status: Option<Arc<FileInputStatus>>,
        source: String,
    ) -> SessionInput {
        let rate = p.engine().sample_rate();
        let format = live.format();
        let (writer, history) = history(live.channels(), rate, HISTORY_SECONDS, p.engine().clock());
        p.set_input(live);
        p.set_history(writer);
        SessionInput {
            history,
            format,
            status,
            source,
            recorder: None,
            said_end: false,
            said_late: 0,
        }
    }

    /// Starts recording the input (at `rate`) beside `journal` and
    /// journals where; says so when the format cannot keep every value.
    fn record(
        &mut self,
        journal: &mut Journal,
        (inputs, overwrite): (&Inputs, bool),
        rate: u32,
        log: &mut dyn Write,
    ) -> Result<(), FileError> {
        let path = recorded_name(journal.path());
        let output = Output::prepare_with(&path, inputs, 0, &Kind::RECORDED_INPUT, overwrite)?;
        let existing = if output.replace {
            Existing::Replace
        } else {
            Existing::Refuse
        };
        let recorder =
            InputRecorder::start(output, existing, self.history.clone(), self.format, rate)?;
        let (stored, exact) = stored_format(self.format);
        journal.write(&Record::Input {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            source: self.source.clone(),
            channels: self.history.width(),
            format: stored.name().to_string(),
            start: self.history.origin(),
        })?;
        if !exact {
            let _ = writeln!(
                log,
                "warning: the input's {} samples are recorded as 32-bit float: a replay may differ from the session in their last bits",
                self.format.describe()
            );
        }
        self.recorder = Some(recorder);
        Ok(())
    }

    /// Says once that the file ended (the input is silence from there),
    /// and warns when frames came late.
    fn report(&mut self, sample_rate: u32, log: &mut dyn Write) {
        let Some(status) = &self.status else {
            return;
        };
        if let Some(e) = status.take_error() {
            let _ = writeln!(
                log,
                "
warning: {e}; the input is silence from there"
            );
        }
        if let (false, Some(frames)) = (self.said_end, status.ended()) {
            self.said_end = true;
            let _ = writeln!(
                log,
                "
input `{}` ended after {:.3} s ({frames} frames); the input is silence from here",
                self.source,
                frames as f64 / sample_rate as f64
            );
        }
        let late = status.late_frames();
        if late > self.said_late {
            self.said_late = late;
            let _ = writeln!(
                log,
                "
warning: input `{}`: {late} frames came too late from the disk and were read as silence",
                self.source
            );
        }
    }
}

impl Driver for LiveDriver {
    fn wait(&mut self, max: std::time::Duration) {
        self.hub.wait(max);
    }

    fn tick(&mut self, log: &mut dyn Write) {
        self.poll_signals(log);
        if let Some(rx) = &self.commands {
            while let Ok(input) = rx.try_recv() {
                let c = match input {
                    Ok(c) => c,
                    Err(unknown) => {
                        let _ = writeln!(log, "\n{unknown}");
                        continue;
                    }
                };
                match c {
                    Command::Strict => self.session.switch_profile(Profile::Strict, log),
                    Command::Repro => self.session.switch_profile(Profile::Repro, log),
                    Command::Live => self.session.switch_profile(Profile::Live, log),
                    Command::Quit => self.controls.stop.store(true, Ordering::Relaxed),
                    Command::Snapshot => self.session.request_snapshot(self.snapshot_stem.clone()),
                    Command::Timing => self.timing.toggle(log),
                }
            }
        }
        self.remote_in(log);
        self.follow_transport(log);
        if let Some(w) = &mut self.watcher {
            let changes = w.take_changes();
            if !changes.is_empty() {
                let resource = changes.iter().any(|p| !same_file(p, &self.scene));
                self.session.file_changed(resource, log);
            }
            let errors = w.take_errors();
            for e in &errors {
                let _ = writeln!(log, "\nwarning: file watcher: {e}");
            }
            if !errors.is_empty() {
                // A watched directory may have been deleted and recreated:
                // watching the set again picks it up.
                if let Err(e) = w.set_files(&self.watched) {
                    let _ = writeln!(log, "\nwarning: {e}");
                }
            }
        }
        // What the session says of a swap is said once control in resolves
        // against the new engine: a message sent on seeing it finds its maps.
        let mut said = Vec::new();
        self.session.tick(&mut said);
        self.hub.follow(self.session.playing_controls());
        let _ = log.write_all(&said);
        if let Some(i) = &mut self.input {
            i.report(self.session.fixed().sample_rate, log);
        }
        self.timing.poll(log);
        self.journal_news(log);
        self.journal_progress(log);
        // A scene edit may have added or removed resources.
        let files = self.session.watched_files();
        if files != self.watched {
            if let Some(w) = &mut self.watcher {
                if let Err(e) = w.set_files(&files) {
                    let _ = writeln!(log, "\nwarning: {e}");
                }
            }
            self.watched = files;
        }
    }

    fn finished(&mut self, player: &Player) {
        if self.timing.is_on() {
            self.node_times = player.engine().node_time_table();
        }
    }

    fn status(&self) -> String {
        let mut s = format!("  [{}]", self.session.profile());
        if let Some(late) = self.worker_xruns() {
            s += &format!("  worker xruns: {late}");
        }
        s += &self.hub.status();
        if !self.session.last_result.is_empty() {
            s += "  ";
            s += &self.session.last_result;
        }
        s
    }
}

impl LiveDriver {
    /// The xruns the session's workers caused, worker by worker (`None`
    /// without workers or when none was late).
    pub(super) fn worker_xruns(&self) -> Option<String> {
        let workers = self.session.fixed().workers.as_ref()?;
        crate::host::files::threads::worker_xruns_text(workers)
    }

    /// The first stop signal stops the session as `q` does (a fade, then
    /// the capture and the journal are finished); a second one ends the
    /// process at once.
    fn poll_signals(&mut self, log: &mut dyn Write) {
        if self.signal.is_some() {
            return;
        }
        if let Some(s) = self.signals.caught() {
            self.signal = Some(s);
            self.signals.release();
            self.controls.stop.store(true, Ordering::Relaxed);
            let _ = writeln!(log, "\n{}: stopping", signal_name(s));
        }
    }

    /// `--transport follow`: a tempo of the JACK transport's that has not
    /// been handed to the session yet is.
    fn follow_transport(&mut self, log: &mut dyn Write) {
        let (Some(seen), Some(bpm)) = (&mut self.transport_tempo, jack::transport_bpm()) else {
            return;
        };
        if bpm.to_bits() != *seen {
            *seen = bpm.to_bits();
            self.session.follow_tempo(bpm, log);
        }
    }

    /// Serves control in: the hub follows the engine playing, lands what
    /// arrived, and the session commands among it act as their keys do.
    fn remote_in(&mut self, log: &mut dyn Write) {
        // A `file:` MIDI port starts with the session's first tick.
        self.transports.iter_mut().for_each(|t| t.tick());
        self.hub.follow(self.session.playing_controls());
        let rate = self.session.fixed().sample_rate as f64;
        for (command, at, reply) in self.hub.tick(log) {
            let answer = match command {
                RemoteCommand::Stop if at > 0 => {
                    // The device's frame 0 is the session's `clock_start`.
                    self.controls
                        .stop_at_frame(at.saturating_sub(self.clock_start));
                    Ok(format!(
                        "stopping at sample {at} ({:.3} s)",
                        at as f64 / rate
                    ))
                }
                RemoteCommand::Profile(_) | RemoteCommand::Snapshot if at > 0 => {
                    self.timed.push((at, command, reply));
                    continue;
                }
                RemoteCommand::Profile(p) => {
                    self.session.switch_profile(p, log);
                    Ok(format!("switching to {p}"))
                }
                RemoteCommand::Snapshot => {
                    self.session.request_snapshot(self.snapshot_stem.clone());
                    self.snapshot_replies.extend(reply);
                    continue;
                }
                RemoteCommand::Stop => {
                    self.controls.stop.store(true, Ordering::Relaxed);
                    Ok("stopping".to_string())
                }
                RemoteCommand::Changes(_) | RemoteCommand::Notes { .. } => {
                    Err("changes and notes are the hub's".to_string())
                }
            };
            if let Some(r) = reply {
                r(answer);
            }
        }
        self.serve_timed(log);
    }

    /// Hands the session the timetagged switches and snapshots whose
    /// sample is less than half a second ahead (the session then places
    /// them at that sample, or at the start of its block under a
    /// block-accurate profile), and answers the snapshots asked for once
    /// one is written, naming its file.
    fn serve_timed(&mut self, log: &mut dyn Write) {
        let rate = self.session.fixed().sample_rate as u64;
        let block = self.session.fixed().block_size as u64;
        let clock = self.meters.clock.load(Ordering::Relaxed);
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.timed)
            .into_iter()
            .partition(|(at, ..)| clock + rate / 2 >= *at);
        self.timed = later;
        for (at, command, reply) in due {
            match command {
                RemoteCommand::Profile(p) => {
                    self.session.switch_profile_at(p, Some(at), log);
                    let when = match self.session.profile().event_timing() {
                        EventTiming::SampleAccurate => format!("at sample {at}"),
                        EventTiming::BlockAccurate => format!(
                            "at sample {} (the start of its block under {})",
                            block_start(at, self.clock_start, block),
                            self.session.profile()
                        ),
                    };
                    if let Some(r) = reply {
                        r(Ok(format!("switching to {p} {when}")));
                    }
                }
                _ => {
                    self.session
                        .request_snapshot_at(self.snapshot_stem.clone(), at);
                    self.snapshot_replies.extend(reply);
                }
            }
        }
        let written = &self.session.snapshots[self.snapshots_seen..];
        if let Some((at, file)) = written.last() {
            let text = format!("snapshot at sample {at} written to {}", file.display());
            for r in self.snapshot_replies.drain(..) {
                r(Ok(text.clone()));
            }
        }
        self.snapshots_seen = self.session.snapshots.len();
    }

    /// The stop signal that ended the session, if one did (also one that
    /// arrived after playback ended, before the files were finished).
    pub(super) fn stop_signal(&self) -> Option<i32> {
        self.signal.or_else(|| self.signals.caught())
    }

    /// Journals the sample clock once a second of audio has played since
    /// the last progress record, synced to disk: what a replay of a session
    /// cut off by a crash plays up to.
    fn journal_progress(&mut self, log: &mut dyn Write) {
        let Some(j) = &mut self.journal else {
            return;
        };
        let mut at = self.clock_start + self.meters.frames.load(Ordering::Relaxed);
        // Never past the input the recording holds for sure.
        if let Some(r) = self.input.as_ref().and_then(|i| i.recorder.as_ref()) {
            at = at.min(r.durable_until());
        }
        if at < self.progressed + self.progress_every {
            return;
        }
        match j.progress(at) {
            Ok(()) => self.progressed = at,
            Err(e) => {
                let _ = writeln!(log, "\nwarning: {e}; the journal stops here");
                self.journal = None;
            }
        }
    }

    /// Appends what happened since the last call to the journal. A journal
    /// that cannot be written is reported once and closed; playback goes on.
    pub(super) fn journal_news(&mut self, log: &mut dyn Write) {
        // Taken even unjournaled: the hub keeps nothing for long.
        let controls = self.hub.take_journal();
        let Some(j) = &mut self.journal else {
            return;
        };
        let mut records = Vec::new();
        let mut failed = None;
        for h in &self.session.applied[self.journaled.0..] {
            let resources = match j.resources(&h.resources) {
                Ok(r) => r,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let (reason, from, to) = match h.reason {
                Reason::Edit => ("edit", None, None),
                Reason::Switch { from, to } => ("switch", Some(from), Some(to)),
                Reason::Tempo(_) => ("tempo", None, None),
            };
            records.push(Record::Handover {
                reason: reason.to_string(),
                from,
                to,
                profile: h.profile,
                saved_at: h.saved_at,
                swap_at: h.swap_at,
                fade: h.fade,
                text: h.text.to_string(),
                resources,
            });
        }
        for r in &self.session.rejected[self.journaled.1..] {
            records.push(Record::Rejected {
                at: r.at,
                error: r.error.clone(),
                text: r.text.to_string(),
            });
        }
        for (at, file) in &self.session.snapshots[self.journaled.2..] {
            records.push(Record::Snapshot {
                at: *at,
                file: file.display().to_string(),
            });
        }
        records.extend(controls);
        self.journaled = (
            self.session.applied.len(),
            self.session.rejected.len(),
            self.session.snapshots.len(),
        );
        for r in &records {
            if let Err(e) = j.write(r) {
                failed = Some(e);
                break;
            }
        }
        if let Some(e) = failed {
            let _ = writeln!(log, "\nwarning: {e}; the journal stops here");
            self.journal = None;
        }
    }
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.file_name() == b.file_name(),
    }
}

impl LiveDriver {
    /// Starts what drives `session` from the control thread: the file
    /// watcher, the journal (`snap_clock`: where a resumed session
    /// started), the keys, and the stop signals `shared` catches.
    pub(super) fn start(
        opts: &RunOptions,
        session: LiveSession,
        shared: Shared,
        (journal_output, inputs): (Option<Output>, &Inputs),
        (channels, mut input): (usize, Option<SessionInput>),
        snap_clock: Option<u64>,
        log: &mut dyn Write,
    ) -> Result<LiveDriver, HostError> {
        let watched = session.watched_files();
        let watcher = start_watcher(opts, &watched, log);
        let journal = match journal_output {
            Some(output) => {
                let started = start_journal(output, inputs, opts, &session, channels, snap_clock)
                    .and_then(|mut j| match &mut input {
                        Some(i) => {
                            let rate = session.fixed().sample_rate;
                            i.record(&mut j, (inputs, opts.overwrite), rate, log)
                                .map(|_| j)
                        }
                        None => Ok(j),
                    });
                match started {
                    Ok(j) => Some(j),
                    Err(e) if opts.journal.is_some() => return Err(e.into()),
                    Err(e) => {
                        let _ = writeln!(log, "warning: {e}; this session is not journaled");
                        None
                    }
                }
            }
            None => None,
        };
        let snapshot_stem = snapshot_stem(opts, journal.as_ref());
        let Shared {
            controls,
            meters,
            signals,
            timing,
            hub,
            transports,
        } = shared;
        let sample_rate = session.fixed().sample_rate;
        let timing = NodeTiming::new(controls.clone(), meters.clone(), timing, sample_rate);
        let (keys, commands) = KeyListener::start(controls.clone());
        let clock_start = snap_clock.unwrap_or(0);
        let progress_every = session.fixed().sample_rate as u64;
        Ok(LiveDriver {
            session,
            journal,
            journaled: (0, 0, 0),
            snapshot_stem,
            watcher,
            commands: Some(commands),
            controls,
            scene: opts.scene.clone(),
            watched,
            node_times: Vec::new(),
            timing,
            meters,
            signals,
            signal: None,
            clock_start,
            progressed: clock_start,
            progress_every,
            input,
            hub,
            timed: Vec::new(),
            snapshot_replies: Vec::new(),
            snapshots_seen: 0,
            transports,
            transport_tempo: opts.transport.map(|_| 0),
            _keys: keys,
        })
    }

    /// After playback: journals what the audio thread sent back (engines are
    /// dropped here), then the stop and the end.
    pub(super) fn end(&mut self, meters: &Meters, fade: u64, log: &mut dyn Write) {
        self.session.tick(log);
        self.serve_timed(log);
        let unanswered = self
            .timed
            .drain(..)
            .filter_map(|(_, _, r)| r)
            .chain(self.snapshot_replies.drain(..));
        for r in unanswered {
            r(Err("the session stopped before it landed".to_string()));
        }
        self.hub.finish(log);
        self.journal_news(log);
        let recorded = self.finish_input(log);
        if let Some(j) = &mut self.journal {
            let stop = meters.stop_at.load(Ordering::Relaxed);
            let mut end = vec![Record::End {
                frames: meters.frames.load(Ordering::Relaxed),
            }];
            if let Some(r) = recorded {
                end.insert(0, r);
            }
            if stop != u64::MAX {
                end.insert(0, Record::Stop { at: stop, fade });
            }
            for r in &end {
                if let Err(e) = j.write(r) {
                    let _ = writeln!(log, "warning: {e}");
                }
            }
            let _ = writeln!(
                log,
                "journal: {} (replay it with `morphrt replay`)",
                j.path().display()
            );
        }
    }
}

impl LiveDriver {
    /// Finishes the recorded input (the callback has stopped): its end
    /// record for the journal, said with what it holds.
    fn finish_input(&mut self, log: &mut dyn Write) -> Option<Record> {
        let recorder = self.input.as_mut()?.recorder.take()?;
        match recorder.finish() {
            Ok(r) => {
                let _ = writeln!(
                    log,
                    "recorded input: {} ({} frames)",
                    r.path.display(),
                    r.frames
                );
                if r.lost_frames > 0 {
                    let _ = writeln!(log, "warning: the recorded input lost {} frames (its writer fell behind); a replay reads silence there", r.lost_frames);
                }
                if let Some(e) = &r.error {
                    let _ = writeln!(log, "warning: {e}");
                }
                Some(Record::InputEnd {
                    frames: r.frames,
                    sha256: r.sha256,
                })
            }
            Err(e) => {
                let _ = writeln!(log, "warning: {e}");
                None
            }
        }
    }
}

/// What the control side shares with the player and the process: the stop
/// and timing flags, the meters, the handlers that catch the stop signals
/// (installed before the capture's file is created), and the rings through
/// which it asks for per-node times.
pub(super) struct Shared {
    pub(super) controls: Arc<Switches>,
    pub(super) meters: Arc<Meters>,
    pub(super) signals: InterruptGuard,
    pub(super) timing: TimingLink,
    /// Control in: the hub, and the transports delivering to it.
    pub(super) hub: RemoteHub,
    pub(super) transports: Vec<Box<dyn Transport>>,
}

/// Watches the scene and its resources, unless `--no-watch`; a watcher that
/// cannot start is a warning.
pub(super) fn start_watcher(
    opts: &RunOptions,
    watched: &[PathBuf],
    log: &mut dyn Write,
) -> Option<FileWatcher> {
    if !opts.no_watch {
        match FileWatcher::start(watched, Duration::from_millis(opts.debounce_ms)) {
            Ok(w) => Some(w),
            Err(e) => {
                let _ = writeln!(
                    log,
                    "warning: cannot watch the scene ({e}); edits will not be applied"
                );
                None
            }
        }
    } else {
        None
    }
}

/// What snapshot files (`w`) are named after: the journal's name, else the
/// scene's.
pub(super) fn snapshot_stem(opts: &RunOptions, journal: Option<&Journal>) -> PathBuf {
    match journal {
        Some(j) => j.path().with_extension(""),
        None => PathBuf::from(
            opts.scene
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "scene".to_string()),
        ),
    }
}
