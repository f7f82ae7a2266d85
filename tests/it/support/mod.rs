//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod counters;
pub mod counting;
pub mod mutate;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real `morphrt` binary, away from the calibrations stored on this
/// machine (a thread count or threshold `morphrt calibrate` chose for a
/// scene would change what `run`, `check` and `bench` do and say); a test
/// of the store gives it a cache of its own.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_morphrt"));
    c.env("XDG_CACHE_HOME", "/nonexistent/morphrt-test-cache");
    c
}

/// Runs the real `morphrt` binary ([`bin`]).
pub fn morphrt(args: &[&str]) -> Output {
    bin()
        .args(args)
        .current_dir(root())
        .output()
        .expect("run morphrt")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether the tests run as root (as in CI), where the system's devices are
/// never written: a test makes its own ([`memory_devices`]).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Names in `dir` that look like a writer's temporary file.
pub fn partials(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect()
}

/// Makes `dir/null` and `dir/full`, character devices with the numbers of
/// the system's memory devices (needs root), for tests that write to a
/// device without touching /dev.
pub fn memory_devices(dir: &Path) {
    for (name, minor) in [("null", 3), ("full", 7)] {
        let c = std::ffi::CString::new(dir.join(name).to_str().unwrap()).unwrap();
        // SAFETY: mknod on a NUL-terminated path: the memory devices' numbers.
        let made =
            unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, minor)) };
        assert_eq!(made, 0, "mknod {name}");
    }
}

/// Asserts that `dir/null` and `dir/full` are still devices, and that no
/// temporary file was left beside them.
pub fn assert_still_devices(dir: &Path) {
    use std::os::unix::fs::FileTypeExt;
    for name in ["null", "full"] {
        let t = std::fs::symlink_metadata(dir.join(name))
            .unwrap()
            .file_type();
        assert!(t.is_char_device(), "{name} is still a device");
    }
    assert!(partials(dir).is_empty());
}

/// A fresh, empty directory for one test's files, named after the test
/// process, the calling module's file and `name` (so modules may use the
/// same `name`).
#[track_caller]
pub fn temp_dir(name: &str) -> PathBuf {
    let module = Path::new(std::panic::Location::caller().file())
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let d = std::env::temp_dir().join(format!(
        "morphrt-test-{}-{module}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    cleanup::remove_when_the_thread_ends(&d);
    d
}

/// A test's directories are removed when its thread ends, unless that
/// thread panicked (a failed test keeps its files to look at) or
/// `MORPHRT_KEEP_TEST_DIRS` is set. The test harness runs each test on a
/// thread of its own.
mod cleanup {
    use std::cell::{Cell, RefCell};
    use std::path::{Path, PathBuf};
    use std::sync::Once;

    struct Dirs(RefCell<Vec<PathBuf>>);

    impl Drop for Dirs {
        fn drop(&mut self) {
            if PANICKED.with(Cell::get) || std::env::var_os("MORPHRT_KEEP_TEST_DIRS").is_some() {
                return;
            }
            for d in self.0.borrow().iter() {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }

    thread_local! {
        static DIRS: Dirs = const { Dirs(RefCell::new(Vec::new())) };
        static PANICKED: Cell<bool> = const { Cell::new(false) };
    }

    pub fn remove_when_the_thread_ends(dir: &Path) {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let _ = PANICKED.try_with(|p| p.set(true));
                previous(info);
            }));
        });
        DIRS.with(|d| d.0.borrow_mut().push(dir.to_path_buf()));
    }
}

/// Every shipped scene (scenes/*.json, not scenes/bench/).
pub fn shipped_scenes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("scenes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

pub fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Compiles scene text into a plan (panics with the first diagnostic).
pub fn plan(
    text: &str,
    profile: Option<morphrt::profile::Profile>,
    block: usize,
) -> morphrt::graph::Plan {
    use morphrt::graph::{compile, CompileOptions};
    let scene =
        morphrt::scene::load_str(text, "test.json", None).unwrap_or_else(|e| panic!("{}", e[0]));
    compile(
        &scene,
        &CompileOptions {
            profile,
            block_size: Some(block),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e[0]))
}

/// Compiles scene text into an engine (panics with the first diagnostic).
pub fn engine(
    text: &str,
    profile: Option<morphrt::profile::Profile>,
    block: usize,
) -> morphrt::engine::Engine {
    morphrt::engine::Engine::new(plan(text, profile, block))
}

/// Plays `e` block by block up to sample `to` and returns its main-bus
/// channel `ch` from its clock on.
pub fn play(e: &mut morphrt::engine::Engine, to: u64, ch: usize) -> Vec<f64> {
    let mut out = Vec::new();
    while e.clock() < to {
        let n = ((to - e.clock()) as usize).min(e.block_size());
        e.process_block(n);
        let b = e.bus();
        out.extend((0..b.frames()).map(|i| b.get(ch, i)));
    }
    out
}

/// A player of `engine` on two device channels with a stop fade of `fade`
/// frames, its own meters and controls, no limit.
pub fn player(engine: morphrt::engine::Engine, fade: u64) -> morphrt::host::live::player::Player {
    use morphrt::host::live::player::{Meters, Player, Switches};
    use std::sync::Arc;
    Player::new(
        engine,
        2,
        None,
        fade,
        Arc::new(Meters::default()),
        Arc::new(Switches::default()),
        Instant::now(),
    )
}

/// Runs `morphrt ARGS` with `input` piped to its stdin, which is then
/// closed (the end of stdin does not stop `run`).
pub fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    run_piped(args, input, Duration::from_secs(600))
}

/// Runs `morphrt ARGS` in the repository with `input` written to its stdin
/// on a thread (a command may write its output while it reads), then
/// closed; killed after `deadline`, so a command that would wait for ever
/// fails the test instead of hanging it.
pub fn run_piped(args: &[&str], input: &[u8], deadline: Duration) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut child = bin()
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run morphrt");
    let mut stdin = child.stdin.take().unwrap();
    let bytes = input.to_vec();
    // A command that already ended has closed its end; that is its own failure.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&bytes)));
    let pid = child.id() as libc::pid_t;
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let watch = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while !watch.load(Ordering::SeqCst) {
            if start.elapsed() > deadline {
                // SAFETY: a signal to the child, which is not reaped before `done`.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let o = child.wait_with_output().unwrap();
    done.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert!(
        o.status.code().is_some() || o.status.signal() != Some(libc::SIGKILL),
        "`morphrt {}` did not finish within {deadline:?}",
        args.join(" ")
    );
    o
}

/// A child process that is killed if the test ends (or fails) first, so a
/// failed test never leaves a `morphrt run` playing forever.
pub struct KillOnDrop(pub std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Writes `samples` as a mono 32-bit float WAV at 48 kHz.
pub fn write_mono_f32(path: &Path, samples: &[f32]) {
    write_mono_f32_at(path, 48_000, samples)
}

/// Writes `samples` as a mono 32-bit float WAV at `rate` Hz.
pub fn write_mono_f32_at(path: &Path, rate: u32, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for s in samples {
        w.write_sample(*s).unwrap();
    }
    w.finalize().unwrap();
}

/// The samples of a 32-bit float WAV, interleaved.
pub fn read_f32(path: &Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

/// The child's stderr, line by line, read on a thread (so a full pipe
/// never stalls the child).
pub fn stderr_lines(child: &mut std::process::Child) -> Receiver<String> {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// Starts `morphrt run SCENE --device clock ARGS…` with stdin piped and
/// stdout discarded; its stderr comes line by line ([`stderr_lines`]).
pub fn run_clock(scene: &Path, args: &[&str]) -> (KillOnDrop, Receiver<String>) {
    let mut child = bin()
        .arg("run")
        .arg(scene)
        .args(["--device", "clock"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map(KillOnDrop)
        .expect("run morphrt");
    let lines = stderr_lines(&mut child);
    (child, lines)
}

/// Saves `text` over `path` as editors do (a new file renamed over it),
/// after `pause`: past the watcher's debounce of the previous change, or
/// so that the session has played a while.
pub fn save_as_editor(path: &Path, text: &str, pause: Duration) {
    std::thread::sleep(pause);
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Types each key of `keys` into a running session, waiting for the line
/// starting with its answer, then `q`; returns the whole log once the
/// session has ended successfully.
pub fn press_then_quit(
    child: &mut KillOnDrop,
    lines: &Receiver<String>,
    mut log: Vec<String>,
    keys: &[(&str, &str)],
) -> String {
    use std::io::Write;
    for (key, answer) in keys {
        writeln!(child.stdin.as_mut().unwrap(), "{key}").unwrap();
        wait_line(lines, answer, &mut log);
    }
    writeln!(child.stdin.as_mut().unwrap(), "q").unwrap();
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    all
}

/// Replays `journal` and checks it gives what `capture` recorded bit for
/// bit (`log`: the session's output, shown on failure).
pub fn assert_replays(journal: &Path, capture: &Path, log: &str) {
    assert_replays_with(journal, capture, log, &[]);
}

/// [`assert_replays`] with more arguments to `replay` (`--threads 1`);
/// returns what `replay` said.
pub fn assert_replays_with(journal: &Path, capture: &Path, log: &str, more: &[&str]) -> String {
    let replayed = journal.with_extension("replayed.wav");
    let mut args = vec![
        "replay",
        journal.to_str().unwrap(),
        "-o",
        replayed.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    let o = morphrt(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let played = read_f32(capture);
    assert!(!played.is_empty(), "nothing was captured; log:\n{log}");
    assert!(
        read_f32(&replayed) == played,
        "the session does not replay bit for bit; log:\n{log}"
    );
    stderr(&o)
}

/// Waits (20 s at most) for a line starting with `prefix`, keeping every
/// line read in `log`.
pub fn wait_line(lines: &Receiver<String>, prefix: &str, log: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let l = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no `{prefix}` line; log:\n{}", log.join("\n")));
        let hit = l.starts_with(prefix);
        log.push(l);
        if hit {
            return;
        }
    }
}

/// Limits the size of the files the command's process may write to
/// `bytes`; a write past it fails with EFBIG (SIGXFSZ is ignored).
pub fn file_size_limit(c: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let mut l: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_FSIZE, &mut l);
            l.rlim_cur = (bytes as libc::rlim_t).min(l.rlim_max);
            libc::setrlimit(libc::RLIMIT_FSIZE, &l);
            // A write past the limit fails with EFBIG instead of killing.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
}

/// The input a test gives a shipped scene that reads audio input (the
/// `input-*` scenes), as a function of the absolute sample, so an engine
/// resumed or handed over at any sample reads what an uninterrupted one
/// does: plucked tones every 0.25 s over quiet noise, f32 values, channel
/// c a little detuned from channel 0.
pub struct TestInput;

impl TestInput {
    /// Input sample `n` of channel `c`.
    pub fn sample(n: u64, c: usize) -> f64 {
        let period = 12_000;
        let t = (n % period) as f64 / 48_000.0;
        let note = (n / period) % 4;
        let f = [220.0, 277.0, 330.0, 440.0][note as usize] * (1.0 + 0.01 * c as f64);
        let mut h =
            n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (c as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
        let noise = (h >> 40) as f64 / (1u64 << 24) as f64 - 0.5;
        let tone = libm::sin(2.0 * std::f64::consts::PI * f * t) * libm::exp(-t * 12.0);
        (0.5 * tone + 0.01 * noise) as f32 as f64
    }
}

impl morphrt::engine::InputFeed for TestInput {
    fn read(&mut self, start: u64, block: &mut morphrt::engine::InputBlock<'_>) {
        for c in 0..block.channels() {
            for (i, d) in block.channel_mut(c).iter_mut().enumerate() {
                *d = TestInput::sample(start + i as u64, c);
            }
        }
    }
}

/// The engine, fed [`TestInput`] when its scene reads audio input.
pub fn fed(mut e: morphrt::engine::Engine) -> morphrt::engine::Engine {
    if e.input_channels() > 0 {
        e.set_input_feed(Box::new(TestInput));
    }
    e
}

/// A standard MIDI file's variable-length quantity (a delta time).
pub fn midi_vlq(mut n: u32) -> Vec<u8> {
    let mut out = vec![(n & 0x7f) as u8];
    n >>= 7;
    while n > 0 {
        out.insert(0, (n & 0x7f) as u8 | 0x80);
        n >>= 7;
    }
    out
}

/// Waits until the WAV file `capture` (a session's `--capture`, its
/// header kept current while it plays) counts more than `frames` frames of
/// `channels` channels: audio played, not wall time passed.
pub fn wait_captured(capture: &Path, frames: usize, channels: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while hound::WavReader::open(capture).map_or(0, |r| r.len() as usize / channels) <= frames {
        assert!(
            Instant::now() < deadline,
            "`{}` never reached {frames} frames",
            capture.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The port a session started with `--osc 0` listens on, from its
/// `OSC: listening on ADDRESS:PORT` line in `log` (said before `playing`):
/// the system chose it, so no other test can take it meanwhile.
pub fn osc_port(log: &[String]) -> u16 {
    let line = log
        .iter()
        .find_map(|l| l.strip_prefix("OSC: listening on "))
        .unwrap_or_else(|| panic!("no `OSC: listening on` line: {}", log.join("\n")));
    let addr = line.split(' ').next().unwrap();
    addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// The next datagram on `socket` into `buf`, within `within`: its length,
/// or `None` when nothing came. A signal to the test process (a stopped and
/// continued process, a handler some test installed) interrupts a receive
/// with a timeout even under `SA_RESTART`; that is no reply missing, so the
/// wait goes on until the deadline.
pub fn recv_within(
    socket: &std::net::UdpSocket,
    buf: &mut [u8],
    within: Duration,
) -> Option<usize> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        socket.set_read_timeout(Some(left)).unwrap();
        match socket.recv_from(buf) {
            Ok((n, _)) => return Some(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None
            }
            Err(e) => panic!("receiving on {:?}: {e}", socket.local_addr()),
        }
    }
}

/// A scene of one oscillator `op` (220 Hz, amplitude 0.5) into a gain of
/// `gain`, under repro at `rate` in blocks of `block`; `extra` goes after
/// `outputs`.
pub fn osc_into_gain(op: &str, rate: u32, block: usize, gain: f64, extra: &str) -> String {
    format!(
        r#"{{
  "version": "1.0",
  "profile": "repro",
  "sample_rate": {rate},
  "profile_config": {{ "block_size": {block} }},
  "nodes": [
    {{ "id": "osc", "op": "{op}", "params": {{ "freq": "220Hz", "amp": 0.5 }} }},
    {{ "id": "out", "op": "gain", "params": {{ "gain": {gain} }} }}
  ],
  "edges": [ {{ "from": "osc", "to": "out" }} ],
  "outputs": {{ "main": ["out"] }}{extra}
}}
"#
    )
}

/// A scene of one `dc` node `d` of 0.25 on the main bus.
pub const DC: &str = r#"{"version": "1.0", "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.25}}],
 "outputs": {"main": "d"}}"#;

/// `morphrt render SCENE -o OUT ARGS…`.
pub fn render(scene: impl AsRef<Path>, out: &Path, args: &[&str]) -> Output {
    let mut all = vec![
        "render",
        scene.as_ref().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    morphrt(&all)
}

/// `morphrt render SCENE -o OUT --midi MIDI ARGS…`.
pub fn render_midi(scene: &Path, midi: &Path, out: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--midi", midi.to_str().unwrap()];
    all.extend_from_slice(args);
    render(scene, out, &all)
}

/// The fixed settings of a session at 48 kHz in blocks of 64 with `seed`
/// (live picks one from the clock without), no resource directories.
pub fn session_fixed(seed: Option<u64>) -> morphrt::engine::incoming::SessionFixed {
    morphrt::engine::incoming::SessionFixed {
        block_size: 64,
        sample_rate: 48_000,
        seed,
        auto_seed: None,
        resolver: morphrt::host::files::resources::Folders::shared(Vec::new()),
        workers: None,
    }
}

/// `text`, saved as `path`, compiled as an edit of a session with `fixed`
/// under `profile` (panics with the first diagnostic); a scene that reads
/// audio input is fed [`TestInput`] (by absolute sample, so the new
/// engine's fast-forward reads what the playing one did).
pub fn incoming(
    text: &str,
    path: &Path,
    fixed: &morphrt::engine::incoming::SessionFixed,
    profile: morphrt::profile::Profile,
) -> morphrt::engine::incoming::Incoming {
    fed_incoming(
        morphrt::engine::incoming::Incoming::compile(text, path, fixed, profile)
            .unwrap_or_else(|e| panic!("{}", e[0])),
    )
}

/// The incoming engine, fed [`TestInput`] when its scene reads audio input.
pub fn fed_incoming(
    mut i: morphrt::engine::incoming::Incoming,
) -> morphrt::engine::incoming::Incoming {
    let engine = *i.engine;
    i.engine = Box::new(fed(engine));
    i
}

/// Relative RMS error of `x` against `reference`, channel by channel, over
/// samples `from..to` (cut to the shorter of the two), leaving out the
/// ranges in `skip`.
pub fn rel_rms(
    reference: &[Vec<f64>],
    x: &[Vec<f64>],
    from: u64,
    to: u64,
    skip: &[(u64, u64)],
) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (r, y) in reference.iter().zip(x) {
        for i in from..to.min(r.len() as u64).min(y.len() as u64) {
            if skip.iter().any(|(s, e)| i >= *s && i < *e) {
                continue;
            }
            let (a, b) = (r[i as usize], y[i as usize]);
            num += (a - b) * (a - b);
            den += a * a;
        }
    }
    (num / den.max(1e-300)).sqrt()
}

#[test]
fn a_test_directory_is_removed_when_its_test_passes_and_kept_when_it_fails() {
    if std::env::var_os("MORPHRT_KEEP_TEST_DIRS").is_some() {
        return;
    }
    let passed = std::thread::spawn(|| temp_dir("cleanup-passed"))
        .join()
        .unwrap();
    assert!(!passed.exists(), "{} is left behind", passed.display());
    let failed = std::thread::spawn(|| {
        let d = temp_dir("cleanup-failed");
        std::fs::write(d.join("evidence"), "x").unwrap();
        let _ = std::panic::catch_unwind(|| panic!("a failing test"));
        d
    })
    .join()
    .unwrap();
    assert!(
        failed.join("evidence").exists(),
        "a failed test's files are gone"
    );
    std::fs::remove_dir_all(failed).unwrap();
}
