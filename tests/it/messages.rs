//! Black-box tests of what `morphrt` says about settings that will not do
//! what they say, floods of list entries, command-line values, scene text
//! and resource files.

use crate::support as common;

use common::{morphrt, stderr, temp_dir};
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A scene of `nodes` (JSON objects) and `edges`, `main` the bus.
fn scene(extra: &str, nodes: &[&str], edges: &[&str], main: &str) -> String {
    format!(
        r#"{{"version": "1.0", "duration": "1s", "seed": 1{extra}, "nodes": [{}], "edges": [{}], "outputs": {{"main": [{main}]}}}}"#,
        nodes.join(", "),
        edges.join(", ")
    )
}

/// `check` of scene text: (exit code, stderr).
fn check(dir: &Path, text: &str) -> (Option<i32>, String) {
    let path = write(dir, "s.json", text);
    let o = morphrt(&["check", &path]);
    (o.status.code(), stderr(&o))
}

// An oscillator above Nyquist folded to an alias (or to silence) without a word.
#[test]
fn oscillators_above_nyquist_are_warned() {
    let dir = temp_dir("m-nyquist");
    for op in ["sine", "saw", "square", "triangle", "impulse"] {
        let node = format!(r#"{{"id": "osc", "op": "{op}", "params": {{"freq": "30kHz"}}}}"#);
        let (code, err) = check(&dir, &scene("", &[&node], &[], r#""osc""#));
        assert_eq!(code, Some(0), "{op}: {err}");
        assert!(
            err.contains("`freq` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz)"),
            "{op}: {err}"
        );
        assert!(err.contains("plays its alias, 18000 Hz"), "{op}: {err}");
        assert!(err.contains("node `osc`"), "{op}: {err}");
    }
    let node = r#"{"id": "m", "op": "sine", "params": {"freq": "200midi"}}"#;
    let (_, err) = check(&dir, &scene("", &[node], &[], r#""m""#));
    assert!(err.contains("is above Nyquist (24000 Hz"), "{err}");
    assert!(err.contains("node `m`"), "{err}");
    // 440 Hz at 1 Hz: a whole number of cycles per sample, silence.
    let node = r#"{"id": "slow", "op": "sine", "params": {"freq": "440Hz"}}"#;
    let (_, err) = check(
        &dir,
        &scene(r#", "sample_rate": 1"#, &[node], &[], r#""slow""#),
    );
    assert!(
        err.contains("`freq` 440 Hz is above Nyquist (0.5 Hz at 1 Hz)"),
        "{err}"
    );
    assert!(err.contains("plays its alias, 0 Hz"), "{err}");
    // At and below Nyquist, and negative below it: no warning.
    for f in ["24kHz", "-20kHz", "440Hz"] {
        let node = format!(r#"{{"id": "ok", "op": "sine", "params": {{"freq": "{f}"}}}}"#);
        let (code, err) = check(&dir, &scene("", &[&node], &[], r#""ok""#));
        assert_eq!(code, Some(0), "{err}");
        assert!(!err.contains("Nyquist"), "{f}: {err}");
    }
}

// An `adsr` gated by a signal that never rises above 0.5 never fired, silently.
#[test]
fn a_gate_driven_below_its_threshold_is_warned() {
    let dir = temp_dir("m-gate");
    let env = r#"{"id": "env", "op": "adsr"}"#;
    let sq = |amp: &str| {
        format!(r#"{{"id": "sq", "op": "square", "params": {{"freq": "2Hz", "amp": {amp}}}}}"#)
    };
    let gate = r#"{"from": "sq", "to": "env:gate"}"#;
    let (code, err) = check(&dir, &scene("", &[&sq("0.5"), env], &[gate], r#""env""#));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("`gate` is on only above the threshold 0.5, but what drives it peaks at 0.5: `sq` (square of amp 0.5)"),
        "{err}"
    );
    assert!(err.contains("node `env`"), "{err}");
    // A sine of amp 0.5 under strict math, and two sources below it together.
    let sine = r#"{"id": "sq", "op": "sine", "params": {"freq": "2Hz", "amp": 0.5}}"#;
    let strict = r#", "profile": "strict""#;
    let (_, err) = check(&dir, &scene(strict, &[sine, env], &[gate], r#""env""#));
    assert!(
        err.contains("peaks at 0.5: `sq` (sine of amp 0.5)"),
        "{err}"
    );
    let quiet = r#"{"id": "sq2", "op": "triangle", "params": {"amp": 0.2}}"#;
    let gate2 = r#"{"from": "sq2", "to": "env:gate"}"#;
    let (_, err) = check(
        &dir,
        &scene("", &[&sq("0.2"), quiet, env], &[gate, gate2], r#""env""#),
    );
    assert!(
        err.contains("peaks at 0.4: `sq` (square of amp 0.2), `sq2` (triangle of amp 0.2)"),
        "{err}"
    );
    // Two sources that together exceed it, a louder one, one whose amp is
    // modulated or set by an event, an unbounded source, a square off duty
    // 0.5, the live sine (whose approximation peaks past 1), a gate set by
    // an event: no warning.
    let sq2 = r#"{"id": "sq2", "op": "sine", "params": {"amp": 0.25}}"#;
    let gate2 = r#"{"from": "sq2", "to": "env:gate"}"#;
    let lfo = r#"{"id": "lfo", "op": "sine", "params": {"freq": "1Hz", "amp": 0.5}}"#;
    let noise = r#"{"id": "sq", "op": "noise", "params": {"amp": 0.1}}"#;
    let modulated = r#"{"from": "lfo", "to": "sq:amp"}"#;
    let cases = [
        (
            scene("", &[&sq("0.3"), sq2, env], &[gate, gate2], r#""env""#),
            "two sources",
        ),
        (
            scene("", &[&sq("0.51"), env], &[gate], r#""env""#),
            "louder",
        ),
        (
            scene("", &[&sq("0.5"), lfo, env], &[gate, modulated], r#""env""#),
            "modulated amp",
        ),
        (scene("", &[noise, env], &[gate], r#""env""#), "noise"),
        (
            scene(
                "",
                &[&sq("0.5").replace("}}", r#", "duty": 0.3}}"#), env],
                &[gate],
                r#""env""#,
            ),
            "duty",
        ),
        (
            scene(r#", "profile": "live""#, &[sine, env], &[gate], r#""env""#),
            "live sine",
        ),
    ];
    for (text, what) in &cases {
        let (code, err) = check(&dir, text);
        assert_eq!(code, Some(0), "{what}: {err}");
        assert!(!err.contains("threshold"), "{what}: {err}");
    }
    for event in [
        r#"{"time": "0.5s", "node": "sq", "param": "amp", "value": 1}"#,
        r#"{"time": "0.5s", "node": "env", "param": "gate", "value": 1}"#,
    ] {
        let events = format!(r#", "events": [{event}]"#);
        let (code, err) = check(
            &dir,
            &scene(&events, &[&sq("0.5"), env], &[gate], r#""env""#),
        );
        assert_eq!(code, Some(0), "{event}: {err}");
        assert!(!err.contains("threshold"), "{event}: {err}");
    }
}

/// A scene whose `main` bus plays `a` on `channels` channels.
fn wide_main(channels: usize) -> String {
    let main = vec![r#""a""#; channels].join(",");
    scene(
        "",
        &[r#"{"id": "a", "op": "sine", "params": {"amp": 0.1}}"#],
        &[],
        &main,
    )
}

// A million-entry `gains` with unused entries gives one short warning.
#[test]
fn a_million_unused_gains_make_one_short_warning() {
    let dir = temp_dir("m-gains");
    let gains = vec!["1"; 1_000_000].join(",");
    let mix = format!(r#"{{"id": "m", "op": "mix", "params": {{"gains": [{gains}]}}}}"#);
    let a = r#"{"id": "a", "op": "sine"}"#;
    let (code, err) = check(
        &dir,
        &scene(
            "",
            &[a, &mix],
            &[r#"{"from": "a", "to": "m:in0"}"#],
            r#""m""#,
        ),
    );
    assert_eq!(code, Some(0), "{}", &err[..err.len().min(2000)]);
    assert!(err.len() < 2000, "{} bytes: {}", err.len(), &err[..2000]);
    assert!(
        err.contains("entries 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … and 999989 more (for in1, in2,"),
        "{err}"
    );
}

// A 10,000-channel `main` is listed capped by `check`, and one channel
// limit holds in `check` and `render` alike.
#[test]
fn the_main_bus_is_listed_capped_and_limited_alike_everywhere() {
    let dir = temp_dir("m-main");
    let (code, out) = {
        let path = write(&dir, "wide.json", &wide_main(10_000));
        let o = morphrt(&["check", &path]);
        (o.status.code(), common::stdout(&o))
    };
    assert_eq!(code, Some(0));
    let line = out
        .lines()
        .find(|l| l.starts_with("main: "))
        .expect("a main line");
    assert!(
        line.starts_with("main: a:out, a:out, a:out, a:out, a:out, a:out, a:out, a:out, a:out, a:out, … and 9990 more (10000 channels)"),
        "{line}"
    );
    let path = write(&dir, "wider.json", &wide_main(70_000));
    let says =
        "the `main` bus has 70000 channels, more than the 65535 a session can play or render";
    let o = morphrt(&["check", &path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(says), "{}", stderr(&o));
    let wav = dir.join("x.wav");
    let o = common::render(&path, &wav, &["-d", "10samples"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(says), "{}", stderr(&o));
    assert!(!wav.exists());
    let path = write(&dir, "widest.json", &wide_main(65_535));
    assert_eq!(morphrt(&["check", &path]).status.code(), Some(0));
}

// A 20,000-node chain slower than real time is advised by operator, not
// told to lighten one node that is 0 % of the estimate.
#[test]
fn a_slow_scene_of_many_equal_nodes_is_advised_by_operator() {
    let dir = temp_dir("m-chain");
    let mut nodes = vec![r#"{"id": "src", "op": "sine"}"#.to_string()];
    let mut edges = vec![r#"{"from": "src", "to": "f0"}"#.to_string()];
    for i in 0..20_000 {
        nodes.push(format!(r#"{{"id": "f{i}", "op": "biquad"}}"#));
        if i > 0 {
            edges.push(format!(r#"{{"from": "f{}", "to": "f{i}"}}"#, i - 1));
        }
    }
    let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let edges: Vec<&str> = edges.iter().map(String::as_str).collect();
    let (code, err) = check(&dir, &scene("", &nodes, &edges, r#""f19999""#));
    assert_eq!(code, Some(0), "{err}");
    let help = err
        .lines()
        .find(|l| l.contains("no node stands out"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(help.contains("is under 1% of the estimate"), "{help}");
    assert!(
        help.contains("the 20000 `biquad` nodes are 100% of it together"),
        "{help}"
    );
    assert!(!help.contains(" 0%"), "{help}");
}

// `--seed -1` and a seed over the maximum are answered with the seed's
// range (not a suggestion to write `-- -1`).
#[test]
fn a_bad_seed_gives_the_seed_range() {
    let dir = temp_dir("m-seed");
    let out = dir.join("x.wav");
    let out = out.to_str().unwrap();
    let range = "the seed is an unsigned integer 0 … 18446744073709551615";
    for (seed, says) in [
        ("-1", "`-1` is negative"),
        (
            "18446744073709551616",
            "`18446744073709551616` is above the maximum 18446744073709551615",
        ),
        ("seven", "`seven` is not an integer"),
    ] {
        for args in [
            vec![
                "render",
                "scenes/drone.json",
                "-o",
                out,
                "-d",
                "0.01s",
                "--seed",
                seed,
            ],
            vec!["plot", "scenes/drone.json", "-o", out, "--seed", seed],
            vec!["bench", "scenes/drone.json", "--seed", seed],
            vec!["calibrate", "scenes/drone.json", "--seed", seed],
        ] {
            let o = morphrt(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            let err = stderr(&o);
            assert!(err.contains(says) && err.contains(range), "{args:?}: {err}");
            assert!(!err.contains("-- -1"), "{args:?}: {err}");
        }
    }
    let max = ["-d", "0.01s", "--seed", "18446744073709551615"];
    let o = common::render("scenes/drone.json", Path::new(out), &max);
    assert!(o.status.success(), "{}", stderr(&o));
}

// `-d 0.00001s` said "must be positive" after a warning that it used 0 samples.
#[test]
fn a_length_under_one_sample_says_so() {
    let dir = temp_dir("m-short");
    let out = dir.join("x.wav");
    let with_length = |d: &str| {
        let o = common::render("scenes/drone.json", &out, &["-d", d]);
        (o.status.code(), stderr(&o))
    };
    let (code, err) = with_length("0.00001s");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("duration `0.00001s` is shorter than one sample at 48000 Hz (it is 0.48 samples; one sample is 1/48000 s)"),
        "{err}"
    );
    assert!(!err.contains("using 0 samples"), "{err}");
    let (code, err) = with_length("0s");
    assert_eq!(code, Some(2));
    assert!(err.contains("duration `0s` is zero"), "{err}");
}

// A scene's `"duration": "1m30s"` is read as `-d 1m30s` is.
#[test]
fn a_scene_takes_hours_and_minutes_as_the_command_line_does() {
    let dir = temp_dir("m-clock");
    let a = r#"{"id": "a", "op": "sine", "params": {"amp": 0.1}}"#;
    let text = scene(
        r#", "events": [{"time": "1m", "node": "a", "param": "freq", "value": 220}]"#,
        &[a],
        &[],
        r#""a""#,
    )
    .replace(r#""duration": "1s""#, r#""duration": "1m30s""#);
    let path = write(&dir, "clock.json", &text);
    let o = morphrt(&["check", &path, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_eq!(v["events"], 1);
    assert!(v["diagnostics"].as_array().unwrap().is_empty(), "{v}");
    let out = dir.join("x.wav");
    let o = common::render(&path, &out, &["--profile", "live"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        hound::WavReader::open(&out).unwrap().duration(),
        90 * 48_000
    );
    for t in ["2h", "1h2m3.5s"] {
        let text = scene("", &[a], &[], r#""a""#)
            .replace(r#""duration": "1s""#, &format!(r#""duration": "{t}""#));
        let (code, err) = check(&dir, &text);
        assert_eq!(code, Some(0), "{t}: {err}");
    }
    // The schema takes them too.
    let schema = morphrt::graph::schema::scene_schema();
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(v.is_valid(&serde_json::from_str(&text).unwrap()));
    for bad in ["1m30", "1.5h", "1h30ms"] {
        let text = scene("", &[a], &[], r#""a""#)
            .replace(r#""duration": "1s""#, &format!(r#""duration": "{bad}""#));
        assert!(!v.is_valid(&serde_json::from_str(&text).unwrap()), "{bad}");
        assert_eq!(check(&dir, &text).0, Some(2), "{bad}");
    }
}

// A scene saved with a UTF-8 byte order mark loads (the mark is skipped).
#[test]
fn a_byte_order_mark_is_skipped() {
    let dir = temp_dir("m-bom");
    let a = r#"{"id": "a", "op": "sine", "params": {"amp": 0.1}}"#;
    let text = scene("", &[a], &[], r#""a""#);
    let (code, err) = check(&dir, &format!("\u{feff}{text}"));
    assert_eq!(code, Some(0), "{err}");
    // Positions count from after it: the same as without one.
    let bad = text.replace(r#""amp": 0.1"#, r#""amp": "loud""#);
    let (_, plain) = check(&dir, &bad);
    let (code, err) = check(&dir, &format!("\u{feff}{bad}"));
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().next(), plain.lines().next(), "{err}");
}

// A zero-width space (or a control character) in a node id printed as
// nothing: the error said `osc` is not a valid id.
#[test]
fn invisible_characters_in_ids_are_escaped() {
    let dir = temp_dir("m-invisible");
    for (raw, shown) in [("o\u{200b}sc", r"o\u{200b}sc"), ("o\u{7}sc", r"o\u{7}sc")] {
        let a = format!(
            "{{\"id\": \"{}\", \"op\": \"sine\"}}",
            raw.replace('\u{7}', "\\u0007")
        );
        let (code, err) = check(&dir, &scene("", &[&a], &[], r#""osc""#));
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("`{shown}` is not a valid node id")),
            "{err}"
        );
        assert!(err.contains(&format!("node `{shown}`")), "{err}");
        assert!(!err.contains(raw), "{err}");
    }
}

// `"440hz"` got no did-you-mean.
#[test]
fn a_unit_in_the_wrong_case_gets_the_right_one() {
    let dir = temp_dir("m-case");
    for (written, meant) in [("440hz", "440Hz"), ("1.5KHZ", "1.5kHz"), ("-6 db", "-6 dB")] {
        let a = format!(r#"{{"id": "a", "op": "sine", "params": {{"freq": "{written}"}}}}"#);
        let (code, err) = check(&dir, &scene("", &[&a], &[], r#""a""#));
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "did you mean `{meant}`? (units are case-sensitive"
            )),
            "{err}"
        );
    }
}

/// `check` of a sampler playing `resources/x.wav` next to the scene in
/// `dir`, whatever that is; (exit code, stderr). Fails the test instead of
/// waiting if `check` does not finish (a FIFO opened for reading would
/// wait for a writer forever).
fn check_sampler(dir: &Path) -> (Option<i32>, String) {
    let node = r#"{"id": "p", "op": "sampler", "params": {"file": "@resource:x.wav"}}"#;
    let path = write(dir, "s.json", &scene("", &[node], &[], r#""p""#));
    let mut child = common::bin()
        .args(["check", &path])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("check did not finish");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (o.status.code(), stderr(&o))
}

/// A WAV header and `data` bytes: format `tag`, `bits` per sample, mono 48 kHz.
fn wav_bytes(tag: u16, bits: u16, data: &[u8]) -> Vec<u8> {
    let mut v = b"RIFF".to_vec();
    v.extend((36 + data.len() as u32).to_le_bytes());
    v.extend(b"WAVEfmt ");
    v.extend(16u32.to_le_bytes());
    v.extend(tag.to_le_bytes());
    v.extend(1u16.to_le_bytes());
    v.extend(48_000u32.to_le_bytes());
    v.extend((48_000 * bits as u32 / 8).to_le_bytes());
    v.extend((bits / 8).to_le_bytes());
    v.extend(bits.to_le_bytes());
    v.extend(b"data");
    v.extend((data.len() as u32).to_le_bytes());
    v.extend(data);
    v
}

// A directory or FIFO named x.wav, a 0-byte WAV, an ADPCM WAV and a WAV of
// no frames are each described by what they are (not "not found", "Failed
// to read enough bytes." or "bits per sample is not 32", and not silence
// without a word).
#[test]
fn resource_files_are_described_by_what_they_are() {
    let reads = "morphrt reads WAV files (8-, 16-, 24- or 32-bit integer PCM, 32-bit float, 64-bit float, μ-law or A-law samples), AIFF/AIFC, FLAC, MP3 and Ogg Vorbis";
    let case = |name: &str, make: &dyn Fn(&Path)| {
        let dir = temp_dir(&format!("m-res-{name}"));
        std::fs::create_dir_all(dir.join("resources")).unwrap();
        make(&dir.join("resources/x.wav"));
        check_sampler(&dir)
    };
    let (code, err) = case("dir", &|p| std::fs::create_dir(p).unwrap());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("resource `x.wav` is not a file: `") && err.contains("x.wav` is a directory"),
        "{err}"
    );
    let (code, err) = case("fifo", &|p| {
        assert!(std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success());
    });
    assert_eq!(code, Some(2));
    assert!(err.contains("x.wav` is a FIFO (named pipe)"), "{err}");
    let (code, err) = case("empty", &|p| std::fs::write(p, b"").unwrap());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("x.wav` is empty (0 bytes), not a WAV file; ") && err.contains(reads),
        "{err}"
    );
    let (code, err) = case("text", &|p| std::fs::write(p, b"not audio at all").unwrap());
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "x.wav` is not a WAV file (it does not start with a RIFF WAVE header; 16 bytes)"
        ),
        "{err}"
    );
    let (code, err) = case("adpcm", &|p| {
        std::fs::write(p, wav_bytes(2, 4, &[0; 64])).unwrap()
    });
    assert_eq!(code, Some(2));
    assert!(
        err.contains("x.wav` holds ADPCM-compressed audio, which is not read; ")
            && err.contains(reads),
        "{err}"
    );
    let (code, err) = case("none", &|p| {
        std::fs::write(p, wav_bytes(3, 32, &[])).unwrap()
    });
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("x.wav` is a WAV file with no audio (0 frames): the node plays silence"),
        "{err}"
    );
    assert!(err.contains("node `p`"), "{err}");
    // A readable one is still read.
    let (code, err) = case("ok", &|p| {
        std::fs::write(p, wav_bytes(3, 32, &[0; 64])).unwrap()
    });
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("x.wav"), "{err}");
}

// A WAV whose data chunk declares more samples than the file holds (a copy
// or a download cut short), or one cut inside its header, is refused as cut
// short, saying where (not "Failed to read enough bytes.").
#[test]
fn a_wav_file_cut_short_says_so() {
    let dir = temp_dir("m-res-cut");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let full = wav_bytes(1, 16, &[0; 200]);
    std::fs::write(dir.join("resources/x.wav"), &full[..full.len() - 51]).unwrap();
    let (code, err) = check_sampler(&dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("x.wav` is cut short: its header declares 100 frames (200 bytes of samples), but the file is 193 bytes: its data ends inside frame 74"),
        "{err}"
    );
    std::fs::write(dir.join("resources/x.wav"), &full[..30]).unwrap();
    let (code, err) = check_sampler(&dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("x.wav` is cut short: it ends inside its header, after 30 bytes"),
        "{err}"
    );
}
