//! What a live session starts with: [`SessionConfig`], everything
//! [`LiveSession::new`](super::LiveSession::new) takes besides the player
//! it drives, and [`Playing`], what the session keeps of an engine the
//! player plays.

use crate::engine::incoming::{Asked, EventKey, Incoming, SessionFixed};
use crate::engine::{Engine, EngineState, NodeTable};
use crate::graph::ControlMap;
use crate::host::files::rules::Inputs;
use crate::host::live::input::history::History;
use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a live session starts.
pub struct SessionConfig {
    /// The scene file: re-read on each change, and watched with the
    /// resources it reads.
    pub path: PathBuf,
    /// The scene text the first engine was built from.
    pub text: String,
    /// The settings fixed for the session.
    pub fixed: SessionFixed,
    /// What the session keeps of the first engine.
    pub first: Playing,
    /// `run --force`: edits and switches are handed over even when the new
    /// engine's estimated cost is over the handover budget
    /// ([`HANDOVER_BUDGET`](super::HANDOVER_BUDGET)); one that then cannot
    /// keep up is still dropped.
    pub force: bool,
    /// Files besides the scene and its resources that no snapshot file may
    /// replace (the snapshot the session resumed from).
    pub protected: Inputs,
    /// The history of the session's input, when it has one: a new engine
    /// that reads the input is fast-forwarded through it and catches up
    /// with the audio clock there
    /// ([`ToAudio::CatchUp`](crate::host::live::player::ToAudio::CatchUp));
    /// an engine that reads none is placed ahead of the clock. A session
    /// without one refuses an edit that reads the input.
    pub history: Option<History>,
}

impl SessionConfig {
    /// A session of the scene file `path`, whose `text` built the first
    /// engine (`first`), under the `fixed` settings: not forced, with no
    /// file protected besides the scene and its resources, and no input.
    pub fn new(path: &Path, text: String, fixed: SessionFixed, first: Playing) -> SessionConfig {
        SessionConfig {
            path: path.to_path_buf(),
            text,
            fixed,
            first,
            force: false,
            protected: Inputs::default(),
            history: None,
        }
    }
}

/// What the session keeps of an engine the player plays (or is offered):
/// every part of its [`Incoming`] but the engine and the warnings.
pub struct Playing {
    /// The session profile it plays under.
    pub profile: Profile,
    /// Its scene's top-level `profile`, if it names one.
    pub file_profile: Option<Profile>,
    /// A buffer shaped for its state, which the audio thread saves into.
    pub saved: Box<EngineState>,
    /// Resource references its scene uses and the files they read.
    pub resources: Vec<(String, PathBuf)>,
    /// What its scene asks of the session's fixed settings.
    pub asked: Asked,
    /// Its events, to tell those an edit adds in the past.
    pub events: Vec<EventKey>,
    /// What control messages are resolved against while it plays.
    pub controls: PlayingControls,
}

impl Playing {
    /// Splits `incoming` into its engine, for the player, and what the
    /// session keeps of it.
    pub fn split(incoming: Incoming) -> (Box<Engine>, Playing) {
        let Incoming {
            engine,
            saved,
            profile,
            file_profile,
            resources,
            warnings: _,
            asked,
            events,
            controls,
            table,
        } = incoming;
        let playing = Playing {
            profile,
            file_profile,
            saved,
            resources,
            asked,
            events,
            controls: PlayingControls {
                maps: controls,
                table,
            },
        };
        (engine, playing)
    }
}

/// An engine's `controls` and its nodes by id ([`Incoming`] carries
/// them): what control messages are resolved against while it plays.
#[derive(Clone)]
pub struct PlayingControls {
    /// The scene's `controls`, resolved.
    pub maps: Arc<Vec<ControlMap>>,
    /// The engine's nodes, to resolve change records against.
    pub table: Arc<NodeTable>,
}

impl PlayingControls {
    /// The controls `incoming` carries (shared, not copied).
    pub fn of(incoming: &Incoming) -> PlayingControls {
        PlayingControls {
            maps: incoming.controls.clone(),
            table: incoming.table.clone(),
        }
    }
}
