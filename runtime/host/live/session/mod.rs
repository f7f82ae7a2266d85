//! The control side of a live session: hot edits of the scene file and
//! profile switches while `run` plays.
//!
//! Runs on the control thread, one [`LiveSession::tick`] every few
//! milliseconds. A change (a save, a key) is read, parsed, validated,
//! compiled and built here; only a complete engine is ever offered. The
//! handover then runs the steps of [`crate::engine::incoming`] against the
//! audio thread through the player's [`Link`]: save at N, migrate,
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
//!
//! The files: `config.rs` what a session starts with, `edit.rs` edits and
//! their refusal, `handover.rs` the handover job's phases, `place.rs`
//! placing an offered engine against the audio clock, `snapshot.rs`
//! snapshots asked for while playing.

mod config;
mod edit;
mod error;
mod follow;
mod handover;
mod place;
mod snapshot;

pub use config::{Playing, PlayingControls, SessionConfig};
pub use edit::HANDOVER_BUDGET;
pub use error::{EditError, SnapshotFailure};

use crate::engine::incoming::{Asked, EventKey, Incoming, SessionFixed};
use crate::engine::{EngineState, Migration};
use crate::host::files::rules::Inputs;
use crate::host::live::input::history::History;
use crate::host::live::player::{Link, Meters};
use crate::profile::Profile;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Why a handover was started.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// The scene file (or a resource) changed.
    Edit,
    /// A profile switch, by key or by the file's `profile`.
    Switch { from: Profile, to: Profile },
    /// The followed JACK transport's tempo changed to this (`140bpm`).
    Tempo(String),
}

/// A handover the session completed, for reports and the journal.
#[derive(Clone, Debug)]
pub struct HandoverRecord {
    pub reason: Reason,
    /// The scene text the new engine was built from.
    pub text: Arc<String>,
    pub profile: Profile,
    pub saved_at: u64,
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

/// A handover offered to the audio thread, waiting for the swap (or a
/// refusal).
struct Offered {
    reason: Reason,
    /// The scene text the offered engine was built from.
    text: Arc<String>,
    /// What the session keeps of the offered engine, which it plays once
    /// it swaps.
    next: Playing,
    /// Warnings about events the edit added before the save (they
    /// never fire).
    past: Vec<String>,
    saved_at: u64,
    /// The swap sample S offered (M, where it stands, when catching up).
    at: u64,
    fade: u64,
    migration: Migration,
    /// When the change was made (file mtime or key press).
    since: SystemTime,
    migrate_time: Duration,
    ff_time: Duration,
    /// Offers the audio thread refused (it had passed S already).
    refusals: u32,
    /// Offered to catch up through the input history from `at`: the
    /// swap comes at the clock the audio thread reaches with it.
    catching_up: bool,
}

enum Phase {
    Idle,
    /// Waiting for the audio thread's save.
    Saving(Job),
    /// Offered; waiting for the swap (or a refusal).
    Offered(Offered),
    /// Swapped; waiting for the old engine to come back (after its fade).
    Retiring,
    /// Waiting for the audio thread's save, to write a snapshot file
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
    /// Shaped for the engine playing now; out while a save is in flight.
    saved: Option<Box<EngineState>>,
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
    controls: PlayingControls,
    /// The tempo a followed transport set (`140bpm`), which every scene
    /// text the session plays then has.
    tempo: Option<String>,
}

impl LiveSession {
    /// A session playing the first engine of `config` (already handed to
    /// the player whose link and meters are given).
    pub fn new(config: SessionConfig, link: Link, meters: Arc<Meters>) -> LiveSession {
        let SessionConfig {
            path,
            text,
            fixed,
            first,
            force,
            protected,
            history,
        } = config;
        let Playing {
            profile,
            file_profile,
            saved,
            resources,
            asked,
            events,
            controls,
        } = first;
        let text = Arc::new(text);
        let block = fixed.block_size as u64;
        // Headroom for the offer to reach the audio thread before S: at
        // least 10 ms and 4 blocks.
        let lead = (fixed.sample_rate as u64 / 100)
            .max(4 * block)
            .div_ceil(block)
            * block;
        LiveSession {
            path,
            fixed,
            profile,
            file_profile,
            last_text: Some(text.clone()),
            good_text: text.clone(),
            good_asked: asked.clone(),
            playing_text: text,
            playing_asked: asked,
            force,
            events,
            resources,
            link,
            meters,
            saved: Some(saved),
            phase: Phase::Idle,
            queued: None,
            lead,
            applied: Vec::new(),
            rejected: Vec::new(),
            last_result: String::new(),
            snapshot_wanted: None,
            snapshots: Vec::new(),
            protected,
            history,
            controls,
            tempo: None,
        }
    }

    /// The `controls` and nodes of the engine playing now: the first
    /// engine's, then those of each handover that swapped.
    pub fn playing_controls(&self) -> &PlayingControls {
        &self.controls
    }

    /// The profile of the engine playing.
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
}
