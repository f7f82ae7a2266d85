//! The CLAP state extension. A plugin's state is a morphrt snapshot, in
//! the core's format ([`morphrt_core::api::snapshot`]: the bytes
//! `morphrt render --resume` reads), which records the SHA-256 of the
//! scene it was taken from. Loaded into an instance of the same scene, it
//! resumes bit for bit under strict; a state of another scene, cut short
//! or not a snapshot is refused, with the reason in the host's log, and
//! the instance plays on as it was.
//!
//! Saving takes the engine's state through the controller
//! ([`Controller::snapshot`]): the audio thread copies it at its next
//! block boundary, in parts, into a buffer made beforehand (it never
//! allocates nor waits); the main thread waits for it, polling, for at
//! most [`SAVE_WAIT`]. Loading while inactive keeps the state until
//! [`Activate`](clack_plugin::prelude::PluginAudioProcessor::activate):
//! the first block the processor plays is then the state's.
//!
//! The state also keeps the host's value of every param, in the
//! snapshot's `host` field under `clap` (a command-line resume ignores
//! it): `{"params": {ID: VALUE, …}, "in_engine": BOOL}`. A load sets each
//! param to its value there (the default when the state has none, as a
//! command-line snapshot does) and asks the host to read them again.
//! `in_engine` says whether the engine state already plays them: a state
//! saved while the instance played has them in its engine (and a scene's
//! own events may have moved the same params since, which a load must not
//! undo); one saved while inactive holds a fresh engine. The restored
//! engine is given, at its first sample, every param whose host value is
//! not what it plays (all that differ from their defaults for a fresh
//! engine; for one that plays them, those the host moved after the load
//! and before activation): in the engine the controller hands over, so
//! the values land with the state whenever the host's callbacks run.

use crate::{profile_value, MainThread, Shared};
use clack_extensions::params::{HostParams, ParamRescanFlags};
use clack_extensions::state::PluginStateImpl;
use clack_plugin::prelude::*;
use clack_plugin::stream::{InputStream, OutputStream};
use morphrt_core::api::snapshot::{sha256_hex, SnapshotContext, SnapshotError, SnapshotFile};
use morphrt_core::api::{Controller, Notice, ParamList};
use morphrt_core::graph::{compile, CompileOptions};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest a save waits for the audio thread's copy of the state.
pub const SAVE_WAIT: Duration = Duration::from_secs(2);

/// A state loaded while the instance was inactive, until it activates.
#[derive(Default)]
pub struct Pending(RefCell<Option<Box<SnapshotFile>>>);

impl PluginStateImpl for MainThread<'_> {
    fn save(&self, output: &mut OutputStream) -> Result<(), PluginError> {
        let bytes = self.state_bytes().map_err(refused("save"))?;
        output
            .write_all(&bytes)
            .map_err(|e| refused("save")(e.to_string()))
    }

    fn load(&self, input: &mut InputStream) -> Result<(), PluginError> {
        let mut bytes = Vec::new();
        input
            .read_to_end(&mut bytes)
            .map_err(|e| refused("load")(e.to_string()))?;
        let snap = check(self.shared, &bytes).map_err(refused("load"))?;
        {
            let mut controller = self.controller.borrow_mut();
            match controller.as_mut() {
                Some(c) => {
                    // Checked before any value moves: a refused state
                    // changes nothing.
                    fits(c, &snap).map_err(refused("load"))?;
                    set_values(self.shared, &snap);
                    restore(self.shared, c, &snap).map_err(refused("load"))?;
                }
                None => {
                    set_values(self.shared, &snap);
                    *self.pending.0.borrow_mut() = Some(Box::new(snap));
                }
            }
        }
        // No borrow held: the host may call back from the rescan.
        if let Some(params) = self.host.shared().get_extension::<HostParams>() {
            params.rescan(&self.host, ParamRescanFlags::VALUES);
        }
        Ok(())
    }
}

/// The key of this plugin's part of a snapshot's `host` field.
const HOST_KEY: &str = "clap";

/// `snap` with the host's current param values, and whether its engine
/// already plays them (see the module docs).
fn with_values(shared: &Shared, mut snap: SnapshotFile, in_engine: bool) -> SnapshotFile {
    let params: serde_json::Map<String, serde_json::Value> = (shared.bundle.params.iter())
        .enumerate()
        .filter(|(i, _)| *i != ParamList::PROFILE)
        .map(|(i, p)| (p.id().to_string(), serde_json::json!(shared.value(i))))
        .collect();
    let mut host = match snap.host.take() {
        Some(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    host.insert(
        HOST_KEY.to_string(),
        serde_json::json!({ "params": params, "in_engine": in_engine }),
    );
    snap.host = Some(serde_json::Value::Object(host));
    snap
}

/// Whether `snap`'s engine plays the param values it keeps (true for a
/// state that keeps none).
fn in_engine(snap: &SnapshotFile) -> bool {
    let ours = snap.host.as_ref().and_then(|h| h.get(HOST_KEY));
    ours.and_then(|o| o.get("in_engine"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true)
}

/// Every param's value as `snap` keeps it (its default where `snap` keeps
/// none in range; `profile`'s is never read).
fn kept_values(shared: &Shared, snap: &SnapshotFile) -> Vec<f64> {
    let kept = snap
        .host
        .as_ref()
        .and_then(|h| h.get(HOST_KEY))
        .and_then(|o| o.get("params"))
        .and_then(serde_json::Value::as_object);
    (shared.bundle.params.iter())
        .map(|p| {
            let (lo, hi) = p.range().bounds();
            kept.and_then(|m| m.get(p.id()))
                .and_then(serde_json::Value::as_f64)
                .filter(|v| (lo..=hi).contains(v))
                .unwrap_or_else(|| p.default_value())
        })
        .collect()
}

/// Sets every param but `profile` (which follows the state's session
/// profile) to its value in `snap` ([`kept_values`]).
fn set_values(shared: &Shared, snap: &SnapshotFile) {
    for (i, v) in kept_values(shared, snap).into_iter().enumerate() {
        if i != ParamList::PROFILE {
            shared.set_value(i, v);
        }
    }
}

/// The params the engine restored from `snap` must be given as it starts:
/// each whose host value is not what that engine plays for it — the
/// value `snap` keeps when its engine plays them, the default when it
/// holds a fresh engine — as `(index, value)`.
fn to_apply(shared: &Shared, snap: &SnapshotFile) -> Vec<(usize, f64)> {
    if in_engine(snap) {
        differing(shared, &kept_values(shared, snap))
    } else {
        off_defaults(shared)
    }
}

/// Every param but `profile` whose host value is not its default, as
/// `(index, value)`: what a fresh engine must be given.
pub fn off_defaults(shared: &Shared) -> Vec<(usize, f64)> {
    let defaults: Vec<f64> = (shared.bundle.params.iter())
        .map(|p| p.default_value())
        .collect();
    differing(shared, &defaults)
}

/// Every param but `profile` whose host value is not `base`'s (bit for
/// bit), as `(index, value)`.
fn differing(shared: &Shared, base: &[f64]) -> Vec<(usize, f64)> {
    (0..shared.bundle.params.len())
        .filter(|&i| i != ParamList::PROFILE)
        .filter(|&i| Some(shared.value(i).to_bits()) != base.get(i).map(|b| b.to_bits()))
        .map(|i| (i, shared.value(i)))
        .collect()
}

/// The error a host logs for a refused save or load.
fn refused(what: &'static str) -> impl Fn(String) -> PluginError {
    move |e| PluginError::Error(format!("morphrt: state {what} refused: {e}").into())
}

/// Reads `bytes` as a state of this plugin's scene.
fn check(shared: &Shared, bytes: &[u8]) -> Result<SnapshotFile, String> {
    let snap = SnapshotFile::from_bytes(bytes, "the state").map_err(|e| match e {
        SnapshotError::NotASnapshot { .. } => {
            "the state is not a morphrt snapshot (garbage, or another plugin's)".to_string()
        }
        e => e.to_string(),
    })?;
    let payload = &shared.bundle.payload;
    let ours = sha256_hex(payload.scene.as_bytes());
    if snap.scene.sha256 != ours {
        return Err(format!(
            "the state was saved by another scene (`{}`, sha256 {}…); this plugin plays `{}` (sha256 {}…)",
            snap.scene.file,
            &snap.scene.sha256[..snap.scene.sha256.len().min(12)],
            payload.scene_name,
            &ours[..12]
        ));
    }
    Ok(snap)
}

/// Hands `snap` to `controller`: the processor plays it from its next
/// block boundary. The host's `profile` param follows it.
fn restore(
    shared: &Shared,
    controller: &mut Controller,
    snap: &SnapshotFile,
) -> Result<(), String> {
    fits(controller, snap)?;
    let state = snap.state().map_err(|e| e.to_string())?;
    wait_idle(controller)?;
    controller
        .restore_with(&state, &to_apply(shared, snap))
        .map_err(|e| e.to_string())?;
    shared.set_value(ParamList::PROFILE, profile_value(snap.session_profile));
    // The audio thread asks for a callback, whose poll completes it.
    shared.busy.store(true, Ordering::Release);
    Ok(())
}

/// Whether `snap` can play in `controller`'s engine: taken at its rate.
fn fits(controller: &Controller, snap: &SnapshotFile) -> Result<(), String> {
    let rate = controller.params().sample_rate();
    if snap.sample_rate != rate {
        return Err(format!(
            "the state was taken at {} Hz and the host runs the plugin at {rate} Hz; state cannot carry across sample rates",
            snap.sample_rate
        ));
    }
    Ok(())
}

/// Restores a state loaded before activation into the new `controller`,
/// with the host's values as they are now (a state that does not fit is
/// dropped, with the reason on standard error: activation goes on with a
/// fresh engine). Whether a state was restored.
pub fn restore_pending(main: &MainThread<'_>, controller: &mut Controller) -> bool {
    let Some(snap) = main.pending.0.borrow_mut().take() else {
        return false;
    };
    match restore(main.shared, controller, &snap) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("morphrt: the loaded state is dropped at activation: {e}");
            false
        }
    }
}

/// Polls `controller` until no request is under way, for at most
/// [`SAVE_WAIT`].
fn wait_idle(controller: &mut Controller) -> Result<(), String> {
    let start = Instant::now();
    while controller.busy() {
        controller.poll();
        if start.elapsed() > SAVE_WAIT {
            return Err(
                "a profile switch or restore is still under way: is the plugin processing?".into(),
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

impl MainThread<'_> {
    /// The state: the playing engine's snapshot while active, else the
    /// state loaded and not yet played, else a fresh engine's.
    fn state_bytes(&self) -> Result<Vec<u8>, String> {
        let mut controller = self.controller.borrow_mut();
        let Some(c) = controller.as_mut() else {
            if let Some(snap) = self.pending.0.borrow().as_ref() {
                // Its engine plays the host's values only if it did and
                // none has moved since the load.
                let carried = in_engine(snap) && to_apply(self.shared, snap).is_empty();
                return Ok(with_values(self.shared, (**snap).clone(), carried).to_bytes());
            }
            let rate = self.shared.bundle.params.sample_rate();
            let profile = ParamList::profile(self.shared.value(ParamList::PROFILE));
            let (cx, plan) = self.context(rate, None, profile)?;
            let engine = morphrt_core::engine::Engine::new(plan);
            let file = cx.file(&engine.snapshot()).map_err(|e| e.to_string())?;
            return Ok(with_values(self.shared, file, false).to_bytes());
        };
        wait_idle(c)?;
        c.snapshot().map_err(|e| e.to_string())?;
        let start = Instant::now();
        let state = loop {
            if let Some(Notice::Snapshot(state)) = c
                .poll()
                .into_iter()
                .find(|n| matches!(n, Notice::Snapshot(_)))
            {
                break state;
            }
            if start.elapsed() > SAVE_WAIT {
                return Err(format!(
                    "the audio thread did not reach a block boundary within {} s: is the plugin processing?",
                    SAVE_WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let rate = c.params().sample_rate();
        let block = self.shared.block.load(Ordering::Relaxed) as usize;
        let (cx, _) = self.context(rate, Some(block), Some(state.profile))?;
        let file = cx.file(&state).map_err(|e| e.to_string())?;
        Ok(with_values(self.shared, file, true).to_bytes())
    }

    /// The snapshot context of the scene compiled as an activation at
    /// `rate` compiles it, and the plan.
    fn context(
        &self,
        rate: u32,
        block_size: Option<usize>,
        profile: Option<morphrt_core::profile::Profile>,
    ) -> Result<(SnapshotContext, morphrt_core::graph::Plan), String> {
        let bundle = &self.shared.bundle;
        let payload = &bundle.payload;
        let scene = morphrt_core::scene::load_str(&payload.scene, &payload.scene_name, None)
            .map_err(|d| d[0].to_string())?;
        let resolver: std::sync::Arc<dyn morphrt_core::graph::Resolver> = bundle.resolver.clone();
        let options = CompileOptions {
            profile,
            block_size,
            sample_rate: Some(rate),
            resolver: Some(resolver),
            ..CompileOptions::default()
        };
        let plan = compile(&scene, &options).map_err(|d| d[0].to_string())?;
        let cx = SnapshotContext::from_resolver(&plan, &payload.scene, &*bundle.resolver)
            .map_err(|e| e.to_string())?;
        Ok((cx, plan))
    }
}
