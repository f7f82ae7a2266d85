//! A paced fake device for the live benchmarks: a thread that calls the
//! player's callback every `period` frames at real-time pace (no sound
//! card needed) and times each call; and the live session around it.

use morphrt::engine::incoming::{Incoming, SessionFixed};
use morphrt::host::files::resources::Folders;
use morphrt::host::live::player::{Meters, Player, PlayerCell, Switches};
use morphrt::host::live::session::{LiveSession, Playing, SessionConfig};
use morphrt::profile::Profile;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Starts the audio thread; it runs until `stop` and returns, per
/// callback, the engine clock before it, its wall time and the CPU time
/// the thread spent in it, in nanoseconds. A wall time far above the CPU
/// time is time the thread did not run (preempted, or its virtual CPU
/// descheduled by the host): the machine's, not the callback's. With
/// `MORPHRT_BENCH_UNPACED=1` it calls back to back, never sleeping: the
/// callbacks' cost with warm caches, and more of them.
pub fn audio_thread(
    cell: Arc<PlayerCell>,
    stop: Arc<AtomicBool>,
    meters: Arc<Meters>,
    period: usize,
    rate: f64,
) -> JoinHandle<Vec<(u64, u32, u32)>> {
    std::thread::spawn(move || {
        let mut buf = vec![0.0f32; period * 2];
        let mut times: Vec<(u64, u32, u32)> = Vec::with_capacity(4_000_000);
        let t0 = Instant::now();
        let mut frames = 0u64;
        let unpaced = std::env::var_os("MORPHRT_BENCH_UNPACED").is_some();
        while !stop.load(Ordering::Relaxed) {
            let clock = meters.clock.load(Ordering::Relaxed);
            let (s, c) = (Instant::now(), thread_cpu_ns());
            cell.fill(&mut buf);
            let ns = s.elapsed().as_nanos() as u32;
            let cpu = thread_cpu_ns().saturating_sub(c) as u32;
            if times.len() < times.capacity() {
                times.push((clock, ns, cpu));
            }
            frames += period as u64;
            if unpaced {
                continue;
            }
            let due = t0 + Duration::from_secs_f64(frames as f64 / rate);
            if let Some(w) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(w);
            }
        }
        times
    })
}

/// A live session playing scene `text` (read from `path`) under `profile`
/// at blocks of `block`, seed 1, on a player with two channels: the session,
/// the player's cell for [`audio_thread`], its meters and sample rate.
pub fn session(
    path: &Path,
    text: &str,
    profile: Profile,
    block: usize,
    resources: Vec<PathBuf>,
) -> (LiveSession, Arc<PlayerCell>, Arc<Meters>, f64) {
    let dir = path.parent().map(Path::to_path_buf);
    let scene = morphrt::scene::load_str(text, &path.display().to_string(), dir).unwrap();
    let plan = morphrt::graph::compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(profile),
            block_size: Some(block),
            seed: Some(1),
            resolver: Folders::shared(resources.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let rate = plan.sample_rate as f64;
    let fixed = SessionFixed::from_plan(&plan, Folders::shared(resources));
    let first = Incoming::from_plan(plan, scene.profile, Vec::new());
    let meters = Arc::new(Meters::default());
    let (engine, first) = Playing::split(first);
    let mut player = Player::new(
        *engine,
        2,
        None,
        240,
        meters.clone(),
        Arc::new(Switches::default()),
        Instant::now(),
    );
    let session = LiveSession::new(
        SessionConfig::new(path, text.to_string(), fixed, first),
        player.link(),
        meters.clone(),
    );
    (session, PlayerCell::new(player), meters, rate)
}

/// The CPU time this thread has used, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
