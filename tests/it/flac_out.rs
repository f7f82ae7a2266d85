//! FLAC output: `render -o out.flac` (or `--container flac`) writes the
//! samples the integer WAV would hold, as libsndfile (python `soundfile`)
//! decodes them, with the MD5 of those samples in its header; through the
//! same output rules as a WAV.

use crate::support::{morphrt, partials, render, root, stderr, stdout, temp_dir};
use std::path::Path;
use std::process::Command;

/// Decodes `flac` and reads `wav` with libsndfile and prints whether
/// their integer samples, rate and shape agree, and whether the FLAC's
/// `STREAMINFO` MD5 is that of the WAV's sample bytes.
const COMPARE: &str = r#"
import sys, hashlib
import soundfile as sf
flac, wav, bits = sys.argv[1], sys.argv[2], int(sys.argv[3])
a, ra = sf.read(flac, dtype="int32", always_2d=True)
b, rb = sf.read(wav, dtype="int32", always_2d=True)
print("rate", ra == rb)
print("shape", a.shape == b.shape, a.shape[0])
print("samples", bool((a == b).all()))
head = open(flac, "rb").read(42)
assert head[:4] == b"fLaC", head[:4]
w = bits // 8
body = (b >> (32 - bits)).astype("<i4").tobytes()
body = b"".join(body[i:i + w] for i in range(0, len(body), 4))
print("md5", head[26:42] == hashlib.md5(body).digest())
"#;

fn compare(flac: &Path, wav: &Path, bits: u32) -> String {
    let o = Command::new("python3")
        .arg("-c")
        .arg(COMPARE)
        .arg(flac)
        .arg(wav)
        .arg(bits.to_string())
        .output()
        .expect("python3 runs the comparison");
    assert!(
        o.status.success(),
        "soundfile is needed (`python3 -m pip install soundfile`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_flac_render_decodes_to_the_integer_samples_of_the_wav_render() {
    let dir = temp_dir("flac-round-trip");
    let scene = root().join("scenes/drone.json");
    for (format, bits) in [("i16", 16), ("i24", 24)] {
        let wav = dir.join(format!("out-{format}.wav"));
        let flac = dir.join(format!("out-{format}.flac"));
        let w = render(&scene, &wav, &["-d", "0.5s", "--format", format, "--hash"]);
        assert!(w.status.success(), "{}", stderr(&w));
        let f = render(&scene, &flac, &["-d", "0.5s", "--format", format, "--hash"]);
        assert!(f.status.success(), "{}", stderr(&f));
        assert_eq!(stdout(&f), stdout(&w), "--hash is the samples' hash");
        let said = compare(&flac, &wav, bits);
        for line in ["rate True", "shape True 24000", "samples True", "md5 True"] {
            assert!(said.contains(line), "{format}: `{line}` not in:\n{said}");
        }
    }
    assert_eq!(partials(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_container_follows_the_extension_and_standard_output_stays_wav() {
    let dir = temp_dir("flac-container");
    let scene = root().join("scenes/drone.json");
    let s = scene.to_str().unwrap();
    let o = morphrt(&["render", s, "-o", "-", "-d", "0.1s", "--format", "i16"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&o.stdout[..4], b"RIFF");
    let o = morphrt(&["render", s, "-o", "-", "-d", "0.1s", "--container", "flac"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&o.stdout[..4], b"fLaC");
    // Without --format, a FLAC is 24-bit.
    let upper = dir.join("OUT.FLAC");
    let o = render(&scene, &upper, &["-d", "0.1s", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (&v["container"], &v["format"]),
        (&"flac".into(), &"i24".into())
    );
    assert_eq!(v["bytes"], std::fs::metadata(&upper).unwrap().len());
    assert_eq!(&std::fs::read(&upper).unwrap()[..4], b"fLaC");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flac_of_floats_or_under_another_name_is_refused_and_nothing_is_written() {
    let dir = temp_dir("flac-refused");
    let scene = root().join("scenes/drone.json");
    let out = dir.join("out.flac");
    let o = render(&scene, &out, &["-d", "0.1s", "--format", "f32"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("FLAC holds 16- or 24-bit integer samples, not f32"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    let named = dir.join("out.wav");
    let o = render(&scene, &named, &["-d", "0.1s", "--container", "flac"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("render writes FLAC files only"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains(".flac"), "{}", stderr(&o));
    assert!(!named.exists());
    // A render refused for its input: no FLAC, no temporary file.
    let take = dir.join("cut.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&take, spec).unwrap();
    for i in 0..48_000 {
        w.write_sample((i % 100) as i16).unwrap();
    }
    w.finalize().unwrap();
    let bytes = std::fs::read(&take).unwrap();
    std::fs::write(&take, &bytes[..bytes.len() - 5_000]).unwrap();
    let id = dir.join("id.json");
    std::fs::write(
        &id,
        r#"{ "version": "1.0", "nodes": [ { "id": "mic", "op": "input" } ], "outputs": { "main": ["mic"] } }"#,
    )
    .unwrap();
    let o = render(&id, &out, &["--input", take.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists());
    assert_eq!(partials(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
