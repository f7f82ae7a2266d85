//! Snapshot files: resuming continues an uninterrupted render bit for bit
//! under every profile for every shipped scene, a strict snapshot resumed
//! under repro stays within repro's parity bound, files round-trip byte for
//! byte, and bad snapshots are refused (exit 2) or warned about by name.
//!
//! The resume test renders each scene's golden length (2 s; 1 s where a
//! strict direct convolution runs; see ARCHITECTURE.md, Goldens) split in the
//! middle, not 0–10 s split at 5 s: the property is the same at every split
//! point and the shorter render keeps a debug-build CI run short.

use crate::support as common;

use common::{morphrt, root, stderr, temp_dir};
use morphrt::engine::{render_to_vec, run_blocks_with_stops};
use morphrt::engine::{BusRef, Engine};
use morphrt::graph::{compile, CompileOptions, EventAction, Plan};
use morphrt::host::files::digest::sha256_hex;
use morphrt::host::files::rules::Inputs;
use morphrt::host::record::snapshot::{SnapshotContext, SnapshotFile};
use morphrt::profile::Profile;
use std::path::{Path, PathBuf};

fn compile_with(scene: &morphrt::scene::Scene, opts: &CompileOptions) -> Plan {
    compile(scene, opts).unwrap_or_else(|e| panic!("{}: {}", scene.file, e[0]))
}

fn options(profile: Profile) -> CompileOptions {
    CompileOptions {
        profile: Some(profile),
        ..morphrt::host::files::resources::compile_options()
    }
}

/// The scene's golden; for a scene that reads audio input (which has none:
/// its output is the input's), its length and the default repro bound.
fn golden(name: &str, plan: &Plan) -> serde_json::Value {
    let path = root().join(format!("golden/scenes/{name}.json"));
    if !plan.inputs().is_empty() {
        return serde_json::json!({
            "frames": morphrt::bench::parity::golden_frames(plan),
            "parity": { "repro": Profile::Repro.default_parity_bound() },
        });
    }
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Appends one block of the bus to per-channel vectors.
fn collect(out: &mut Vec<Vec<f64>>, bus: BusRef<'_>) {
    out.resize(bus.channels(), Vec::new());
    for (c, o) in out.iter_mut().enumerate() {
        o.extend((0..bus.frames()).map(|i| bus.get(c, i)));
    }
}

/// Renders `frames` the way `render --snapshot-at` does (blocks on the
/// absolute grid, stopping at `at`), writing the snapshot to `file` there.
fn render_writing_snapshot(
    e: &mut Engine,
    cx: &SnapshotContext,
    frames: u64,
    at: u64,
    file: &Path,
) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    run_blocks_with_stops(
        e,
        frames,
        &[at],
        |e| cx.write(&e.snapshot(), file, &Inputs::default()).map(drop),
        |bus| collect(&mut out, bus),
        |_| {},
    )
    .unwrap_or_else(|err| panic!("{err}"));
    out
}

/// Renders `frames` from the engine's clock as `render --resume` does.
fn render_on(e: &mut Engine, frames: u64) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    run_blocks_with_stops(
        e,
        frames,
        &[],
        |_| Ok::<(), ()>(()),
        |bus| collect(&mut out, bus),
        |_| {},
    )
    .unwrap();
    out
}

fn tail(x: &[Vec<f64>], from: usize) -> Vec<Vec<f64>> {
    x.iter().map(|c| c[from..].to_vec()).collect()
}

/// The first (channel, frame) where `a` and `b` differ in any bit.
fn first_difference(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<(usize, usize)> {
    if a.len() != b.len() {
        return Some((a.len().min(b.len()), 0));
    }
    for (c, (x, y)) in a.iter().zip(b).enumerate() {
        if x.len() != y.len() {
            return Some((c, x.len().min(y.len())));
        }
        if let Some(i) = x
            .iter()
            .zip(y)
            .position(|(p, q)| p.to_bits() != q.to_bits())
        {
            return Some((c, i));
        }
    }
    None
}

/// SHA-256 of the interleaved little-endian samples at the bus precision
/// (what `--hash` and the goldens hash).
fn hash(x: &[Vec<f64>], precision: morphrt::dsp::Precision) -> String {
    let mut bytes = Vec::new();
    for i in 0..x[0].len() {
        for c in x {
            match precision {
                morphrt::dsp::Precision::F64 => bytes.extend_from_slice(&c[i].to_le_bytes()),
                morphrt::dsp::Precision::F32 => {
                    bytes.extend_from_slice(&(c[i] as f32).to_le_bytes())
                }
            }
        }
    }
    sha256_hex(&bytes)
}

/// For every shipped scene under `profile`, rendering the golden
/// length equals rendering the first half, writing a snapshot, and resuming
/// it (through the file) for the second half, bit for bit. Strict is also
/// held to its golden (so taking a snapshot did not disturb the render), and
/// its snapshot resumed under repro stays within the scene's repro bound.
fn resume_continues_every_scene_bit_for_bit(profile: Profile) {
    let dir = temp_dir(&format!("resume-{profile}"));
    let scenes = common::shipped_scenes();
    assert!(scenes.len() >= 6);
    for path in &scenes {
        let name = common::stem(path);
        let (text, scene) = morphrt::host::read_scene(path).unwrap();
        let plan = compile_with(&scene, &options(profile));
        let g = golden(&name, &plan);
        let frames = g["frames"].as_u64().unwrap();
        let half = frames / 2;
        let block = plan.block_size as u64;
        let events: Vec<(u64, u64)> = plan
            .events
            .iter()
            .map(|e| {
                let ramp = match e.action {
                    EventAction::Set { ramp, .. } => ramp,
                    _ => 0,
                };
                (e.sample, ramp)
            })
            .collect();
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let mut a = common::fed(Engine::new(plan));
        let file = dir.join(format!("{name}.json"));
        let whole = render_writing_snapshot(&mut a, &cx, frames, half, &file);

        // The render that wrote the snapshot is the uninterrupted render.
        if profile == Profile::Strict && g["sha256"].is_string() {
            assert_eq!(
                Some(hash(&whole, a.bus_precision()).as_str()),
                g["sha256"].as_str(),
                "{name}: a strict render that wrote a snapshot differs from its golden"
            );
        } else {
            let plain = render_to_vec(
                &mut common::fed(Engine::new(compile_with(&scene, &options(profile)))),
                frames,
            );
            assert_eq!(
                first_difference(&whole, &plain),
                None,
                "{name} {profile}: writing a snapshot changed the render (channel, frame)"
            );
        }

        // Read and written again, on every scene: the same bytes.
        let bytes = std::fs::read(&file).unwrap();
        let snap = SnapshotFile::read(&file).unwrap();
        assert_eq!(snap.clock, half);
        assert!(
            snap.to_bytes() == bytes,
            "{name} {profile}: a read snapshot writes other bytes"
        );

        let plan = compile_with(&scene, &snap.compile_options(None, Vec::new()));
        let cx_b = SnapshotContext::new(&plan, &text).unwrap();
        let nodes = plan.nodes.len();
        let mut b = common::fed(Engine::new(plan));
        let r = cx_b.resume(&snap, &mut b).unwrap();
        assert!(r.messages.is_empty(), "{name} {profile}: {:?}", r.messages);
        assert_eq!(
            r.migration.carried, nodes,
            "{name} {profile}: every node carries"
        );
        assert_eq!(b.profile(), profile);
        let resumed = render_on(&mut b, frames - half);
        assert_eq!(
            first_difference(&tail(&whole, half as usize), &resumed),
            None,
            "{name} {profile}: the resumed render differs from the uninterrupted one at (channel, frame after the snapshot)"
        );

        if profile == Profile::Strict {
            let plan = compile_with(
                &scene,
                &snap.compile_options(Some(Profile::Repro), Vec::new()),
            );
            let cx_c = SnapshotContext::new(&plan, &text).unwrap();
            let mut c = common::fed(Engine::new(plan));
            let r = cx_c.resume(&snap, &mut c).unwrap();
            assert!(
                r.messages
                    .iter()
                    .any(|m| m.contains("taken under strict, resuming under repro")),
                "{name}: {:?}",
                r.messages
            );
            let repro = render_on(&mut c, frames - half);
            // One block plus any ramp around the switch and each event (the
            // parity rule in `morphrt::profile`).
            let guard = 256.max(block);
            let mut skip = vec![(0, guard)];
            for (at, ramp) in &events {
                if let Some(rel) = at.checked_sub(half) {
                    skip.push((rel.saturating_sub(guard), rel + guard + ramp));
                }
            }
            let e = common::rel_rms(&tail(&whole, half as usize), &repro, 0, u64::MAX, &skip);
            let bound = g["parity"]["repro"].as_f64().unwrap();
            eprintln!(
                "{name}: strict snapshot resumed under repro: parity {e:.3e} (bound {bound:e})"
            );
            assert!(
                e <= bound,
                "{name}: a strict snapshot resumed under repro is {e:e} from strict, over the bound {bound:e}"
            );
            assert!(
                e > 0.0,
                "{name}: repro after the resume is bit-identical to strict; did it switch?"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

macro_rules! resume_tests {
    ($($name:ident: $profile:expr,)*) => {$(
        #[test]
        fn $name() {
            resume_continues_every_scene_bit_for_bit($profile);
        }
    )*};
}

resume_tests! {
    resume_equals_an_uninterrupted_render_strict: Profile::Strict,
    resume_equals_an_uninterrupted_render_repro: Profile::Repro,
    resume_equals_an_uninterrupted_render_live: Profile::Live,
}

/// A snapshot written, read and written again is byte-identical; so
/// is the snapshot of an engine restored from it; and restoring the first
/// file or the rewritten one reproduces the same next second as the engine
/// that never stopped, bit for bit.
#[test]
fn a_snapshot_round_trips_byte_for_byte_and_restores_the_same_next_second() {
    let dir = temp_dir("round-trip");
    for (scene_name, profile) in [
        ("hall-reverb", Profile::Repro),
        ("hall-reverb", Profile::Live),
        ("pluck-delay", Profile::Strict),
        ("sampler-groove", Profile::Live),
    ] {
        let path = root().join(format!("scenes/{scene_name}.json"));
        let (text, scene) = morphrt::host::read_scene(&path).unwrap();
        let plan = compile_with(&scene, &options(profile));
        let sr = plan.sample_rate as u64;
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let mut a = Engine::new(plan);
        let first = dir.join(format!("{scene_name}-{profile}.json"));
        render_writing_snapshot(&mut a, &cx, sr / 2, sr / 2, &first);
        let next = render_on(&mut a, sr);

        let snap = SnapshotFile::read(&first).unwrap();
        let again = dir.join(format!("{scene_name}-{profile}.again.json"));
        snap.write_file(&again, &Inputs::default()).unwrap();
        let bytes = std::fs::read(&first).unwrap();
        assert!(
            std::fs::read(&again).unwrap() == bytes,
            "{scene_name} {profile}: written, read and written again differs"
        );
        for file in [&first, &again] {
            let snap = SnapshotFile::read(file).unwrap();
            let mut b = Engine::new(compile_with(
                &scene,
                &snap.compile_options(None, Vec::new()),
            ));
            cx.resume(&snap, &mut b).unwrap();
            assert!(
                cx.file(&b.snapshot()).unwrap().to_bytes() == bytes,
                "{scene_name} {profile}: an engine restored from the file snapshots other bytes"
            );
            assert_eq!(
                first_difference(&next, &render_on(&mut b, sr)),
                None,
                "{scene_name} {profile}: the next second after restoring `{}` differs",
                file.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn wav_samples(path: &Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_samples::<f32>()
        .map(|s| s.unwrap())
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The command line end to end: `render 0–2 s` equals `render 0–1 s
/// --snapshot-at 1s` followed by `render --resume -d 1s`; with two
/// snapshot times the files are numbered by sample and the earlier one
/// resumes to the same tail (repro, whose 128-frame blocks do not divide
/// 0.5 s: the resumed render keeps the blocks on the absolute grid).
#[test]
fn render_snapshot_at_and_resume_on_the_command_line() {
    let dir = temp_dir("cli-resume");
    let run = |args: &[&str]| {
        let o = morphrt(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stderr(&o)
    };
    for profile in ["strict", "repro"] {
        let whole = dir.join(format!("whole-{profile}.wav"));
        let first = dir.join(format!("first-{profile}.wav"));
        let rest = dir.join(format!("rest-{profile}.wav"));
        let snap = dir.join(format!("snap-{profile}.json"));
        let scene = "scenes/pluck-delay.json";
        run(&[
            "render",
            scene,
            "-o",
            s(&whole),
            "-d",
            "2s",
            "--profile",
            profile,
        ]);
        let log = run(&[
            "render",
            scene,
            "-o",
            s(&first),
            "-d",
            "1s",
            "--profile",
            profile,
            "--snapshot-at",
            "1s",
            "--snapshot-out",
            s(&snap),
        ]);
        assert!(log.contains("snapshot at sample 48000"), "{log}");
        let log = run(&[
            "render",
            scene,
            "-o",
            s(&rest),
            "-d",
            "1s",
            "--resume",
            s(&snap),
        ]);
        assert!(
            log.contains(&format!("at sample 48000 (1.000s) under {profile}")),
            "{log}"
        );
        let w = wav_samples(&whole);
        let (f, r) = (wav_samples(&first), wav_samples(&rest));
        assert_eq!(f.len() + r.len(), w.len());
        assert!(w.iter().any(|x| *x != 0.0));
        assert!(f == w[..f.len()], "{profile}: the first second differs");
        assert!(r == w[f.len()..], "{profile}: the resumed second differs");

        let out = dir.join(format!("two-{profile}.wav"));
        let base = dir.join(format!("s-{profile}.json"));
        run(&[
            "render",
            scene,
            "-o",
            s(&out),
            "-d",
            "2s",
            "--profile",
            profile,
            "--snapshot-at",
            "0.5s",
            "--snapshot-at",
            "24000samples",
            "--snapshot-at",
            "1s",
            "--snapshot-out",
            s(&base),
        ]);
        assert!(!base.exists(), "several times: numbered files only");
        assert!(
            wav_samples(&out) == w,
            "{profile}: writing snapshots changed the render"
        );
        let early = dir.join(format!("s-{profile}.24000.json"));
        assert!(dir.join(format!("s-{profile}.48000.json")).exists());
        let tail = dir.join(format!("tail-{profile}.wav"));
        run(&[
            "render",
            scene,
            "-o",
            s(&tail),
            "--resume",
            s(&early),
            "-d",
            "1.5s",
            "--snapshot-at",
            "1s",
            "--snapshot-out",
            s(&dir.join("again.json")),
        ]);
        assert!(
            wav_samples(&tail) == w[24000..],
            "{profile}: resumed from 0.5 s"
        );
        // Snapshot times are on the scene's timeline, also when resuming:
        // the state at 1 s is the one the uninterrupted render wrote.
        assert!(
            std::fs::read(dir.join("again.json")).unwrap()
                == std::fs::read(dir.join(format!("s-{profile}.48000.json"))).unwrap(),
            "{profile}: the snapshot at 1 s of a resumed render differs"
        );
        let o = morphrt(&[
            "render",
            scene,
            "-o",
            s(&tail),
            "--resume",
            s(&early),
            "-d",
            "0.1s",
            "--snapshot-at",
            "0.25s",
            "--snapshot-out",
            s(&dir.join("never.json")),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("outside the render (samples 24000 … 28800)"),
            "{}",
            stderr(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A strict snapshot of `drone` at 0.25 s, written by the CLI.
fn drone_snapshot(dir: &Path) -> PathBuf {
    let snap = dir.join("drone.json");
    let o = morphrt(&[
        "render",
        "scenes/drone.json",
        "-o",
        s(&dir.join("a.wav")),
        "-d",
        "0.5s",
        "--profile",
        "strict",
        "--snapshot-at",
        "0.25s",
        "--snapshot-out",
        s(&snap),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    snap
}

/// `render SCENE --resume SNAP` into `dir/out.wav`.
fn resume(dir: &Path, scene: &str, snap: &Path) -> std::process::Output {
    morphrt(&[
        "render",
        scene,
        "-o",
        s(&dir.join("out.wav")),
        "-d",
        "0.1s",
        "--resume",
        s(snap),
    ])
}

fn refused(o: &std::process::Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected `{n}` in:\n{err}");
    }
}

/// Damaged files are refused with exit code 2, naming the file and
/// what is wrong.
#[test]
fn truncated_corrupted_and_foreign_snapshots_are_refused() {
    let dir = temp_dir("bad-snapshots");
    let snap = drone_snapshot(&dir);
    let text = std::fs::read_to_string(&snap).unwrap();
    let bad = |name: &str, content: &str| {
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let scene = "scenes/drone.json";

    let p = bad("truncated.json", &text[..text.len() * 2 / 3]);
    refused(
        &resume(&dir, scene, &p),
        &["truncated.json", "is truncated"],
    );
    let p = bad("empty.json", "");
    refused(&resume(&dir, scene, &p), &["empty.json", "is truncated"]);

    let mid = text.len() / 2;
    let p = bad(
        "corrupt.json",
        &format!("{}#!{}", &text[..mid], &text[mid + 2..]),
    );
    refused(
        &resume(&dir, scene, &p),
        &["corrupt.json", "corrupted", "not valid JSON"],
    );

    let p = bad(
        "v99.json",
        &text.replacen("\"version\": 1,", "\"version\": 99,", 1),
    );
    refused(
        &resume(&dir, scene, &p),
        &["v99.json", "format version 99", "reads version 1"],
    );

    let p = bad("hex.json", &text.replacen("\"f64\": \"", "\"f64\": \"q", 1));
    refused(
        &resume(&dir, scene, &p),
        &["hex.json", "is invalid", "not a whole number"],
    );

    let p = bad(
        "op.json",
        &text.replacen("\"op\": \"saw\"", "\"op\": \"sawtooth\"", 1),
    );
    refused(
        &resume(&dir, scene, &p),
        &["op.json", "no operator `sawtooth`"],
    );

    refused(
        &resume(&dir, scene, Path::new(scene)),
        &["scenes/drone.json", "is not a morphrt snapshot"],
    );
    refused(
        &resume(&dir, scene, &dir.join("nope.json")),
        &["nope.json", "cannot read snapshot"],
    );

    // Another scene entirely: nothing to carry.
    refused(
        &resume(&dir, "scenes/noise-wash.json", &snap),
        &["drone.json", "no node of this scene"],
    );
    // The same scene at another rate.
    let slow = dir.join("drone-44k.json");
    let drone = std::fs::read_to_string(root().join(scene)).unwrap();
    assert!(drone.contains("\"sample_rate\": 48000"));
    std::fs::write(
        &slow,
        drone.replace("\"sample_rate\": 48000", "\"sample_rate\": 44100"),
    )
    .unwrap();
    refused(
        &resume(&dir, s(&slow), &snap),
        &["drone.json", "48000 Hz", "44100 Hz"],
    );
    // A block size the snapshot was not taken at.
    let o = morphrt(&[
        "render",
        scene,
        "-o",
        s(&dir.join("out.wav")),
        "-d",
        "0.1s",
        "--resume",
        s(&snap),
        "--block-size",
        "128",
    ]);
    refused(&o, &["--block-size 128", "block size 64"]);
    assert!(
        !dir.join("out.wav").exists(),
        "no output from a refused resume"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot of another version of the scene carries by the
/// handover's rules with a warning, naming each node that starts fresh.
#[test]
fn a_snapshot_of_an_edited_scene_resumes_with_a_warning_naming_fresh_nodes() {
    let dir = temp_dir("edited-scene");
    let snap = drone_snapshot(&dir);
    let drone = std::fs::read_to_string(root().join("scenes/drone.json")).unwrap();
    // A new node, fed into nothing, and the same nodes otherwise.
    let edited = drone.replacen(
        "\"nodes\": [",
        "\"nodes\": [\n    { \"id\": \"extra\", \"op\": \"sine\", \"params\": { \"freq\": \"1kHz\" } },",
        1,
    );
    assert_ne!(edited, drone);
    let path = dir.join("drone.edited.json");
    std::fs::write(&path, edited).unwrap();
    let o = resume(&dir, s(&path), &snap);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: snapshot")
            && err.contains("taken from another version of the scene (other nodes or edges)"),
        "{err}"
    );
    assert!(
        err.contains("node `extra` is not in the snapshot: it starts fresh"),
        "{err}"
    );
    assert!(dir.join("out.wav").exists());

    // Only a value changed: same topology, and the value glides to the new one.
    let tuned = drone.replacen("\"55Hz\"", "\"56Hz\"", 1);
    assert_ne!(tuned, drone, "drone.json has a 55Hz root");
    std::fs::write(&path, tuned).unwrap();
    let o = resume(&dir, s(&path), &snap);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("(same nodes and edges, other values)"),
        "{err}"
    );
    assert!(err.contains("glides 55 → 56"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Resources: a changed resource is a warning naming it; a missing
/// one the scene still reads is an error naming it.
#[test]
fn a_changed_resource_is_a_warning_and_a_missing_one_an_error() {
    let dir = temp_dir("resources");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let kick = dir.join("resources/kick.wav");
    std::fs::copy(root().join("resources/kick.wav"), &kick).unwrap();
    let scene = dir.join("groove.json");
    std::fs::copy(root().join("scenes/sampler-groove.json"), &scene).unwrap();
    let snap = dir.join("groove.snap.json");
    let o = morphrt(&[
        "render",
        s(&scene),
        "-o",
        s(&dir.join("a.wav")),
        "-d",
        "0.2s",
        "--profile",
        "live",
        "--snapshot-at",
        "0.1s",
        "--snapshot-out",
        s(&snap),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        text.contains("kick.wav") && text.contains(&sha256_hex(&std::fs::read(&kick).unwrap()))
    );

    std::fs::copy(root().join("resources/room.wav"), &kick).unwrap();
    let o = resume(&dir, s(&scene), &snap);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("kick.wav") && err.contains("which has changed since"),
        "{err}"
    );

    std::fs::remove_file(&kick).unwrap();
    refused(&resume(&dir, s(&scene), &snap), &["kick.wav"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A damaged snapshot given to `render --resume` or `run --resume` is bad
/// input (not a usage error), located in the file: its
/// path and the line and column where it stops making sense, as scene
/// errors are (and `check --json` would give them).
#[test]
fn a_bad_snapshot_is_bad_input_located_in_the_file() {
    let dir = temp_dir("bad-snapshot-located");
    let snap = drone_snapshot(&dir);
    let text = std::fs::read_to_string(&snap).unwrap();
    let cut = dir.join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let lines = text[..text.len() / 2].matches('\n').count() + 1;
    let corrupt = dir.join("corrupt.json");
    std::fs::write(&corrupt, text.replacen("\"clock\":", "\"clock\";", 1)).unwrap();
    let clock_line = text.lines().position(|l| l.contains("\"clock\"")).unwrap() + 1;
    let located = |o: &std::process::Output, file: &Path, line: usize, what: &str| {
        let err = stderr(o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let at = format!("error: {}:{line}:", file.display());
        assert!(err.contains(&at), "expected `{at}` in:\n{err}");
        assert!(err.contains(what), "expected `{what}` in:\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    let o = resume(&dir, "scenes/drone.json", &cut);
    located(&o, &cut, lines, "the snapshot is truncated");
    let o = resume(&dir, "scenes/drone.json", &corrupt);
    located(&o, &corrupt, clock_line, "not valid JSON");
    let o = common::bin()
        .args([
            "run",
            "scenes/drone.json",
            "--device",
            "clock",
            "--no-journal",
        ])
        .args(["--duration", "0.1s"])
        .arg("--resume")
        .arg(&corrupt)
        .current_dir(root())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    located(&o, &corrupt, clock_line, "not valid JSON");
    assert!(!stderr(&o).contains("playing"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

// A snapshot without the `phase` param of `saw` and `square`
// (tests/fixtures/snapshots/saw-square-before-phase.json, of
// tests/fixtures/snapshots/saw.json at 0.5 s, written by a build whose
// oscillators had no `phase`) resumes with `phase` at its default, and the
// continuation is the full render's second half, bit for bit.
#[test]
fn a_snapshot_from_before_a_param_was_added_resumes_with_its_default() {
    let dir = temp_dir("snapshot-older-params");
    let fixtures = root().join("tests/fixtures/snapshots");
    std::fs::copy(fixtures.join("saw.json"), dir.join("saw.json")).unwrap();
    let snap = fixtures.join("saw-square-before-phase.json");
    let render = |extra: &[&str], out: &str| {
        let scene = dir.join("saw.json");
        let out = dir.join(out);
        let mut args = vec![
            "render",
            scene.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = morphrt(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut r = hound::WavReader::open(&out).unwrap();
        r.samples::<f32>()
            .map(|x| x.unwrap().to_bits())
            .collect::<Vec<u32>>()
    };
    let full = render(&[], "full.wav");
    let rest = render(&["--resume", snap.to_str().unwrap()], "rest.wav");
    assert_eq!(rest.len(), full.len() / 2);
    assert!(rest == full[full.len() / 2..], "the continuation differs");
}

/// A scene with a frequency ramp in progress at sample 1000, its snapshot
/// there, and the snapshot's text.
fn glide_snapshot(dir: &Path) -> (PathBuf, PathBuf, String) {
    let scene = dir.join("glide.json");
    std::fs::write(
        &scene,
        r#"{ "version": "1.0", "sample_rate": 48000, "duration": "6000samples",
  "nodes": [ { "id": "osc", "op": "sine", "params": { "freq": "220Hz" } } ],
  "outputs": { "main": ["osc"] },
  "events": [ { "time": "500samples", "node": "osc", "param": "freq", "value": "330Hz", "ramp": "4000samples" } ] }"#,
    )
    .unwrap();
    let snap = dir.join("glide.snap.json");
    let o = morphrt(&[
        "render",
        s(&scene),
        "-o",
        s(&dir.join("a.wav")),
        "--snapshot-at",
        "1000samples",
        "--snapshot-out",
        s(&snap),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&snap).unwrap();
    (scene, snap, text)
}

/// A ramp in progress whose end would lie past the last sample there is (a
/// damaged `start` or `len`) is refused naming the node and the param,
/// rather than overflowing when the resumed engine reaches it.
#[test]
fn a_ramp_that_ends_past_the_last_sample_is_refused() {
    let dir = temp_dir("ramp-past-the-end");
    let (scene, _, text) = glide_snapshot(&dir);
    for (from, to) in [
        ("\"len\": 4000", "\"len\": 18446744073709551615"),
        ("\"start\": 500", "\"start\": 18446744073709551615"),
    ] {
        assert!(text.contains(from), "{text}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, text.replacen(from, to, 1)).unwrap();
        let o = resume(&dir, s(&scene), &bad);
        refused(
            &o,
            &[
                "bad.json",
                "node `osc`",
                "`freq`",
                "ends past the last sample",
            ],
        );
        assert!(!dir.join("out.wav").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A clock past any session (here the largest u64) is refused with the
/// limit, rather than overflowing where the render's end is computed.
#[test]
fn a_clock_past_any_session_is_refused() {
    let dir = temp_dir("clock-past-any-session");
    let (scene, _, text) = glide_snapshot(&dir);
    let bad = dir.join("bad.json");
    for clock in ["18446744073709551615", "9007199254740993"] {
        let t = text.replacen("\"clock\": 1000", &format!("\"clock\": {clock}"), 1);
        assert_ne!(t, text);
        std::fs::write(&bad, t).unwrap();
        let o = resume(&dir, s(&scene), &bad);
        refused(
            &o,
            &["bad.json", &format!("`clock` {clock}"), "at most 2^53"],
        );
        assert!(!dir.join("out.wav").exists());
    }
    let t = text.replacen("\"clock\": 1000", "\"clock\": 9007199254740992", 1);
    std::fs::write(&bad, t).unwrap();
    let o = resume(&dir, s(&scene), &bad);
    assert!(
        o.status.success(),
        "the limit itself resumes: {}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A param value outside its range (a damaged `value`, here the frequency
/// of a sine at -1e308) is refused naming the node, the param and the
/// range, rather than resumed into infinite samples.
#[test]
fn a_param_value_outside_its_range_is_refused() {
    let dir = temp_dir("param-out-of-range");
    let (scene, _, text) = glide_snapshot(&dir);
    for value in ["-1e308", "1e400"] {
        let t = text.replacen("\"value\": 330.0", &format!("\"value\": {value}"), 1);
        assert_ne!(t, text, "{text}");
        let bad = dir.join("bad.json");
        std::fs::write(&bad, t).unwrap();
        let o = resume(&dir, s(&scene), &bad);
        assert_eq!(o.status.code(), Some(2), "{value}: {}", stderr(&o));
        assert!(!dir.join("out.wav").exists());
    }
    let t = text.replacen("\"value\": 330.0", "\"value\": -1e308", 1);
    std::fs::write(dir.join("bad.json"), t).unwrap();
    let o = resume(&dir, s(&scene), &dir.join("bad.json"));
    refused(
        &o,
        &["bad.json", "node `osc`", "`freq`", "outside its range"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
