//! The handover: one mechanism for live edits, profile switches and
//! resumes, as the control side runs it. `run` runs it against the audio
//! thread (`host::live::session`); offline renders with scripted edits and
//! profile switches, and `replay`, run it against a player driven in place
//! ([`Scripted`](crate::api::player::Scripted)). Each handover is fixed by
//! its save sample N, its swap sample S and its crossfade, which the
//! journal records, so a replay redoes it exactly
//! ([`Scripted::handover_at`](crate::api::player::Scripted::handover_at)).
//!
//! 1. Compile the new scene and build its engine, every stage off the audio
//!    thread ([`Incoming::compile`]). Block size, sample rate and seed are
//!    the session's ([`SessionFixed`]) and never change: an edit of them is
//!    said to be not applied ([`SessionFixed::unapplied`]), and an edit that
//!    changes nothing else has nothing to hand over ([`only_fixed_differ`]).
//! 2. Save: at the next block boundary N the playing engine copies every
//!    node's state into a buffer shaped for it in advance (copies only).
//! 3. Migrate, off the audio thread ([`Engine::migrate`]): nodes match by
//!    (id, op), precision converts (f64 → f32 rounds, f32 → f64 is exact),
//!    state-derived data is rebuilt. The new scene's param values win;
//!    event cursors are recomputed from the clock, never copied, so an
//!    event the edit adds before N never fires ([`past_events`]).
//! 4. Fast-forward the new engine from N to S, a block boundary far enough
//!    ahead of the audio clock, discarding its output ([`advance_to`]). A
//!    timetagged switch under a sample-accurate profile asks for S inside
//!    a block: the engine is fast-forwarded to the start of that block and
//!    the audio thread runs it on to S while it plays the block's first
//!    part, cut at S (a replay cuts the block there too).
//! 5. Offer (engine, S); the swap happens at exactly S. An offer that
//!    arrives when the audio clock has already passed S is refused and comes
//!    back; the control side fast-forwards it further and offers a later S.
//!    No wall-clock value ever changes the audio: only N, S and the fade do.
//!
//! A param-only edit under the same profile swaps without a crossfade: until
//! S the new engine computes exactly what the old one would, then each
//! changed param ramps from its saved value ([`fade_for`]). Structural
//! edits and profile switches crossfade old → new from S. One handover runs
//! at a time; edits that arrive during a fade wait for it to end.

pub use super::feed::{ScriptedChange, ScriptedNote};
use super::{Engine, EngineState, Migration};
use crate::graph::{compile, CompileOptions, Plan, Resolver, SeedSource};
use crate::profile::Profile;
use crate::scene::{self, Diagnostic};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What stays fixed for a whole session, whatever the edits and switches.
#[derive(Clone, Debug)]
pub struct SessionFixed {
    /// Frames per block.
    pub block_size: usize,
    /// Samples per second, in Hz.
    pub sample_rate: u32,
    /// The session seed (a live auto-seed becomes it), if any.
    pub seed: Option<u64>,
    /// The seed live picks for any of the session's engines that draws
    /// noise without one (`seed` once the first did): fixed at the start
    /// so that an edit adding noise plays the same again (a journal keeps
    /// it); `None`: each compile takes one from the clock.
    pub auto_seed: Option<u64>,
    /// Where the session's resources come from.
    pub resolver: Option<Arc<dyn Resolver>>,
    /// The pool every engine of the session runs its independent nodes
    /// on (see [`Engine::set_workers`]); `None`: one thread.
    pub workers: Option<super::Workers>,
}

impl SessionFixed {
    /// Takes the session's constants from its first plan; its auto seed is
    /// the plan's seed, or one from the clock.
    pub fn from_plan(plan: &Plan, resolver: Option<Arc<dyn Resolver>>) -> SessionFixed {
        SessionFixed {
            block_size: plan.block_size,
            sample_rate: plan.sample_rate,
            seed: plan_seed(plan),
            auto_seed: Some(plan_seed(plan).unwrap_or_else(crate::graph::auto_seed)),
            resolver,
            workers: None,
        }
    }

    /// What an edit asks of the settings fixed for the session that is not
    /// applied: one warning each for the `sample_rate`, `block_size` and
    /// `seed` that the edit (`old` → `new`, both as the scene file asks)
    /// changes to something other than what the session plays with.
    pub fn unapplied(&self, old: &Asked, new: &Asked) -> Vec<String> {
        let fixed = |what: String, plays: String| {
            format!("{what} is not applied while playing: it is fixed for the session ({plays}); restart to change it")
        };
        let mut out = Vec::new();
        if new.sample_rate != old.sample_rate && new.sample_rate != self.sample_rate {
            out.push(fixed(
                format!("sample_rate {} → {}", old.sample_rate, new.sample_rate),
                format!("it plays at {} Hz", self.sample_rate),
            ));
        }
        let shown = |v: Option<u64>| v.map_or("(not set)".to_string(), |v| v.to_string());
        if let Some(b) = new.block_size.filter(|b| *b != self.block_size) {
            if new.block_size != old.block_size {
                out.push(fixed(
                    format!(
                        "block_size {} → {b}",
                        shown(old.block_size.map(|b| b as u64))
                    ),
                    format!("it plays blocks of {}", self.block_size),
                ));
            }
        }
        if let (Some(s), Some(playing)) = (new.seed, self.seed) {
            if s != playing && new.seed != old.seed {
                out.push(fixed(
                    format!("seed {} → {s}", shown(old.seed)),
                    format!("it plays with seed {playing}"),
                ));
            }
        }
        out
    }

    /// Compile options for a new engine of this session under `profile`.
    pub fn options(&self, profile: Profile) -> CompileOptions {
        CompileOptions {
            profile: Some(profile),
            block_size: Some(self.block_size),
            seed: self.seed,
            resolver: self.resolver.clone(),
            sample_rate: Some(self.sample_rate),
            auto_seed: self.auto_seed,
            ..CompileOptions::default()
        }
    }
}

/// The seed a plan runs with, if any (a live auto-seed too).
fn plan_seed(plan: &Plan) -> Option<u64> {
    match plan.seed {
        SeedSource::None => None,
        SeedSource::Given(s) | SeedSource::Auto(s) => Some(s),
    }
}

/// What a scene file asks of the settings a session fixes ([`SessionFixed`]):
/// its `sample_rate`, `profile_config.block_size` and `seed`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Asked {
    pub(crate) sample_rate: u32,
    pub(crate) block_size: Option<usize>,
    pub(crate) seed: Option<u64>,
}

impl Asked {
    /// What `scene` asks for.
    pub fn of(scene: &scene::Scene) -> Asked {
        Asked {
            sample_rate: scene.sample_rate,
            block_size: scene.config.block_size,
            seed: scene.seed,
        }
    }
}

/// Whether two scene texts are the same JSON once the settings a session
/// fixes are set aside (`sample_rate`, `seed`, `profile_config`'s
/// `block_size` and `rng_seed`): an edit of only those has nothing to hand
/// over. Text that does not parse as JSON counts as different.
pub fn only_fixed_differ(a: &str, b: &str) -> bool {
    fn rest(text: &str) -> Option<serde_json::Value> {
        let mut v: serde_json::Value = serde_json::from_str(text).ok()?;
        let top = v.as_object_mut()?;
        top.remove("sample_rate");
        top.remove("seed");
        if let Some(config) = top
            .get_mut("profile_config")
            .and_then(|c| c.as_object_mut())
        {
            config.remove("block_size");
            config.remove("rng_seed");
            if config.is_empty() {
                top.remove("profile_config");
            }
        }
        Some(v)
    }
    matches!((rest(a), rest(b)), (Some(x), Some(y)) if x == y)
}

/// A scheduled event as an edit can be compared by: its node's id, its
/// param, its sample and what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct EventKey {
    /// The id of the event's node.
    pub node: String,
    /// The name of the param it sets.
    pub param: &'static str,
    /// The sample it is placed at.
    pub sample: u64,
    /// The action, spelt out (`Set { value: 0.5, ramp: 0 }`).
    pub action: String,
}

/// The events of a plan, by [`EventKey`].
fn event_keys(plan: &Plan) -> Vec<EventKey> {
    plan.events
        .iter()
        .map(|e| {
            let node = &plan.nodes[e.node];
            EventKey {
                node: node.id.clone(),
                param: node.op.params[e.param].name,
                sample: e.sample,
                action: format!("{:?}", e.action),
            }
        })
        .collect()
}

/// The events of `new` that `old` did not have (an edit added or moved
/// them) placed before `clock`, where a handover saved at `clock`
/// starts the new engine's events: they never fire. An event of `old`
/// within `block` samples of one of `new` (the same node, param and
/// action) is the same event: a profile switch moves a scene's events
/// to their block under live, or to the nearest sample under repro.
pub fn past_events<'a>(
    new: &'a [EventKey],
    old: &[EventKey],
    clock: u64,
    block: u64,
) -> Vec<&'a EventKey> {
    // By node, param and action: the samples of `old`, sorted, so that a
    // scene of many events compares in n·log n.
    let mut by_what: std::collections::HashMap<(&str, &str, &str), Vec<u64>> =
        std::collections::HashMap::new();
    for o in old {
        by_what
            .entry((o.node.as_str(), o.param, o.action.as_str()))
            .or_default()
            .push(o.sample);
    }
    by_what.values_mut().for_each(|v| v.sort_unstable());
    let block = block.max(1);
    let known = |e: &EventKey| {
        by_what
            .get(&(e.node.as_str(), e.param, e.action.as_str()))
            .is_some_and(|v| {
                let i = v.partition_point(|s| *s + block <= e.sample);
                v.get(i).is_some_and(|s| s.abs_diff(e.sample) < block)
            })
    };
    new.iter()
        .filter(|e| e.sample < clock && !known(e))
        .collect()
}

/// A built engine waiting to be handed over, with the save buffer shaped
/// for it (used when the engine after it takes over).
pub struct Incoming {
    /// The engine, built and prepared.
    pub engine: Box<Engine>,
    /// The buffer the playing engine's state is saved into, shaped for it.
    pub saved: Box<EngineState>,
    /// The profile it runs under.
    pub profile: Profile,
    /// The scene's top-level `profile`, if it names one.
    pub file_profile: Option<Profile>,
    /// Resource references the scene uses and the files they read.
    pub resources: Vec<(String, PathBuf)>,
    /// What compiling the scene warned about.
    pub warnings: Vec<Diagnostic>,
    /// What the scene asks of the session's fixed settings.
    pub asked: Asked,
    /// Its events, to tell those an edit adds in the past.
    pub events: Vec<EventKey>,
    /// The scene's `controls`, resolved.
    pub controls: std::sync::Arc<Vec<crate::graph::ControlMap>>,
    /// Its engine's nodes, to resolve change records against it.
    pub table: std::sync::Arc<super::NodeTable>,
}

impl Incoming {
    /// Parses, validates, compiles and builds scene text (read from `path`)
    /// under `profile`: every stage off the audio thread; nothing is
    /// returned unless every stage succeeds.
    pub fn compile(
        text: &str,
        path: &Path,
        fixed: &SessionFixed,
        profile: Profile,
    ) -> Result<Incoming, Vec<Diagnostic>> {
        let scene = scene::load_str(text, &path.display().to_string(), Some(parent_dir(path)))?;
        let mut plan = compile(&scene, &fixed.options(profile))?;
        let warnings = std::mem::take(&mut plan.warnings);
        let mut incoming =
            Incoming::from_plan(plan, scene.profile, warnings).asking(Asked::of(&scene));
        incoming.engine.set_workers(fixed.workers.clone());
        Ok(incoming)
    }

    /// Builds the engine of a compiled plan. It asks of the fixed settings
    /// what the plan plays with, unless [`asking`](Self::asking) says what
    /// its scene asks.
    pub fn from_plan(
        mut plan: Plan,
        file_profile: Option<Profile>,
        warnings: Vec<Diagnostic>,
    ) -> Incoming {
        let resources = plan.resources.clone();
        let profile = plan.session_profile;
        let events = event_keys(&plan);
        let asked = Asked {
            sample_rate: plan.sample_rate,
            block_size: Some(plan.block_size),
            seed: plan_seed(&plan),
        };
        let controls = std::sync::Arc::new(std::mem::take(&mut plan.controls));
        let engine = Box::new(Engine::new(plan));
        let saved = Box::new(engine.snapshot());
        let table = std::sync::Arc::new(engine.node_table());
        Incoming {
            engine,
            saved,
            profile,
            file_profile,
            resources,
            warnings,
            asked,
            events,
            controls,
            table,
        }
    }

    /// Its event keys at the samples its engine places them on now: after
    /// a migration, those in beats follow a tempo edit.
    pub fn retime_keys(&mut self) {
        for (order, sample) in self.engine.event_samples() {
            if let Some(k) = self.events.get_mut(order) {
                k.sample = sample;
            }
        }
    }

    /// The same, asking `asked` of the fixed settings (its scene's).
    pub fn asking(mut self, asked: Asked) -> Incoming {
        self.asked = asked;
        self
    }
}

/// The directory a scene's `resources/` lookup starts from.
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The crossfade a migration needs: none for a param-only edit.
pub fn fade_for(m: &Migration, engine: &Engine) -> u64 {
    if m.structural {
        engine.crossfade_len()
    } else {
        0
    }
}

/// The first sample at or after `at` on the block grid through `origin`
/// (a sample the playing engine reached at a block boundary). Engines play
/// whole blocks from their first clock, so a session resumed from a
/// snapshot at any sample has its boundaries at `origin` + k·`block`, not
/// at multiples of `block`: a swap sample must be one of them.
pub fn on_grid(at: u64, origin: u64, block: u64) -> u64 {
    let block = block.max(1);
    let ahead = at.saturating_sub(origin);
    origin.saturating_add(ahead.div_ceil(block).saturating_mul(block))
}

/// The block boundary at or before `at` on the block grid through
/// `origin` (see [`on_grid`]): the start of the block that holds `at`,
/// where a block-accurate profile lands what is asked for `at`, and
/// where an engine stands to be swapped in at `at` inside that block.
pub fn block_start(at: u64, origin: u64, block: u64) -> u64 {
    let block = block.max(1);
    if at <= origin {
        return at;
    }
    origin + (at - origin) / block * block
}

/// Brings a migrated engine to the swap sample `at`: marks `at` as the
/// sample where the edit's param changes start, then runs up to it.
pub fn advance_to(engine: &mut Engine, at: u64) {
    engine.set_swap_sample(at);
    engine.fast_forward(at);
}

/// The warning a profile switch prints, if any: strict → live is lossy,
/// and live → strict is not bit-exact from the switch on.
pub fn switch_warning(from: Profile, to: Profile) -> Option<String> {
    match (from, to) {
        (Profile::Strict, Profile::Live) => Some(
            "switching strict → live is lossy: f64 state is rounded to f32 and live's approximations take over"
                .to_string(),
        ),
        (Profile::Live, Profile::Strict) => Some(
            "switching live → strict: the output is not bit-exact from this point (it continues from live's state)"
                .to_string(),
        ),
        _ => None,
    }
}

/// A handover as it happened: the save sample N, the swap sample S, the
/// crossfade, and what migrated.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The save sample N: the state the incoming engine starts from is
    /// the playing engine's at this sample.
    pub saved_at: u64,
    /// The swap sample S: the first frame the new engine plays.
    pub swap_at: u64,
    /// Frames of the crossfade (0: a cut).
    pub fade: u64,
    /// What carried over from the old engine, and what did not.
    pub migration: Migration,
}
