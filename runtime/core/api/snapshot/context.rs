//! A snapshot matched to a scene: [`SnapshotContext`] records what the
//! engine state does not hold (the scene's identity and topology, the
//! session constants, each node's profile and precision, the resources'
//! SHA-256), turns a saved state into a snapshot, and resumes a snapshot
//! into an engine by the handover's carry rules, saying what does not
//! simply continue.

use super::codec::{delay_record, node_record, pool_record, tempo_record};
use super::format::{BusRecord, ResourceRecord, SceneRecord, SnapshotFile, FORMAT, VERSION};
use super::{display, sha256_hex, SnapshotError};
use crate::dsp::Precision;
use crate::engine::incoming::{switch_warning, SessionFixed};
use crate::engine::{fold_voice_copies, voices_suffix, Engine, EngineState, Migration, Notice};
use crate::graph::{CompileOptions, Plan, Resolver, SeedSource};
use crate::profile::Profile;
use std::path::Path;
use std::sync::Arc;

/// How a host reads a resource's bytes by the path its resolver gave it
/// (a file, a plugin's bundle, a dictionary), so that a snapshot records
/// each resource's SHA-256 and a resume tells a changed one.
pub type ReadResource<'a> = &'a dyn Fn(&Path) -> std::io::Result<Vec<u8>>;

/// What a node looked like when its plan was compiled.
#[derive(Clone, Debug)]
struct NodeInfo {
    id: String,
    op: &'static str,
    profile: Profile,
    precision: Precision,
}

/// Everything a snapshot records that the engine state does not hold: the
/// scene's identity, the session constants, each node's resolved profile
/// and precision, and the resources' SHA-256. Built once per compiled plan
/// (off the audio thread: it hashes the resource files), it turns any
/// [`EngineState`] saved from that plan's engine into a file, and
/// resumes a snapshot into that engine.
#[derive(Clone, Debug)]
pub struct SnapshotContext {
    scene: SceneRecord,
    /// Each resource's bytes as they are now, hashed (`None`: missing),
    /// for a resume's messages: a resource of the snapshot the scene does
    /// not read is named as missing, changed or not read.
    resources_now: Vec<(String, Option<String>)>,
    sample_rate: u32,
    block_size: usize,
    seed: Option<u64>,
    nodes: Vec<NodeInfo>,
    resources: Vec<ResourceRecord>,
}

/// What resuming a snapshot did.
#[derive(Clone, Debug)]
pub struct Resumed {
    /// The sample the engine now stands at (the snapshot's clock).
    pub clock: u64,
    /// Which nodes carried and which start fresh.
    pub migration: Migration,
    /// One line per warning and per node that does not simply continue
    /// (starts fresh, is gone, or glides to an edited value), for the user.
    pub messages: Vec<String>,
}

/// The SHA-256 of the scene's structure as text lines (node ids and
/// operators, edges by port name, and the main bus): equal for two plans
/// whose scenes differ only in param values. A snapshot records it, so a
/// resume into an edited scene says whether its nodes and edges changed.
pub fn topology_sha256(plan: &Plan) -> String {
    let mut lines = Vec::new();
    let src = |s: &crate::graph::SourceRef| {
        let n = &plan.nodes[s.node];
        format!(
            "{}:{}",
            n.id,
            n.op.outputs.get(s.port).copied().unwrap_or("?")
        )
    };
    // An ordinary edge's line is as it always was, so snapshots written
    // before feedback edges existed still match their scenes.
    let feedback = |s: &crate::graph::SourceRef| {
        if s.is_feedback() {
            format!(" delay {}", s.feedback)
        } else {
            String::new()
        }
    };
    for n in &plan.nodes {
        lines.push(format!("node {} {}", n.id, n.op.name));
        for (k, srcs) in n.inputs.iter().enumerate() {
            let port = match n.op.inputs.get(k) {
                Some(p) if !n.op.variadic_inputs => p.to_string(),
                _ => format!("in{k}"),
            };
            for s in srcs {
                lines.push(format!("edge {} -> {}:{port}{}", src(s), n.id, feedback(s)));
            }
        }
        for (k, srcs) in n.param_inputs.iter().enumerate() {
            let port = n.op.params.get(k).map_or("?", |p| p.name);
            for s in srcs {
                lines.push(format!("edge {} -> {}:{port}{}", src(s), n.id, feedback(s)));
            }
        }
    }
    for (c, s) in plan.main.iter().enumerate() {
        lines.push(format!("main {c} <- {}", src(s)));
    }
    lines.sort();
    sha256_hex(lines.join("\n").as_bytes())
}

impl SnapshotContext {
    /// Records `plan` (before it is moved into its [`Engine`]) and the text
    /// of the scene it was compiled from; hashes every resource of the
    /// plan, its bytes read by `read` (off the audio thread).
    pub fn new(
        plan: &Plan,
        scene_text: &str,
        read: ReadResource<'_>,
    ) -> Result<SnapshotContext, SnapshotError> {
        let mut resources = Vec::new();
        for (_, path) in &plan.resources {
            let bytes = read(path).map_err(|error| SnapshotError::Resource {
                file: display(path),
                error,
            })?;
            resources.push(ResourceRecord {
                path: display(path),
                sha256: sha256_hex(&bytes),
            });
        }
        Ok(SnapshotContext {
            resources_now: Vec::new(),
            scene: SceneRecord {
                file: plan.file.clone(),
                sha256: sha256_hex(scene_text.as_bytes()),
                topology_sha256: topology_sha256(plan),
            },
            sample_rate: plan.sample_rate,
            block_size: plan.block_size,
            seed: match plan.seed {
                SeedSource::None => None,
                SeedSource::Given(s) | SeedSource::Auto(s) => Some(s),
            },
            nodes: plan
                .nodes
                .iter()
                .map(|n| NodeInfo {
                    id: n.id.clone(),
                    op: n.op.name,
                    profile: n.profile.profile,
                    precision: n.profile.precision,
                })
                .collect(),
            resources,
        })
    }

    /// As [`new`](Self::new), for a host whose resources are not files (a
    /// plugin's bundle, a Python dict): each resource is hashed as
    /// `resolver` decodes it (its sample rate, then every channel's
    /// samples as little-endian f64 bits), not as a file's bytes.
    pub fn from_resolver(
        plan: &Plan,
        scene_text: &str,
        resolver: &dyn Resolver,
    ) -> Result<SnapshotContext, SnapshotError> {
        let mut decoded = Vec::with_capacity(plan.resources.len());
        for (reference, path) in &plan.resources {
            let audio = resolver
                .resolve(reference, None)
                .map_err(|e| SnapshotError::Resource {
                    file: display(path),
                    error: std::io::Error::other(e),
                })?
                .audio;
            let mut bytes = audio.sample_rate.to_le_bytes().to_vec();
            for ch in audio.channels.iter() {
                for x in ch.iter() {
                    bytes.extend_from_slice(&x.to_bits().to_le_bytes());
                }
            }
            decoded.push((path.clone(), bytes));
        }
        let read = |p: &Path| -> std::io::Result<Vec<u8>> {
            let found = decoded.iter().find(|(q, _)| q == p);
            found
                .map(|(_, b)| b.clone())
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not resolved"))
        };
        SnapshotContext::new(plan, scene_text, &read)
    }

    /// SHA-256 of the scene text this context was built from.
    pub fn scene_sha256(&self) -> &str {
        &self.scene.sha256
    }

    /// SHA-256 of the topology of the plan it was built from
    /// ([`topology_sha256`]).
    pub fn topology_sha256(&self) -> &str {
        &self.scene.topology_sha256
    }

    /// The same context, told how to read a resource a snapshot names
    /// that this scene does not read (`read` by its path), so that
    /// [`resume`](Self::resume) says whether it is missing, changed or
    /// just not read here. Without it, such a resource is named as not
    /// read by this scene.
    pub fn with_other_resources(mut self, snap: &SnapshotFile, read: ReadResource<'_>) -> Self {
        self.resources_now = snap
            .resources
            .iter()
            .filter(|r| !self.resources.iter().any(|o| o.sha256 == r.sha256))
            .map(|r| {
                (
                    r.path.clone(),
                    read(Path::new(&r.path)).ok().map(|b| sha256_hex(&b)),
                )
            })
            .collect();
        self
    }

    /// The file for `st`, a state saved from this context's engine.
    pub fn file(&self, st: &EngineState) -> Result<SnapshotFile, SnapshotError> {
        if st.nodes.len() != self.nodes.len()
            || st
                .nodes
                .iter()
                .zip(&self.nodes)
                .any(|(s, n)| s.id != n.id || s.op != n.op)
        {
            return Err(SnapshotError::Mismatch(
                "the captured state does not come from this scene's engine".to_string(),
            ));
        }
        let nodes = st
            .nodes
            .iter()
            .zip(&self.nodes)
            .map(|(s, n)| node_record(s, n.profile, n.precision))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SnapshotFile {
            format: FORMAT.to_string(),
            version: VERSION,
            morphrt_version: env!("CARGO_PKG_VERSION").to_string(),
            scene: self.scene.clone(),
            session_profile: st.profile,
            sample_rate: self.sample_rate,
            block_size: self.block_size,
            seed: self.seed,
            clock: st.clock,
            resources: self.resources.clone(),
            main: BusRecord {
                sig: st.main_sig,
                wiring: st.main_wiring,
                delays: st.main.iter().map(delay_record).collect(),
            },
            nodes,
            voices: st.voices.iter().map(pool_record).collect(),
            tempo: st.tempo_map.as_ref().map(tempo_record),
            host: None,
            origin: None,
        })
    }

    /// Carries `snap` into `engine` (freshly built from this context's plan)
    /// by the handover's carry rules: nodes with the same id and operator
    /// take their state, converting precision; the rest start fresh, and
    /// each is named in [`Resumed::messages`]. A snapshot of another scene
    /// version, profile, block size or seed is a warning; another sample
    /// rate, or no node in common, is an error.
    pub fn resume(
        &self,
        snap: &SnapshotFile,
        engine: &mut Engine,
    ) -> Result<Resumed, SnapshotError> {
        let file = snap.origin();
        if snap.sample_rate != engine.sample_rate() {
            return Err(SnapshotError::SampleRate {
                file,
                snapshot: snap.sample_rate,
                scene: engine.sample_rate(),
            });
        }
        let common = snap
            .nodes
            .iter()
            .filter(|r| self.nodes.iter().any(|n| n.id == r.id && n.op == r.op))
            .count();
        if common == 0 && !snap.nodes.is_empty() {
            return Err(SnapshotError::NothingMatches { file });
        }
        let state = snap.state()?;
        let mut messages = Vec::new();
        let warn = |m: String| format!("warning: snapshot `{file}`: {m}");
        if snap.scene.sha256 != self.scene.sha256 {
            let how = if snap.scene.topology_sha256 == self.scene.topology_sha256 {
                "same nodes and edges, other values"
            } else {
                "other nodes or edges"
            };
            messages.push(warn(format!(
                "taken from another version of the scene ({how}); state carries by node id and operator"
            )));
        }
        if snap.session_profile != engine.profile() {
            messages.push(warn(format!(
                "taken under {}, resuming under {}",
                snap.session_profile,
                engine.profile()
            )));
            if let Some(w) = switch_warning(snap.session_profile, engine.profile()) {
                messages.push(format!("warning: {w}"));
            }
        }
        if snap.block_size != engine.block_size() {
            messages.push(warn(format!(
                "taken at block size {}, resuming at {}: repro and live output may differ from an uninterrupted run",
                snap.block_size,
                engine.block_size()
            )));
        }
        if snap.seed != self.seed {
            messages.push(warn(format!(
                "taken with seed {}, resuming with seed {}: noise differs from an uninterrupted run",
                seed_text(snap.seed),
                seed_text(self.seed)
            )));
        }
        if snap.morphrt_version != env!("CARGO_PKG_VERSION") {
            messages.push(warn(format!(
                "written by morphrt {}, resuming with {}: only strict output continues bit for bit across builds",
                snap.morphrt_version,
                env!("CARGO_PKG_VERSION")
            )));
        }
        for r in &snap.resources {
            if self.resources.iter().any(|o| o.sha256 == r.sha256) {
                continue;
            }
            let short: String = r.sha256.chars().take(12).collect();
            let now = self.resources_now.iter().find(|(p, _)| *p == r.path);
            let what = match now.map(|(_, h)| h) {
                Some(None) => "which is missing".to_string(),
                Some(Some(now)) if *now != r.sha256 => {
                    format!("which has changed since (sha256 now {})", &now[..12])
                }
                _ => "which this scene does not read".to_string(),
            };
            messages.push(warn(format!(
                "taken with resource `{}` (sha256 {short}…), {what}; nodes that read it carry state computed from the old file",
                r.path
            )));
        }
        let migration = engine.migrate(&state, state.clock);
        for (n, copies) in fold_voice_copies(&migration.notices) {
            let voices = voices_suffix(copies);
            messages.push(match n {
                Notice::Added { id } => {
                    format!("node `{id}`{voices} is not in the snapshot: it starts fresh")
                }
                Notice::Removed { id } => {
                    format!("node `{id}`{voices} of the snapshot is not in the scene: its state is dropped")
                }
                other => format!("{other}{voices}"),
            });
        }
        Ok(Resumed {
            clock: engine.clock(),
            migration,
            messages,
        })
    }
}

fn seed_text(s: Option<u64>) -> String {
    s.map_or_else(|| "none".to_string(), |s| s.to_string())
}

impl SnapshotFile {
    /// Compile options for an engine that resumes this snapshot: its block
    /// size and seed, under `profile` (default: the snapshot's), resources
    /// from `resolver`, at the scene's own sample rate
    /// ([`SnapshotContext::resume`] refuses another rate than the
    /// snapshot's).
    pub fn compile_options(
        &self,
        profile: Option<Profile>,
        resolver: Option<Arc<dyn Resolver>>,
    ) -> CompileOptions {
        CompileOptions {
            profile: Some(profile.unwrap_or(self.session_profile)),
            block_size: Some(self.block_size),
            seed: self.seed,
            resolver,
            ..CompileOptions::default()
        }
    }

    /// The session constants a resumed session keeps: the snapshot's block
    /// size, sample rate and seed (its auto seed too, else one from the
    /// clock), resources from `resolver`.
    pub fn session_fixed(&self, resolver: Option<Arc<dyn Resolver>>) -> SessionFixed {
        SessionFixed {
            block_size: self.block_size,
            sample_rate: self.sample_rate,
            seed: self.seed,
            auto_seed: Some(self.seed.unwrap_or_else(crate::graph::auto_seed)),
            resolver,
            workers: None,
        }
    }
}
