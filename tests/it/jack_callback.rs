//! The JACK process callback never allocates or frees, under a flood of
//! JACK MIDI and across a change of the server's buffer size: morphrt's
//! JACK device plays a scene in this process, so the counting allocator
//! of the test binary sees its callback, against a `jackd -d dummy` of
//! its own. The server is named only in the environment of a child: the
//! test runs itself again as a child process with `JACK_DEFAULT_SERVER`
//! set, and the child prints what it counted on its standard output.
//!
//! libjack creates each client's process thread when the client is
//! activated, so the threads that appear while morphrt's client
//! activates are the ones counted (whole: all their allocations and
//! frees, by OS thread id). A client of the test, found the same way,
//! allocates once in its callback, which must be counted: the count is
//! then known to see a JACK process thread.

use crate::jack::Server;
use crate::support::counting::{thread_ids, unwatch, watch, watched_counts};
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::live::device::jack::{open_midi, JackHost, JACK_DEVICE};
use morphrt::host::live::device::{Host, Request, StreamEvents};
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Set in the child's environment: run the measurement, print its result.
const CHILD: &str = "MORPHRT_JACK_CALLBACK_CHILD";

/// MIDI messages the test's client writes into each period of the flood.
const FLOOD_PER_PERIOD: usize = 2000;

/// Periods of flood before the buffer-size change, and after it.
const FLOOD_PERIODS: u64 = 150;

/// The buffer size before and after the change.
const PERIOD_BEFORE: u32 = 64;
const PERIOD_AFTER: u32 = 256;

/// The two notes written into each period after the flood, at these
/// offsets inside it: a pair of them must reach the MIDI thread this far
/// apart. (Written again each period until a pair arrives whole: the
/// flood may have filled the MIDI ring, which then drops events, until
/// the MIDI thread drains it.)
const MARKS: [(u8, u32); 2] = [(100, 10), (101, 200)];

#[test]
fn the_jack_process_callback_never_allocates_under_a_midi_flood_and_a_buffer_size_change() {
    if std::env::var_os(CHILD).is_some() {
        measure();
        return;
    }
    let Some(server) = Server::start(48_000, PERIOD_BEFORE) else {
        return;
    };
    let o = server
        .command(&std::env::current_exe().unwrap().to_string_lossy())
        .args([
            "jack_callback::the_jack_process_callback_never_allocates_under_a_midi_flood_and_a_buffer_size_change",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("run the test binary");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let line = out
        .lines()
        .find_map(|l| Some(l.split_once("jack callback: ")?.1))
        .unwrap_or_else(|| panic!("no result line; stdout:\n{out}\nstderr:\n{err}"));
    let field = |name: &str| -> u64 {
        line.split(", ")
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in `{line}`"))
    };
    // The count sees a JACK process thread: the test client's one
    // allocation in its callback is there.
    assert!(
        field("control allocs") >= 1 && field("control frees") >= 1,
        "{line}"
    );
    assert!(field("threads") >= 1, "{line}");
    assert_eq!(
        (field("allocs"), field("frees")),
        (0, 0),
        "the JACK process callback allocated or freed: {line}"
    );
    assert!(field("periods after the change") >= FLOOD_PERIODS, "{line}");
    // Thousands of events a period went through the callback.
    assert!(
        field("flood delivered") >= FLOOD_PER_PERIOD as u64,
        "{line}"
    );
    assert_eq!(
        field("mark distance"),
        (MARKS[1].1 - MARKS[0].1) as u64,
        "{line}"
    );
    // The player played through the callback all along.
    assert!(
        field("frames played") >= FLOOD_PERIODS * PERIOD_AFTER as u64,
        "{line}"
    );
}

/// What the test's client does, cycle by cycle.
#[derive(Default)]
struct Script {
    /// 0: flood; 1: write the marks in every period; 2: quiet.
    phase: AtomicU32,
    /// Periods flooded at each buffer size.
    flooded_before: AtomicU64,
    flooded_after: AtomicU64,
    /// Messages written in the flood.
    written: AtomicU64,
    /// Set by the test: allocate once in the next period.
    allocate: AtomicBool,
    allocated: AtomicBool,
}

/// The test's client: floods its MIDI output, then writes the marks.
struct Flood {
    out: jack::Port<jack::MidiOut>,
    script: Arc<Script>,
}

impl jack::ProcessHandler for Flood {
    fn process(&mut self, _: &jack::Client, ps: &jack::ProcessScope) -> jack::Control {
        let n = ps.n_frames();
        let mut w = self.out.writer(ps);
        if self.script.allocate.swap(false, Ordering::AcqRel) {
            drop(std::hint::black_box(Box::new(n)));
            self.script.allocated.store(true, Ordering::Release);
        }
        match self.script.phase.load(Ordering::Acquire) {
            0 => {
                let mut written = 0;
                for i in 0..FLOOD_PER_PERIOD {
                    // Note on and off of notes 0 … 99, spread over the period.
                    let status = if i % 2 == 0 { 0x90 } else { 0x80 };
                    let bytes = [status, (i / 2 % 100) as u8, 64];
                    let time = (i as u64 * n as u64 / FLOOD_PER_PERIOD as u64) as u32;
                    if w.write(&jack::RawMidi {
                        time,
                        bytes: &bytes,
                    })
                    .is_err()
                    {
                        break;
                    }
                    written += 1;
                }
                self.script.written.fetch_add(written, Ordering::Relaxed);
                if written == FLOOD_PER_PERIOD as u64 {
                    let periods = if n == PERIOD_BEFORE {
                        &self.script.flooded_before
                    } else {
                        &self.script.flooded_after
                    };
                    periods.fetch_add(1, Ordering::Release);
                }
            }
            1 if n == PERIOD_AFTER => {
                for (note, time) in MARKS {
                    let _ = w.write(&jack::RawMidi {
                        time,
                        bytes: &[0x90, note, 100],
                    });
                }
            }
            _ => {}
        }
        jack::Control::Continue
    }
}

/// A message as the MIDI thread got it, and its output frame.
type Delivered = ([u8; 3], u64);

/// Waits until `done`, 60 s at most, saying `what` it waited for.
fn wait(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The threads that appear while `f` runs.
fn new_threads<R>(f: impl FnOnce() -> R) -> (R, Vec<i32>) {
    let before = thread_ids();
    let r = f();
    let born = thread_ids()
        .into_iter()
        .filter(|t| !before.contains(t))
        .collect();
    (r, born)
}

/// The child: plays a scene through morphrt's JACK device while the
/// test's client floods its MIDI port, changes the buffer size, and
/// prints what the allocator counted on the callback's threads.
fn measure() {
    // The test's client and its process thread, found as morphrt's is.
    let (flood_client, _) = jack::Client::new("flood", jack::ClientOptions::NO_START_SERVER)
        .expect("a client of the test's server");
    let out = flood_client
        .register_port("out", jack::MidiOut::default())
        .unwrap();
    let script = Arc::new(Script::default());
    let flood = Flood {
        out,
        script: script.clone(),
    };
    let (flood_client, control_threads) =
        new_threads(|| flood_client.activate_async((), flood).unwrap());
    assert!(!control_threads.is_empty(), "activating made no thread");

    // morphrt's MIDI input: the messages and the output frames they
    // reached the MIDI thread at.
    let delivered: Arc<Mutex<Vec<Delivered>>> = Arc::default();
    let into = delivered.clone();
    let _midi = open_midi(move |bytes, frame| {
        let mut m = [0u8; 3];
        m[..bytes.len()].copy_from_slice(bytes);
        into.lock().unwrap().push((m, frame));
        true
    });
    let scene =
        morphrt::scene::load_file(&crate::support::root().join("scenes/pan-sweep.json")).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(Profile::Live),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap();
    let opened = JackHost
        .open_output(
            Some(JACK_DEVICE),
            &Request {
                sample_rate: plan.sample_rate,
                bus_channels: 2,
                period: PERIOD_BEFORE as usize,
                rate_pinned: false,
                name: Some("morphrt-rt".to_string()),
                connect: Some("none".to_string()),
                channel_names: Vec::new(),
            },
        )
        .expect("open the JACK device");
    let mut device = opened.device;
    let meters = Arc::new(Meters::default());
    let player = Player::new(
        Engine::new(plan),
        opened.channels,
        None,
        240,
        meters.clone(),
        Arc::new(Switches::default()),
        Instant::now(),
    );
    let cell = PlayerCell::new(player);
    let (stream, threads) = new_threads(|| {
        device
            .open(cell.clone(), Arc::new(StreamEvents::default()))
            .expect("activate the JACK client")
    });
    let places = watch(&threads);
    let control = watch(&control_threads);
    flood_client
        .as_client()
        .connect_ports_by_name("flood:out", "morphrt-rt:midi_in")
        .expect("connect the flood to morphrt's MIDI port");

    script.allocate.store(true, Ordering::Release);
    wait("the test client's allocation", || {
        script.allocated.load(Ordering::Acquire)
    });
    wait("the flood before the change", || {
        script.flooded_before.load(Ordering::Acquire) >= FLOOD_PERIODS
    });
    flood_client
        .as_client()
        .set_buffer_size(PERIOD_AFTER)
        .expect("change the buffer size");
    wait("morphrt's device to follow the buffer size", || {
        device.period_frames() == Some(PERIOD_AFTER as usize)
    });
    wait("the flood after the change", || {
        script.flooded_after.load(Ordering::Acquire) >= FLOOD_PERIODS
    });
    let written = script.written.load(Ordering::Acquire);
    script.phase.store(1, Ordering::Release);
    // The frames of the first pair of marks that arrived whole: a second
    // mark, and a first mark as far before it as they were written (the
    // first mark of the same period; one of another period is a multiple
    // of the period further).
    let distance = (MARKS[1].1 - MARKS[0].1) as u64;
    let pair = || -> Option<(u64, u64)> {
        let d = delivered.lock().unwrap();
        let at = |note: u8| d.iter().filter(move |(m, _)| m[1] == note).map(|(_, f)| *f);
        at(MARKS[1].0).find_map(|b| at(MARKS[0].0).find(|a| a + distance == b).map(|a| (a, b)))
    };
    wait("a pair of marks to reach the MIDI thread", || {
        pair().is_some()
    });
    script.phase.store(2, Ordering::Release);
    let frames_played = meters.frames.load(Ordering::Relaxed);

    let (allocs, frees) = watched_counts(&places);
    let (control_allocs, control_frees) = watched_counts(&control);
    unwatch(&places);
    unwatch(&control);
    drop(stream);
    drop(flood_client);

    let (first, second) = pair().expect("waited for");
    let flood_delivered = delivered
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m[1] < MARKS[0].0)
        .count();
    println!(
        "jack callback: allocs {allocs}, frees {frees}, threads {}, control allocs {control_allocs}, control frees {control_frees}, periods after the change {}, flood written {written}, flood delivered {flood_delivered}, mark distance {}, frames played {}",
        threads.len(),
        script.flooded_after.load(Ordering::Acquire),
        second - first,
        frames_played,
    );
}
