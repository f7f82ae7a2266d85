//! `--capture`: what the tap is given ends up in the WAV file bit for bit,
//! the file is a valid WAV under its own name while it records (its sizes
//! kept current), an existing file is never replaced unless the caller
//! asks, a write error keeps what came before it, and `push` is real-time
//! safe (a counting global allocator, as in tests/it/realtime.rs, sees no
//! allocation or free).

use crate::support as common;

use common::temp_dir;
use morphrt::host::files::rules::{Inputs, Kind, Output};
use morphrt::host::live::tap::{Existing, TapWriter};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::counting;
use counting::{counts, realtime};

/// Distinct finite samples covering signs, zero, negative zero and
/// subnormals, so a conversion anywhere would change some bits.
fn samples(n: usize) -> Vec<f32> {
    let special = [0.0, -0.0, f32::MIN_POSITIVE / 8.0, -1.0, 1.0, 1e-30];
    (0..n)
        .map(|i| match i % 97 {
            k if k < special.len() => special[k],
            _ => ((i as f32) * 0.618_034).fract() * 2.0 - 1.0,
        })
        .collect()
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|s| s.to_bits()).collect()
}

fn read_back(path: &Path) -> (hound::WavSpec, Vec<u32>) {
    let mut r = hound::WavReader::open(path).unwrap();
    let b = r.samples::<f32>().map(|s| s.unwrap().to_bits()).collect();
    (r.spec(), b)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Pushes `x` in chunks of 37, 64 and 1000 frames in turn.
fn push_odd_chunks(tap: &mut morphrt::host::live::tap::Tap, x: &[f32], channels: usize) {
    let mut at = 0;
    for frames in [37, 64, 1000].into_iter().cycle() {
        if at == x.len() {
            break;
        }
        let end = (at + frames * channels).min(x.len());
        tap.push(&x[at..end]);
        at = end;
    }
}

#[test]
fn the_counter_catches_an_allocation() {
    let before = counts();
    realtime(|| drop(std::hint::black_box(vec![1u8; 16])));
    let after = counts();
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
}

#[test]
fn three_seconds_of_stereo_round_trip_bit_exact() {
    let dir = temp_dir("capture-roundtrip");
    let path = dir.join("out.wav");
    let frames = 3 * 48_000;
    let x = samples(frames * 2);
    // The ring holds more than everything pushed, so nothing can drop
    // however the writer thread is scheduled.
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 3.5).unwrap();
    push_odd_chunks(&mut tap, &x, 2);
    let report = writer.finish().unwrap();
    assert_eq!(report.path, path);
    assert_eq!(report.frames, frames as u64);
    assert_eq!((report.dropped_samples, report.overflow_samples), (0, 0));
    assert!(report.is_complete());
    assert_eq!(report.duration_s(), 3.0);
    let (spec, got) = read_back(&path);
    assert_eq!(
        spec,
        hound::WavSpec {
            channels: 2,
            sample_rate: 48_000,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        }
    );
    assert_eq!(got.len(), x.len());
    assert!(got == bits(&x), "the samples read back differ");
    // Only the finished file is left in the directory.
    assert_eq!(listing(&dir), ["out.wav"]);
}

#[test]
fn mono_and_six_channels_round_trip_too() {
    let dir = temp_dir("capture-channels");
    for (channels, rate) in [(1u16, 44_100u32), (6, 96_000)] {
        let path = dir.join(format!("c{channels}.wav"));
        let x = samples(5000 * channels as usize);
        let (writer, mut tap) = TapWriter::start(&path, channels, rate, 1.0).unwrap();
        push_odd_chunks(&mut tap, &x, channels as usize);
        let report = writer.finish().unwrap();
        assert_eq!((report.frames, report.dropped_samples), (5000, 0));
        let (spec, got) = read_back(&path);
        assert_eq!((spec.channels, spec.sample_rate), (channels, rate));
        assert!(got == bits(&x), "{channels} channels differ");
    }
}

// The capture is written under its own name from the start (a hidden name
// renamed when finished would leave no take at all when a session is
// killed), and its header counts what was written without waiting for
// `finish`.
#[test]
fn the_file_is_a_valid_wav_under_its_name_while_it_records() {
    let dir = temp_dir("capture-growing");
    let path = dir.join("take.wav");
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 3.0).unwrap();
    assert_eq!(listing(&dir), ["take.wav"], "under its name from the start");
    assert_eq!(read_back(&path).1.len(), 0, "an empty WAV before any audio");
    let x = samples(2 * 2 * 48_000);
    push_odd_chunks(&mut tap, &x, 2);
    // Every look at the file finds a valid WAV holding a prefix of what was
    // pushed; soon (the sizes are updated twice a second) all of it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, got) = read_back(&path);
        assert!(
            got[..] == bits(&x[..got.len()]),
            "a prefix of what was pushed"
        );
        if got.len() == x.len() {
            break;
        }
        assert!(Instant::now() < deadline, "the header never counted it all");
        std::thread::sleep(Duration::from_millis(20));
    }
    let more = samples(2 * 100);
    tap.push(&more);
    let report = writer.finish().unwrap();
    assert_eq!(report.frames, 2 * 48_000 + 100);
    let got = read_back(&path).1;
    assert!(got[x.len()..] == bits(&more)[..], "finish wrote the rest");
    assert_eq!(listing(&dir), ["take.wav"]);
}

// `finish` renamed its temporary file over any file with the capture's
// name, an earlier take included. The file is created new, and an existing
// one is replaced only when the caller asks.
#[test]
fn an_existing_file_is_never_replaced_unless_asked() {
    let dir = temp_dir("capture-replace");
    let path = dir.join("take.wav");
    std::fs::write(&path, b"an older take").unwrap();
    let e = TapWriter::start(&path, 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), b"an older take");

    let output = Output::prepare(&path, &Inputs::default(), 0, &Kind::CAPTURE).unwrap();
    let e = TapWriter::start_at(output, Existing::Refuse, 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), b"an older take");

    let output = Output::prepare(&path, &Inputs::default(), 0, &Kind::CAPTURE).unwrap();
    let (writer, mut tap) = TapWriter::start_at(output, Existing::Replace, 2, 48_000, 1.0).unwrap();
    let x = samples(2 * 1000);
    tap.push(&x);
    writer.finish().unwrap();
    assert!(read_back(&path).1 == bits(&x));
    assert_eq!(listing(&dir), ["take.wav"]);
}

#[test]
fn dropping_without_finish_keeps_the_take_and_removes_an_empty_file() {
    let dir = temp_dir("capture-drop");
    let path = dir.join("take.wav");
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 1.0).unwrap();
    let x = samples(2 * 4800);
    tap.push(&x);
    drop(writer);
    // The tap outlives the writer (a player torn down later): pushing is harmless.
    tap.push(&samples(2 * 4800));
    drop(tap);
    assert!(read_back(&path).1 == bits(&x), "what was pushed is kept");

    // A writer that got no audio (a session that failed to start) leaves nothing.
    let (writer, tap) = TapWriter::start(&dir.join("empty.wav"), 2, 48_000, 1.0).unwrap();
    drop(tap);
    drop(writer);
    assert_eq!(listing(&dir), ["take.wav"]);
}

#[test]
fn the_writer_finishes_cleanly_when_the_tap_is_dropped_first() {
    let dir = temp_dir("capture-tap-gone");
    let path = dir.join("c.wav");
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 1.0).unwrap();
    let x = samples(2 * 12_345);
    push_odd_chunks(&mut tap, &x, 2);
    drop(tap);
    let report = writer.finish().unwrap();
    assert_eq!((report.frames, report.dropped_samples), (12_345, 0));
    assert!(read_back(&path).1 == bits(&x));
}

#[test]
fn pushing_after_finish_is_harmless() {
    let dir = temp_dir("capture-late-push");
    let path = dir.join("c.wav");
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 0.01).unwrap();
    tap.push(&samples(2 * 100));
    let report = writer.finish().unwrap();
    assert_eq!(report.frames, 100);
    // The writer is gone; the ring fills and the tap counts, never blocks.
    for _ in 0..100 {
        tap.push(&samples(2 * 100));
    }
    assert_eq!(read_back(&path).1.len(), 200);
}

#[test]
fn a_directory_or_a_missing_directory_is_refused_by_name() {
    let dir = temp_dir("capture-refuse");
    let e = TapWriter::start(&dir, 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is a directory"), "{e}");
    assert!(e.contains(&dir.display().to_string()), "{e}");

    let with_slash = PathBuf::from(format!("{}/sub/", dir.display()));
    let e = TapWriter::start(&with_slash, 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is a directory"), "{e}");

    let missing = dir.join("no-such-dir");
    let e = TapWriter::start(&missing.join("c.wav"), 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!(
            "the directory `{}` does not exist",
            missing.display()
        )),
        "{e}"
    );
    assert_eq!(listing(&dir), Vec::<String>::new());
}

/// sysfs refuses new files even to root, where a read-only test directory
/// would not.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_directory_is_refused_by_name() {
    let e = TapWriter::start(Path::new("/sys/morphrt-capture.wav"), 2, 48_000, 1.0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("cannot write in the directory `/sys`"), "{e}");
}

#[test]
fn push_never_allocates_or_frees_even_when_the_ring_is_full() {
    let dir = temp_dir("capture-alloc");
    let path = dir.join("c.wav");
    // 480 frames of ring against 10,000 pushes of 64 frames: the tap both
    // copies and drops, whatever the writer thread does meanwhile.
    let (writer, mut tap) = TapWriter::start(&path, 2, 48_000, 0.01).unwrap();
    let x = samples(2 * 64);
    let torn = samples(2 * 64 + 1);
    let before = counts();
    realtime(|| {
        for k in 0..10_000 {
            if k % 100 == 99 {
                tap.push(&torn);
            } else {
                tap.push(&x);
            }
        }
    });
    let after = counts();
    assert_eq!((after.0 - before.0, after.1 - before.1), (0, 0));
    let pushed = 9_900 * 128 + 100 * 129;
    let report = writer.finish().unwrap();
    // Every sample either reached the file or was counted as dropped
    // (each torn push loses at least its last sample).
    assert!(report.dropped_samples >= 100);
    assert_eq!(report.frames * 2 + report.dropped_samples, pushed);
}

/// `morphrt run SCENE --device clock --duration 0.1s` with more arguments, in `dir`.
fn run_in(dir: &Path, scene: &str, more: &[&str]) -> std::process::Output {
    common::bin()
        .args([
            "run",
            scene,
            "--device",
            "clock",
            "--duration",
            "0.1s",
            "--no-watch",
        ])
        .args(more)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// `run s.json --device clock --capture s.json` replaced the scene with the
// recording. The capture and the journal follow the output rules: never an
// input, nor each other, never in place of a FIFO, and a WAV has a WAV name.
#[test]
fn the_capture_and_the_journal_never_replace_an_input() {
    let dir = temp_dir("capture-rules");
    let scene = dir.join("s.json");
    std::fs::copy(common::root().join("scenes/drone.json"), &scene).unwrap();
    let before = std::fs::read(&scene).unwrap();
    std::fs::hard_link(&scene, dir.join("same.wav")).unwrap();
    for capture in ["s.json", "same.wav"] {
        let o = run_in(&dir, "s.json", &["--no-journal", "--capture", capture]);
        assert_eq!(o.status.code(), Some(2), "--capture {capture}: {}", err(&o));
        assert!(err(&o).contains("is the scene"), "{}", err(&o));
        assert!(
            !err(&o).contains("playing"),
            "refused before playing: {}",
            err(&o)
        );
    }
    let o = run_in(&dir, "s.json", &["--journal", "s.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("the journal `s.json` is the scene"),
        "{}",
        err(&o)
    );
    assert_eq!(
        std::fs::read(&scene).unwrap(),
        before,
        "the scene is untouched"
    );

    // The capture and the journal in one file.
    let o = run_in(
        &dir,
        "s.json",
        &["--capture", "both.wav", "--journal", "both.wav"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("the capture `both.wav`"), "{}", err(&o));
    // A name that is not a WAV's.
    let o = run_in(&dir, "s.json", &["--no-journal", "--capture", "take.mp3"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("run --capture writes WAV files"),
        "{}",
        err(&o)
    );

    // A FIFO is neither replaced nor opened (nothing would read it).
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path in the test's own directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for args in [
        &["--no-journal", "--capture", "fifo"][..],
        &["--capture", "ok.wav", "--journal", "fifo"],
    ] {
        let o = run_in(&dir, "s.json", args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", err(&o));
        assert!(err(&o).contains("it is a FIFO"), "{}", err(&o));
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(
        listing(&dir),
        ["fifo", "s.json", "same.wav"],
        "nothing written, nothing left behind"
    );

    // And a capture that is allowed is made.
    let o = run_in(&dir, "s.json", &["--no-journal", "--capture", "take.wav"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(read_back(&dir.join("take.wav")).1.len(), 2 * 4800);
}

// `run --capture take.wav` replaced an earlier take.wav when it finished.
// The earlier take is left as it was, and the new one goes to the next
// free numbered name, said before playing.
#[test]
fn run_never_replaces_an_earlier_take() {
    let dir = temp_dir("capture-earlier");
    std::fs::copy(common::root().join("scenes/drone.json"), dir.join("s.json")).unwrap();
    std::fs::write(dir.join("take.wav"), b"an older take").unwrap();
    let o = run_in(&dir, "s.json", &["--no-journal", "--capture", "take.wav"]);
    assert!(o.status.success(), "{}", err(&o));
    let said = err(&o);
    let named = said
        .find("capture: take-2.wav")
        .expect("the new name is said");
    assert!(
        named < said.find("playing").unwrap(),
        "before playing: {said}"
    );
    assert_eq!(
        std::fs::read(dir.join("take.wav")).unwrap(),
        b"an older take"
    );
    assert_eq!(read_back(&dir.join("take-2.wav")).1.len(), 2 * 4800);
    assert_eq!(listing(&dir), ["s.json", "take-2.wav", "take.wav"]);
}

// A write error on the capture (a full disk; here the file size limit)
// removed the whole recording. The file keeps every whole frame before the
// error, with sizes that say so, the session plays on, and the error says
// what was kept (exit 1).
#[test]
fn a_write_error_keeps_what_was_written_with_correct_sizes() {
    let dir = temp_dir("capture-write-error");
    std::fs::copy(common::root().join("scenes/drone.json"), dir.join("s.json")).unwrap();
    let limit: u64 = 200_000;
    let mut c = common::bin();
    c.args(["run", "s.json", "--device", "clock", "--duration", "1s"])
        .args([
            "--no-watch",
            "--journal",
            "j.jsonl",
            "--capture",
            "take.wav",
        ])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null());
    common::file_size_limit(&mut c, limit);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("cannot write the capture `take.wav`"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("the file keeps the first"), "{}", err(&o));
    // 68 bytes of header, then whole stereo f32 frames up to the limit.
    let frames = (limit - 68) / 8;
    assert!(
        err(&o).contains(&format!("captured {frames} frames")),
        "{}",
        err(&o)
    );
    let file = std::fs::read(dir.join("take.wav")).unwrap();
    assert_eq!(file.len() as u64, 68 + frames * 8);
    let (_, got) = read_back(&dir.join("take.wav"));
    assert_eq!(got.len() as u64, 2 * frames);
    // What it kept is what played: the journal replays it.
    let o = common::bin()
        .args(["replay", "j.jsonl", "-o", "r.wav"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let (_, replayed) = read_back(&dir.join("r.wav"));
    assert_eq!(replayed.len(), 2 * 48_000, "the whole second played");
    assert!(
        got[..] == replayed[..got.len()],
        "the capture is what played"
    );
}
