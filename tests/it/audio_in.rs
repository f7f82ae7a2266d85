//! `render --input`: a WAV (or standard input) as the scene's audio input.
//! Identity scenes write their input back bit for bit (every profile,
//! block sizes 1, 64 and 4096, f32/i16/i24), an impulse comes out exactly
//! the reported latency later, a biquad and a convolution match oracles
//! computed by scipy and numpy (`tests/oracles/`), standard input streams
//! with a true or a streaming header, the length is the input's plus the
//! tail (cut at the same frame at every block size), and every bad input
//! is refused (exit 2) leaving nothing behind.

use crate::support as common;

use common::{morphrt, root, stderr, stdout, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROFILES: [&str; 3] = ["strict", "repro", "live"];

/// A mono identity scene: channel `channel` of the input to the main bus.
fn identity(channel: usize) -> String {
    format!(
        r#"{{"version":"1.0","sample_rate":48000,
        "nodes":[{{"id":"mic","op":"input","params":{{"channel":{channel}}}}}],
        "outputs":{{"main":["mic"]}}}}"#
    )
}

fn write_scene(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn spec(channels: u16, bits: u16, float: bool) -> hound::WavSpec {
    hound::WavSpec {
        channels,
        sample_rate: 48_000,
        bits_per_sample: bits,
        sample_format: if float {
            hound::SampleFormat::Float
        } else {
            hound::SampleFormat::Int
        },
    }
}

/// Writes integer samples (interleaved) as a WAV of `bits` bits.
fn write_int(path: &Path, channels: u16, bits: u16, samples: &[i32]) {
    let mut w = hound::WavWriter::create(path, spec(channels, bits, false)).unwrap();
    for &s in samples {
        match bits {
            8 => w.write_sample(s as i8).unwrap(),
            _ => w.write_sample(s).unwrap(),
        }
    }
    w.finalize().unwrap();
}

/// Writes f32 samples (interleaved) as a float WAV.
fn write_f32(path: &Path, channels: u16, samples: &[f32]) {
    let mut w = hound::WavWriter::create(path, spec(channels, 32, true)).unwrap();
    for &s in samples {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
}

fn read_ints(path: &Path) -> (hound::WavSpec, Vec<i32>) {
    let r = hound::WavReader::open(path).unwrap();
    let spec = r.spec();
    (spec, r.into_samples::<i32>().map(Result::unwrap).collect())
}

/// `morphrt ARGS` with `stdin` piped in; a render that would wait for
/// ever (on a FIFO) fails the test after five minutes instead of hanging it.
fn run(args: &[&str], stdin: &[u8]) -> Output {
    common::run_piped(args, stdin, std::time::Duration::from_secs(300))
}

/// `morphrt render SCENE --input INPUT -o OUT EXTRA…`.
fn render_in(scene: &Path, input: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut a = vec![
        "render",
        scene.to_str().unwrap(),
        "--input",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    run(&a, &[])
}

fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", stderr(o));
}

/// A deterministic test signal in ±0.9: a chirp with a little noise.
fn signal(n: usize) -> Vec<f64> {
    let mut state = 0x1234_5678u32;
    (0..n)
        .map(|i| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let noise = (state >> 8) as f64 / (1u32 << 24) as f64 - 0.5;
            let t = i as f64 / 48_000.0;
            0.7 * libm::sin(2.0 * std::f64::consts::PI * (200.0 + 3000.0 * t) * t) + 0.3 * noise
        })
        .collect()
}

/// f32 in → f32 out, i16 → i16, i24 → i24: the same values, the same
/// length, under every profile and at block sizes 1, 64 and 4096.
#[test]
fn identity_writes_the_input_back_bit_for_bit() {
    let dir = temp_dir("audio-in-identity");
    let scene = write_scene(&dir, "id.json", &identity(0));
    let n = 3001; // odd: the last block is partial at every size
    let x = signal(n);
    let f32_in = dir.join("in-f32.wav");
    write_f32(&f32_in, 1, &x.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let i16_vals: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 65_535 - 32_767).collect();
    let i24_vals: Vec<i32> = (0..n as i32)
        .map(|i| (i * 5_591) % 16_777_215 - 8_388_607)
        .collect();
    let i16_in = dir.join("in-i16.wav");
    let i24_in = dir.join("in-i24.wav");
    write_int(&i16_in, 1, 16, &i16_vals);
    write_int(&i24_in, 1, 24, &i24_vals);
    let want_f32 = common::read_f32(&f32_in);
    for profile in PROFILES {
        for block in ["1", "64", "4096"] {
            for (input, format) in [(&f32_in, "f32"), (&i16_in, "i16"), (&i24_in, "i24")] {
                let out = dir.join(format!("out-{profile}-{block}-{format}.wav"));
                let o = render_in(
                    &scene,
                    input,
                    &out,
                    &[
                        "--profile",
                        profile,
                        "--block-size",
                        block,
                        "--format",
                        format,
                    ],
                );
                ok(&o, &format!("{profile} block {block} {format}"));
                let what = format!("{profile}, block {block}, {format}");
                if format == "f32" {
                    let got = common::read_f32(&out);
                    assert_eq!(got.len(), n, "{what}: length");
                    for (i, (g, w)) in got.iter().zip(&want_f32).enumerate() {
                        assert_eq!(g.to_bits(), w.to_bits(), "{what}: sample {i}");
                    }
                } else {
                    let (s, got) = read_ints(&out);
                    let want = if format == "i16" {
                        &i16_vals
                    } else {
                        &i24_vals
                    };
                    assert_eq!(s.bits_per_sample, if format == "i16" { 16 } else { 24 });
                    assert_eq!(&got, want, "{what}");
                }
                std::fs::remove_file(&out).unwrap();
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 8-bit (unsigned around 128) and 32-bit integers are read as v/127 and
/// v/(2^31−1): an identity render to f32 holds exactly those values.
#[test]
fn eight_and_thirty_two_bit_inputs_read_their_values() {
    let dir = temp_dir("audio-in-8-32");
    let scene = write_scene(&dir, "id.json", &identity(0));
    let cases: [(u16, Vec<i32>, f64); 2] = [
        (8, (-128..128).collect(), 127.0),
        (
            32,
            vec![
                i32::MIN + 1,
                -1_000_000_007,
                -1,
                0,
                1,
                123_456_789,
                i32::MAX,
            ],
            i32::MAX as f64,
        ),
    ];
    for (bits, vals, scale) in cases {
        let input = dir.join(format!("in{bits}.wav"));
        write_int(&input, 1, bits, &vals);
        for profile in ["strict", "repro"] {
            let out = dir.join(format!("out{bits}-{profile}.wav"));
            let o = render_in(&scene, &input, &out, &["--profile", profile]);
            ok(&o, &format!("{bits}-bit {profile}"));
            let got = common::read_f32(&out);
            let want: Vec<f32> = vals.iter().map(|&v| (v as f64 / scale) as f32).collect();
            assert_eq!(got, want, "{bits}-bit under {profile}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A spectral gate that passes everything (threshold −inf dB) beside a dry
/// path: compensation delays the dry path by the gate's latency, `check`
/// reports it, and an impulse at sample k comes out at k + latency exactly.
#[test]
fn an_impulse_comes_out_exactly_the_reported_latency_later() {
    let dir = temp_dir("audio-in-latency");
    let scene = write_scene(
        &dir,
        "lat.json",
        r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"mic","op":"input"},
          {"id":"gate","op":"spectral_gate","params":{"threshold":"-inf dB","fft_size":512,"hop":128}},
          {"id":"sum","op":"mix","params":{"gains":[0.5,0.5]}}],
        "edges":[{"from":"mic","to":"gate"},{"from":"gate","to":"sum:in0"},{"from":"mic","to":"sum:in1"}],
        "outputs":{"main":["sum"]}}"#,
    );
    let c = morphrt(&["check", scene.to_str().unwrap(), "--json"]);
    ok(&c, "check");
    let v: serde_json::Value = serde_json::from_str(&stdout(&c)).unwrap();
    let latency = v["latency"].as_u64().unwrap() as usize;
    assert_eq!(latency, 512, "the gate's fft_size");
    let (n, k) = (6000, 1234);
    let mut x = vec![0.0f32; n];
    x[k] = 1.0;
    let input = dir.join("impulse.wav");
    write_f32(&input, 1, &x);
    for profile in PROFILES {
        let out = dir.join(format!("out-{profile}.wav"));
        let o = render_in(&scene, &input, &out, &["--profile", profile]);
        ok(&o, profile);
        let y = common::read_f32(&out);
        assert!(
            y.len() >= n + latency,
            "{profile}: the latency is in the tail"
        );
        let peak = (0..y.len())
            .max_by(|&a, &b| y[a].abs().total_cmp(&y[b].abs()))
            .unwrap();
        assert_eq!(peak, k + latency, "{profile}: impulse position");
        assert!((y[peak] - 1.0).abs() < 1e-3, "{profile}: {}", y[peak]);
        assert!(
            y[..k + latency].iter().all(|s| s.abs() < 1e-3),
            "{profile}: nothing early"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn write_f64(path: &Path, x: &[f64]) {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn read_f64(path: &Path) -> Vec<f64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Runs an oracle script under tests/oracles with python3; it must run
/// (numpy and scipy installed, as `.ci/run` does): a missing one fails.
fn oracle(script: &str, args: &[&str]) {
    let o = Command::new("python3")
        .arg(root().join("tests/oracles").join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the oracles: {e}"));
    assert!(
        o.status.success(),
        "{script} failed (numpy and scipy: `python3 -m pip install numpy scipy`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Renders `scene` with `input` under strict and repro, `n` frames, and
/// holds each to `reference` (strict far tighter than repro's 1e-3).
fn against_oracle(dir: &Path, scene: &Path, input: &Path, n: usize, reference: &[f64]) {
    for (profile, bound) in [("strict", 1e-6), ("repro", 1e-3)] {
        let out = dir.join(format!("out-{profile}.wav"));
        let d = format!("{n}samples");
        let o = render_in(scene, input, &out, &["--profile", profile, "-d", &d]);
        ok(&o, profile);
        let got: Vec<f64> = common::read_f32(&out).iter().map(|&v| v as f64).collect();
        assert_eq!(reference.len(), got.len());
        let e = common::rel_rms(&[reference.to_vec()], &[got], 0, u64::MAX, &[]);
        assert!(e <= bound, "{profile}: relative RMS {e:e} over {bound:e}");
        assert!(
            e > 0.0 || profile == "strict",
            "{profile}: compared something"
        );
    }
}

/// A file through a lowpass `biquad` equals scipy's lfilter with the RBJ
/// cookbook coefficients (computed in the script).
#[test]
fn a_biquad_matches_scipy_lfilter() {
    let dir = temp_dir("audio-in-lfilter");
    let scene = write_scene(
        &dir,
        "lp.json",
        r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"mic","op":"input"},
          {"id":"lp","op":"biquad","params":{"mode":"lowpass","cutoff":"1500Hz","q":2.0}}],
        "edges":[{"from":"mic","to":"lp"}],"outputs":{"main":["lp"]}}"#,
    );
    let n = 20_000;
    let x: Vec<f64> = signal(n).iter().map(|&v| v as f32 as f64).collect();
    let input = dir.join("in.wav");
    write_f32(&input, 1, &x.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let (raw, want) = (dir.join("in.f64"), dir.join("want.f64"));
    write_f64(&raw, &x);
    oracle(
        "lfilter.py",
        &[
            raw.to_str().unwrap(),
            want.to_str().unwrap(),
            "48000",
            "1500",
            "2.0",
        ],
    );
    against_oracle(&dir, &scene, &input, n, &read_f64(&want));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file through a fully wet `convolution` equals numpy.convolve.
#[test]
fn a_convolution_matches_numpy_convolve() {
    let dir = temp_dir("audio-in-convolve");
    let taps = 700;
    let mut s = 99u32;
    let ir: Vec<f64> = (0..taps)
        .map(|i| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let r = (s >> 8) as f64 / (1u32 << 24) as f64 - 0.5;
            (r * libm::exp(-(i as f64) / 150.0) * 0.5) as f32 as f64
        })
        .collect();
    std::fs::create_dir(dir.join("resources")).unwrap();
    write_f32(
        &dir.join("resources/ir.wav"),
        1,
        &ir.iter().map(|&v| v as f32).collect::<Vec<_>>(),
    );
    let scene = write_scene(
        &dir,
        "conv.json",
        r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"mic","op":"input"},
          {"id":"conv","op":"convolution","params":{"ir":"@resource:ir.wav","mix":1}}],
        "edges":[{"from":"mic","to":"conv"}],"outputs":{"main":["conv"]}}"#,
    );
    let n = 12_000;
    let x: Vec<f64> = signal(n).iter().map(|&v| v as f32 as f64).collect();
    let input = dir.join("in.wav");
    write_f32(&input, 1, &x.iter().map(|&v| v as f32).collect::<Vec<_>>());
    let (raw, raw_ir, want) = (dir.join("in.f64"), dir.join("ir.f64"), dir.join("want.f64"));
    write_f64(&raw, &x);
    write_f64(&raw_ir, &ir);
    oracle(
        "convolve.py",
        &[
            raw.to_str().unwrap(),
            raw_ir.to_str().unwrap(),
            want.to_str().unwrap(),
        ],
    );
    against_oracle(&dir, &scene, &input, n, &read_f64(&want));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bytes` (a WAV written by hound) with its RIFF and data sizes set as a
/// program writing to a pipe leaves them.
fn streaming_header(bytes: &[u8], size: u32) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[4..8].copy_from_slice(&size.to_le_bytes());
    let data = b.windows(4).position(|w| w == b"data").unwrap();
    b[data + 4..data + 8].copy_from_slice(&size.to_le_bytes());
    b
}

/// A WAV on standard input, with its true sizes or a pipe's streaming
/// header (0xFFFFFFFF or 0), to standard output: the same WAV and the
/// same hash as from a file, with a tail or with `-d`.
#[test]
fn standard_input_in_and_standard_output_out() {
    let dir = temp_dir("audio-in-stdin");
    let hall = root().join("scenes/input-hall.json");
    let x: Vec<f32> = signal(9_000).iter().map(|&v| v as f32 * 0.5).collect();
    let input = dir.join("in.wav");
    write_f32(&input, 1, &x);
    let bytes = std::fs::read(&input).unwrap();
    let file_out = dir.join("from-file.wav");
    let reference = render_in(&hall, &input, &file_out, &["--hash"]);
    ok(&reference, "from a file");
    let hash = stdout(&reference);
    let want = std::fs::read(&file_out).unwrap();
    let h = hound::WavReader::new(&want[..]).unwrap();
    assert!(h.len() as usize > 2 * x.len(), "the hall's tail is there");
    let hall = hall.to_str().unwrap();
    for (what, piped) in [
        ("true sizes", bytes.clone()),
        ("data size 0xFFFFFFFF", streaming_header(&bytes, u32::MAX)),
        ("data size 0", streaming_header(&bytes, 0)),
    ] {
        let o = run(
            &["render", hall, "--input", "-", "-o", "-", "--hash"],
            &piped,
        );
        ok(&o, what);
        assert!(
            o.stdout == want,
            "{what}: the WAV on stdout differs from the file's"
        );
        assert!(
            stderr(&o).contains(hash.trim()),
            "{what}: the hash goes to stderr"
        );
        // -d: streamed as it renders, the header from the length given.
        let o = run(
            &[
                "render",
                hall,
                "--input",
                "-",
                "-o",
                "-",
                "-d",
                "4000samples",
            ],
            &piped,
        );
        ok(&o, what);
        let r = hound::WavReader::new(&o.stdout[..]).unwrap();
        assert_eq!(r.len(), 2 * 4000, "{what}: -d");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without -d: the input's length plus the tail. A dry scene adds nothing;
/// a reverb's tail runs until the bus stays below −100 dBFS (a longer `-d`
/// render agrees sample for sample and is silent after it); -d is exact.
#[test]
fn the_length_is_the_inputs_plus_the_tail_or_exactly_d() {
    let dir = temp_dir("audio-in-length");
    let x: Vec<f32> = signal(24_000).iter().map(|&v| v as f32 * 0.5).collect();
    let input = dir.join("in.wav");
    write_f32(&input, 1, &x);
    let render = |scene: &Path, out: &Path, extra: &[&str]| {
        let o = render_in(scene, &input, out, extra);
        ok(&o, &format!("{} {extra:?}", scene.display()));
        stderr(&o)
    };
    let id = write_scene(&dir, "id.json", &identity(0));
    let log = render(&id, &dir.join("dry.wav"), &[]);
    assert_eq!(common::read_f32(&dir.join("dry.wav")).len(), x.len());
    assert!(
        log.contains("length: input 0.500 s + tail 0.000 s"),
        "{log}"
    );
    let log = render(&id, &dir.join("d.wav"), &["-d", "1s"]);
    let d = common::read_f32(&dir.join("d.wav"));
    assert_eq!(d.len(), 48_000);
    assert!(
        d[x.len()..].iter().all(|&s| s == 0.0),
        "silence after the input"
    );
    assert!(log.contains("length: -d 1s"), "{log}");

    let hall = root().join("scenes/input-hall.json");
    let log = render(&hall, &dir.join("wet.wav"), &[]);
    let wet = common::read_f32(&dir.join("wet.wav"));
    render(&hall, &dir.join("long.wav"), &["-d", "4s"]);
    let long = common::read_f32(&dir.join("long.wav"));
    let frames = wet.len() / 2;
    assert!(frames > x.len() + 48_000, "a 2 s hall rings on: {frames}");
    assert!(log.contains("length: input 0.500 s + tail"), "{log}");
    assert_eq!(
        &wet[..],
        &long[..wet.len()],
        "the tail is the longer render's"
    );
    assert!(
        wet[wet.len() - 2..].iter().any(|s| s.abs() >= 1e-5),
        "it ends at its last sample above -100 dBFS"
    );
    let after = &long[wet.len()..wet.len() + 2 * 4_800];
    assert!(
        after.iter().all(|s| s.abs() < 1e-5),
        "nothing above -100 dBFS was cut"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An echo's tail through quiet gaps, its input ending mid-block: at block
/// sizes 1, 64 and 4096 the output is the `-d` render's first frames up to
/// its last frame at or above −100 dBFS before 100 ms below it (the rule
/// applied here to the `-d` render, frame by frame), silent gaps shorter
/// than that kept.
#[test]
fn an_echo_tail_is_cut_at_the_same_frame_at_every_block_size() {
    let dir = temp_dir("audio-in-echo-tail");
    let n = 3001; // the last block is partial at 64 and 4096
    let x: Vec<f32> = signal(n).iter().map(|&v| v as f32).collect();
    let input = dir.join("in.wav");
    write_f32(&input, 1, &x);
    // An 80 ms echo of a 63 ms burst: 839 quiet frames between echoes.
    let scene = write_scene(
        &dir,
        "echo.json",
        r#"{"version":"1.0","sample_rate":48000,
        "nodes":[{"id":"mic","op":"input"},
          {"id":"echo","op":"delay","params":{"time":"80ms","feedback":0.3,"mix":0.5}}],
        "edges":[{"from":"mic","to":"echo"}],"outputs":{"main":["echo"]}}"#,
    );
    // Live runs an f32 bus: the f32 file holds the values the tail measured.
    let args = |block: &'static str| {
        [
            "--profile",
            "live",
            "--format",
            "f32",
            "--block-size",
            block,
        ]
    };
    let long_out = dir.join("long.wav");
    let mut a = args("64").to_vec();
    a.extend(["-d", "2s"]);
    ok(&render_in(&scene, &input, &long_out, &a), "-d 2s");
    let long = common::read_f32(&long_out);
    assert_eq!(long.len(), 96_000);
    let window = 4_800; // 100 ms
    let (mut end, mut quiet, mut gaps) = (n, 0, 0);
    for (i, s) in long.iter().enumerate().skip(n) {
        if s.abs() >= 1e-5 {
            gaps += (quiet > 0) as usize;
            end = i + 1;
            quiet = 0;
        } else {
            quiet += 1;
            if quiet == window {
                break;
            }
        }
    }
    assert!(quiet == window, "the -d render outlasts the tail");
    assert!(end > n + 3 * 3_840, "several echoes: {end}");
    assert!(gaps >= 3, "quiet gaps inside the tail: {gaps}");
    for block in ["1", "64", "4096"] {
        let out = dir.join(format!("out-{block}.wav"));
        ok(&render_in(&scene, &input, &out, &args(block)), block);
        let got = common::read_f32(&out);
        assert_eq!(got.len(), end, "block {block}: length");
        assert!(
            got.iter()
                .zip(&long)
                .all(|(g, l)| g.to_bits() == l.to_bits()),
            "block {block}: the -d render's samples"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--resume` reads input frame 0 at the resumed clock: resuming from a
/// snapshot with the rest of the input gives the uninterrupted render's rest.
#[test]
fn a_resumed_render_reads_its_input_from_the_resumed_clock() {
    let dir = temp_dir("audio-in-resume");
    let scene = write_scene(
        &dir,
        "lp.json",
        r#"{"version":"1.0","sample_rate":48000,"block_size":64,
        "nodes":[{"id":"mic","op":"input"},
          {"id":"lp","op":"biquad","params":{"mode":"lowpass","cutoff":"900Hz","q":4}}],
        "edges":[{"from":"mic","to":"lp"}],"outputs":{"main":["lp"]}}"#,
    );
    let x: Vec<f32> = signal(10_000).iter().map(|&v| v as f32).collect();
    let (whole, rest) = (dir.join("whole.wav"), dir.join("rest.wav"));
    let at = 4_000;
    write_f32(&whole, 1, &x);
    write_f32(&rest, 1, &x[at..]);
    let s = scene.to_str().unwrap();
    let full = dir.join("full.wav");
    let snap = dir.join("snap.json");
    ok(
        &morphrt(&[
            "render",
            s,
            "--input",
            whole.to_str().unwrap(),
            "-o",
            full.to_str().unwrap(),
            "--profile",
            "strict",
            "-d",
            "10000samples",
            "--snapshot-at",
            "4000samples",
            "--snapshot-out",
            snap.to_str().unwrap(),
        ]),
        "uninterrupted",
    );
    let part = dir.join("part.wav");
    ok(
        &morphrt(&[
            "render",
            s,
            "--input",
            rest.to_str().unwrap(),
            "-o",
            part.to_str().unwrap(),
            "--resume",
            snap.to_str().unwrap(),
            "-d",
            "6000samples",
        ]),
        "resumed",
    );
    let (full, part) = (common::read_f32(&full), common::read_f32(&part));
    assert_eq!(&full[at..], &part[..], "the rest, bit for bit");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What the error of one bad render must say, and that its output does
/// not exist afterwards (nor any partial file).
fn refused(dir: &Path, o: &Output, out: &Path, says: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for s in says {
        assert!(e.contains(s), "`{s}` not in: {e}");
    }
    assert!(!out.exists(), "{} was written: {e}", out.display());
    assert_eq!(common::partials(dir), Vec::<String>::new());
}

/// Every bad input: exit 2, naming the file and what would be valid, and
/// nothing written.
#[test]
fn bad_inputs_are_refused_and_nothing_is_written() {
    let dir = temp_dir("audio-in-bad");
    let id = write_scene(&dir, "id.json", &identity(0));
    let stereo = write_scene(&dir, "st.json", &identity(1));
    let out = dir.join("out.wav");
    let good = dir.join("good.wav");
    write_f32(&good, 1, &[0.5; 4_000]);
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.join("cut.wav");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    let not_wav = dir.join("notes.wav");
    std::fs::write(&not_wav, "these are not samples\n").unwrap();
    let empty = dir.join("empty.wav");
    write_f32(&empty, 1, &[]);
    // 48000/44101 in lowest terms needs more phases than a converter builds.
    let rate = dir.join("44k.wav");
    let mut w = hound::WavWriter::create(
        &rate,
        hound::WavSpec {
            sample_rate: 44_101,
            ..spec(1, 32, true)
        },
    )
    .unwrap();
    w.write_sample(0.1f32).unwrap();
    w.finalize().unwrap();
    let fifo = dir.join("fifo.wav");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let subdir = dir.join("takes.wav");
    std::fs::create_dir(&subdir).unwrap();
    let (s, o) = (id.to_str().unwrap(), out.to_str().unwrap());
    let render = |scene: &str, input: &Path| render_in(Path::new(scene), input, &out, &[]);
    refused(
        &dir,
        &render(s, &cut),
        &out,
        &["cut.wav", "cut short", "declares 4000 frames"],
    );
    refused(
        &dir,
        &render(s, &not_wav),
        &out,
        &["notes.wav", "not a WAV file", "32-bit float"],
    );
    refused(&dir, &render(s, &empty), &out, &["empty.wav", "0 frames"]);
    refused(&dir, &render(s, &subdir), &out, &["takes.wav", "directory"]);
    refused(&dir, &render(s, &fifo), &out, &["fifo.wav", "FIFO"]);
    refused(
        &dir,
        &render(s, &rate),
        &out,
        &[
            "44k.wav",
            "44101 Hz",
            "48000 Hz",
            "\"sample_rate\"",
            "convert",
        ],
    );
    refused(
        &dir,
        &render(stereo.to_str().unwrap(), &good),
        &out,
        &[
            "node `mic` reads input channel 1",
            "good.wav",
            "has 1 channel",
        ],
    );
    let twice = render_in(&id, &good, &out, &["--input", good.to_str().unwrap()]);
    refused(
        &dir,
        &twice,
        &out,
        &["--input is given 2 times", "one --input"],
    );
    let none = morphrt(&["render", s, "-o", o]);
    refused(
        &dir,
        &none,
        &out,
        &[
            "reads audio input",
            "node `mic` reads channel 0",
            "--input FILE.wav",
            "--input -",
        ],
    );
    // Standard input cut short part-way (its header declares more), and a
    // stream that is no WAV: the same, with a tail and with -d.
    for d in [&[][..], &["-d", "1s"][..]] {
        let mut a = vec!["render", s, "--input", "-", "-o", o];
        a.extend_from_slice(d);
        let o1 = run(&a, &bytes[..bytes.len() / 2]);
        refused(
            &dir,
            &o1,
            &out,
            &["standard input is cut short", "declares 4000 frames"],
        );
        let o2 = run(&a, b"RIFF....");
        refused(&dir, &o2, &out, &["standard input", "not a WAV file"]);
        let o3 = run(&a, &streaming_header(&bytes[..bytes.len() - 3], 0));
        refused(
            &dir,
            &o3,
            &out,
            &["standard input is cut short", "inside frame"],
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--input` for a scene without `input` nodes warns and renders; extra
/// input channels are noted and ignored.
#[test]
fn an_unread_input_warns_and_extra_channels_are_noted() {
    let dir = temp_dir("audio-in-unread");
    let good = dir.join("quad.wav");
    write_f32(&good, 4, &[0.25; 4 * 100]);
    let out = dir.join("drone.wav");
    let o = render_in(
        &root().join("scenes/drone.json"),
        &good,
        &out,
        &["-d", "10ms"],
    );
    ok(&o, "drone");
    assert!(stderr(&o).contains("warning: --input"), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no `input` node"));
    let id = write_scene(&dir, "id.json", &identity(1));
    let o = render_in(&id, &good, &out, &[]);
    ok(&o, "quad");
    let e = stderr(&o);
    assert!(
        e.contains("has 4 channels; the scene reads channels 0 … 1, so channels 2 … 3 are ignored"),
        "{e}"
    );
    assert_eq!(common::read_f32(&out), vec![0.25; 100]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `plot` and `bench` have no input to give a scene that reads one: they
/// say that what they draw or time is the scene on a silent input.
#[test]
fn plot_and_bench_of_an_input_scene_say_the_input_is_silence() {
    let dir = common::temp_dir("input-plot-bench");
    let png = dir.join("hall.png");
    let scene = common::root().join("scenes/input-hall.json");
    let o = common::morphrt(&[
        "plot",
        scene.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
        "-d",
        "0.2s",
    ]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("reads audio input, which plot renders as silence"),
        "{err}"
    );
    let o = common::morphrt(&[
        "bench",
        scene.to_str().unwrap(),
        "-d",
        "0.1s",
        "--runs",
        "1",
    ]);
    let err = common::stderr(&o);
    assert!(
        err.contains("reads audio input, which bench feeds silence"),
        "{err}"
    );
}

/// `check` lists the input channels a scene reads and the nodes reading
/// each, in text and JSON; a scene without `input` nodes says it has none.
#[test]
fn check_lists_the_input_channels_a_scene_reads() {
    let dir = temp_dir("input-check");
    let scene = dir.join("two.json");
    std::fs::write(
        &scene,
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "mic", "op": "input", "params": { "channel": 0 } },
             { "id": "gtr", "op": "input", "params": { "channel": 2 } },
             { "id": "sum", "op": "mix" } ],
  "edges": [ { "from": "mic", "to": "sum:in0" }, { "from": "gtr", "to": "sum:in1" } ],
  "outputs": { "main": ["sum"] } }"#,
    )
    .unwrap();
    let o = morphrt(&["check", scene.to_str().unwrap()]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("input: channel 0 (mic), channel 2 (gtr) (an input of at least 3 channels)"),
        "{out}"
    );
    let o = morphrt(&["check", scene.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_channels"], 3);
    assert_eq!(
        v["inputs"],
        serde_json::json!([{ "node": "mic", "channel": 0 }, { "node": "gtr", "channel": 2 }])
    );
    let drone = root().join("scenes/drone.json");
    let out = stdout(&morphrt(&["check", drone.to_str().unwrap()]));
    assert!(out.contains("input: none"), "{out}");
}
