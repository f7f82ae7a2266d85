//! Seeded mutations of every file a user hands morphrt besides a scene:
//! snapshots (`render --resume`, `run --resume`), journals and their
//! resource store (`replay`, `replay --info`), WAV resources (the sampler,
//! convolution, `plot FILE.wav`), goldens (`bench --golden`) and the
//! calibration store (`run --block-size auto`). Every case must end
//! cleanly: no panic, no hang; accepted with sane output, or refused with
//! exit 2 naming the file, and nothing written. The commands run
//! in-process through the library's entry points (fast), and a few cases
//! of each run the real binary to check its exit code. A failing case
//! prints its seed and number, and is saved under
//! `target/tmp/fuzz-files/` to reproduce.

use crate::support as common;
use crate::support::mutate;

use clap::Parser;
use morphrt::cli::{Cli, Command};
use morphrt::host::HostError;
use mutate::{mutate, mutate_bytes, mutate_json, mutate_lines, mutate_numbers, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longer than any case takes on a loaded machine; a case still running
/// then has hung.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A scene with every kind of state a snapshot holds: a ramp in progress,
/// an enum an event changed, noise, a sampler on a resource, a delay line,
/// two channels.
const SCENE: &str = r#"{ "version": "1.0", "seed": 9, "sample_rate": 48000, "duration": "2000samples",
  "nodes": [
    { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.3 } },
    { "id": "hiss", "op": "noise", "params": { "amp": 0.05 } },
    { "id": "kick", "op": "sampler", "params": { "file": "@resource:kick.wav", "loop": true } },
    { "id": "sum", "op": "mix", "params": { "gains": [1.0, "-6dB", 0.5] } },
    { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "2kHz" } },
    { "id": "echo", "op": "delay", "params": { "time": "1ms", "feedback": 0.3, "max_time": "2ms" } },
    { "id": "wide", "op": "pan", "params": { "pos": 0.2 } }
  ],
  "edges": [ { "from": "osc", "to": "sum:in0" }, { "from": "hiss", "to": "sum:in1" },
             { "from": "kick", "to": "sum:in2" }, { "from": "sum", "to": "lp" },
             { "from": "lp", "to": "echo" }, { "from": "echo", "to": "wide" } ],
  "outputs": { "main": ["wide:left", "wide:right"] },
  "events": [ { "time": "500samples", "node": "osc", "param": "freq", "value": "330Hz", "ramp": "2000samples" },
              { "time": "1000samples", "node": "lp", "param": "mode", "value": "highpass" } ] }"#;

/// Plays `@resource:x.wav` through both readers of audio resources.
const WAV_SCENE: &str = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [
    { "id": "src", "op": "sampler", "params": { "file": "@resource:x.wav", "loop": true } },
    { "id": "hit", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } },
    { "id": "room", "op": "convolution", "params": { "ir": "@resource:x.wav", "mix": 0.5 } }
  ],
  "edges": [ { "from": "hit", "to": "room" } ],
  "outputs": { "main": ["src", "room:out", "room:out_r"] } }"#;

/// A small scene for goldens and calibrations.
const TONE: &str = r#"{ "version": "1.0", "sample_rate": 48000, "duration": "4800samples",
  "nodes": [ { "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } } ],
  "outputs": { "main": ["tone"] } }"#;

/// How a command ended.
enum Outcome {
    /// Exit 0.
    Ok,
    /// A refusal: the exit code and the message.
    Refused(i32, String),
    Panicked(String),
    Hung,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Runs `f` on its own thread, catching a panic and giving up after [`TIMEOUT`].
fn guarded<F>(f: F) -> Outcome
where
    F: FnOnce(&mut Vec<u8>) -> Result<(), HostError> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut log = Vec::new();
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut log)));
        let _ = tx.send((r, log));
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok((Ok(Ok(())), _)) => Outcome::Ok,
        Ok((Ok(Err(e)), _)) => Outcome::Refused(e.exit_code(), e.to_string()),
        Ok((Err(p), _)) => Outcome::Panicked(panic_text(p)),
        Err(_) => Outcome::Hung,
    }
}

/// A command line run in-process, as `morphrt` would run it.
fn command(args: &[&str]) -> impl FnOnce(&mut Vec<u8>) -> Result<(), HostError> + Send {
    let cli = Cli::try_parse_from(std::iter::once("morphrt").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    move |log: &mut Vec<u8>| {
        let out = &mut Vec::new();
        match cli.command {
            Command::Render(o) => morphrt::host::offline::render(&o, out, log),
            Command::Replay(o) => morphrt::host::record::journal::replay(&o, log),
            Command::Plot(o) => morphrt::host::offline::plot::plot(&o, out, log),
            Command::Bench(o) => morphrt::bench::bench(&o, out, log),
            _ => unreachable!("not a command these tests run"),
        }
    }
}

/// The real binary, killed after [`TIMEOUT`].
fn binary(args: &[&str], env: &[(&str, &Path)]) -> Outcome {
    let mut cmd = common::bin();
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = common::KillOnDrop(cmd.spawn().expect("run morphrt"));
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code().unwrap_or(-1);
        }
        if start.elapsed() > TIMEOUT {
            return Outcome::Hung;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    if code == 101 || err.contains("panicked") {
        return Outcome::Panicked(err);
    }
    match code {
        0 => Outcome::Ok,
        c => Outcome::Refused(c, err),
    }
}

/// What a case's file must lead to.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Still valid or not: accepted with sane output, or refused.
    Either,
    /// Refused: it is not valid.
    Refused,
    /// Refused naming the line (or offset) where it breaks.
    Located,
}

/// What a case's file must lead to when `must_fail`, which `located` says
/// where.
fn expect(must_fail: bool, located: bool) -> Expect {
    match (must_fail, located) {
        (false, _) => Expect::Either,
        (true, false) => Expect::Refused,
        (true, true) => Expect::Located,
    }
}

/// One mutated file, to name in failures.
struct Case<'a> {
    what: &'a str,
    seed: u64,
    k: usize,
    ext: &'a str,
    bytes: &'a [u8],
}

impl Case<'_> {
    /// Fails the test, saving the mutated file under target/ and showing it.
    fn fail(&self, why: &str) -> ! {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-files");
        std::fs::create_dir_all(&dir).unwrap();
        let saved = dir.join(format!(
            "{}-{:x}-{}.{}",
            self.what, self.seed, self.k, self.ext
        ));
        std::fs::write(&saved, self.bytes).unwrap();
        let shown = match std::str::from_utf8(self.bytes) {
            Ok(t) => t.chars().take(6000).collect::<String>(),
            Err(_) => format!("{:02x?}", &self.bytes[..self.bytes.len().min(160)]),
        };
        panic!(
            "{} mutation {} of seed {:#x} {why}\nsaved as {}\n{shown}",
            self.what,
            self.k,
            self.seed,
            saved.display()
        );
    }

    /// Checks one outcome: no panic or hang, exit 0 or exit 2 naming
    /// `named`, and after a refusal no `out` and no temporary file in
    /// `dir`. Whether it was accepted.
    fn check(&self, o: Outcome, named: &str, out: &Path, dir: &Path, e: Expect) -> bool {
        match o {
            Outcome::Panicked(m) => self.fail(&format!("panicked: {m}")),
            Outcome::Hung => self.fail(&format!("did not finish in {TIMEOUT:?}")),
            Outcome::Ok if e != Expect::Either => self.fail("was accepted, though it is not valid"),
            Outcome::Ok => true,
            Outcome::Refused(code, m) => {
                if code != 2 {
                    self.fail(&format!("exited {code}, not 2: {m}"));
                }
                if !m.contains(named) {
                    self.fail(&format!("was refused without naming `{named}`: {m}"));
                }
                let place = format!("{named}:");
                let located = m
                    .match_indices(&place)
                    .any(|(i, _)| m[i + place.len()..].starts_with(|c: char| c.is_ascii_digit()));
                if e == Expect::Located && !located && !m.contains("line ") {
                    self.fail(&format!("was refused without the line it breaks: {m}"));
                }
                if out.exists() {
                    self.fail(&format!("was refused but `{}` exists: {m}", out.display()));
                }
                if !common::partials(dir).is_empty() {
                    self.fail(&format!("left {:?}: {m}", common::partials(dir)));
                }
                false
            }
        }
    }

    /// Checks an accepted command's WAV: readable, `frames` long (when
    /// known), every sample finite. Removes it.
    fn check_wav(&self, out: &Path, frames: Option<u32>) {
        let mut r = hound::WavReader::open(out)
            .unwrap_or_else(|e| self.fail(&format!("wrote an unreadable WAV: {e}")));
        if let Some(n) = frames.filter(|n| r.duration() != *n) {
            self.fail(&format!("wrote {} frames, not {n}", r.duration()));
        }
        if !r.samples::<f32>().all(|s| s.is_ok_and(f32::is_finite)) {
            self.fail("wrote a non-finite sample");
        }
        std::fs::remove_file(out).unwrap();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A short WAV in memory: a decaying sine at every channel.
fn wav(channels: u16, bits: u16, float: bool, rate: u32, frames: usize) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format: if float {
            hound::SampleFormat::Float
        } else {
            hound::SampleFormat::Int
        },
    };
    let mut cursor = std::io::Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
    for f in 0..frames {
        let x = libm::sin(f as f64 * 0.07) * libm::exp(-(f as f64) / 300.0) * 0.8;
        for _ in 0..channels {
            if float {
                w.write_sample(x as f32).unwrap();
            } else {
                let full = ((1i64 << (bits - 1)) - 1) as f64;
                w.write_sample((x * full) as i32).unwrap();
            }
        }
    }
    w.finalize().unwrap();
    cursor.into_inner()
}

/// `dir` with SCENE as `s.json` and its resource.
fn scene_dir(name: &str) -> PathBuf {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::write(
        dir.join("resources/kick.wav"),
        wav(1, 16, false, 48000, 900),
    )
    .unwrap();
    std::fs::write(dir.join("s.json"), SCENE).unwrap();
    dir
}

/// One of the ways a text file is mutated: as scene-like text, as JSON
/// values, its numbers alone, or as bytes.
fn mutate_text_file(base: &[u8], rng: &mut Rng) -> Vec<u8> {
    let text = std::str::from_utf8(base).unwrap();
    match rng.below(5) {
        0 => mutate(text, rng).into_bytes(),
        1 => mutate_json(text, rng, false).into_bytes(),
        2 | 3 => mutate_numbers(text, rng).into_bytes(),
        _ => mutate_bytes(base, rng),
    }
}

fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
}

#[test]
fn mutated_snapshots_are_resumed_or_refused_cleanly() {
    let dir = scene_dir("fuzz-snapshots");
    let (scene, base_snap, snap, out) = (
        dir.join("s.json"),
        dir.join("base.snap.json"),
        dir.join("m.snap.json"),
        dir.join("out.wav"),
    );
    let (s_scene, s_snap, s_out) = (s(&scene), s(&snap), s(&out));
    let made = guarded(command(&[
        "render",
        s_scene,
        "-o",
        s_out,
        "--snapshot-at",
        "1200samples",
        "--snapshot-out",
        s(&base_snap),
    ]));
    assert!(matches!(made, Outcome::Ok), "the base snapshot renders");
    std::fs::remove_file(&out).unwrap();
    let base = std::fs::read(&base_snap).unwrap();
    let seed = 0x5eed_0005_4a95_0001;
    let mut rng = Rng(seed);
    let (mut accepted, mut refused) = (0, 0);
    for k in 0..500 {
        let m = mutate_text_file(&base, &mut rng);
        std::fs::write(&snap, &m).unwrap();
        let profile = *rng.pick(&[None, Some("strict"), Some("repro"), Some("live")]);
        let mut args = vec!["render", s_scene, "-o", s_out, "--resume", s_snap];
        args.extend(["-d", "300samples"]);
        args.extend(profile.iter().flat_map(|p| ["--profile", p]));
        let case = Case {
            what: "snapshot",
            seed,
            k,
            ext: "json",
            bytes: &m,
        };
        let o = guarded(command(&args));
        if case.check(o, s_snap, &out, &dir, expect(!is_json(&m), true)) {
            case.check_wav(&out, Some(300));
            accepted += 1;
        } else {
            refused += 1;
        }
        if k % 40 == 0 {
            let o = binary(&args, &[]);
            case.check(o, s_snap, &out, &dir, expect(!is_json(&m), true));
            let _ = std::fs::remove_file(&out);
            let run = [
                "run",
                s_scene,
                "--resume",
                s_snap,
                "--device",
                "clock",
                "--duration",
                "50ms",
                "--no-watch",
                "--no-journal",
            ];
            case.check(
                binary(&run, &[]),
                s_snap,
                &out,
                &dir,
                expect(!is_json(&m), true),
            );
        }
    }
    eprintln!("{accepted} mutated snapshots resumed, {refused} refused");
    assert!(
        accepted > 10 && refused > 10,
        "{accepted} resumed, {refused} refused"
    );
}

/// A journal of a session with a profile switch, recorded by the binary
/// into `dir/j/base.jsonl` (its resource store beside it).
fn record_journal(dir: &Path) -> PathBuf {
    let journal = dir.join("j/base.jsonl");
    let mut child = common::bin()
        .args([
            "run",
            s(&dir.join("s.json")),
            "--device",
            "clock",
            "--duration",
            "0.1s",
        ])
        .args(["--no-watch", "--journal", s(&journal)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"l\n").unwrap();
    assert!(child.wait().unwrap().success(), "the session runs");
    journal
}

/// Whether a replay must refuse `m`: a line before the last that is not
/// JSON (a cut last line, or no end record, replays with a warning).
fn broken_inside(m: &[u8]) -> bool {
    // Bytes, line by line: a last line that is not text is what a power cut
    // leaves, and is dropped with a warning like any line cut short.
    let lines: Vec<&[u8]> = m
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    lines.len() > 1 && lines[..lines.len() - 1].iter().any(|l| !is_json(l))
}

#[test]
fn mutated_journals_replay_or_are_refused_cleanly() {
    let dir = scene_dir("fuzz-journals");
    let base = std::fs::read(record_journal(&dir)).unwrap();
    let jdir = dir.join("j");
    let store = std::fs::read_dir(jdir.join("resources"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("the journal keeps its resource");
    let kept = std::fs::read(&store).unwrap();
    let (journal, out) = (jdir.join("m.jsonl"), jdir.join("out.wav"));
    let (s_journal, s_out) = (s(&journal), s(&out));
    let seed = 0x5eed_0006_70a1_0001;
    let mut rng = Rng(seed);
    let (mut accepted, mut refused) = (0, 0);
    for k in 0..400 {
        let text = std::str::from_utf8(&base).unwrap();
        let mut m = base.clone();
        let mut copy = None;
        match rng.below(10) {
            0..=5 => m = mutate_lines(text, &mut rng).into_bytes(),
            6 => m = mutate_numbers(text, &mut rng).into_bytes(),
            7 | 8 => m = mutate_bytes(&base, &mut rng),
            _ => copy = Some(mutate_bytes(&kept, &mut rng)),
        }
        std::fs::write(&journal, &m).unwrap();
        let (named, must) = match &copy {
            Some(c) => {
                std::fs::write(&store, c).unwrap();
                (store.to_str().unwrap(), expect(c != &kept, false))
            }
            None => (s_journal, expect(broken_inside(&m), true)),
        };
        let case = Case {
            what: "journal",
            seed,
            k,
            ext: if copy.is_some() { "wav" } else { "jsonl" },
            bytes: copy.as_deref().unwrap_or(&m),
        };
        let info = journal.clone();
        let o = guarded(move |_| morphrt::host::record::journal::timeline(&info).map(drop));
        let listed = expect(broken_inside(&m) && copy.is_none(), true);
        case.check(o, s_journal, &out, &jdir, listed);
        let args = ["replay", s_journal, "-o", s_out];
        if case.check(guarded(command(&args)), named, &out, &jdir, must) {
            case.check_wav(&out, None);
            accepted += 1;
        } else {
            refused += 1;
        }
        if k % 50 == 0 {
            case.check(binary(&args, &[]), named, &out, &jdir, must);
            let _ = std::fs::remove_file(&out);
            let info = ["replay", "--info", s_journal];
            case.check(binary(&info, &[]), s_journal, &out, &jdir, listed);
        }
        std::fs::write(&store, &kept).unwrap();
    }
    eprintln!("{accepted} mutated journals replayed, {refused} refused");
    assert!(
        accepted > 10 && refused > 10,
        "{accepted} replayed, {refused} refused"
    );
}

/// Where each header field of a WAV file is: (offset, width in bytes) of
/// the RIFF size, every chunk's size, every `fmt ` field (the extensible
/// ones too).
fn header_fields(b: &[u8]) -> Vec<(usize, usize)> {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    let mut fields = vec![(4, 4)];
    let mut at = 12;
    while at + 8 <= b.len() {
        let (id, len) = (&b[at..at + 4], u32_at(at + 4));
        fields.push((at + 4, 4));
        if id == b"fmt " {
            let mut f = vec![(0, 2), (2, 2), (4, 4), (8, 4), (12, 2), (14, 2)];
            if len >= 40 {
                f.extend([(16, 2), (18, 2), (20, 4), (24, 2)]);
            }
            fields.extend(f.into_iter().map(|(o, w)| (at + 8 + o, w)));
        }
        if id == b"data" {
            break;
        }
        at += 8 + len + (len & 1);
    }
    fields
}

/// Values a header field is set to: format codes, bit depths, channel
/// counts, rates, and sizes from none to the largest.
const FIELD_VALUES: &[u32] = &[
    0,
    1,
    2,
    3,
    6,
    7,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    255,
    0xfffe,
    0xffff,
    0x1_0000,
    8000,
    48000,
    768_000,
    768_001,
    0x7fff_ffff,
    0xffff_ffff,
];

/// A WAV file's mutation: a header field set, the file cut, or its bytes.
fn mutate_wav(base: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(2) {
        match rng.below(8) {
            0..=3 => {
                let fields = header_fields(&b);
                let (at, width) = *rng.pick(&fields);
                let v = rng.pick(FIELD_VALUES).to_le_bytes();
                b[at..at + width].copy_from_slice(&v[..width]);
            }
            4 => b.truncate(rng.below(b.len())),
            _ => b = mutate_bytes(&b, rng),
        }
    }
    b
}

#[test]
fn mutated_wav_resources_play_or_are_refused_cleanly() {
    let dir = common::temp_dir("fuzz-wavs");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let (scene, res, out, png) = (
        dir.join("w.json"),
        dir.join("resources/x.wav"),
        dir.join("out.wav"),
        dir.join("out.png"),
    );
    std::fs::write(&scene, WAV_SCENE).unwrap();
    let mut bases = Vec::new();
    for (bits, float) in [
        (8, false),
        (16, false),
        (24, false),
        (32, false),
        (32, true),
    ] {
        for (channels, rate) in [(1, 48000), (2, 48000), (6, 48000), (2, 44100)] {
            bases.push(wav(channels, bits, float, rate, 256));
        }
    }
    let seed = 0x5eed_0007_3a7e_0001;
    let mut rng = Rng(seed);
    let (mut accepted, mut refused) = (0, 0);
    for k in 0..400 {
        let base = rng.pick(&bases).clone();
        let m = mutate_wav(&base, &mut rng);
        std::fs::write(&res, &m).unwrap();
        let profile = *rng.pick(&["strict", "repro", "live"]);
        let args = [
            "render",
            s(&scene),
            "-o",
            s(&out),
            "-d",
            "256samples",
            "--profile",
            profile,
        ];
        let case = Case {
            what: "wav",
            seed,
            k,
            ext: "wav",
            bytes: &m,
        };
        // A file cut inside its first chunk header has no audio to read.
        let must = expect(m.len() < 44, false);
        if case.check(guarded(command(&args)), "x.wav", &out, &dir, must) {
            case.check_wav(&out, Some(256));
            accepted += 1;
        } else {
            refused += 1;
        }
        if k % 8 == 0 {
            let plot = [
                "plot",
                s(&res),
                "-o",
                s(&png),
                "--width",
                "64",
                "--height",
                "64",
            ];
            if case.check(guarded(command(&plot)), "x.wav", &png, &dir, must) {
                std::fs::remove_file(&png).unwrap();
            }
        }
        if k % 100 == 0 {
            case.check(binary(&args, &[]), "x.wav", &out, &dir, must);
            let _ = std::fs::remove_file(&out);
        }
    }
    eprintln!("{accepted} mutated WAV files played, {refused} refused");
    assert!(
        accepted > 10 && refused > 10,
        "{accepted} played, {refused} refused"
    );
}

#[test]
fn mutated_goldens_check_or_are_refused_cleanly() {
    let dir = common::temp_dir("fuzz-goldens");
    let (scene, golden, out) = (dir.join("tone.json"), dir.join("g.json"), dir.join("none"));
    std::fs::write(&scene, TONE).unwrap();
    let strict = common::engine(TONE, Some(morphrt::profile::Profile::Strict), 64);
    let sha = morphrt::host::offline::render_hash(strict, 4800);
    let base = serde_json::to_string_pretty(&serde_json::json!({
        "scene": "tone.json", "frames": 4800, "sample_rate": 48000,
        "sha256": sha, "parity": { "repro": 1e-3, "live": 3e-2 }
    }))
    .unwrap();
    let (s_scene, s_golden) = (s(&scene), s(&golden));
    let seed = 0x5eed_0008_901d_0001;
    let mut rng = Rng(seed);
    for k in 0..60 {
        let m = mutate_text_file(base.as_bytes(), &mut rng);
        std::fs::write(&golden, &m).unwrap();
        let profile = *rng.pick(&["strict", "repro"]);
        let args = [
            "bench",
            s_scene,
            "--golden",
            s_golden,
            "--profile",
            profile,
            "--runs",
            "1",
            "-d",
            "10ms",
        ];
        let case = Case {
            what: "golden",
            seed,
            k,
            ext: "json",
            bytes: &m,
        };
        // A golden that is read but does not match fails parity: exit 1.
        let o = match guarded(command(&args)) {
            Outcome::Refused(1, m) if m.contains("parity") => Outcome::Ok,
            o => o,
        };
        case.check(o, s_golden, &out, &dir, expect(!is_json(&m), true));
    }
}

#[test]
fn mutated_calibration_stores_are_read_or_refused_cleanly() {
    use morphrt::host::machine::calibration;
    let dir = common::temp_dir("fuzz-calibrations");
    std::fs::write(dir.join("tone.json"), TONE).unwrap();
    let cache = dir.join("cache");
    let tone = dir.join("tone.json");
    let made = binary(
        &["calibrate", s(&tone), "-d", "10ms", "--runs", "1"],
        &[("XDG_CACHE_HOME", &cache)],
    );
    assert!(
        matches!(made, Outcome::Ok),
        "calibrate stores a calibration"
    );
    let store = cache.join("morphrt/calibration.json");
    let base = std::fs::read(&store).unwrap();
    let seed = 0x5eed_0009_ca1b_0001;
    let mut rng = Rng(seed);
    for k in 0..200 {
        let m = mutate_text_file(&base, &mut rng);
        std::fs::write(&store, &m).unwrap();
        let case = Case {
            what: "calibration",
            seed,
            k,
            ext: "json",
            bytes: &m,
        };
        let path = store.clone();
        let o = guarded(move |_| {
            calibration::load(&path).map(drop).map_err(|e| {
                HostError::Input(vec![morphrt::scene::Diagnostic::error(
                    "store",
                    None,
                    e.to_string(),
                )])
            })
        });
        case.check(
            o,
            s(&store),
            &dir.join("none"),
            &cache.join("morphrt"),
            expect(!is_json(&m), true),
        );
        if k % 40 == 0 {
            // A store that cannot be used is a warning: run plays the default.
            let run = [
                "run",
                s(&tone),
                "--device",
                "clock",
                "--duration",
                "50ms",
                "--block-size",
                "auto",
                "--no-watch",
                "--no-journal",
            ];
            match binary(&run, &[("XDG_CACHE_HOME", &cache)]) {
                Outcome::Ok => {}
                Outcome::Refused(c, m) => case.fail(&format!("made run exit {c}: {m}")),
                Outcome::Panicked(m) => case.fail(&format!("panicked: {m}")),
                Outcome::Hung => case.fail("hung"),
            }
        }
    }
}

/// A file written by libsndfile (`tests/oracles/soundfile_io.py`): the
/// test signal at 48 kHz, stereo, `frames` long (white noise for Ogg,
/// which its encoder spreads over many pages).
fn encoded(dir: &Path, name: &str, format: &str, subtype: &str, frames: usize) -> Vec<u8> {
    let path = dir.join(name);
    let o = std::process::Command::new("python3")
        .arg(common::root().join("tests/oracles/soundfile_io.py"))
        .args(["write", s(&path), format, subtype, "48000", "2"])
        .arg(frames.to_string())
        .args(if format == "OGG" { &["noise"][..] } else { &[] })
        .output()
        .expect("python3 runs the soundfile oracle");
    assert!(
        o.status.success(),
        "soundfile_io.py (`python3 -m pip install soundfile`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// An Ogg file's pages, split at each `OggS` capture pattern.
fn ogg_pages(b: &[u8]) -> Vec<&[u8]> {
    let starts: Vec<usize> = (0..b.len().saturating_sub(3))
        .filter(|&i| &b[i..i + 4] == b"OggS")
        .chain([b.len()])
        .collect();
    starts.windows(2).map(|w| &b[w[0]..w[1]]).collect()
}

/// The base files of every format read besides WAV: (name, bytes).
fn format_bases(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("x.flac", encoded(dir, "b.flac", "FLAC", "PCM_24", 6000)),
        (
            "x.mp3",
            encoded(dir, "b.mp3", "MP3", "MPEG_LAYER_III", 6000),
        ),
        ("x.ogg", encoded(dir, "b.ogg", "OGG", "VORBIS", 80000)),
        ("x.aiff", encoded(dir, "b.aiff", "AIFF", "PCM_16", 3000)),
        ("x.wav", encoded(dir, "b.wav", "WAV", "ULAW", 3000)),
    ]
}

/// Whether a refusal says where the file breaks: at a frame or a byte.
fn says_where(m: &str) -> bool {
    m.contains(" frame") || m.contains(" byte")
}

/// Every format cut short at several places, a FLAC whose MD5 does not
/// match its audio, MP3s of no frames and an Ogg with a page missing: each
/// refused (exit 2) as an input and as a resource, naming the file and
/// where it breaks, with nothing written; none accepted, none a panic.
#[test]
fn damaged_files_of_every_format_are_refused_saying_where() {
    let dir = common::temp_dir("fuzz-damaged");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let input_scene = dir.join("in.json");
    std::fs::write(
        &input_scene,
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "mic", "op": "input", "params": { "channel": 0 } } ],
  "outputs": { "main": ["mic"] } }"#,
    )
    .unwrap();
    let out = dir.join("out.wav");
    let mut cases: Vec<(String, Vec<u8>, &str)> = Vec::new();
    for (name, base) in format_bases(&dir) {
        for percent in [1, 8, 30, 60, 95] {
            let at = base.len() * percent / 100;
            cases.push((
                format!("{percent}%-{name}"),
                base[..at].to_vec(),
                "cut short",
            ));
        }
        cases.push((
            format!("last-byte-{name}"),
            base[..base.len() - 1].to_vec(),
            "",
        ));
        if name == "x.flac" {
            // STREAMINFO's MD5: bytes 26 … 41 (after `fLaC` and its block header).
            let mut md5 = base.clone();
            md5[30] ^= 0xFF;
            cases.push(("md5-x.flac".to_string(), md5, "MD5"));
        }
        if name == "x.mp3" {
            // The encoder's Info frame alone, and an ID3 tag alone: no audio frame.
            let second = (4..base.len() - 1)
                .find(|&i| base[i] == 0xFF && base[i + 1] & 0xE0 == 0xE0)
                .unwrap();
            cases.push((
                "info-only-x.mp3".to_string(),
                base[..second].to_vec(),
                "no MP3 audio",
            ));
            cases.push((
                "id3-only-x.mp3".to_string(),
                b"ID3\x03\0\0\0\0\0\0".to_vec(),
                "no MP3 audio",
            ));
        }
        if name == "x.ogg" {
            let pages = ogg_pages(&base);
            assert!(pages.len() > 6, "{} Ogg pages", pages.len());
            let mut gap = Vec::new();
            for (i, p) in pages.iter().enumerate() {
                if i != pages.len() / 2 {
                    gap.extend_from_slice(p);
                }
            }
            cases.push(("gap-x.ogg".to_string(), gap, "page is missing"));
        }
    }
    for (k, (case, bytes, says)) in cases.iter().enumerate() {
        let file = dir.join(case);
        std::fs::write(&file, bytes).unwrap();
        let c = Case {
            what: "damaged",
            seed: 0,
            k,
            ext: "bin",
            bytes,
        };
        let args = [
            "render",
            s(&input_scene),
            "--input",
            s(&file),
            "-o",
            s(&out),
        ];
        let runs = if k % 4 == 0 {
            vec![guarded(command(&args)), binary(&args, &[])]
        } else {
            vec![guarded(command(&args))]
        };
        for o in runs {
            if let Outcome::Refused(_, m) = &o {
                if !says_where(m) || !m.contains(says) {
                    c.fail(&format!(
                        "was refused without saying `{says}` and where: {m}"
                    ));
                }
            }
            if c.check(o, case, &out, &dir, Expect::Refused) {
                unreachable!("refused");
            }
        }
        // As a resource: the sampler's file.
        let res_name = format!("r{k}.{}", case.rsplit('.').next().unwrap());
        std::fs::write(dir.join("resources").join(&res_name), bytes).unwrap();
        let scene = dir.join("res.json");
        std::fs::write(&scene, WAV_SCENE.replace("x.wav", &res_name)).unwrap();
        let args = ["render", s(&scene), "-o", s(&out), "-d", "256samples"];
        let o = guarded(command(&args));
        if let Outcome::Refused(_, m) = &o {
            if !says_where(m) || !m.contains(says) {
                c.fail(&format!(
                    "as a resource, was refused without saying `{says}` and where: {m}"
                ));
            }
        }
        c.check(o, &res_name, &out, &dir, Expect::Refused);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Seeded mutations of a FLAC, an MP3, an Ogg Vorbis, an AIFF and a μ-law
/// WAV, played as a resource (sampler, convolution) and drawn by `plot`:
/// each plays or is refused cleanly (exit 2 naming the file, nothing
/// written), never a panic or a hang.
#[test]
fn mutated_files_of_every_format_play_or_are_refused_cleanly() {
    let dir = common::temp_dir("fuzz-formats");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let bases = format_bases(&dir);
    let (scene, res, out, png) = (
        dir.join("w.json"),
        dir.join("resources/x.wav"),
        dir.join("out.wav"),
        dir.join("out.png"),
    );
    std::fs::write(&scene, WAV_SCENE).unwrap();
    let seed = 0x5eed_000a_f0a7_0001;
    let mut rng = Rng(seed);
    let (mut accepted, mut refused) = (0, 0);
    for k in 0..250 {
        let (_, base) = rng.pick(&bases);
        let m = mutate_bytes(base, &mut rng);
        std::fs::write(&res, &m).unwrap();
        let profile = *rng.pick(&["strict", "repro", "live"]);
        let args = [
            "render",
            s(&scene),
            "-o",
            s(&out),
            "-d",
            "256samples",
            "--profile",
            profile,
        ];
        let case = Case {
            what: "format",
            seed,
            k,
            ext: "bin",
            bytes: &m,
        };
        if case.check(guarded(command(&args)), "x.wav", &out, &dir, Expect::Either) {
            case.check_wav(&out, Some(256));
            accepted += 1;
        } else {
            refused += 1;
        }
        if k % 10 == 0 {
            let plot = [
                "plot",
                s(&res),
                "-o",
                s(&png),
                "--width",
                "64",
                "--height",
                "64",
            ];
            if case.check(guarded(command(&plot)), "x.wav", &png, &dir, Expect::Either) {
                std::fs::remove_file(&png).unwrap();
            }
        }
        if k % 50 == 0 {
            case.check(binary(&args, &[]), "x.wav", &out, &dir, Expect::Either);
            let _ = std::fs::remove_file(&out);
        }
    }
    eprintln!("{accepted} mutated files played, {refused} refused");
    assert!(
        accepted > 10 && refused > 10,
        "{accepted} played, {refused} refused"
    );
}
