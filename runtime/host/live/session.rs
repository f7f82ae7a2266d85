//! The control side of a live session: hot edits of the scene file and
//! profile switches while `run` plays.
//!
//! Runs on the control thread, one [`LiveSession::tick`] every few
//! milliseconds. A change (a save, a key) is read, parsed, validated,
//! compiled and built here; only a complete engine is ever offered. The
//! handover then runs the steps of [`crate::engine::incoming`] against the
//! audio thread through the player's [`Link`]: capture at N, migrate,
//! fast-forward to S, offer, and the old engine comes back on the return
//! queue to be dropped here. One handover at a time: changes that arrive
//! meanwhile coalesce into the latest, which starts once the running one
//! (and its fade) is over.
//!
//! A change must keep up with the audio clock: one whose new engine the
//! nominal estimate puts over [`HANDOVER_BUDGET`] of the block deadline is
//! refused with the estimate (unless `run --force`, or it costs no more than
//! the engine playing, which the session keeps up with), and one that still
//! cannot fast-forward ahead of the clock is dropped; one that reads the
//! input, and so catches up on the audio thread beside the engine
//! playing, is refused when the estimate of that sum is over the deadline
//! (`catch_up_over_budget`); either way the
//! engine playing keeps playing, and a stop is never held up.
//!
//! What an edit cannot do is said, not swallowed: a `sample_rate`,
//! `block_size` or `seed` the session fixes is not applied (and an edit of
//! only those hands nothing over), and an event the edit adds at a time
//! already played never fires. The latency of an edit runs from the newest
//! modification of the scene or a resource it reads, which is the edit.

use crate::engine::incoming::{
    block_start, fade_for, on_grid, only_fixed_differ, parent_dir, past_events, switch_warning,
    Asked, EventKey, Incoming, SessionFixed,
};
use crate::engine::{fold_voice_copies, voices_suffix, EngineState, Migration, Notice};
use crate::host::files::rules::Inputs;
use crate::host::live::input::history::{fast_forward_through, History, Miss};
use crate::host::live::player::{FromAudio, Link, Meters, ToAudio};
use crate::profile::{EventTiming, Profile};
use crate::scene::Diagnostic;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Why a handover was started.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// The scene file (or a resource) changed.
    Edit,
    /// A profile switch, by key or by the file's `profile`.
    Switch { from: Profile, to: Profile },
}

/// A handover the session completed, for reports and the journal.
#[derive(Clone, Debug)]
pub struct HandoverRecord {
    pub reason: Reason,
    /// The scene text the new engine was built from.
    pub text: Arc<String>,
    pub profile: Profile,
    pub captured_at: u64,
    pub swap_at: u64,
    pub fade: u64,
    pub migration: Migration,
    /// From the change (file modification time, or the key) to the moment
    /// the audio thread reached the swap sample.
    pub latency: Option<Duration>,
    /// Control-thread time spent migrating and fast-forwarding.
    pub migrate_time: Duration,
    pub fast_forward_time: Duration,
    /// Offers the audio thread refused (it had passed S already).
    pub refusals: u32,
    /// Resource references the new scene used and the files they read.
    pub resources: Vec<(String, PathBuf)>,
}

/// A change that was not applied (the running graph kept playing): it failed
/// to compile, or its engine could not keep up.
#[derive(Clone, Debug)]
pub struct Rejected {
    pub text: Arc<String>,
    pub error: String,
    /// The audio clock when it was rejected.
    pub at: u64,
}

struct Job {
    incoming: Incoming,
    reason: Reason,
    text: Arc<String>,
    /// When the change was made (file mtime or key press).
    since: SystemTime,
    /// The sample it asks to swap at (a timetagged switch): that sample
    /// under a sample-accurate profile playing, the start of its block
    /// under a block-accurate one, unless the clock is too close to it.
    at: Option<u64>,
}

/// Why a handover was given up before it was offered.
enum Unplaced {
    /// The session is stopping (`q`, a stop signal, the duration's end).
    Stopping,
    /// Fast-forwarding could not get ahead of the audio clock: how it went.
    Behind(String),
}

/// How the events of an offered engine compare with the playing one's.
struct Events {
    /// The offered engine's events, which the session keeps once it swaps.
    keys: Vec<EventKey>,
    /// Warnings about events it added before the capture (they never fire).
    past: Vec<String>,
}

enum Phase {
    Idle,
    /// Waiting for the audio thread's capture.
    Capturing(Job),
    /// Offered at `at`; waiting for the swap (or a refusal).
    Offered {
        job_reason: Reason,
        text: Arc<String>,
        asked: Asked,
        profile: Profile,
        file_profile: Option<Profile>,
        capture: Box<EngineState>,
        captured_at: u64,
        at: u64,
        fade: u64,
        migration: Migration,
        since: SystemTime,
        migrate_time: Duration,
        ff_time: Duration,
        refusals: u32,
        resources: Vec<(String, PathBuf)>,
        events: Events,
        /// Offered to catch up through the input history from `at`: the
        /// swap comes at the clock the audio thread reaches with it.
        catching_up: bool,
        /// The offered engine's `controls` and nodes, for control in.
        controls: PlayingControls,
    },
    /// Swapped; waiting for the old engine to come back (after its fade).
    Retiring,
    /// Waiting for the audio thread's capture, to write a snapshot file
    /// (`w`) whose name starts with this stem.
    Snapshotting(PathBuf),
}

/// The live session's control state.
pub struct LiveSession {
    path: PathBuf,
    fixed: SessionFixed,
    /// The session profile: the engine playing (or being handed over to).
    profile: Profile,
    /// The file's top-level `profile` at the last good load: a change of it
    /// in the file is a profile switch.
    file_profile: Option<Profile>,
    /// The last text read, good or bad: an unchanged file is not reloaded
    /// and a bad one is reported once.
    last_text: Option<Arc<String>>,
    /// The last text that compiled (a key switch recompiles it).
    good_text: Arc<String>,
    /// What `good_text` asks of the session's fixed settings.
    good_asked: Asked,
    /// The text of the engine playing now, and what it asks: `good_text`
    /// may be ahead of it while a handover is queued or in flight.
    playing_text: Arc<String>,
    playing_asked: Asked,
    /// `run --force`: hand over engines whose estimate misses the budget.
    force: bool,
    /// The events of the engine playing now.
    events: Vec<EventKey>,
    resources: Vec<(String, PathBuf)>,
    link: Link,
    meters: Arc<Meters>,
    /// Shaped for the engine playing now; out while a capture is in flight.
    capture: Option<Box<EngineState>>,
    phase: Phase,
    queued: Option<Job>,
    /// Samples of headroom between the audio clock and an offered S.
    lead: u64,
    /// What happened, in order.
    pub applied: Vec<HandoverRecord>,
    pub rejected: Vec<Rejected>,
    /// One line for the status display: the last edit's result.
    pub last_result: String,
    /// A snapshot asked for (`w`), with the stem of its file name and
    /// the sample it asks for (a timetagged one).
    snapshot_wanted: Option<(PathBuf, Option<u64>)>,
    /// Snapshots written: the sample they hold and the file.
    pub snapshots: Vec<(u64, PathBuf)>,
    /// Files the session reads besides the scene and its resources (the
    /// snapshot it resumed from), which a snapshot file must not replace.
    protected: Inputs,
    /// The input the callback has read, when the session has an input: a
    /// new engine that reads it catches up through it.
    history: Option<History>,
    /// The `controls` and nodes of the engine playing now.
    controls: Option<PlayingControls>,
}

/// An engine's `controls` and its nodes by id ([`Incoming`] carries
/// them): what control messages are resolved against while it plays.
pub type PlayingControls = (
    Arc<Vec<crate::graph::ControlMap>>,
    Arc<crate::engine::ControlTable>,
);

impl LiveSession {
    /// A session playing `first` (already handed to the player whose link
    /// and meters are given), built from `text` read from `path`, which asks
    /// `asked` of the fixed settings and schedules `events`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        path: &Path,
        text: String,
        fixed: SessionFixed,
        profile: Profile,
        file_profile: Option<Profile>,
        capture: Box<EngineState>,
        resources: Vec<(String, PathBuf)>,
        (asked, events): (Asked, Vec<EventKey>),
        link: Link,
        meters: Arc<Meters>,
    ) -> LiveSession {
        let text = Arc::new(text);
        let block = fixed.block_size as u64;
        // Headroom for the offer to reach the audio thread before S: at
        // least 10 ms and 4 blocks.
        let lead = (fixed.sample_rate as u64 / 100)
            .max(4 * block)
            .div_ceil(block)
            * block;
        LiveSession {
            path: path.to_path_buf(),
            fixed,
            profile,
            file_profile,
            last_text: Some(text.clone()),
            good_text: text.clone(),
            good_asked: asked.clone(),
            playing_text: text,
            playing_asked: asked,
            force: false,
            events,
            resources,
            link,
            meters,
            capture: Some(capture),
            phase: Phase::Idle,
            queued: None,
            lead,
            applied: Vec::new(),
            rejected: Vec::new(),
            last_result: String::new(),
            snapshot_wanted: None,
            snapshots: Vec::new(),
            protected: Inputs::default(),
            history: None,
            controls: None,
        }
    }

    /// The history of the session's input: from now on a new engine that
    /// reads the input is fast-forwarded through it and catches up with
    /// the audio clock there ([`ToAudio::CatchUp`]); an engine that reads
    /// none is placed ahead of the clock as before.
    pub fn set_history(&mut self, history: History) {
        self.history = Some(history);
    }

    /// The first engine's `controls` and nodes (its [`Incoming`]'s);
    /// each handover that swaps replaces them with its engine's.
    pub fn set_controls(&mut self, controls: PlayingControls) {
        self.controls = Some(controls);
    }

    /// The `controls` and nodes of the engine playing now, once
    /// [`set_controls`](Self::set_controls) gave the first.
    pub fn playing_controls(&self) -> Option<&PlayingControls> {
        self.controls.as_ref()
    }

    /// Files besides the scene and its resources that no snapshot file may
    /// replace (the snapshot the session resumed from).
    pub fn protect(&mut self, inputs: Inputs) {
        self.protected = inputs;
    }

    /// `run --force`: edits and switches are handed over even when the new
    /// engine's estimated cost is over the handover budget
    /// ([`HANDOVER_BUDGET`]); one that then cannot keep up is still dropped.
    pub fn force(&mut self, force: bool) {
        self.force = force;
    }

    /// Asks for a snapshot file of the playing engine at the next block
    /// boundary (between handovers): `STEM.<sample>.snapshot.json`.
    pub fn request_snapshot(&mut self, stem: PathBuf) {
        self.snapshot_wanted = Some((stem, None));
    }

    /// Asks for a snapshot file of the playing engine at sample `at`: the
    /// state at `at` exactly under a sample-accurate profile (the audio
    /// thread cuts its block there), at the start of its block under a
    /// block-accurate one, or at the next block boundary if the clock has
    /// passed it ([`ToAudio::CaptureAt`]).
    pub fn request_snapshot_at(&mut self, stem: PathBuf, at: u64) {
        self.snapshot_wanted = Some((stem, Some(at)));
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The session's constants.
    pub fn fixed(&self) -> &SessionFixed {
        &self.fixed
    }

    /// The scene text playing (or queued to play).
    pub fn text(&self) -> &str {
        &self.good_text
    }

    /// The resources the playing scene reads (reference, file).
    pub fn resources(&self) -> &[(String, PathBuf)] {
        &self.resources
    }

    /// The scene file and the resources it reads: what to watch.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.path.clone()];
        for (_, p) in &self.resources {
            if !v.contains(p) {
                v.push(p.clone());
            }
        }
        v
    }

    /// Whether nothing is in flight or queued.
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle) && self.queued.is_none()
    }

    /// The scene file or a resource changed: re-read and, if it compiles,
    /// queue the handover. `force` reloads even if the text is unchanged
    /// (a resource changed).
    pub fn file_changed(&mut self, force: bool, log: &mut dyn Write) {
        let since = self.changed_at();
        // Never a FIFO or a device put in the scene's place: reading it
        // would stall the control loop.
        let text = match crate::scene::resource::read_regular_text(&self.path) {
            Ok(t) => t,
            // Deleted before being recreated: the next save will tell.
            Err(crate::scene::resource::NotRegular::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                return
            }
            Err(e) => {
                let _ = writeln!(log, "\nwarning: cannot read {}: {e}", self.path.display());
                return;
            }
        };
        if !force && self.last_text.as_deref().is_some_and(|t| *t == text) {
            return;
        }
        let text = Arc::new(text);
        self.last_text = Some(text.clone());
        if !force && text == self.good_text {
            // Back to what is playing (or queued), e.g. after a bad save.
            let _ = writeln!(
                log,
                "\nthe file matches the running scene again; nothing to apply"
            );
            return;
        }
        // A change of the file's `profile` switches the session to it. The
        // rest compiles under the profile queued last (a key switch that
        // has not landed yet), which coalescing then keeps.
        let (queued, queued_file) = self.queued_profiles();
        let (profile, switched) = match peek_profile(&text) {
            Some(p) if Some(p) != queued_file && p != queued => (p, true),
            _ => (queued, false),
        };
        match self.build(&text, profile) {
            Ok(inc) => {
                if !inc.warnings.is_empty() {
                    let _ = writeln!(log, "\n{}", crate::scene::Shown::new(&inc.warnings));
                }
                if !self.report_unapplied(&inc.asked, &text, force, log) {
                    return;
                }
                let reason = if switched {
                    Reason::Switch {
                        from: self.queued_profile(),
                        to: profile,
                    }
                } else {
                    Reason::Edit
                };
                self.good_text = text.clone();
                self.good_asked = inc.asked.clone();
                self.queue(Job {
                    incoming: inc,
                    reason,
                    text,
                    since,
                    at: None,
                });
            }
            Err(error) => {
                let _ = writeln!(
                    log,
                    "\nedit rejected; the running graph keeps playing:\n{error}"
                );
                self.last_result = "last edit rejected (see above)".to_string();
                self.rejected.push(Rejected {
                    text,
                    error,
                    at: self.meters.clock.load(Ordering::Relaxed),
                });
            }
        }
    }

    /// When the change happened: the newest modification time of the scene
    /// and the resources it reads (the file just saved), never later than
    /// now.
    fn changed_at(&self) -> SystemTime {
        let now = SystemTime::now();
        self.watched_files()
            .iter()
            .filter_map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
            .max()
            .map_or(now, |t| t.min(now))
    }

    /// Warns about the fixed settings an edit to `text` (asking `asked`)
    /// changes, saying whether the rest of it applies. Returns whether
    /// there is anything to hand over: not when only fixed settings
    /// changed (and no resource, `force`).
    fn report_unapplied(
        &mut self,
        asked: &Asked,
        text: &str,
        force: bool,
        log: &mut dyn Write,
    ) -> bool {
        let unapplied = self.fixed.unapplied(&self.good_asked, asked);
        if unapplied.is_empty() {
            return true;
        }
        let _ = writeln!(log);
        for w in &unapplied {
            let _ = writeln!(log, "warning: {w}");
        }
        if !force && only_fixed_differ(&self.good_text, text) {
            let _ = writeln!(log, "nothing else in the edit changed; nothing applied");
            self.last_result = "edit not applied: the session's settings are fixed".to_string();
            return false;
        }
        let _ = writeln!(log, "the rest of the edit is applied");
        true
    }

    /// Switches the session to `to` (a key): the last good scene text is
    /// rebuilt under the other profile.
    pub fn switch_profile(&mut self, to: Profile, log: &mut dyn Write) {
        self.switch_profile_at(to, None, log);
    }

    /// [`switch_profile`](Self::switch_profile), swapping at sample `at`
    /// when one is given (a timetagged switch; see [`place`](Self::place)).
    pub fn switch_profile_at(&mut self, to: Profile, at: Option<u64>, log: &mut dyn Write) {
        let from = self.queued_profile();
        if from == to {
            let _ = writeln!(log, "\nalready {to}");
            return;
        }
        let text = self.good_text.clone();
        match self.build(&text, to) {
            Ok(inc) => self.queue(Job {
                incoming: inc,
                reason: Reason::Switch { from, to },
                text,
                since: SystemTime::now(),
                at,
            }),
            Err(error) => {
                let _ = writeln!(
                    log,
                    "\ncannot switch to {to}; {from} keeps playing:\n{error}"
                );
                self.last_result = format!("switch to {to} refused (see above)");
            }
        }
    }

    /// The profile the session will have once what is queued has run.
    fn queued_profile(&self) -> Profile {
        self.queued_profiles().0
    }

    /// The session profile and the file's `profile` once what is queued
    /// (or in flight) has run.
    fn queued_profiles(&self) -> (Profile, Option<Profile>) {
        if let Some(j) = &self.queued {
            return (j.incoming.profile, j.incoming.file_profile);
        }
        match &self.phase {
            Phase::Capturing(j) => (j.incoming.profile, j.incoming.file_profile),
            Phase::Offered {
                profile,
                file_profile,
                ..
            } => (*profile, *file_profile),
            _ => (self.profile, self.file_profile),
        }
    }

    fn queue(&mut self, job: Job) {
        // Rapid changes coalesce: only the latest waits. A switch that the
        // replaced job carried is still a switch.
        let job = match (self.queued.take(), job) {
            (Some(old), mut new) => {
                if let (Reason::Switch { from, .. }, Reason::Edit) = (&old.reason, &new.reason) {
                    if *from != new.incoming.profile {
                        new.reason = Reason::Switch {
                            from: *from,
                            to: new.incoming.profile,
                        };
                    }
                }
                new
            }
            (None, new) => new,
        };
        self.queued = Some(job);
    }

    /// Drives the handover: serves the audio thread's replies, starts the
    /// next queued change when idle. Call every few milliseconds.
    pub fn tick(&mut self, log: &mut dyn Write) {
        while let Some(msg) = self.link.receive() {
            match msg {
                FromAudio::Captured { state, at } => self.captured(state, at, log),
                FromAudio::Swapped { at } => self.swapped(at, log),
                FromAudio::Refused { engine, clock } => self.refused(engine, clock, log),
                FromAudio::Retired(old) => {
                    // Dropped here, on the control thread.
                    drop(old);
                    if matches!(self.phase, Phase::Retiring) {
                        self.phase = Phase::Idle;
                    }
                }
            }
        }
        if matches!(self.phase, Phase::Idle)
            && self.queued.is_none()
            && self.snapshot_wanted.is_some()
            && self.capture.is_some()
        {
            let (stem, at) = self.snapshot_wanted.take().expect("checked");
            let buf = self.capture.take().expect("checked");
            let request = match at {
                Some(at) => ToAudio::CaptureAt { state: buf, at },
                None => ToAudio::Capture(buf),
            };
            match self.link.send(request) {
                Ok(()) => self.phase = Phase::Snapshotting(stem),
                Err(ToAudio::Capture(buf) | ToAudio::CaptureAt { state: buf, .. }) => {
                    self.capture = Some(buf);
                    self.snapshot_wanted = Some((stem, at));
                }
                Err(_) => unreachable!("pushed a capture"),
            }
        }
        if matches!(self.phase, Phase::Idle) {
            if let Some(job) = self.queued.take() {
                // A timed switch is captured a little before its sample,
                // so that the new engine is placed there in time: a fifth
                // of a second at least, which a busy control thread still
                // migrates and fast-forwards through in time; two leads
                // for an engine that reads the input (the audio thread
                // catches it up, then keeps it in step until the sample).
                let ahead = if self.reads_history(&job.incoming.engine) {
                    2 * self.lead
                } else {
                    (2 * self.lead).max(self.fixed.sample_rate as u64 / 5)
                };
                let from = job.at.map(|at| at.saturating_sub(ahead));
                match self.capture.take() {
                    Some(buf) => match self.link.send(capture_request(buf, from)) {
                        Ok(()) => self.phase = Phase::Capturing(job),
                        Err(ToAudio::Capture(buf) | ToAudio::CaptureFrom { state: buf, .. }) => {
                            self.capture = Some(buf);
                            self.queued = Some(job);
                        }
                        Err(_) => unreachable!("pushed a capture"),
                    },
                    None => self.queued = Some(job),
                }
            }
        }
    }

    fn captured(&mut self, state: Box<EngineState>, at: u64, log: &mut dyn Write) {
        let job = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Capturing(job) => job,
            Phase::Snapshotting(stem) => {
                self.write_snapshot(&state, at, &stem, log);
                self.capture = Some(state);
                return;
            }
            other => {
                self.phase = other;
                self.capture = Some(state);
                return;
            }
        };
        let Job {
            mut incoming,
            reason,
            text,
            since,
            at: wanted,
        } = job;
        let t0 = Instant::now();
        let migration = incoming.engine.migrate(&state, at);
        let migrate_time = t0.elapsed();
        // The buffer shaped for the playing engine stays ours until the
        // swap happens.
        let t1 = Instant::now();
        let catching_up = self.reads_history(&incoming.engine);
        let wanted = wanted.map(|w| self.landing(w, at));
        let s = match self.place_any(&mut incoming.engine, (at, wanted), catching_up) {
            Ok(s) => s,
            Err(why) => {
                self.capture = Some(state);
                self.dropped(&reason, incoming.profile, &text, why, log);
                return;
            }
        };
        let ff_time = t1.elapsed();
        let fade = fade_for(&migration, &incoming.engine);
        let profile = incoming.profile;
        let file_profile = incoming.file_profile;
        let asked = incoming.asked.clone();
        let resources = std::mem::take(&mut incoming.resources);
        incoming.retime_keys();
        let events = self.compare_events(std::mem::take(&mut incoming.events), at);
        let controls = (incoming.controls.clone(), incoming.table.clone());
        if let Err(e) = self
            .link
            .send(offer(incoming.engine, (s, wanted), fade, catching_up))
        {
            // The queue holds 16 and a handover uses 2: cannot happen; keep
            // the session consistent anyway.
            drop(e);
            self.capture = Some(state);
            let _ = writeln!(
                log,
                "\nwarning: the audio thread is not taking requests; edit dropped"
            );
            return;
        }
        self.capture = Some(state);
        self.phase = Phase::Offered {
            job_reason: reason,
            text,
            asked,
            profile,
            file_profile,
            capture: incoming.capture,
            captured_at: at,
            at: s,
            fade,
            migration,
            since,
            migrate_time,
            ff_time,
            refusals: 0,
            resources,
            events,
            catching_up,
            controls,
        };
    }

    /// Whether `engine` is handed over through the input history: it reads
    /// the input, and the session has one.
    fn reads_history(&self, engine: &crate::engine::Engine) -> bool {
        self.history.is_some() && engine.input_channels() > 0
    }

    /// Places `engine`, captured or refused at `from`: ahead of the audio
    /// clock ([`place`](Self::place)), or through the input history when
    /// `catching_up` ([`place_behind`](Self::place_behind)). Returns the
    /// sample to offer it at.
    fn place_any(
        &mut self,
        engine: &mut crate::engine::Engine,
        (from, wanted): (u64, Option<u64>),
        catching_up: bool,
    ) -> Result<u64, Unplaced> {
        match (&self.history, catching_up) {
            (Some(h), true) => {
                let h = h.clone();
                self.place_behind(engine, &h, (from, wanted))
            }
            _ => self.place(engine, from, wanted),
        }
    }

    /// Where a timetagged switch asking for sample `at` swaps, the block
    /// grid going through `from`: at `at` under the sample-accurate
    /// profile playing, at the start of its block under a block-accurate
    /// one (as control changes land).
    fn landing(&self, at: u64, from: u64) -> u64 {
        match self.profile.event_timing() {
            EventTiming::SampleAccurate => at,
            EventTiming::BlockAccurate => block_start(at, from, self.fixed.block_size as u64),
        }
    }

    /// Fast-forwards an engine that reads the input through the history
    /// until it stands within [`BEHIND_AT_OFFER`] blocks of where the
    /// history reaches (the audio clock), with its swap sample left open
    /// (the audio thread sets it where it swaps), or, for a `wanted` swap
    /// sample (a timetagged switch; the grid goes through `from`), set to
    /// it and never past the start of its block. Returns where it stands
    /// (M). Gives up, as [`place`](Self::place) does, when the session
    /// stops, when fast-forwarding cannot keep up for [`MAX_LEAD_SECONDS`],
    /// or when the history no longer holds the input it needs.
    fn place_behind(
        &self,
        engine: &mut crate::engine::Engine,
        history: &History,
        (from, wanted): (u64, Option<u64>),
    ) -> Result<u64, Unplaced> {
        let block = self.fixed.block_size as u64;
        let sr = self.fixed.sample_rate as f64;
        // One the engine has passed already swaps where it reaches the clock.
        let wanted = wanted.filter(|w| *w >= engine.clock());
        engine.set_swap_sample(wanted.unwrap_or(u64::MAX));
        let limit = wanted.map_or(u64::MAX, |w| block_start(w, from, block));
        let (started, first) = (Instant::now(), engine.clock());
        loop {
            let m = fast_forward_through(engine, history, limit).map_err(|miss| {
                let held = match miss {
                    Miss::Gone(from) | Miss::NotYet(from) => from,
                };
                Unplaced::Behind(format!(
                    "the input history holds the last {:.1} s, from {:.3} s on, but the new engine needs the input from {:.3} s",
                    history.capacity() as f64 / sr,
                    held as f64 / sr,
                    engine.clock() as f64 / sr
                ))
            })?;
            if self.stopping() {
                return Err(Unplaced::Stopping);
            }
            if m >= limit || history.written().saturating_sub(m) <= BEHIND_AT_OFFER * block {
                return Ok(m);
            }
            let wall = started.elapsed();
            if wall > Duration::from_secs(MAX_LEAD_SECONDS) {
                let rate = (m - first) as f64 / sr / wall.as_secs_f64().max(1e-9);
                let behind = history.written().saturating_sub(m);
                return Err(Unplaced::Behind(format!(
                    "fast-forwarding through the input ran at {rate:.2}× real time, {:.0} ms behind the audio clock after {:.1} s",
                    behind as f64 * 1e3 / sr,
                    wall.as_secs_f64()
                )));
            }
        }
    }

    /// Whether the session is stopping (`q`, a stop signal, the end).
    fn stopping(&self) -> bool {
        self.meters.stop_at.load(Ordering::Relaxed) != u64::MAX
            || self.meters.finished.load(Ordering::Relaxed)
            || crate::host::files::signals::stop_caught()
    }

    /// The offered engine's events against the playing one's, for a
    /// handover captured at `at`: those the edit added before it never fire.
    fn compare_events(&self, keys: Vec<EventKey>, at: u64) -> Events {
        let sr = self.fixed.sample_rate as f64;
        let past = past_events(&keys, &self.events, at, self.fixed.block_size as u64)
            .into_iter()
            .map(|e| {
                format!(
                    "event at {} on `{}.{}` is in the past (now {}) and will not fire",
                    seconds(e.sample, sr),
                    e.node,
                    e.param,
                    seconds(at, sr)
                )
            })
            .collect();
        Events { keys, past }
    }

    /// Picks the swap sample S ahead of the audio clock and fast-forwards
    /// the engine to it. Returns S. `from` is a clock the audio thread
    /// reported at a block boundary (a capture, a refusal): S is on its
    /// block grid, which a resumed session does not start at a multiple of
    /// the block. The lead doubles while the audio thread keeps up, so the
    /// loop ends once fast-forwarding outruns it; it gives up when it does
    /// not ([`Unplaced`]): the lead past [`MAX_LEAD_SECONDS`], placing for
    /// as long in wall time, fast-forwarding slower than real time, or the
    /// session stopping. A `wanted` sample (a timed switch) that lies
    /// beyond that boundary is S itself under a sample-accurate profile
    /// playing (the start of its block under a block-accurate one): the
    /// engine is fast-forwarded to the start of the block that holds it,
    /// and the audio thread runs it from there to S beside the first part
    /// of that block, cut at S ([`ToAudio::Offer`]). One too close to the
    /// clock swaps at the boundary, later than asked.
    fn place(
        &mut self,
        engine: &mut crate::engine::Engine,
        from: u64,
        wanted: Option<u64>,
    ) -> Result<u64, Unplaced> {
        let block = self.fixed.block_size as u64;
        let sr = self.fixed.sample_rate as u64;
        let mut lead = self.lead;
        let (started, first) = (Instant::now(), engine.clock());
        for missed in 1.. {
            let audio = self.meters.clock.load(Ordering::Relaxed).max(from);
            let s = on_grid(audio.saturating_add(lead), from, block).max(engine.clock());
            // Where the engine waits for the swap: S on the grid, or the
            // start of the block that holds a wanted S.
            let (s, stand) = match wanted {
                Some(w) if w >= s => (w, block_start(w, from, block)),
                _ => (s, s),
            };
            engine.set_swap_sample(s);
            let in_time = self.catch_up(engine, stand, started)?;
            // Still ahead of the audio thread by a block: offer it.
            if in_time
                && engine.clock() >= stand
                && self.meters.clock.load(Ordering::Relaxed) + block <= stand
            {
                return Ok(s);
            }
            let wall = started.elapsed().as_secs_f64().max(1e-9);
            let rate = (engine.clock() - first) as f64 / sr as f64 / wall;
            lead = lead.saturating_mul(2);
            if !in_time || lead > MAX_LEAD_SECONDS * sr || (missed >= 3 && rate < 1.0) {
                let behind = self
                    .meters
                    .clock
                    .load(Ordering::Relaxed)
                    .saturating_sub(engine.clock());
                return Err(Unplaced::Behind(format!(
                    "fast-forwarding ran at {rate:.2}× real time, {:.0} ms behind the audio clock after {wall:.1} s",
                    behind as f64 * 1e3 / sr as f64,
                )));
            }
        }
        unreachable!("the loop returns")
    }

    /// Fast-forwards `engine` towards `s` a few milliseconds of audio at a
    /// time, stopping early once the audio clock has passed `s` (the lead
    /// was too short). Returns false once placing, `started` then, has
    /// taken [`MAX_LEAD_SECONDS`]; gives up when the session stops.
    fn catch_up(
        &self,
        engine: &mut crate::engine::Engine,
        s: u64,
        started: Instant,
    ) -> Result<bool, Unplaced> {
        let block = self.fixed.block_size as u64;
        let chunk = (self.fixed.sample_rate as u64 / 200).div_ceil(block) * block;
        let limit = Duration::from_secs(MAX_LEAD_SECONDS);
        while engine.clock() < s {
            engine.fast_forward(s.min(engine.clock() + chunk));
            if self.stopping() {
                return Err(Unplaced::Stopping);
            }
            if started.elapsed() > limit {
                return Ok(false);
            }
            if self.meters.clock.load(Ordering::Relaxed) + block > s {
                break;
            }
        }
        Ok(true)
    }

    /// A handover that could not be placed: the new engine is dropped (the
    /// capture buffer is back), one that could not keep up is said and
    /// recorded as rejected, and the text playing is the latest good one
    /// again unless a newer change waits.
    fn dropped(
        &mut self,
        reason: &Reason,
        profile: Profile,
        text: &Arc<String>,
        why: Unplaced,
        log: &mut dyn Write,
    ) {
        self.phase = Phase::Idle;
        if self.queued.is_none() {
            self.good_text = self.playing_text.clone();
            self.good_asked = self.playing_asked.clone();
        }
        let Unplaced::Behind(why) = why else {
            return;
        };
        let what = match reason {
            Reason::Edit => format!("the edit under {profile}"),
            Reason::Switch { to, .. } => format!("the switch to {to}"),
        };
        let _ = writeln!(
            log,
            "\n{what} was dropped: {profile} cannot keep up with this scene on this machine ({why}); {} keeps playing",
            self.profile
        );
        self.last_result = format!("{what} dropped: cannot keep up");
        self.rejected.push(Rejected {
            text: text.clone(),
            error: format!("{profile} cannot keep up: {why}"),
            at: self.meters.clock.load(Ordering::Relaxed),
        });
    }

    fn refused(&mut self, mut engine: Box<crate::engine::Engine>, clock: u64, log: &mut dyn Write) {
        let Phase::Offered {
            fade,
            job_reason,
            profile,
            text,
            catching_up,
            ..
        } = &self.phase
        else {
            drop(engine);
            return;
        };
        let (fade, reason, profile, text) = (*fade, job_reason.clone(), *profile, text.clone());
        let catching_up = *catching_up;
        if !catching_up {
            // The audio thread was faster than expected: keep more headroom
            // from now on (at most half a second).
            let block = self.fixed.block_size as u64;
            self.lead = (self.lead * 2)
                .min(self.fixed.sample_rate as u64 / 2)
                .div_ceil(block)
                * block;
        }
        let t = Instant::now();
        let s = match self.place_any(&mut engine, (clock, None), catching_up) {
            Ok(s) => s,
            Err(why) => {
                drop(engine);
                self.dropped(&reason, profile, &text, why, log);
                return;
            }
        };
        if let Phase::Offered {
            at,
            refusals,
            ff_time,
            ..
        } = &mut self.phase
        {
            *at = s;
            *refusals += 1;
            *ff_time += t.elapsed();
        }
        if self
            .link
            .send(offer(engine, (s, None), fade, catching_up))
            .is_err()
        {
            let _ = writeln!(
                log,
                "\nwarning: the audio thread is not taking requests; edit dropped"
            );
            self.phase = Phase::Idle;
        }
    }

    fn swapped(&mut self, at: u64, log: &mut dyn Write) {
        let Phase::Offered {
            job_reason,
            text,
            asked,
            profile,
            file_profile,
            capture,
            captured_at,
            at: offered,
            fade,
            migration,
            since,
            migrate_time,
            ff_time,
            refusals,
            resources,
            events,
            catching_up,
            controls,
        } = std::mem::replace(&mut self.phase, Phase::Retiring)
        else {
            return;
        };
        // One caught up through the history swaps where it reached the clock.
        debug_assert!(at == offered || (catching_up && at > offered));
        let latency = SystemTime::now().duration_since(since).ok();
        let sr = self.fixed.sample_rate as f64;
        let mut line = match &job_reason {
            Reason::Edit => format!("edit applied at {:.3} s", at as f64 / sr),
            Reason::Switch { from, to } => {
                if let Some(w) = switch_warning(*from, *to) {
                    let _ = writeln!(log, "\nwarning: {w}");
                }
                format!("switched {from} → {to} at {:.3} s", at as f64 / sr)
            }
        };
        if fade > 0 {
            line += &format!(", crossfade {:.0} ms", fade as f64 / sr * 1e3);
        }
        if let Some(l) = latency {
            line += &format!(", {:.0} ms after the change", l.as_secs_f64() * 1e3);
        }
        let _ = writeln!(log, "\n{line}");
        for w in &events.past {
            let _ = writeln!(log, "warning: {w}");
        }
        self.events = events.keys;
        let notices = fold_voice_copies(&migration.notices);
        for (n, copies) in &notices {
            if !matches!(n, Notice::Ramped { .. } | Notice::Switched { .. }) || notices.len() <= 8 {
                let _ = writeln!(log, "  {n}{}", voices_suffix(*copies));
            }
        }
        self.last_result = line;
        self.profile = profile;
        self.file_profile = file_profile;
        self.playing_text = text.clone();
        self.playing_asked = asked;
        self.capture = Some(capture);
        self.controls = Some(controls);
        self.applied.push(HandoverRecord {
            reason: job_reason,
            text,
            profile,
            captured_at,
            swap_at: at,
            fade,
            migration,
            latency,
            migrate_time,
            fast_forward_time: ff_time,
            refusals,
            resources: resources.clone(),
        });
        self.resources = resources;
    }
}

impl LiveSession {
    /// Parses and compiles scene text read from the session's file.
    fn compile_plan(
        &self,
        text: &str,
        opts: &crate::graph::CompileOptions,
    ) -> Result<(crate::scene::Scene, crate::graph::Plan), String> {
        let file = self.path.display().to_string();
        let scene = crate::scene::load_str(text, &file, Some(parent_dir(&self.path)))
            .map_err(|d| format_diagnostics(&d))?;
        let plan = crate::graph::compile(&scene, opts).map_err(|d| format_diagnostics(&d))?;
        Ok((scene, plan))
    }

    /// Parses, validates, compiles and builds scene text under `profile`
    /// (every stage off the audio thread), as [`Incoming::compile`] does,
    /// and refuses an engine whose estimate is over the handover budget
    /// unless `run --force`. The error is the message to show.
    fn build(&self, text: &str, profile: Profile) -> Result<Incoming, String> {
        let (scene, mut plan) = self.compile_plan(text, &self.fixed.options(profile))?;
        self.check_input(&plan)?;
        let reads_input = plan
            .nodes
            .iter()
            .any(|n| crate::ops::is_session_input(n.op));
        if !self.force && self.history.is_some() && reads_input {
            if let Some(why) = catch_up_over_budget(&plan, self.playing_cost_ns()) {
                return Err(why);
            }
        }
        if !self.force {
            if let Some(why) = over_budget(&plan) {
                // A session that plays over the budget already (started so,
                // or forced) still takes edits that cost no more.
                if crate::graph::plan_cost_ns(&plan) > self.playing_cost_ns() * 1.05 {
                    return Err(why);
                }
            }
        }
        let warnings = std::mem::take(&mut plan.warnings);
        Ok(Incoming::from_plan(plan, scene.profile, warnings).asking(Asked::of(&scene)))
    }

    /// Refuses `plan` when an `input` node of it reads a channel the
    /// session's input does not have, or reads any input when the session
    /// started without one: the check `run` makes of a scene at start-up
    /// (there an exit 2), so that an edit never silences the input.
    fn check_input(&self, plan: &crate::graph::Plan) -> Result<(), String> {
        let Some(first) = plan.inputs().into_iter().next() else {
            return Ok(());
        };
        let error = |e: String| format!("error: {}: {e}", plan.file);
        match &self.history {
            None => Err(error(format!(
                "node `{}` reads the session's input, but this session started without one (its scene had no `input` node): an input is opened when the session starts (`run --input FILE.wav`, or the input device); restart it to read one",
                first.node
            ))),
            Some(h) => crate::host::files::wav_in::check_fits(
                "the session's input",
                plan.sample_rate,
                h.width(),
                plan,
                &mut std::io::sink(),
            )
            .map_err(error),
        }
    }

    /// The estimated cost per sample of the engine playing (0 if its text
    /// no longer compiles, e.g. a resource went away).
    fn playing_cost_ns(&self) -> f64 {
        let mut opts = self.fixed.options(self.profile);
        opts.skip_build = true;
        self.compile_plan(&self.playing_text, &opts)
            .map_or(0.0, |(_, plan)| crate::graph::plan_cost_ns(&plan))
    }

    /// Writes the captured state as a snapshot file (off the audio thread).
    fn write_snapshot(&mut self, state: &EngineState, at: u64, stem: &Path, log: &mut dyn Write) {
        let path = PathBuf::from(format!("{}.{at}.snapshot.json", stem.display()));
        // The engine captured is the one playing: its text, profile and
        // resources, not those of a change queued meanwhile.
        let result = (|| -> Result<u64, String> {
            let mut opts = self.fixed.options(self.profile);
            opts.skip_build = true;
            let (_, plan) = self.compile_plan(&self.playing_text, &opts)?;
            let cx = crate::host::record::snapshot::SnapshotContext::new(&plan, &self.playing_text)
                .map_err(|e| e.to_string())?;
            let mut inputs = self.protected.clone();
            inputs.add("the scene", &self.path);
            for (reference, file) in &self.resources {
                inputs.add(&format!("resource `{reference}`, read from"), file);
            }
            cx.write(state, &path, &inputs)
                .map(|w| w.bytes)
                .map_err(|e| e.to_string())
        })();
        match result {
            Ok(bytes) => {
                let _ = writeln!(
                    log,
                    "\nsnapshot at {:.3} s written to {} ({bytes} bytes)",
                    at as f64 / self.fixed.sample_rate as f64,
                    path.display()
                );
                self.last_result = format!("snapshot {}", path.display());
                self.snapshots.push((at, path));
            }
            Err(e) => {
                let _ = writeln!(log, "\nwarning: cannot write the snapshot: {e}");
            }
        }
    }
}

/// The share of the block deadline a handed-over engine may take by the
/// nominal estimate (`morphrt check`'s): the new engine fast-forwards to the
/// swap sample while the old one keeps playing, so it must run well ahead
/// of real time, on a machine that may be slower or busier than the
/// nominal one. Half the deadline is twice real time.
pub const HANDOVER_BUDGET: f64 = 0.5;

/// How far ahead of the audio clock a handover may be placed before it is
/// given up, in seconds of audio.
const MAX_LEAD_SECONDS: u64 = 2;

/// How many blocks behind the history's end an engine catching up through
/// it may be offered at: the audio thread runs those (and the blocks it
/// plays meanwhile) itself, gaining a block per callback.
const BEHIND_AT_OFFER: u64 = 2;

/// The request for a handover's capture into `buf`: at the next block
/// boundary, or at the first one at or after `from`.
fn capture_request(buf: Box<EngineState>, from: Option<u64>) -> ToAudio {
    match from {
        Some(at) => ToAudio::CaptureFrom { state: buf, at },
        None => ToAudio::Capture(buf),
    }
}

/// The request that hands `engine` over at `at`: a swap at S = `at`
/// ahead of the clock, or, `catching_up`, the catch-up from M = `at`
/// through the input history, swapping at `swap_at` when one is asked
/// (a timetagged switch).
fn offer(
    engine: Box<crate::engine::Engine>,
    (at, swap_at): (u64, Option<u64>),
    fade: u64,
    catching_up: bool,
) -> ToAudio {
    if catching_up {
        ToAudio::CatchUp {
            engine,
            from: at,
            fade,
            at: swap_at,
        }
    } else {
        ToAudio::Offer { engine, at, fade }
    }
}

/// Why `plan`'s engine, which reads the session's input, would make the
/// callback miss its deadline while it catches up through the input
/// history: for up to [`CATCH_UP_LIMIT`] blocks the audio thread runs
/// [`CATCH_UP_PER_BLOCK`] of its blocks beside each block of the engine
/// playing (`playing_ns` a sample), and by the nominal estimate that sum
/// must fit the block's deadline. `None` when it fits.
///
/// [`CATCH_UP_LIMIT`]: crate::host::live::player::CATCH_UP_LIMIT
fn catch_up_over_budget(plan: &crate::graph::Plan, playing_ns: f64) -> Option<String> {
    use crate::host::live::player::CATCH_UP_PER_BLOCK;
    let block = plan.block_size as f64;
    let deadline_us = block / plan.sample_rate as f64 * 1e6;
    let new_us = crate::graph::plan_cost_ns(plan) * block / 1e3;
    let playing_us = playing_ns * block / 1e3;
    let sum_us = CATCH_UP_PER_BLOCK as f64 * new_us + playing_us;
    if sum_us <= deadline_us {
        return None;
    }
    Some(format!(
        "error: {}: the new engine reads the input, so it catches up with the audio clock on the audio thread, {CATCH_UP_PER_BLOCK} of its blocks ({new_us:.0} µs each, estimated) beside each block of the engine playing ({playing_us:.0} µs): {sum_us:.0} µs, {:.0} % of the {deadline_us:.0} µs deadline\n  help: lighten the scene, use a larger --block-size, or pass `run --force` to hand over anyway",
        plan.file,
        sum_us / deadline_us * 1e2,
    ))
}

/// Why `plan` cannot be handed over in a live session, as an error message:
/// its estimated cost per block over [`HANDOVER_BUDGET`] of the block's
/// deadline, or (under live) a node whose worst case misses the deadline,
/// which `run` refuses at start-up too. `None` when it fits.
fn over_budget(plan: &crate::graph::Plan) -> Option<String> {
    let profile = plan.session_profile;
    let deadline_us = plan.block_size as f64 / plan.sample_rate as f64 * 1e6;
    let cost_ns = crate::graph::plan_cost_ns(plan);
    let block_us = cost_ns * plan.block_size as f64 / 1e3;
    let mut why = Vec::new();
    if block_us > HANDOVER_BUDGET * deadline_us {
        let top = plan
            .nodes
            .iter()
            .max_by(|a, b| crate::graph::node_cost_ns(a).total_cmp(&crate::graph::node_cost_ns(b)));
        why.push(format!(
            "estimated {block_us:.0} µs per block of {} frames, {:.0} % of its {deadline_us:.0} µs deadline; a handover needs at most {:.0} % (the new engine catches up with the audio clock while the old one plays){}",
            plan.block_size,
            block_us / deadline_us * 1e2,
            HANDOVER_BUDGET * 1e2,
            top.map_or(String::new(), |n| format!(
                "; node `{}` ({}) is {:.0} % of the estimate",
                n.id,
                n.op.name,
                crate::graph::node_cost_ns(n) / cost_ns.max(1e-9) * 1e2
            ))
        ));
    }
    if profile == Profile::Live {
        why.extend(
            crate::graph::deadline_risks(plan)
                .iter()
                .map(|r| r.to_string()),
        );
    }
    if why.is_empty() {
        return None;
    }
    Some(format!(
        "error: {}: {profile} cannot keep up with this scene in a live session:\n  {}\n  help: keep a profile whose estimate fits (`morphrt check --profile P` shows each), lighten that node, or pass `run --force` to hand over anyway",
        plan.file,
        why.join("\n  ")
    ))
}

/// A sample as seconds for messages: `1 s`, `3.25 s` (to the millisecond).
fn seconds(sample: u64, sample_rate: f64) -> String {
    let ms = (sample as f64 / sample_rate * 1e3).round() / 1e3;
    format!("{ms} s")
}

/// The top-level `"profile"` of scene text, if it parses and names one.
fn peek_profile(text: &str) -> Option<Profile> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Profile::parse(v.get("profile")?.as_str()?)
}

fn format_diagnostics(diags: &[Diagnostic]) -> String {
    crate::host::HostError::Input(diags.to_vec()).to_string()
}
