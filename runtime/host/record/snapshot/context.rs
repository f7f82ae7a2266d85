//! A snapshot matched to a scene: [`SnapshotContext`] records what the
//! engine state does not hold (the scene's identity and topology, the
//! session constants, each node's profile and precision, the resources'
//! SHA-256), turns a saved state into a file, and resumes a file into
//! an engine by the handover's carry rules, saying what does not simply
//! continue.

use super::codec::{delay_record, node_record, pool_record, tempo_record};
use super::format::{BusRecord, ResourceRecord, SceneRecord, SnapshotFile, FORMAT, VERSION};
use super::{display, SnapshotError};
use crate::dsp::Precision;
use crate::engine::incoming::{switch_warning, SessionFixed};
use crate::engine::{fold_voice_copies, voices_suffix, Engine, EngineState, Migration, Notice};
use crate::graph::{CompileOptions, Plan, SeedSource};
use crate::host::files::digest::sha256_hex;
use crate::host::files::resources::Folders;
use crate::host::files::rules::Inputs;
use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    sample_rate: u32,
    block_size: usize,
    seed: Option<u64>,
    nodes: Vec<NodeInfo>,
    resources: Vec<ResourceRecord>,
}

/// A snapshot written to disk.
#[derive(Clone, Debug)]
pub struct Written {
    /// Where the snapshot now is.
    pub path: PathBuf,
    /// The file's size.
    pub bytes: u64,
    /// From the saved state to a durable file: conversion, JSON, write,
    /// fsync and rename.
    pub elapsed: Duration,
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

/// The scene's structure as text lines: node ids and operators, edges by
/// port name, and the main bus.
fn topology_sha256(plan: &Plan) -> String {
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
    /// of the scene file it was compiled from; hashes the resource files.
    pub fn new(plan: &Plan, scene_text: &str) -> Result<SnapshotContext, SnapshotError> {
        let mut resources = Vec::new();
        for (_, path) in &plan.resources {
            let bytes = std::fs::read(path).map_err(|error| SnapshotError::Resource {
                file: display(path),
                error,
            })?;
            resources.push(ResourceRecord {
                path: display(path),
                sha256: sha256_hex(&bytes),
            });
        }
        Ok(SnapshotContext {
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

    /// SHA-256 of the scene file this context was built from.
    pub fn scene_sha256(&self) -> &str {
        &self.scene.sha256
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
            origin: None,
        })
    }

    /// Writes `st` (saved from this context's engine) to `path`
    /// through the one writer, never over one of `inputs`. Allocates and
    /// does I/O: never on the audio thread.
    pub fn write(
        &self,
        st: &EngineState,
        path: &Path,
        inputs: &Inputs,
    ) -> Result<Written, SnapshotError> {
        let start = Instant::now();
        let file = self.file(st)?;
        let bytes = file.write_file(path, inputs)?;
        Ok(Written {
            path: path.to_path_buf(),
            bytes,
            elapsed: start.elapsed(),
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
            let what = match std::fs::read(&r.path) {
                Err(_) => "which is missing".to_string(),
                Ok(b) => {
                    let now = sha256_hex(&b);
                    if now == r.sha256 {
                        "which this scene does not read".to_string()
                    } else {
                        format!("which has changed since (sha256 now {})", &now[..12])
                    }
                }
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
    /// Compile options for an offline engine that resumes this snapshot:
    /// its block size and seed, under `profile` (default: the snapshot's),
    /// at the scene's own sample rate (a render writes at the scene's rate;
    /// [`SnapshotContext::resume`] refuses another rate than the snapshot's).
    pub fn compile_options(
        &self,
        profile: Option<Profile>,
        resource_dirs: Vec<PathBuf>,
    ) -> CompileOptions {
        CompileOptions {
            profile: Some(profile.unwrap_or(self.session_profile)),
            block_size: Some(self.block_size),
            seed: self.seed,
            resolver: Folders::shared(resource_dirs),
            ..CompileOptions::default()
        }
    }

    /// The session constants a resumed `run` keeps: the snapshot's block
    /// size, sample rate and seed.
    pub fn session_fixed(&self, resource_dirs: Vec<PathBuf>) -> SessionFixed {
        SessionFixed {
            block_size: self.block_size,
            sample_rate: self.sample_rate,
            seed: self.seed,
            resolver: Folders::shared(resource_dirs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::build;
    use super::*;

    #[test]
    fn a_restored_engine_continues_bit_for_bit_and_snapshots_identically() {
        for profile in Profile::ALL {
            let (plan, text) = build(profile);
            let cx = SnapshotContext::new(&plan, &text).unwrap();
            let mut a = Engine::new(plan);
            crate::engine::render_to_vec(&mut a, 1500);
            let bytes = cx.file(&a.snapshot()).unwrap().to_bytes();
            let snap = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
            let (plan, _) = build(profile);
            let mut b = Engine::new(plan);
            let r = cx.resume(&snap, &mut b).unwrap();
            assert!(r.messages.is_empty(), "{profile}: {:?}", r.messages);
            assert_eq!(r.migration.carried, 6);
            assert_eq!(
                cx.file(&b.snapshot()).unwrap().to_bytes(),
                bytes,
                "{profile}: restored then snapshotted again"
            );
            let want = crate::engine::render_to_vec(&mut a, 3000);
            let got = crate::engine::render_to_vec(&mut b, 3000);
            assert!(want[0].iter().any(|x| *x != 0.0));
            assert!(
                want.iter()
                    .flatten()
                    .zip(got.iter().flatten())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{profile}: the restored engine continues differently"
            );
        }
    }
}
