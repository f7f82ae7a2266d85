//! Snapshot files: the core's snapshot format
//! ([`crate::api::snapshot`], format `morphrt-snapshot`, version 1)
//! on disk, so that a render or a session can stop and continue later —
//! bit for bit on the same build, or carried into an edited scene or
//! another profile by the handover's carry rules. The format, its checks
//! and the codec live in the core, shared with every other host; this
//! module reads a file's bytes, writes files through the one writer
//! ([`crate::host::files::write`]) under the output rules (never over an
//! input, and a crash or a full disk never leaves a partial snapshot under
//! the final name), hashes resources from the file system, and resolves a
//! resumed scene's resources from folders.

pub use crate::api::snapshot::{
    sha256_hex, topology_sha256, BusRecord, DelayRecord, HexF32, HexF64, NodeRecord, NoteRecord,
    Num, ParamRecord, PhaseRecord, PoolRecord, RampRecord, RecoveryRecord, ResourceRecord, Resumed,
    SceneRecord, SnapshotError, StateEntry, StateRecord, TempoRecord, ValueRecord, VoiceRecord,
    FORMAT, MAX_CLOCK, VERSION,
};

use crate::api::snapshot as core;
use crate::engine::incoming::SessionFixed;
use crate::engine::{Engine, EngineState};
use crate::graph::{CompileOptions, Plan};
use crate::host::files::error::FileError;
use crate::host::files::resources::Folders;
use crate::host::files::rules::{Inputs, Kind};
use crate::host::files::write::write_file;
use crate::profile::Profile;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A snapshot read from a file or made from an engine: the core's
/// [`core::SnapshotFile`] (its fields and methods through `Deref`), and
/// what the command line does with one on disk.
#[derive(Clone, Debug)]
pub struct SnapshotFile(core::SnapshotFile);

impl std::ops::Deref for SnapshotFile {
    type Target = core::SnapshotFile;
    fn deref(&self) -> &core::SnapshotFile {
        &self.0
    }
}

impl std::ops::DerefMut for SnapshotFile {
    fn deref_mut(&mut self) -> &mut core::SnapshotFile {
        &mut self.0
    }
}

impl From<core::SnapshotFile> for SnapshotFile {
    fn from(f: core::SnapshotFile) -> SnapshotFile {
        SnapshotFile(f)
    }
}

impl SnapshotFile {
    /// Reads and checks a snapshot file (see
    /// [`core::SnapshotFile::from_bytes`]).
    pub fn read(path: &Path) -> Result<SnapshotFile, SnapshotError> {
        let file = path.display().to_string();
        let bytes =
            crate::scene::resource::read_regular(path).map_err(|error| SnapshotError::Read {
                file: file.clone(),
                error,
            })?;
        SnapshotFile::from_bytes(&bytes, &file)
    }

    /// Parses and checks snapshot bytes; `file` names them in errors.
    pub fn from_bytes(bytes: &[u8], file: &str) -> Result<SnapshotFile, SnapshotError> {
        core::SnapshotFile::from_bytes(bytes, file).map(SnapshotFile)
    }

    /// Writes the file to `path` through the one writer, never over one
    /// of `inputs` (a regular file, renamed into place when complete and
    /// synced); returns its size in bytes.
    pub fn write_file(&self, path: &Path, inputs: &Inputs) -> Result<u64, FileError> {
        let bytes = self.to_bytes();
        write_file(path, inputs, &Kind::SNAPSHOT, |w| w.write_all(&bytes))
    }

    /// Compile options for an offline engine that resumes this snapshot:
    /// its block size and seed, under `profile` (default: the snapshot's),
    /// at the scene's own sample rate, resources from `resource_dirs`.
    pub fn compile_options(
        &self,
        profile: Option<Profile>,
        resource_dirs: Vec<PathBuf>,
    ) -> CompileOptions {
        self.0
            .compile_options(profile, Folders::shared(resource_dirs))
    }

    /// The session constants a resumed `run` keeps: the snapshot's block
    /// size, sample rate and seed.
    pub fn session_fixed(&self, resource_dirs: Vec<PathBuf>) -> SessionFixed {
        self.0.session_fixed(Folders::shared(resource_dirs))
    }
}

/// The core's [`core::SnapshotContext`] (its methods through `Deref`)
/// with resources hashed from the file system, and snapshots written to
/// files.
#[derive(Clone, Debug)]
pub struct SnapshotContext(core::SnapshotContext);

impl std::ops::Deref for SnapshotContext {
    type Target = core::SnapshotContext;
    fn deref(&self) -> &core::SnapshotContext {
        &self.0
    }
}

/// A resource's bytes, from the file its resolver found.
fn read_resource(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// Why a snapshot file was not written.
#[derive(Debug)]
pub enum WriteError {
    /// The state does not come from the context's engine (a host bug).
    Snapshot(SnapshotError),
    /// The output rules refuse the path, or the file system failed.
    File(FileError),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Snapshot(e) => write!(f, "{e}"),
            WriteError::File(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::Snapshot(e) => Some(e),
            WriteError::File(e) => Some(e),
        }
    }
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

impl SnapshotContext {
    /// Records `plan` (before it is moved into its [`Engine`]) and the text
    /// of the scene file it was compiled from; hashes the resource files.
    pub fn new(plan: &Plan, scene_text: &str) -> Result<SnapshotContext, SnapshotError> {
        core::SnapshotContext::new(plan, scene_text, &read_resource).map(SnapshotContext)
    }

    /// Writes `st` (saved from this context's engine) to `path`
    /// through the one writer, never over one of `inputs`. Allocates and
    /// does I/O: never on the audio thread.
    pub fn write(
        &self,
        st: &EngineState,
        path: &Path,
        inputs: &Inputs,
    ) -> Result<Written, WriteError> {
        let start = Instant::now();
        let file = SnapshotFile(self.0.file(st).map_err(WriteError::Snapshot)?);
        let bytes = file.write_file(path, inputs).map_err(WriteError::File)?;
        Ok(Written {
            path: path.to_path_buf(),
            bytes,
            elapsed: start.elapsed(),
        })
    }

    /// Resumes `snap` into `engine` ([`core::SnapshotContext::resume`]),
    /// a resource of the snapshot this scene does not read looked up on
    /// disk, so a message says whether it is missing or changed.
    pub fn resume(
        &self,
        snap: &core::SnapshotFile,
        engine: &mut Engine,
    ) -> Result<Resumed, SnapshotError> {
        self.0
            .clone()
            .with_other_resources(snap, &read_resource)
            .resume(snap, engine)
    }
}

/// Where the snapshot taken at `sample` goes: `out` itself when it is the
/// only one, else `out` with the sample index before its extension
/// (`snap.json` → `snap.240000.json`).
pub fn numbered_path(out: &Path, sample: u64, several: bool) -> PathBuf {
    if !several {
        return out.to_path_buf();
    }
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.{sample}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{sample}"),
    };
    out.with_file_name(name)
}

/// What the parts' tests share: a scene with every kind of state.
#[cfg(test)]
mod fixture {
    use crate::graph::{compile, CompileOptions, Plan};
    use crate::profile::Profile;
    use std::path::PathBuf;

    /// Every kind of value a snapshot holds: noise (seeded), a ramp in
    /// progress, an enum an event changed, gains, a resource, a delay line.
    pub const SCENE: &str = r#"{ "version": "1.0", "seed": 9, "sample_rate": 48000,
      "nodes": [
        { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
        { "id": "hiss", "op": "noise", "params": { "amp": 0.05 } },
        { "id": "kick", "op": "sampler", "params": { "file": "@resource:kick.wav", "loop": true } },
        { "id": "sum", "op": "mix", "params": { "gains": [1.0, "-6dB", 0.5] } },
        { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "2kHz" } },
        { "id": "echo", "op": "delay", "params": { "time": "3ms", "feedback": 0.3, "max_time": "10ms" } }
      ],
      "edges": [ { "from": "osc", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" },
                 { "from": "kick", "to": "sum:in2" }, { "from": "sum", "to": "lp" },
                 { "from": "lp", "to": "echo" } ],
      "outputs": { "main": ["echo"] },
      "events": [ { "time": "500samples", "node": "osc", "param": "freq", "value": "330Hz", "ramp": "2000samples" },
                  { "time": "1000samples", "node": "lp", "param": "mode", "value": "highpass" } ] }"#;

    pub fn build(profile: Profile) -> (Plan, String) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let scene = crate::scene::load_str(SCENE, "t.json", Some(root)).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(profile),
                ..crate::host::files::resources::compile_options()
            },
        )
        .unwrap_or_else(|e| panic!("{}", e[0]));
        (plan, SCENE.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_snapshots_are_numbered_by_sample() {
        let p = Path::new("out/snap.json");
        assert_eq!(numbered_path(p, 240000, false), p);
        assert_eq!(
            numbered_path(p, 240000, true),
            Path::new("out/snap.240000.json")
        );
        assert_eq!(
            numbered_path(Path::new("snap"), 7, true),
            Path::new("snap.7")
        );
    }
}

#[cfg(test)]
mod format_tests {
    use super::fixture::{build, SCENE};
    use super::*;
    use crate::engine::Engine;

    #[test]
    fn bad_files_are_named_for_what_is_wrong() {
        let (plan, text) = build(Profile::Live);
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let good =
            String::from_utf8(cx.file(&Engine::new(plan).snapshot()).unwrap().to_bytes()).unwrap();
        let err = |s: &str| SnapshotFile::from_bytes(s.as_bytes(), "x.snap").unwrap_err();
        let e = err(&good[..good.len() / 2]);
        assert!(matches!(e, SnapshotError::Truncated { .. }), "{e}");
        assert!(e.to_string().contains("`x.snap` is truncated"), "{e}");
        let e = err(&good.replacen("\"clock\":", "\"clock\";", 1));
        assert!(matches!(e, SnapshotError::Syntax { .. }), "{e}");
        let e = err(&good.replacen("\"version\": 1,", "\"version\": 2,", 1));
        assert!(e.to_string().contains("format version 2"), "{e}");
        assert!(matches!(err(SCENE), SnapshotError::NotASnapshot { .. }));
        assert!(matches!(err("[1, 2]"), SnapshotError::NotASnapshot { .. }));
        let e = err(&good.replacen("\"op\": \"biquad\"", "\"op\": \"biquadd\"", 1));
        assert!(e.to_string().contains("no operator `biquadd`"), "{e}");
        let e = err(&good.replacen("\"name\": \"cutoff\"", "\"name\": \"cut\"", 1));
        assert!(e.to_string().contains("node `lp`"), "{e}");
        let e = err(&good.replacen("\"enum\": \"lowpass\"", "\"enum\": \"lowpas\"", 1));
        assert!(e.to_string().contains("`lowpas` is not a `mode`"), "{e}");
        let e = err(&good.replacen("\"f32\": \"", "\"f32\": \"z", 1));
        assert!(e.to_string().contains("not a whole number"), "{e}");
        let e = err(&good.replacen(
            "\"session_profile\": \"live\"",
            "\"session_profile\": \"fast\"",
            1,
        ));
        assert!(e.to_string().contains("`fast` is not a profile"), "{e}");
        for e in [
            err(&good[..10]),
            err(&good.replacen("\"version\": 1,", "\"version\": 2,", 1)),
        ] {
            assert_eq!(e.exit_code(), 2);
        }
    }
}

#[cfg(test)]
mod codec_tests {
    use super::fixture::build;
    use super::*;
    use crate::engine::Engine;
    use crate::ops::Value;

    #[test]
    fn state_round_trips_through_the_file_exactly() {
        let (plan, text) = build(Profile::Repro);
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let mut e = Engine::new(plan);
        crate::engine::render_to_vec(&mut e, 1500);
        let st = e.snapshot();
        // What the scene exercises is really in the state.
        let osc = &st.nodes.iter().find(|n| n.id == "osc").unwrap().params[0];
        assert!(osc.ramp.is_some(), "the freq ramp is in progress");
        let lp = st.nodes.iter().find(|n| n.id == "lp").unwrap();
        assert_eq!(
            lp.discrete[0],
            (0, Value::Enum(1)),
            "the event set highpass"
        );
        let file = cx.file(&st).unwrap();
        assert_eq!(file.resources.len(), 1);
        let bytes = file.to_bytes();
        let back = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
        assert_eq!(back.to_bytes(), bytes, "read and written again: same bytes");
        let mut got = back.state().unwrap();
        // Cursors are recomputed on restore; resources come back as placeholders.
        got.next_event = st.next_event;
        // The engine the state came from is not kept in the file.
        assert_eq!(got.engine, 0);
        got.engine = st.engine;
        for (g, s) in got.nodes.iter_mut().zip(&st.nodes) {
            for (gv, sv) in g.scene_values.iter_mut().zip(&s.scene_values) {
                if let (Value::Resource(a), Value::Resource(b)) = (&*gv, sv) {
                    assert_eq!(a.path, b.path);
                    *gv = sv.clone();
                }
            }
        }
        assert_eq!(got, st);
    }
}

#[cfg(test)]
mod context_tests {
    use super::fixture::build;
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
