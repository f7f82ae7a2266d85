//! A tempo edit while playing: a sequencer's steps follow the new tempo
//! from the swap sample, nothing before it moves, and the same handover
//! gives the same bits again.

use crate::support as common;

use morphrt::api::player::Scripted;
use morphrt::engine::incoming::Incoming;
use morphrt::profile::Profile;

/// `text` compiled under strict as an edit of the test session.
fn edit(text: &str) -> Incoming {
    let fixed = common::session_fixed(None);
    common::incoming(
        text,
        std::path::Path::new("t.json"),
        &fixed,
        Profile::Strict,
    )
}

/// The sequencer's gate alone on the main bus.
fn scene(tempo: &str) -> String {
    format!(
        r#"{{"version": "1.0", "profile": "strict", "tempo": "{tempo}", "nodes": [
  {{"id": "seq", "op": "sequencer", "params": {{"steps": [1, 2, 3, 4], "rate": "1/16", "gate": 0.25}}}}],
 "outputs": {{"main": "seq:gate"}}}}"#
    )
}

fn rises(gate: &[f64]) -> Vec<usize> {
    (0..gate.len())
        .filter(|&i| gate[i] > 0.5 && (i == 0 || gate[i - 1] < 0.5))
        .collect()
}

fn played_with_edit() -> Vec<f64> {
    let mut s = Scripted::new(edit(&scene("120bpm")), 1);
    s.play_to(20_480);
    // Saved at 20480, swapped at 20992 to 97 bpm.
    s.handover_at(edit(&scene("97bpm")), 20_480, 20_992, 0)
        .unwrap();
    s.play_to(60_000);
    s.output().to_vec()
}

#[test]
fn a_tempo_edit_moves_the_following_steps_only() {
    let out = played_with_edit();
    let got = rises(&out);
    // Before the swap: 120 bpm, a sixteenth every 6000 samples.
    assert_eq!(&got[..4], &[0, 6000, 12000, 18000]);
    // At 20992 the grid stands at step 20992/6000 = 3.4986…; step 4 is
    // (4 − 20992/6000) · 720000/97 samples later (97 bpm), then every
    // 720000/97, rounded half to even from the anchor.
    let len = 720_000.0 / 97.0;
    let q = 20_992.0 / 6000.0;
    let want: Vec<usize> = (4..got.len())
        .map(|k| 20_992 + ((k as f64 - q) * len).round() as usize)
        .collect();
    assert_eq!(&got[4..], &want[..]);
    assert!(got.len() >= 8, "{got:?}");
    // The same handover again gives the same bits.
    let again = played_with_edit();
    assert!(out
        .iter()
        .zip(&again)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// A dc stepped by events at beats 1…16 (its value becomes the beat).
fn beat_scene(tempo: &str, duration: &str) -> String {
    beat_scene_by(tempo, duration, 1.0)
}

/// The same, stepped to b · `per_beat` at beat b.
fn beat_scene_by(tempo: &str, duration: &str, per_beat: f64) -> String {
    let events: Vec<String> = (1..=16)
        .map(|b| {
            format!(
                r#"{{"time": "{b}beats", "node": "v", "param": "value", "value": {}}}"#,
                b as f64 * per_beat
            )
        })
        .collect();
    format!(
        r#"{{"version": "1.0", "profile": "strict", "tempo": "{tempo}", "duration": "{duration}",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}}],
 "outputs": {{"main": "v"}}, "events": [{}]}}"#,
        events.join(", ")
    )
}

/// Where the output steps, and to which beat.
fn steps(out: &[f64]) -> Vec<(usize, i64)> {
    (1..out.len())
        .filter(|&i| out[i] != out[i - 1])
        .map(|i| (i, out[i] as i64))
        .collect()
}

/// Beat `b` on a map anchored at (`at`, `beat`), `spb` samples a beat,
/// rounded half to even (no halves occur here).
fn on_map(at: f64, beat: f64, spb: f64, b: f64) -> usize {
    let x = at + (b - beat) * spb;
    assert!((x - x.floor() - 0.5).abs() > 1e-6, "{x} is a tie");
    x.round() as usize
}

const S1: u64 = 60_032;
const S2: u64 = 140_032;
const S3: u64 = 200_000;

/// 120 bpm, handed over to 97 bpm at S1, to the same tempo (another
/// duration) at S2 and back to 120 bpm at S3.
fn three_edits() -> Vec<f64> {
    let mut s = Scripted::new(edit(&beat_scene("120bpm", "10s")), 1);
    s.handover_at(edit(&beat_scene("97bpm", "10s")), S1 - 512, S1, 0)
        .unwrap();
    s.handover_at(edit(&beat_scene("97bpm", "9s")), S2 - 512, S2, 0)
        .unwrap();
    s.handover_at(edit(&beat_scene("120bpm", "9s")), S3 - 512, S3, 0)
        .unwrap();
    s.play_to(330_000);
    s.output().to_vec()
}

#[test]
fn events_in_beats_follow_tempo_edits_from_the_swap_only() {
    let out = three_edits();
    let got = steps(&out);
    let (s1, s2, s3) = (S1 as f64, S2 as f64, S3 as f64);
    let spb97 = 2_880_000.0 / 97.0;
    // The beat the 120 bpm grid stands at at S1; the 97 bpm grid from
    // there (the edit at S2 keeps the tempo, so it keeps the anchor); the
    // beat that grid stands at at S3, where 120 bpm takes over again.
    let b1 = s1 / 24_000.0;
    let b3 = b1 + (s3 - s1) / spb97;
    let want: Vec<(usize, i64)> = (1..=16)
        .map(|b| {
            let bf = b as f64;
            let at = if bf < b1 {
                bf as usize * 24_000
            } else if bf < b3 {
                on_map(s1, b1, spb97, bf)
            } else {
                on_map(s3, b3, 24_000.0, bf)
            };
            (at, b)
        })
        .filter(|(at, _)| *at < out.len())
        .collect();
    assert_eq!(got, want);
    // Beats 1 and 2 before the first swap, 3…5 between, and one between
    // S2 and S3 on the grid anchored at S1.
    assert_eq!(&got[..2], &[(24_000, 1), (48_000, 2)]);
    assert!(got
        .iter()
        .any(|(at, _)| (s2 as usize..S3 as usize).contains(at)));
    assert!(got.len() >= 12, "{got:?}");
    // The same handovers again (as a replay redoes them): the same bits.
    let again = three_edits();
    assert!(out
        .iter()
        .zip(&again)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// A live session: a dc stepped to b/100 at each beat b, 240 bpm (12000 samples a beat), the file rewritten to
/// 200 bpm (14400) while it plays, captured and journaled; the events
/// before the swap stay on the 240 bpm grid, the later ones land on the
/// 200 bpm grid re-anchored at the swap, and the journal replays bit for
/// bit.
#[test]
fn a_live_tempo_edit_re_anchors_events_and_replays() {
    let dir = common::temp_dir("tempo_live_edit");
    let path = dir.join("scene.json");
    let text = |tempo: &str| {
        let events: Vec<String> = (1..=60)
            .map(|b| {
                format!(
                    r#"{{"time": "{b}beats", "node": "v", "param": "value", "value": {}}}"#,
                    b as f64 / 100.0
                )
            })
            .collect();
        format!(
            r#"{{"version": "1.0", "profile": "strict", "sample_rate": 48000,
 "profile_config": {{"block_size": 64}}, "tempo": "{tempo}",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}}],
 "outputs": {{"main": "v"}}, "events": [{}]}}"#,
            events.join(", ")
        )
    };
    std::fs::write(&path, text("240bpm")).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("take.jsonl"));
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    common::save_as_editor(
        &path,
        &text("200bpm"),
        std::time::Duration::from_millis(1500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let log = common::press_then_quit(&mut child, &lines, log, &[]);
    let s = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["type"] == "handover")
        .and_then(|r| r["swap_at"].as_u64())
        .unwrap_or_else(|| panic!("no handover journaled; log:\n{log}"));
    beats_around_the_swap(&cap, &journal, s, &log);
}

/// The plan of scene text compiled as `incoming` compiles it.
fn plan_of(text: &str) -> morphrt::graph::Plan {
    let scene = morphrt::scene::load_str(text, "t.json", None).unwrap();
    morphrt::graph::compile(
        &scene,
        &common::session_fixed(None).options(Profile::Strict),
    )
    .unwrap_or_else(|e| panic!("{}", e[0]))
}

/// Where a snapshot is taken, after the tempo edit at S1, and where the
/// run ends.
const T: u64 = 100_032;
const END: u64 = 330_000;

/// 120 bpm handed over to 97 bpm at S1 and played to END without a
/// break, and the snapshot file of its state at T (written and read back).
fn edited_then_snapshot() -> (Vec<f64>, morphrt::host::record::snapshot::SnapshotFile) {
    edited_then_snapshot_by(1.0)
}

/// The same with [`beat_scene_by`]`(…, per_beat)`.
fn edited_then_snapshot_by(
    per_beat: f64,
) -> (Vec<f64>, morphrt::host::record::snapshot::SnapshotFile) {
    use morphrt::host::record::snapshot::{SnapshotContext, SnapshotFile};
    let text = beat_scene_by("97bpm", "10s", per_beat);
    let mut s = Scripted::new(edit(&beat_scene_by("120bpm", "10s", per_beat)), 1);
    s.handover_at(edit(&text), S1 - 512, S1, 0).unwrap();
    s.play_to(T);
    let cx = SnapshotContext::new(&plan_of(&text), &text).unwrap();
    let bytes = cx.file(&s.engine().snapshot()).unwrap().to_bytes();
    let snap = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
    assert_eq!(snap.to_bytes(), bytes, "read and written again: same bytes");
    s.play_to(END);
    (s.output().to_vec(), snap)
}

/// A fresh engine of `text` resumed from `snap`, played from its clock to END.
fn resumed(text: &str, snap: &morphrt::host::record::snapshot::SnapshotFile) -> Vec<f64> {
    use morphrt::host::record::snapshot::SnapshotContext;
    let plan = plan_of(text);
    let cx = SnapshotContext::new(&plan, text).unwrap();
    let mut e = morphrt::engine::Engine::new(plan);
    let r = cx.resume(snap, &mut e).unwrap();
    assert_eq!(r.clock, T);
    let out = morphrt::engine::render_to_vec(&mut e, END - T);
    out.into_iter().next().unwrap()
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// A snapshot taken after a tempo edit holds the grid the edit re-anchored:
/// a fresh engine of the edited scene resumed from the file plays on bit
/// for bit, its beats where the uninterrupted run plays them, not on the
/// scene's own grid from sample 0 (where a file without the grid puts
/// them).
#[test]
fn a_snapshot_keeps_the_beat_grid_a_tempo_edit_re_anchored() {
    let (whole, snap) = edited_then_snapshot();
    let tempo = snap.tempo.expect("a scene with a tempo keeps its grid");
    let spb97 = morphrt::scene::Rational::new(2_880_000, 97).unwrap();
    let b1 = morphrt::scene::Rational::new(S1 as i128, 24_000).unwrap();
    assert_eq!(
        (tempo.sample, tempo.beat, tempo.samples_per_beat),
        (S1, b1, spb97)
    );
    let text = String::from_utf8(snap.to_bytes()).unwrap();
    // Exact, as "num/den": 60032/24000 = 938/375.
    assert!(
        text.contains(
            "\"tempo\": {\n    \"sample\": 60032,\n    \"beat\": \"938/375\",\n    \"samples_per_beat\": \"2880000/97\"\n  }"
        ),
        "{text}"
    );
    let got = resumed(&beat_scene("97bpm", "10s"), &snap);
    assert!(
        same_bits(&got, &whole[T as usize..]),
        "the resumed engine continues differently"
    );
    // The beats after T, on the grid re-anchored at S1: beat 4 at 104528,
    // then every 29690.72… samples; on the 97 bpm grid from sample 0 they
    // would be at b · 29690.72… (beat 4 at 118763).
    let (s1, spb) = (S1 as f64, 2_880_000.0 / 97.0);
    let after: Vec<(usize, i64)> = steps(&whole)
        .into_iter()
        .filter(|&(at, _)| at >= T as usize)
        .collect();
    let want: Vec<(usize, i64)> = (4..=11)
        .map(|b| (on_map(s1, s1 / 24_000.0, spb, b as f64), b))
        .collect();
    assert_eq!(after, want);
    assert_eq!(after[0], (104_528, 4));
    let own: Vec<(usize, i64)> = (4..=11)
        .map(|b| (on_map(0.0, 0.0, spb, b as f64), b))
        .collect();
    assert_eq!(own[0], (118_763, 4));
    assert!(after.iter().zip(&own).all(|(a, o)| a.0 != o.0));
    // A file without the grid: the scene's own grid from sample 0.
    let mut old = snap.clone();
    old.tempo = None;
    let old =
        morphrt::host::record::snapshot::SnapshotFile::from_bytes(&old.to_bytes(), "old.snap")
            .unwrap();
    let got = resumed(&beat_scene("97bpm", "10s"), &old);
    let at: Vec<(usize, i64)> = steps(&[&[whole[T as usize - 1]], &got[..]].concat())
        .into_iter()
        .map(|(i, b)| (i - 1 + T as usize, b))
        .collect();
    assert_eq!(at, own[..at.len()].to_vec());
    assert!(at.len() >= 6, "{at:?}");
    // Resumed into 120 bpm, the file's grid re-anchors at T: beat b at
    // T + (b − b_T) · 24000, b_T the beat the file's grid stands at at T.
    let got = resumed(&beat_scene("120bpm", "10s"), &snap);
    let bt = s1 / 24_000.0 + (T - S1) as f64 / spb;
    let at: Vec<(usize, i64)> = steps(&[&[whole[T as usize - 1]], &got[..]].concat())
        .into_iter()
        .map(|(i, b)| (i - 1 + T as usize, b))
        .collect();
    let want: Vec<(usize, i64)> = (4..=13)
        .map(|b| (on_map(T as f64, bt, 24_000.0, b as f64), b))
        .filter(|(at, _)| *at < END as usize)
        .collect();
    assert_eq!(at, want);
    assert!(at.len() >= 8, "{at:?}");
}

/// The same on the command line: the edited scene rendered from the file
/// (written by the library) with `render --resume` is the uninterrupted
/// run from T, sample for sample; a file whose grid is damaged is refused,
/// located in the file, naming the field.
#[test]
fn render_resume_continues_on_the_re_anchored_grid_and_refuses_a_bad_one() {
    let dir = common::temp_dir("tempo_resume_cli");
    let (whole, snap) = edited_then_snapshot();
    let scene = dir.join("scene.json");
    std::fs::write(&scene, beat_scene("97bpm", "10s")).unwrap();
    let file = dir.join("snap.json");
    let text = String::from_utf8(snap.to_bytes()).unwrap();
    std::fs::write(&file, &text).unwrap();
    let out = dir.join("rest.wav");
    let frames = format!("{}samples", END - T);
    let render = |snap: &std::path::Path| {
        common::morphrt(&[
            "render",
            scene.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-d",
            &frames,
            "--resume",
            snap.to_str().unwrap(),
        ])
    };
    let o = render(&file);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // The file is of this very scene: no warning about the snapshot.
    assert!(
        !common::stderr(&o).contains("warning: snapshot"),
        "{}",
        common::stderr(&o)
    );
    let channels = hound::WavReader::open(&out).unwrap().spec().channels as usize;
    let got: Vec<f32> = common::read_f32(&out)
        .chunks(channels)
        .map(|c| c[0])
        .collect();
    let want: Vec<f32> = whole[T as usize..].iter().map(|x| *x as f32).collect();
    assert_eq!(got.len(), want.len());
    assert!(
        got.iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "the resumed render differs from the uninterrupted run"
    );
    // Damaged grids: refused by the reader, within the record.
    let open = text
        .lines()
        .position(|l| l.contains("\"tempo\": {"))
        .unwrap()
        + 1;
    let close = open + 4;
    for (from, to, what) in [
        (
            "\"2880000/97\"",
            "\"2880000/0\"",
            "`samples_per_beat` `2880000/0`",
        ),
        ("\"2880000/97\"", "\"0/97\"", "`samples_per_beat` `0/97`"),
        ("\"2880000/97\"", "\"-2880000/97\"", "greater than 0"),
        ("\"2880000/97\"", "\"2880000/-97\"", "den > 0"),
        ("\"938/375\"", "\"938\"", "`beat` `938`"),
        ("\"938/375\"", "\"-938/375\"", "of 0 or more"),
        (
            "\"sample\": 60032",
            "\"sample\": 9007199254740993",
            "past any session",
        ),
    ] {
        assert!(text.contains(from));
        let t = text.replacen(from, to, 1);
        let e = morphrt::host::record::snapshot::SnapshotFile::from_bytes(t.as_bytes(), "bad.json")
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(what), "{to}: {msg}");
        let morphrt::host::record::snapshot::SnapshotError::Invalid {
            at: Some((line, _)),
            ..
        } = e
        else {
            panic!("{to}: not located: {e:?}");
        };
        assert!(
            (open..=close).contains(&line),
            "{to}: line {line}, not {open}…{close}"
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, &t).unwrap();
        let _ = std::fs::remove_file(&out);
        let o = render(&bad);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let at = format!("error: {}:{line}:", bad.display());
        assert!(err.contains(&at) && err.contains(what), "{to}: {err}");
        assert!(!out.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --resume` of such a file (the dc at b/100, so the device does not
/// clip it), an edit that keeps the tempo, and a snapshot by `w`: every
/// beat plays on the file's grid, before and after the edit (a live
/// save copies the grid; without it the edit's engine would take the one
/// its buffer was shaped with, the scene's from sample 0, and its beats
/// would jump there); the edit's beats are compared with the resumed engine's
/// on that grid, so none is said to be in the past; the snapshot `w`
/// writes holds the file's grid; and the journal replays bit for bit.
#[test]
fn a_resumed_session_keeps_the_files_grid_through_an_edit_and_a_snapshot() {
    let dir = common::temp_dir("tempo_resume_run");
    let (_, snap) = edited_then_snapshot_by(0.01);
    let file = dir.join("snap.json");
    std::fs::write(&file, snap.to_bytes()).unwrap();
    let path = dir.join("scene.json");
    std::fs::write(&path, beat_scene_by("97bpm", "10s", 0.01)).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("take.jsonl"));
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--resume",
            file.to_str().unwrap(),
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    common::save_as_editor(
        &path,
        &beat_scene_by("97bpm", "9s", 0.01),
        std::time::Duration::from_millis(700),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let log = common::press_then_quit(&mut child, &lines, log, &[("w", "snapshot at")]);
    assert!(log.contains("resuming"), "{log}");
    assert!(!log.contains("is in the past"), "{log}");
    let s = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["type"] == "handover")
        .and_then(|r| r["swap_at"].as_u64())
        .unwrap_or_else(|| panic!("no handover journaled; log:\n{log}"));
    // The capture starts at the resumed clock T.
    let played: Vec<f64> = common::read_f32(&cap)
        .chunks(2)
        .map(|c| (c[0] as f64 * 100.0).round())
        .collect();
    let got: Vec<(usize, i64)> = steps(&played)
        .into_iter()
        .filter(|&(at, b)| b >= 1 && played[at] == b as f64 && played[at - 1] == (b - 1) as f64)
        .map(|(at, b)| (at + T as usize, b))
        .collect();
    let (s1, spb) = (S1 as f64, 2_880_000.0 / 97.0);
    let want: Vec<(usize, i64)> = (4..=16)
        .map(|b| (on_map(s1, s1 / 24_000.0, spb, b as f64), b))
        .filter(|&(at, _)| at < T as usize + played.len())
        .collect();
    assert_eq!(got, want[..got.len()].to_vec(), "swap at {s}\n{log}");
    assert!(
        got.iter().filter(|&&(at, _)| at as u64 >= s).count() >= 2,
        "beats after the edit's swap at {s}: {got:?}\n{log}"
    );
    let written: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".snapshot.json"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}\n{log}");
    let w = morphrt::host::record::snapshot::SnapshotFile::read(&written[0]).unwrap();
    assert_eq!(w.tempo, snap.tempo, "the grid of the snapshot `w` wrote");
    common::assert_replays(&journal, &cap, &log);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A save spread over blocks (the audio thread's) holds the grid the
/// engine plays on, as a snapshot does, also after a handover moved it.
#[test]
fn a_save_holds_the_grid_a_tempo_edit_moved() {
    let mut old = edit(&beat_scene("120bpm", "10s")).engine;
    old.fast_forward(S1 - 512);
    let mut next = edit(&beat_scene("97bpm", "10s"));
    next.engine.migrate(&old.snapshot(), S1 - 512);
    morphrt::engine::incoming::advance_to(&mut next.engine, S1);
    let mut e = next.engine;
    let mut st = next.saved;
    assert!(e.begin_save(&mut st), "a dc's state is short");
    let map = e.snapshot().tempo_map.unwrap();
    assert_eq!(map.sample, S1);
    assert_eq!(st.tempo_map, Some(map));
}

/// A dc stepped by events in seconds: to 100 + k at k · 0.3 s (k · 14400
/// samples), k = 1…24; no tempo.
fn seconds_scene() -> String {
    let events: Vec<String> = (1..=24)
        .map(|k| {
            format!(
                r#"{{"time": "{}.{}s", "node": "v", "param": "value", "value": {}}}"#,
                k * 3 / 10,
                k * 3 % 10,
                100 + k
            )
        })
        .collect();
    format!(
        r#"{{"version": "1.0", "profile": "strict", "duration": "10s",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}}],
 "outputs": {{"main": "v"}}, "events": [{}]}}"#,
        events.join(", ")
    )
}

const SA: u64 = 100_032;
const SB: u64 = 200_000;
const SC: u64 = 260_032;

/// Without a tempo, edited at SA to 97 bpm (events in beats), at SB back
/// to no tempo (events in seconds), at SC to 150 bpm; each captured 512
/// samples before its swap.
fn tempo_added_and_removed() -> Vec<f64> {
    let mut s = Scripted::new(edit(&seconds_scene()), 1);
    s.handover_at(edit(&beat_scene("97bpm", "10s")), SA - 512, SA, 0)
        .unwrap();
    s.handover_at(edit(&seconds_scene()), SB - 512, SB, 0)
        .unwrap();
    s.handover_at(edit(&beat_scene("150bpm", "10s")), SC - 512, SC, 0)
        .unwrap();
    s.play_to(330_000);
    s.output().to_vec()
}

/// A tempo an edit adds starts the new engine's own grid, from sample 0:
/// beat b at b · spb, and only the beats at or after the swap fire; an
/// edit that removes it plays the events in seconds on from the swap, at
/// their exact samples; a tempo added again starts from sample 0 again.
/// Nothing before the first swap changes, and the same edits give the
/// same bits again.
#[test]
fn a_tempo_added_or_removed_by_an_edit() {
    let out = tempo_added_and_removed();
    let got = steps(&out);
    let secs = |k: i64| (k as usize * 14_400, 100 + k);
    let mut want: Vec<(usize, i64)> = (1..=6).map(secs).collect();
    // 97 bpm from sample 0: beat 3 (89072) is before SA and never fires;
    // beats 4 (118763), 5 and 6 do; beat 7 (207835) is after SB.
    let spb97 = 2_880_000.0 / 97.0;
    want.extend((4..=6).map(|b| (on_map(0.0, 0.0, spb97, b as f64), b)));
    // In seconds again: 14400 · k from SB on (k = 14 at 201600 … 18 at
    // 259200); k = 19 (273600) is after SC.
    want.extend((14..=18).map(secs));
    // 150 bpm from sample 0, 19200 a beat: beat 14 at 268800, 15, 16.
    want.extend((14..=16).map(|b| (b as usize * 19_200, b)));
    assert_eq!(got, want);
    assert_eq!(want[6], (118_763, 4));
    // Until SA: the scene without the edits, bit for bit.
    let mut alone = Scripted::new(edit(&seconds_scene()), 1);
    alone.play_to(SA);
    assert!(same_bits(alone.output(), &out[..SA as usize]));
    let again = tempo_added_and_removed();
    assert!(same_bits(&out, &again));
}
/// A live session whose scene also reads the input (`run --input FILE`):
/// an edit hands over to an engine that reads it, so the session places it
/// behind the audio clock and it catches up through the input history,
/// its swap sample left open until the audio thread swaps it in where it
/// reached the clock. The events before that swap stay on the 240 bpm
/// grid, the later ones land on the 200 bpm grid re-anchored there, and
/// the journal replays bit for bit.
#[test]
fn a_tempo_edit_caught_up_through_the_input_history_re_anchors_at_the_swap() {
    let dir = common::temp_dir("tempo_catch_up");
    let path = dir.join("scene.json");
    // The input, mixed in at gain 0: read (so the handover catches up),
    // but the output is the dc's steps alone.
    let text = |tempo: &str| {
        let events: Vec<String> = (1..=60)
            .map(|b| {
                format!(
                    r#"{{"time": "{b}beats", "node": "v", "param": "value", "value": {}}}"#,
                    b as f64 / 100.0
                )
            })
            .collect();
        format!(
            r#"{{"version": "1.0", "profile": "strict", "sample_rate": 48000,
 "profile_config": {{"block_size": 64}}, "tempo": "{tempo}",
 "nodes": [{{"id": "v", "op": "dc", "params": {{"value": 0}}}},
           {{"id": "mic", "op": "input", "params": {{"channel": 0}}}},
           {{"id": "sum", "op": "mix", "params": {{"gains": [1, 0]}}}}],
 "edges": [{{"from": "v", "to": "sum:in0"}}, {{"from": "mic", "to": "sum:in1"}}],
 "outputs": {{"main": "sum"}}, "events": [{}]}}"#,
            events.join(", ")
        )
    };
    let input = dir.join("in.wav");
    let signal: Vec<f32> = (0..48_000 * 12)
        .map(|n| (libm::sin(n as f64 * 0.017) * 0.5) as f32)
        .collect();
    common::write_mono_f32(&input, &signal);
    std::fs::write(&path, text("240bpm")).unwrap();
    let (cap, journal) = (dir.join("cap.wav"), dir.join("take.jsonl"));
    let (mut child, lines) = common::run_clock(
        &path,
        &[
            "--input",
            input.to_str().unwrap(),
            "--capture",
            cap.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    let mut log = Vec::new();
    common::wait_line(&lines, "playing", &mut log);
    common::save_as_editor(
        &path,
        &text("200bpm"),
        std::time::Duration::from_millis(1500),
    );
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let log = common::press_then_quit(&mut child, &lines, log, &[]);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The session reads an input (recorded beside the journal), and the
    // edited scene reads it: its handover went through the history. The
    // journal records it as any handover, by its save and swap samples.
    assert!(
        records.iter().any(|r| r["type"] == "input"),
        "no input record; log:\n{log}"
    );
    let handovers: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["type"] == "handover").collect();
    assert_eq!(handovers.len(), 1, "{records:?}\n{log}");
    let (n, s) = (
        handovers[0]["captured_at"].as_u64().unwrap(),
        handovers[0]["swap_at"].as_u64().unwrap(),
    );
    assert!(n <= s && s % 64 == 0, "N {n}, S {s}");
    beats_around_the_swap(&cap, &journal, s, &log);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checks the capture of a live session whose file went from 240 bpm
/// (12000 samples a beat) to 200 bpm (14400) with the swap at `s`, a dc
/// stepped to b/100 at each beat b: the steps before `s` are on the 240 bpm
/// grid, the later ones on the 200 bpm grid re-anchored at `s`, at least two
/// of each; no event is said to be in the past; the journal replays the
/// capture bit for bit.
fn beats_around_the_swap(cap: &std::path::Path, journal: &std::path::Path, s: u64, log: &str) {
    // The capture is stereo (a mono bus feeds both channels) and within
    // ±1: beat b sets b/100.
    let played: Vec<f64> = common::read_f32(cap)
        .chunks(2)
        .map(|c| (c[0] as f64 * 100.0).round())
        .collect();
    // The steps from one beat to the next (not the fade when it stops).
    let got: Vec<(usize, i64)> = steps(&played)
        .into_iter()
        .filter(|&(at, b)| b >= 1 && played[at] == b as f64 && played[at - 1] == (b - 1) as f64)
        .collect();
    let (mut before, mut after) = (0, 0);
    for &(at, b) in &got {
        let b = b as u64;
        let want = if b * 12_000 < s {
            before += 1;
            b * 12_000
        } else {
            // s + (b − s/12000) · 14400 = (72000·b − s) / 5, never a tie.
            after += 1;
            (72_000 * b - s + 2) / 5
        };
        assert_eq!(at as u64, want, "beat {b}, swap at {s}; {got:?}\n{log}");
    }
    assert!(before >= 2 && after >= 2, "{got:?}\n{log}");
    // The events keep their beats: none of them is said to be in the past.
    assert!(!log.contains("is in the past"), "{log}");
    common::assert_replays(journal, cap, log);
}

/// A step's length is a note value, beats or a time in s, ms or us
/// (scenes/README.md); a count of samples is refused, naming the node and
/// saying what is valid.
#[test]
fn a_step_length_in_samples_is_refused_saying_what_is_valid() {
    let dir = common::temp_dir("step-samples");
    let path = dir.join("seq.json");
    let check = |rate: &str| {
        std::fs::write(&path, scene("120bpm").replace("\"1/16\"", rate)).unwrap();
        common::morphrt(&["check", path.to_str().unwrap()])
    };
    let o = check(r#""1801samples""#);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "`rate`: `1801samples`: give a step length as a note value, beats or a time in s, ms or us"
        ),
        "{err}"
    );
    assert!(err.contains("at nodes[0].params.rate, node `seq`"), "{err}");
    for rate in [r#""125ms""#, r#""125000us""#, "0.125", r#""1/4beat""#] {
        let o = check(rate);
        assert!(o.status.success(), "{rate}: {}", common::stderr(&o));
    }
}
