//! Activation and the controller: the non-real-time half of an activated
//! scene. It compiles, prepares profile switches and edits, and asks for
//! snapshots; the processor takes what it prepares wait-free at a block
//! boundary, through the same handover as the command line's live
//! session (save → migrate → fast-forward → offer).

use super::params::ParamList;
use super::player::history::{fast_forward_through, history, History, HISTORY_SECONDS};
use super::player::{FromAudio, Link, Meters, ToAudio};
use super::processor::{Metering, Processor, ProcessorMeters, ProfileAsk, PROFILE_RING};
use crate::engine::incoming::{advance_to, fade_for, on_grid, Asked, Incoming, SessionFixed};
use crate::engine::Engine;
use crate::engine::{EngineState, Migration};
use crate::graph::{compile, CompileOptions, Plan, Resolver};
use crate::profile::Profile;
use crate::scene::{self, Diagnostic};
use rtrb::{Consumer, RingBuffer};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What an activation fixes for the life of a processor: the sample rate
/// (the host's), the most frames one `process` call takes, and the
/// settings a scene is compiled with.
///
/// ```
/// use morphrt_core::api::Activation;
/// use morphrt_core::profile::Profile;
///
/// let activation = Activation::new(44100, 512).profile(Profile::Strict);
/// assert_eq!(activation.sample_rate, 44100);
/// ```
#[derive(Clone, Debug)]
pub struct Activation {
    /// The sample rate the engine runs at; a scene's own `sample_rate` is
    /// replaced by it (operators are rate-parametric).
    pub sample_rate: u32,
    /// The most frames one [`Processor::process`] call may take (≥ 1).
    pub max_frames: usize,
    /// The session profile (`None`: the scene's, else repro).
    pub profile: Option<Profile>,
    /// The engine's block size (`None`: the scene's, else the profile's).
    pub block_size: Option<usize>,
    /// Replaces the scene's seed.
    pub seed: Option<u64>,
    /// Where the scene's `@resource:` files come from (the host's: a
    /// folder, a plugin's bundle, a dictionary); a scene that names a
    /// resource does not compile without one.
    pub resolver: Option<Arc<dyn Resolver>>,
}

/// Why an activation failed.
#[derive(Debug)]
pub enum ActivateError {
    /// The scene did not load or compile: its located diagnostics.
    Scene(Vec<Diagnostic>),
    /// A compiled plan runs at another rate than the activation's.
    SampleRate {
        /// The plan's rate.
        plan: u32,
        /// The activation's.
        asked: u32,
    },
    /// `max_frames` is 0.
    NoFrames,
}

impl std::fmt::Display for ActivateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivateError::Scene(diags) => {
                for (i, d) in diags.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
            ActivateError::SampleRate { plan, asked } => write!(
                f,
                "the plan runs at {plan} Hz, the activation asks for {asked} Hz: compile the scene with CompileOptions.sample_rate = Some({asked})"
            ),
            ActivateError::NoFrames => write!(f, "max_frames is 0: a call must be able to take at least 1 frame"),
        }
    }
}

impl std::error::Error for ActivateError {}

impl Activation {
    /// An activation at `sample_rate` for calls of at most `max_frames`,
    /// with the scene's own profile, block size and seed and no resolver.
    pub fn new(sample_rate: u32, max_frames: usize) -> Activation {
        Activation {
            sample_rate,
            max_frames,
            profile: None,
            block_size: None,
            seed: None,
            resolver: None,
        }
    }

    /// The same, under session profile `profile`.
    pub fn profile(mut self, profile: Profile) -> Activation {
        self.profile = Some(profile);
        self
    }

    /// The same, resolving resources with `resolver`.
    pub fn resolver(mut self, resolver: Arc<dyn Resolver>) -> Activation {
        self.resolver = Some(resolver);
        self
    }

    /// The compile options of the activation.
    fn options(&self) -> CompileOptions {
        CompileOptions {
            profile: self.profile,
            block_size: self.block_size,
            seed: self.seed,
            resolver: self.resolver.clone(),
            sample_rate: Some(self.sample_rate),
            ..CompileOptions::default()
        }
    }

    /// Loads scene text (`name` is how its diagnostics name it), compiles
    /// it with the activation's settings and the caller's resolver, and
    /// returns the two halves that play it. The controller can switch
    /// profile and edit, since it keeps the text.
    pub fn activate_scene(
        self,
        text: &str,
        name: &str,
    ) -> Result<(Controller, Processor), ActivateError> {
        let scene = scene::load_str(text, name, None).map_err(ActivateError::Scene)?;
        let mut plan = compile(&scene, &self.options()).map_err(ActivateError::Scene)?;
        let warnings = std::mem::take(&mut plan.warnings);
        let fixed = SessionFixed::from_plan(&plan, self.resolver.clone());
        let params = ParamList::new(&plan);
        let controls = plan.controls.clone();
        let mut first =
            Incoming::from_plan(plan, scene.profile, warnings).asking(Asked::of(&scene));
        first.engine.attach(params.routes(&first.engine, &controls));
        let source = Some((text.to_string(), name.to_string()));
        self.start(first, fixed, params, source)
    }

    /// Plays a plan compiled by the caller (at the activation's sample
    /// rate). Without its scene text, the controller cannot switch
    /// profile or edit; snapshots and restores work.
    pub fn activate(self, plan: Plan) -> Result<(Controller, Processor), ActivateError> {
        if plan.sample_rate != self.sample_rate {
            return Err(ActivateError::SampleRate {
                plan: plan.sample_rate,
                asked: self.sample_rate,
            });
        }
        let fixed = SessionFixed::from_plan(&plan, self.resolver.clone());
        let params = ParamList::new(&plan);
        let controls = plan.controls.clone();
        let mut first = Incoming::from_plan(plan, None, Vec::new());
        first.engine.attach(params.routes(&first.engine, &controls));
        self.start(first, fixed, params, None)
    }

    /// The two halves playing `first` (its param routes attached), with
    /// the session's fixed settings and the params of its plan.
    fn start(
        self,
        first: Incoming,
        fixed: SessionFixed,
        params: ParamList,
        source: Option<(String, String)>,
    ) -> Result<(Controller, Processor), ActivateError> {
        if self.max_frames == 0 {
            return Err(ActivateError::NoFrames);
        }
        let Incoming {
            engine,
            saved,
            profile,
            ..
        } = first;
        let width = engine.input_channels();
        let (writer, reader) = match width {
            0 => (None, None),
            _ => {
                let (w, r) = history(width, self.sample_rate, HISTORY_SECONDS, engine.clock());
                (Some(w), Some(r))
            }
        };
        let (asks, asked) = RingBuffer::new(PROFILE_RING);
        let shared = Arc::new(ProcessorMeters::new(engine.channels()));
        let mut processor = Processor::new(
            *engine,
            self.max_frames,
            params.len(),
            asks,
            shared.clone(),
            writer,
        );
        let link = processor.player_mut().link();
        let meters = processor.meters();
        let controller = Controller {
            link,
            meters,
            shared,
            fixed,
            profile,
            source,
            params,
            history: reader,
            asked,
            wanted: None,
            panics_seen: (0, 0),
            saved: Some(saved),
            job: Job::Idle,
            notices: Vec::new(),
        };
        Ok((controller, processor))
    }
}

/// What the controller reports from [`Controller::poll`].
#[derive(Debug)]
pub enum Notice {
    /// A profile switch or an edit took over: saved at engine sample
    /// `saved_at` (N), playing from `swap_at` (S) with a crossfade of
    /// `fade` frames, with what migrated.
    Swapped {
        /// The save sample N.
        saved_at: u64,
        /// The swap sample S.
        swap_at: u64,
        /// The crossfade, in frames (0: a cut).
        fade: u64,
        /// What migrated.
        migration: Migration,
    },
    /// A snapshot taken at a block boundary (its `clock`).
    Snapshot(Box<EngineState>),
    /// A restored snapshot plays from its clock on.
    Restored {
        /// The engine sample it resumed at.
        at: u64,
    },
    /// A `profile` param event (at engine sample `at`) asked for
    /// `profile`: [`poll`](Controller::poll) started the switch, which
    /// lands at the next swap ([`Notice::Swapped`]), not at the event's
    /// sample; or `started` says why it could not start.
    ProfileAsked {
        /// The profile asked for.
        profile: Profile,
        /// The engine sample of the event.
        at: u64,
        /// Whether the switch started.
        started: Result<(), ControlError>,
    },
    /// A profile switch or an edit could not be handed over: the engine
    /// that reads the input fell further behind than the input history
    /// holds. The scene playing goes on.
    Dropped {
        /// Why.
        reason: String,
    },
    /// Nodes panicked while playing, `count` since the last report: each
    /// is muted (silent from its panic on, until an edit or a switch
    /// builds it afresh), the rest plays on.
    NodePanicked {
        /// How many.
        count: u64,
    },
    /// The processor panicked outside every node: every call writes
    /// silence from then on, and the panic never reached the host. Drop
    /// the processor and activate anew.
    ProcessorPanicked,
}

/// Why the controller refused a request.
#[derive(Debug)]
pub enum ControlError {
    /// A handover or snapshot is still under way: poll until it ends.
    Busy,
    /// The controller has no scene text (activated from a plan).
    NoScene,
    /// The new scene did not load or compile; the old one keeps playing.
    Scene(Vec<Diagnostic>),
    /// The snapshot does not fit the scene: the node and why.
    State(String),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::Busy => {
                write!(f, "a handover or snapshot is under way: poll until it ends")
            }
            ControlError::NoScene => write!(
                f,
                "activated from a plan: there is no scene text to recompile"
            ),
            ControlError::Scene(diags) => {
                for (i, d) in diags.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
            ControlError::State(e) => write!(f, "the snapshot does not fit the scene: {e}"),
        }
    }
}

impl std::error::Error for ControlError {}

/// Where a request stands.
enum Job {
    Idle,
    /// The engine to hand over to waits for the playing one's state.
    Saving {
        next: Box<Incoming>,
        text: Option<String>,
    },
    /// Offered; its save buffer waits for the swap.
    Offered {
        saved: Box<EngineState>,
        profile: Profile,
        text: Option<String>,
        saved_at: u64,
        fade: u64,
        migration: Migration,
        /// Offered to catch up through the input history.
        catching_up: bool,
        /// The save buffer of the engine playing, kept until the swap
        /// (its own again if the handover is dropped).
        old: Box<EngineState>,
    },
    /// A snapshot was asked for.
    Snapshot,
    /// A restored engine was sent; its save buffer waits.
    Restoring {
        saved: Box<EngineState>,
    },
}

/// Blocks between the audio clock and a swap sample: time for the offer
/// to reach the audio thread before its sample passes.
const LEAD_BLOCKS: u64 = 2;

/// The non-real-time half of an activated scene (see [`Activation`]): it
/// prepares profile switches, edits, snapshots and restores, which the
/// [`Processor`] takes wait-free at a block boundary. Call
/// [`poll`](Self::poll) from the controller's thread now and then: it
/// moves a request on and drops the engines the processor stopped playing
/// (never on the audio thread).
///
/// ```
/// use morphrt_core::api::{Activation, Notice};
/// use morphrt_core::profile::Profile;
///
/// let text = r#"{
///     "version": "1.0",
///     "sample_rate": 48000,
///     "nodes": [{ "id": "tone", "op": "sine", "params": { "freq": "440Hz", "amp": 0.5 } }],
///     "outputs": { "main": ["tone"] }
/// }"#;
/// let (mut controller, mut processor) = Activation::new(48000, 128)
///     .profile(Profile::Strict)
///     .activate_scene(text, "tone.json")
///     .expect("a valid scene");
/// controller.set_profile(Profile::Repro).expect("the scene compiles under repro");
/// let mut out = vec![0.0f32; 128];
/// let mut swapped = None;
/// while swapped.is_none() {
///     // The audio thread's side, here on the same thread.
///     processor.process(&[], &mut [&mut out[..]], &[], 128).expect("a valid call");
///     for notice in controller.poll() {
///         if let Notice::Swapped { swap_at, .. } = notice {
///             swapped = Some(swap_at);
///         }
///     }
/// }
/// assert_eq!(controller.profile(), Profile::Repro);
/// ```
pub struct Controller {
    link: Link,
    meters: Arc<Meters>,
    /// What the processor reports to it.
    shared: Arc<ProcessorMeters>,
    fixed: SessionFixed,
    profile: Profile,
    /// The scene text and its name, to recompile.
    source: Option<(String, String)>,
    /// Every param an event may set, by its index (fixed at activation).
    params: ParamList,
    /// The input the processor read (a scene that reads the input), to
    /// catch a handover's new engine up with it.
    history: Option<History>,
    /// `profile` param changes from the processor.
    asked: Consumer<ProfileAsk>,
    /// The last profile asked for, until the controller is idle.
    wanted: Option<ProfileAsk>,
    /// Node and processor panics reported so far.
    panics_seen: (u64, u64),
    /// A save buffer shaped for the playing engine (`None` while the
    /// audio thread holds it).
    saved: Option<Box<EngineState>>,
    job: Job,
    notices: Vec<Notice>,
}

impl Controller {
    /// The session profile playing (or switched to, once swapped).
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The seed the session plays with: the scene's or the activation's,
    /// or the one live picked for a scene that draws noise and gives none
    /// (`None`: the first engine drew none).
    pub fn seed(&self) -> Option<u64> {
        self.fixed.seed
    }

    /// The params of the scene, as [`Loaded::params`](super::Loaded::params)
    /// lists them: an [`EventKind::Param`](super::EventKind::Param)
    /// addresses one by its index here. The list is fixed at activation:
    /// an edit keeps every index, and a param whose node the edit removed
    /// is refused ([`Processor::refused_events`]).
    pub fn params(&self) -> &ParamList {
        &self.params
    }

    /// The processor's meters: the peak of each output channel and the
    /// highest load of one call since the last read, and the calls that
    /// overran, the events refused and the nodes that panicked since
    /// activation.
    pub fn meters(&self) -> Metering {
        self.shared.read(&self.meters)
    }

    /// Whether a request is under way.
    pub fn busy(&self) -> bool {
        !matches!(self.job, Job::Idle)
    }

    /// Switches the session profile: compiles the scene under `profile`
    /// here, then hands over (state carried across precision, a
    /// crossfade from the swap sample). [`poll`](Self::poll) reports
    /// [`Notice::Swapped`] once it plays.
    pub fn set_profile(&mut self, profile: Profile) -> Result<(), ControlError> {
        let (text, _) = self.source.clone().ok_or(ControlError::NoScene)?;
        self.hand_over(&text, profile, None)
    }

    /// Replaces the scene with `text` under the playing profile: a
    /// param-only change ramps, a structural one crossfades.
    /// [`poll`](Self::poll) reports [`Notice::Swapped`] once it plays.
    pub fn edit(&mut self, text: &str) -> Result<(), ControlError> {
        if self.source.is_none() {
            return Err(ControlError::NoScene);
        }
        self.hand_over(text, self.profile, Some(text.to_string()))
    }

    fn hand_over(
        &mut self,
        text: &str,
        profile: Profile,
        new_text: Option<String>,
    ) -> Result<(), ControlError> {
        if self.busy() {
            return Err(ControlError::Busy);
        }
        let next = self.compile(text, profile)?;
        let saved = self.saved.take().ok_or(ControlError::Busy)?;
        if let Err(ToAudio::Save(c)) = self.link.send(ToAudio::Save(saved)) {
            self.saved = Some(c);
            return Err(ControlError::Busy);
        }
        self.job = Job::Saving {
            next: Box::new(next),
            text: new_text,
        };
        Ok(())
    }

    /// Compiles `text` under `profile` with the session's fixed settings,
    /// the activation's params resolved against the new engine and
    /// attached to it: they travel with it through the handover, so the
    /// processor never looks a param up by name.
    fn compile(&self, text: &str, profile: Profile) -> Result<Incoming, ControlError> {
        let name = self.source.as_ref().map_or("scene", |(_, n)| n.as_str());
        let scene = scene::load_str(text, name, None).map_err(ControlError::Scene)?;
        let mut plan =
            compile(&scene, &self.fixed.options(profile)).map_err(ControlError::Scene)?;
        let warnings = std::mem::take(&mut plan.warnings);
        let controls = plan.controls.clone();
        let mut next = Incoming::from_plan(plan, scene.profile, warnings).asking(Asked::of(&scene));
        next.engine
            .attach(self.params.routes(&next.engine, &controls));
        Ok(next)
    }

    /// Asks for the playing engine's state at the next block boundary;
    /// [`poll`](Self::poll) reports it as [`Notice::Snapshot`].
    pub fn snapshot(&mut self) -> Result<(), ControlError> {
        if self.busy() {
            return Err(ControlError::Busy);
        }
        let saved = self.saved.take().ok_or(ControlError::Busy)?;
        if let Err(ToAudio::Save(c)) = self.link.send(ToAudio::Save(saved)) {
            self.saved = Some(c);
            return Err(ControlError::Busy);
        }
        self.job = Job::Snapshot;
        Ok(())
    }

    /// Resumes from `state` (a snapshot of this scene): builds an engine
    /// of the playing scene here, restores the state into it, and the
    /// processor plays it from the next block boundary on, at the
    /// snapshot's clock (a cut, no crossfade). From there the output is
    /// what followed the snapshot, bit for bit under strict.
    /// [`poll`](Self::poll) reports [`Notice::Restored`].
    pub fn restore(&mut self, state: &EngineState) -> Result<(), ControlError> {
        self.restore_with(state, &[])
    }

    /// [`restore`](Self::restore), with params set as the engine starts:
    /// each `(index, value)` of [`params`](Self::params) lands at the
    /// state's first sample, in the engine the processor swaps in (as a
    /// host's change of that param at that sample would). A value out of
    /// its param's range, or of a param that moves nothing, is skipped.
    pub fn restore_with(
        &mut self,
        state: &EngineState,
        values: &[(usize, f64)],
    ) -> Result<(), ControlError> {
        if self.busy() {
            return Err(ControlError::Busy);
        }
        let text = self.source.as_ref().map(|(t, _)| t.clone());
        let mut next = match text {
            Some(t) => self.compile(&t, state.profile)?,
            None => return Err(ControlError::NoScene),
        };
        next.engine
            .restore(state)
            .map_err(|(id, e)| ControlError::State(format!("node `{id}`: {e}")))?;
        next.engine
            .with_attached::<super::params::ParamRoutes, _>(|routes, engine| {
                let Some(routes) = routes else { return };
                let at = engine.clock();
                for &(index, value) in values {
                    let _ = routes.records(index, value, at, 0, |r| {
                        let _ = engine.push_change(r);
                    });
                }
            });
        let saved = next.saved;
        if let Err(ToAudio::Restore(engine)) = self.link.send(ToAudio::Restore(next.engine)) {
            drop(engine);
            return Err(ControlError::Busy);
        }
        self.profile = state.profile;
        self.job = Job::Restoring { saved };
        Ok(())
    }

    /// Moves a request on (off the audio thread): migrates a saved
    /// state into the next engine, fast-forwards it to a swap sample
    /// ahead of the audio clock and offers it (again, further ahead, if
    /// the clock passed it), and drops every engine the processor
    /// stopped playing. Returns what happened since the last call.
    ///
    /// It also starts the profile switch a `profile` param event asked
    /// for (the last one, once no other request is under way), and
    /// reports panics on the audio thread.
    pub fn poll(&mut self) -> Vec<Notice> {
        while let Some(reply) = self.link.receive() {
            self.on_reply(reply);
        }
        while let Ok(ask) = self.asked.pop() {
            self.wanted = Some(ask);
        }
        if !self.busy() {
            if let Some((at, profile)) = self.wanted.take() {
                if profile != self.profile {
                    let started = self.set_profile(profile);
                    self.notices.push(Notice::ProfileAsked {
                        profile,
                        at,
                        started,
                    });
                }
            }
        }
        let nodes = self.meters.node_panics.load(Ordering::Relaxed);
        let outside = self.meters.callback_panics.load(Ordering::Acquire);
        let (seen_nodes, seen_outside) = self.panics_seen;
        if nodes > seen_nodes {
            self.notices.push(Notice::NodePanicked {
                count: nodes - seen_nodes,
            });
        }
        if outside > seen_outside {
            self.notices.push(Notice::ProcessorPanicked);
        }
        self.panics_seen = (nodes, outside);
        std::mem::take(&mut self.notices)
    }

    /// Whether a handover to `engine` catches it up through the input
    /// history: it reads the input, which the processor keeps.
    fn catches_up(&self, engine: &Engine) -> bool {
        self.history.is_some() && engine.input_channels() > 0
    }

    /// Brings a migrated `engine` where it is offered, and returns that
    /// sample: one that reads the input runs through the input history as
    /// far as it reaches (M; the processor catches it up from there with
    /// the input it reads meanwhile, and swaps it in where it reaches the
    /// clock); any other runs to a swap sample S a few blocks ahead of the
    /// audio clock, on the block grid through `grid`. `Err` says why an
    /// engine could not catch up.
    fn place(&self, engine: &mut Engine, grid: u64, catching_up: bool) -> Result<u64, String> {
        if let (true, Some(h)) = (catching_up, &self.history) {
            engine.set_swap_sample(u64::MAX);
            return fast_forward_through(engine, h, u64::MAX).map_err(|miss| {
                format!(
                    "the input history no longer holds the input from sample {} ({miss:?})",
                    engine.clock()
                )
            });
        }
        let block = self.fixed.block_size as u64;
        let clock = self.meters.clock.load(Ordering::Relaxed).max(grid);
        let s = on_grid(clock + LEAD_BLOCKS * block, grid, block);
        advance_to(engine, s);
        Ok(s)
    }

    fn on_reply(&mut self, reply: FromAudio) {
        match (reply, std::mem::replace(&mut self.job, Job::Idle)) {
            (FromAudio::Retired(engine), job) => {
                drop(engine);
                self.job = job;
            }
            (FromAudio::Saved { state, .. }, Job::Snapshot) => {
                self.saved = Some(state.clone());
                self.notices.push(Notice::Snapshot(state));
            }
            (FromAudio::Saved { state, at }, Job::Saving { mut next, text }) => {
                let migration = next.engine.migrate(&state, at);
                let fade = fade_for(&migration, &next.engine);
                let catching_up = self.catches_up(&next.engine);
                let s = match self.place(&mut next.engine, at, catching_up) {
                    Ok(s) => s,
                    Err(reason) => {
                        // The playing engine keeps its buffer.
                        self.saved = Some(state);
                        self.notices.push(Notice::Dropped { reason });
                        return;
                    }
                };
                let next = *next;
                self.offer(next.engine, s, fade, catching_up);
                self.job = Job::Offered {
                    saved: next.saved,
                    profile: next.profile,
                    text,
                    saved_at: at,
                    fade,
                    migration,
                    catching_up,
                    old: state,
                };
            }
            (
                FromAudio::Swapped { at },
                Job::Offered {
                    saved,
                    profile,
                    text,
                    saved_at,
                    fade,
                    migration,
                    ..
                },
            ) => {
                self.saved = Some(saved);
                self.profile = profile;
                if let (Some(t), Some((old, _))) = (text, &mut self.source) {
                    *old = t;
                }
                self.notices.push(Notice::Swapped {
                    saved_at,
                    swap_at: at,
                    fade,
                    migration,
                });
            }
            (FromAudio::Swapped { at }, Job::Restoring { saved }) => {
                self.saved = Some(saved);
                self.notices.push(Notice::Restored { at });
            }
            (
                FromAudio::Refused { mut engine, clock },
                job @ Job::Offered {
                    fade, catching_up, ..
                },
            ) => {
                let grid = engine.clock().max(clock);
                match self.place(&mut engine, grid, catching_up) {
                    Ok(s) => {
                        self.offer(engine, s, fade, catching_up);
                        self.job = job;
                    }
                    Err(reason) => {
                        drop(engine);
                        if let Job::Offered { old, .. } = job {
                            // The buffer shaped for the engine that plays on.
                            self.saved = Some(old);
                        }
                        self.notices.push(Notice::Dropped { reason });
                    }
                }
            }
            (FromAudio::Refused { engine, .. }, job @ Job::Restoring { .. }) => {
                if let Err(msg) = self.link.send(ToAudio::Restore(engine)) {
                    drop(msg);
                }
                self.job = job;
            }
            (_, job) => self.job = job,
        }
    }

    /// Offers `engine` to swap at `at`, or, `catching_up`, to catch up
    /// through the input history from `at` and swap where it reaches the
    /// clock (the link has room: one request is in flight at a time).
    fn offer(&mut self, engine: Box<Engine>, at: u64, fade: u64, catching_up: bool) {
        let msg = if catching_up {
            ToAudio::CatchUp {
                engine,
                from: at,
                fade,
                at: None,
            }
        } else {
            ToAudio::Offer { engine, at, fade }
        };
        if let Err(msg) = self.link.send(msg) {
            drop(msg);
        }
    }
}
