//! Every audio format read (WAV of every sample format, AIFF/AIFC, FLAC,
//! MP3, Ogg Vorbis), against an independent decoder: files written by
//! libsndfile (the `soundfile` package, `tests/oracles/soundfile_io.py`)
//! and sox, decoded by morphrt and by libsndfile. Lossless formats agree
//! sample for sample (integers under morphrt's input rule, 1/(2^(b−1)−1));
//! lossy ones within a stated bound, and always to the same bits
//! whatever the reads or block sizes. Every caller reads them: `render
//! --input` (a file, standard input), `@resource:`, `plot`.

use crate::support as common;

use common::{morphrt, root, stderr, temp_dir};
use morphrt::host::files::wav_in::WavInput;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `tests/oracles/soundfile_io.py ARGS`; it must run (`soundfile`
/// installed, as `.ci/run` does).
fn soundfile(args: &[&str]) {
    let o = Command::new("python3")
        .arg(root().join("tests/oracles/soundfile_io.py"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the oracle: {e}"));
    assert!(
        o.status.success(),
        "soundfile_io.py {args:?} failed (`python3 -m pip install soundfile`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Writes `dir/name` with libsndfile: FORMAT/SUBTYPE, 44.1 kHz, stereo.
pub(crate) fn write(dir: &Path, name: &str, format: &str, subtype: &str, frames: usize) -> PathBuf {
    let p = dir.join(name);
    let frames = frames.to_string();
    soundfile(&[
        "write",
        p.to_str().unwrap(),
        format,
        subtype,
        "44100",
        "2",
        &frames,
    ]);
    p
}

/// Runs sox with `args`; it must run.
fn sox(args: &[&str]) {
    let o = Command::new("sox")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("sox is needed: {e}"));
    assert!(
        o.status.success(),
        "sox {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// libsndfile's decode of `path`: 32-bit left-justified integers
/// (`int`) or f64s, interleaved.
fn libsndfile(path: &Path, int: bool) -> Vec<f64> {
    let out = path.with_extension("oracle");
    let mode = if int { "read-int" } else { "read-float" };
    soundfile(&[mode, path.to_str().unwrap(), out.to_str().unwrap()]);
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    if int {
        bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()) as f64)
            .collect()
    } else {
        bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }
}

/// Every frame of `path` as morphrt decodes it, read `chunk` frames at a
/// time: (channels, rate, description, interleaved samples).
fn decode(path: &Path, chunk: usize) -> (usize, u32, String, Vec<f64>) {
    let mut input = WavInput::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ch = input.channels();
    let mut buf = vec![0.0; ch * chunk];
    let mut all = Vec::new();
    loop {
        let n = input.read_interleaved(&mut buf);
        all.extend_from_slice(&buf[..n * ch]);
        if n == 0 {
            break;
        }
    }
    assert!(
        input.error().is_none(),
        "{}: {:?}",
        path.display(),
        input.error()
    );
    assert_eq!(input.ended(), Some((all.len() / ch) as u64));
    (
        ch,
        input.sample_rate(),
        input.description().to_string(),
        all,
    )
}

/// A WAVE_FORMAT_EXTENSIBLE file of 24 valid bits in 32-bit containers,
/// stereo 44.1 kHz, holding `samples` (24-bit values, interleaved).
fn wav_24_in_32(path: &Path, samples: &[i32]) {
    let data: Vec<u8> = samples
        .iter()
        .flat_map(|v| (v << 8).to_le_bytes())
        .collect();
    let mut b = b"RIFF".to_vec();
    b.extend((4 + 8 + 40 + 8 + data.len() as u32).to_le_bytes());
    b.extend(b"WAVEfmt ");
    b.extend(40u32.to_le_bytes());
    b.extend(0xFFFEu16.to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(44_100u32.to_le_bytes());
    b.extend((44_100u32 * 8).to_le_bytes());
    b.extend(8u16.to_le_bytes()); // block align
    b.extend(32u16.to_le_bytes()); // container bits
    b.extend(22u16.to_le_bytes()); // cbSize
    b.extend(24u16.to_le_bytes()); // valid bits
    b.extend(3u32.to_le_bytes()); // channel mask
                                  // KSDATAFORMAT_SUBTYPE_PCM
    b.extend([
        1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71,
    ]);
    b.extend(b"data");
    b.extend((data.len() as u32).to_le_bytes());
    b.extend(data);
    std::fs::write(path, b).unwrap();
}

/// Each lossless format, written by libsndfile or sox, decodes to what
/// libsndfile decodes, bit for bit: integers of `b` bits as v/(2^(b−1)−1),
/// floats as they are.
#[test]
fn lossless_formats_decode_like_libsndfile_sample_for_sample() {
    let dir = temp_dir("formats-lossless");
    let n = 3001;
    // (file, soundfile format, subtype, bits of an integer sample (0: float), description)
    let cases = [
        ("u8.wav", "WAV", "PCM_U8", 8, "WAV 8-bit integer"),
        ("i16.wav", "WAV", "PCM_16", 16, "WAV 16-bit integer"),
        ("i24.wav", "WAV", "PCM_24", 24, "WAV 24-bit integer"),
        ("i32.wav", "WAV", "PCM_32", 32, "WAV 32-bit integer"),
        ("ulaw.wav", "WAV", "ULAW", 16, "WAV μ-law"),
        ("alaw.wav", "WAV", "ALAW", 16, "WAV A-law"),
        ("f32.wav", "WAV", "FLOAT", 0, "WAV 32-bit float"),
        ("f64.wav", "WAV", "DOUBLE", 0, "WAV 64-bit float"),
        ("x24.wav", "WAVEX", "PCM_24", 24, "WAV 24-bit integer"),
        ("i8.flac", "FLAC", "PCM_S8", 8, "FLAC 8-bit"),
        ("i16.flac", "FLAC", "PCM_16", 16, "FLAC 16-bit"),
        ("i24.flac", "FLAC", "PCM_24", 24, "FLAC 24-bit"),
        ("i16.aiff", "AIFF", "PCM_16", 16, "AIFF 16-bit"),
        ("i24.aiff", "AIFF", "PCM_24", 24, "AIFF 24-bit"),
    ];
    let mut files: Vec<(PathBuf, u32, &str)> = cases
        .iter()
        .map(|(name, format, subtype, bits, what)| {
            (write(&dir, name, format, subtype, n), *bits, *what)
        })
        .collect();
    // sox's encoders: FLAC 24-bit, AIFC.
    let sox24 = dir.join("sox24.flac");
    sox(&[
        "-n",
        "-r",
        "44100",
        "-b",
        "24",
        "-c",
        "2",
        sox24.to_str().unwrap(),
        "synth",
        "0.05",
        "sine",
        "440",
    ]);
    files.push((sox24, 24, "FLAC 24-bit"));
    let aifc = dir.join("sox.aifc");
    sox(&[
        "-n",
        "-r",
        "44100",
        "-b",
        "16",
        "-c",
        "2",
        aifc.to_str().unwrap(),
        "synth",
        "0.05",
        "sine",
        "440",
    ]);
    files.push((aifc, 16, "AIFF 16-bit"));
    // 24 valid bits in 32-bit containers (libsndfile reads the containers).
    let x32 = dir.join("x24in32.wav");
    let values: Vec<i32> = (0..2 * n as i32)
        .map(|i| (i * 2797 % (1 << 23)) - (1 << 22))
        .collect();
    wav_24_in_32(&x32, &values);
    files.push((x32, 24, "WAV 24-bit integer in 32-bit containers"));
    for (path, bits, what) in &files {
        let (ch, rate, description, got) = decode(path, 1000);
        assert_eq!((ch, rate), (2, 44_100), "{}", path.display());
        assert_eq!(description, *what, "{}", path.display());
        let want: Vec<f64> = if *bits == 0 {
            libsndfile(path, false)
        } else {
            let full = ((1i64 << (bits - 1)) - 1) as f64;
            libsndfile(path, true)
                .into_iter()
                .map(|v| ((v as i32) >> (32 - bits)) as f64 / full)
                .collect()
        };
        assert_eq!(got.len(), want.len(), "{}: length", path.display());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g.to_bits() == w.to_bits(),
                "{}: sample {i} (frame {}, channel {}) is {g}, libsndfile {w}",
                path.display(),
                i / 2,
                i % 2
            );
        }
        assert!(
            got.iter().any(|v| v.abs() > 0.1),
            "{}: not silence",
            path.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The largest difference allowed between morphrt's (Symphonia's) and
/// libsndfile's (mpg123's, libvorbis's) decode of a lossy file: the two
/// decoders differ only in float rounding (measured: 1.1e-6 for the MP3,
/// 3.3e-7 for the Ogg), far below the codec's own error (~1e-2).
const LOSSY_TOLERANCE: f64 = 1e-5;

/// MP3 and Ogg Vorbis files decode to libsndfile's samples within
/// [`LOSSY_TOLERANCE`], frame for frame (the encoder's delay and padding
/// removed by both).
#[test]
fn lossy_formats_decode_within_tolerance_of_libsndfile() {
    let dir = temp_dir("formats-lossy");
    for (name, format, subtype, what) in [
        ("x.mp3", "MP3", "MPEG_LAYER_III", "MP3"),
        ("x.ogg", "OGG", "VORBIS", "Ogg Vorbis"),
    ] {
        let path = write(&dir, name, format, subtype, 22_050);
        let (ch, rate, description, got) = decode(&path, 4096);
        assert_eq!((ch, rate, description.as_str()), (2, 44_100, what));
        let want = libsndfile(&path, false);
        assert_eq!(got.len(), want.len(), "{name}: length");
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
        eprintln!("{name}: largest difference from libsndfile {worst:e}");
        assert!(
            worst <= LOSSY_TOLERANCE,
            "{name}: {worst:e} over {LOSSY_TOLERANCE:e}"
        );
        assert!(got.iter().any(|v| v.abs() > 0.1), "{name}: not silence");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same MP3 and Ogg decode to the same bits every time, whatever the
/// size of the reads.
#[test]
fn lossy_formats_decode_to_the_same_bits_whatever_the_reads() {
    let dir = temp_dir("formats-deterministic");
    for (name, format, subtype) in [
        ("x.mp3", "MP3", "MPEG_LAYER_III"),
        ("x.ogg", "OGG", "VORBIS"),
    ] {
        let path = write(&dir, name, format, subtype, 9_000);
        let (.., first) = decode(&path, 4096);
        for chunk in [1, 64, 4096, 777] {
            let (.., again) = decode(&path, chunk);
            let same = first.len() == again.len()
                && first
                    .iter()
                    .zip(&again)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name}: reads of {chunk} frames decode other bits");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scene at 44.1 kHz: input channel 0 through a low-pass, to the main bus.
const FILTERED: &str = r#"{"version":"1.0","sample_rate":44100,
  "nodes":[{"id":"mic","op":"input","params":{"channel":0}},
           {"id":"lp","op":"biquad","params":{"mode":"lowpass","cutoff":"3kHz"}}],
  "edges":[{"from":"mic","to":"lp"}],
  "outputs":{"main":["lp"]}}"#;

/// A strict render of an MP3 input writes the same bytes at blocks 1, 64
/// and 4096, and again on a second run.
#[test]
fn a_strict_render_of_an_mp3_input_is_bit_identical_at_every_block_size() {
    let dir = temp_dir("formats-mp3-strict");
    let mp3 = write(&dir, "take.mp3", "MP3", "MPEG_LAYER_III", 6_000);
    let scene = dir.join("lp.json");
    std::fs::write(&scene, FILTERED).unwrap();
    let mut first: Option<Vec<u8>> = None;
    for (k, block) in ["4096", "1", "64", "4096"].iter().enumerate() {
        let out = dir.join(format!("out-{k}.wav"));
        let o = morphrt(&[
            "render",
            scene.to_str().unwrap(),
            "--input",
            mp3.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--profile",
            "strict",
            "--block-size",
            block,
            "--format",
            "f32",
        ]);
        assert!(o.status.success(), "block {block}: {}", stderr(&o));
        let bytes = std::fs::read(&out).unwrap();
        match &first {
            None => first = Some(bytes),
            Some(f) => assert!(f == &bytes, "block {block}: other bytes"),
        }
    }
    let got = common::read_f32(&dir.join("out-0.wav"));
    assert!(got.len() >= 6_000 && got.iter().any(|v| v.abs() > 0.05));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mono 44.1 kHz: the input's channel 0 to the main bus.
const IDENTITY: &str = r#"{"version":"1.0","sample_rate":44100,
  "nodes":[{"id":"mic","op":"input","params":{"channel":0}}],
  "outputs":{"main":["mic"]}}"#;

/// `render --input` reads each format from a file and, for those that
/// stream (WAV, FLAC, MP3, Ogg), from standard input, to the same samples
/// the library decodes; the format is told from the content, not the name.
#[test]
fn render_reads_every_format_from_a_file_and_streams_from_standard_input() {
    let dir = temp_dir("formats-render");
    let scene = dir.join("id.json");
    std::fs::write(&scene, IDENTITY).unwrap();
    let s = scene.to_str().unwrap();
    for (name, format, subtype, streams) in [
        ("a.wav", "WAV", "PCM_24", true),
        ("a.flac", "FLAC", "PCM_24", true),
        ("a.mp3", "MP3", "MPEG_LAYER_III", true),
        ("a.ogg", "OGG", "VORBIS", true),
        ("a.aiff", "AIFF", "PCM_16", false),
    ] {
        let path = write(&dir, name, format, subtype, 4_000);
        let (_, _, _, samples) = decode(&path, 4096);
        let want: Vec<f32> = samples.iter().step_by(2).map(|&v| v as f32).collect();
        // Named for another format: read all the same.
        let misnamed = dir.join(format!("{name}.misnamed.wav"));
        std::fs::copy(&path, &misnamed).unwrap();
        let out = dir.join("out.wav");
        let o = morphrt(&[
            "render",
            s,
            "--input",
            misnamed.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--format",
            "f32",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(common::read_f32(&out), want, "{name} from a file");
        let piped = std::fs::read(&path).unwrap();
        let o = common::run_piped(
            &["render", s, "--input", "-", "-o", "-", "--format", "f32"],
            &piped,
            std::time::Duration::from_secs(120),
        );
        if streams {
            assert!(o.status.success(), "{name} piped: {}", stderr(&o));
            let r = hound::WavReader::new(&o.stdout[..]).unwrap();
            let got: Vec<f32> = r.into_samples::<f32>().map(Result::unwrap).collect();
            assert_eq!(got, want, "{name} from standard input");
        } else {
            assert_eq!(o.status.code(), Some(2), "{name} piped");
            assert!(stderr(&o).contains("from a file only"), "{}", stderr(&o));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `@resource:` samples and impulse responses and `plot FILE` read every
/// format: a sampler playing a FLAC resource plays its samples (under the
/// resource rule, 2^−(b−1)), and `plot` draws an MP3 and an Ogg.
#[test]
fn resources_and_plot_read_every_format() {
    let dir = temp_dir("formats-resources");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let flac = write(&dir.join("resources"), "hit.flac", "FLAC", "PCM_16", 2_000);
    let ogg = write(&dir.join("resources"), "ir.ogg", "OGG", "VORBIS", 2_000);
    let scene = dir.join("s.json");
    std::fs::write(
        &scene,
        r#"{"version":"1.0","sample_rate":44100,
          "nodes":[{"id":"p","op":"sampler","params":{"file":"@resource:hit.flac"}},
                   {"id":"hall","op":"convolution","params":{"ir":"@resource:ir.ogg","mix":0.5}}],
          "edges":[{"from":"p","to":"hall"}],
          "outputs":{"main":["p"], "wet":["hall:out"]}}"#,
    )
    .unwrap();
    let out = dir.join("out.wav");
    let o = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-d",
        "1000samples",
        "--format",
        "f32",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want: Vec<f32> = libsndfile(&flac, true)
        .iter()
        .step_by(2)
        .take(1000)
        .map(|&v| (((v as i32) >> 16) as f64 / 32768.0) as f32)
        .collect();
    let got = common::read_f32(&out);
    assert_eq!(&got[..], &want[..], "the sampler plays the FLAC's samples");
    for file in [&ogg, &flac] {
        let png = dir.join("plot.png");
        let o = morphrt(&["plot", file.to_str().unwrap(), "-o", png.to_str().unwrap()]);
        assert!(
            o.status.success(),
            "plot {}: {}",
            file.display(),
            stderr(&o)
        );
        assert!(std::fs::metadata(&png).unwrap().len() > 100);
        std::fs::remove_file(&png).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run --input` plays an MP3 into the scene as `render --input` of the
/// same file writes it, bit for bit, under strict; its journal records the
/// input, and `replay` gives the session back bit for bit.
#[test]
fn a_session_with_an_mp3_input_equals_the_render_and_replays() {
    let dir = temp_dir("formats-run-mp3");
    let mp3 = write(&dir, "take.mp3", "MP3", "MPEG_LAYER_III", 22_050);
    let scene = dir.join("lp.json");
    std::fs::write(&scene, FILTERED).unwrap();
    let (capture, journal) = (dir.join("played.wav"), dir.join("j/take.jsonl"));
    let (mut child, lines) = common::run_clock(
        &scene,
        &[
            "--profile",
            "strict",
            "--input",
            mp3.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--duration",
            "0.75s",
            "--no-watch",
        ],
    );
    let status = child.wait().unwrap();
    let log = lines.iter().collect::<Vec<String>>().join("\n");
    assert!(status.success(), "{log}");
    let out = dir.join("render.wav");
    let o = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--profile",
        "strict",
        "--input",
        mp3.to_str().unwrap(),
        "-d",
        "0.75s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mono = common::read_f32(&out);
    let want: Vec<f32> = mono.iter().flat_map(|&x| [x, x]).collect();
    let played = common::read_f32(&capture);
    assert!(
        played.len() == want.len()
            && played
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
        "the session differs from the offline render; log:\n{log}"
    );
    common::assert_replays(&journal, &capture, &log);
    std::fs::remove_dir_all(&dir).unwrap();
}
