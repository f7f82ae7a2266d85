//! The worker pool: threads spawned once, when a host asks for more than
//! one ([`Workers::new`]), that run the independent nodes of a level beside
//! the audio thread (`parallel.rs` says what they run and why the bits are
//! the same at any thread count).
//!
//! **Waking.** A level is published in one atomic word per thread (its
//! segment: an epoch, the segment's end and the next step of it to claim)
//! and announced in one more. Thread `k` (the audio thread is 0) claims
//! the steps of its own segment, the `k`-th of `threads` equal runs of the
//! level's steps, by compare-and-swap, then those left in the others, in
//! turn, until none is left. So a step tends to run on the same thread
//! level after level (a voice, a node, a group's part keeps its state in
//! that core's cache) while a slow thread's steps are still taken by the
//! others; which thread runs which step depends on timing and nothing
//! else does. An idle worker spins a bounded number of times watching the
//! announcement, then parks (`std::thread::park`, a futex on Linux: no
//! lock, no allocation); publishing a level unparks every worker, which
//! costs an atomic swap for a worker that is not parked.
//!
//! **Between callbacks.** Waking a parked worker can take longer than the
//! level it is woken for (tens of microseconds where the core it runs on
//! has gone idle). So a callback that sets its deadline
//! ([`Workers::set_deadline_after`]) also says when the next callback is
//! due, and a worker that has spun out parks only until
//! [`WAKE_EARLY_NS`] before then, then spins up to [`WAKE_SPIN_NS`] for
//! that callback's first level; it parks for good (until a level is
//! published) when no callback is due.
//!
//! **More threads than cores.** Then no thread spins: an idle worker
//! parks at once and the waiting caller yields at once, since a spinning
//! thread would hold a core that a thread with work needs.
//!
//! **Priority.** Each worker is put under real-time scheduling
//! (`SCHED_FIFO`) when the pool is made, where the system allows it
//! ([`Workers::realtime`] says whether it did).
//!
//! **Waiting.** The audio thread, done claiming, spins on the count of
//! finished steps (yielding its time slice after a bounded spin) until the
//! last worker's step is done: no mutex, no allocation.
//!
//! **The job.** What a level's steps need (the engine's buffers, the chunk)
//! is written by the audio thread before it publishes the level and read
//! by a worker only after its claim succeeds, which synchronises with the
//! publication; the audio thread writes the next job only after every
//! step of this one is done.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};

/// Spins of an idle worker before it parks.
const IDLE_SPINS: u32 = 1 << 11;
/// Spins of the waiting audio thread before it yields its time slice.
const WAIT_SPINS: u32 = 1 << 10;

/// How long before the next callback is due a worker wakes to spin for its
/// first level.
pub(super) const WAKE_EARLY_NS: u64 = 150_000;
/// How long a worker woken for a callback spins for its first level before
/// it parks again.
pub(super) const WAKE_SPIN_NS: u64 = 400_000;
/// A worker parks until a callback only when that is at least this far off.
const MIN_TIMED_PARK_NS: u64 = 20_000;

/// What a worker runs for each step it claims: `run(data, step)`.
#[derive(Clone, Copy)]
pub(super) struct Job {
    pub(super) run: unsafe fn(*const (), usize),
    pub(super) data: *const (),
}

/// A pool of worker threads shared by the engines of a session (cheap to
/// clone). The threads end when the last clone is dropped.
///
/// ```
/// use morphrt_core::engine::Workers;
///
/// let w = Workers::new(3);
/// assert_eq!(w.threads(), 3);
/// ```
#[derive(Clone)]
pub struct Workers {
    inner: Arc<Pool>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("threads", &self.threads())
            .field("min_work_ns", &self.min_work_ns())
            .finish()
    }
}

struct Pool {
    shared: Arc<Shared>,
    threads: Vec<Thread>,
    handles: Vec<JoinHandle<()>>,
    /// Every worker runs under real-time scheduling ([`raise_priority`]).
    realtime: bool,
}

/// What one worker counts, written by that worker alone (preallocated:
/// counting is an atomic add).
#[derive(Default)]
struct Tally {
    /// The worker's OS thread id (0 where there is none).
    os_id: AtomicI32,
    /// Steps it ran.
    steps: AtomicU64,
    /// Blocks in which it finished a step after the deadline.
    xruns: AtomicU64,
    /// The deadline of the block it last counted an xrun in.
    late_at: AtomicU64,
}

struct Shared {
    /// The level's announcement: epoch (24 bits) | steps (20 bits) | 0.
    word: AtomicU64,
    /// One per thread, thread `k` at `k`: epoch (24 bits) | the end of its
    /// segment (20 bits) | the next step of it to claim (20 bits).
    segments: Box<[AtomicU64]>,
    /// Steps of the current level finished.
    done: AtomicUsize,
    job: UnsafeCell<Job>,
    quit: AtomicBool,
    /// A thread is publishing levels (`Workers::run`): another thread
    /// that calls then runs its steps alone.
    busy: AtomicBool,
    /// Estimated nanoseconds of work a level's other steps must add up to
    /// before it is spread over the workers.
    min_work_ns: AtomicU64,
    /// The current block's deadline, in nanoseconds after `origin` (0:
    /// none), set by [`Workers::set_deadline_after`].
    deadline_ns: AtomicU64,
    /// When a worker that has spun out should be awake again for the next
    /// callback, in nanoseconds after `origin` (0: no callback due).
    wake_at_ns: AtomicU64,
    origin: std::time::Instant,
    /// One per worker, worker `k` at `k − 1`.
    tallies: Box<[Tally]>,
    /// Workers that have started their loop (an atomic count, so that a
    /// worker frees nothing once it has said so).
    started: AtomicUsize,
    /// Spins of an idle worker before it parks, and of the waiting caller
    /// before it yields: [`IDLE_SPINS`] and [`WAIT_SPINS`], or none when
    /// the pool has more threads than the machine has cores, where a
    /// spinning thread takes the core a busy one needs.
    spins: (u32, u32),
    /// A hook for tests: a worker (its number; 0: none) that sleeps
    /// `delay_ns` after claiming each step, as a preempted worker would.
    delay: (AtomicUsize, AtomicU64),
}

// SAFETY: `job` is written only by the thread that publishes a level,
// before publishing it (Release), and while no step of the previous level
// is unfinished; a worker reads it only after it saw the level published
// (Acquire) and a claim in that level succeeded. The pointer in the job is
// to data the publishing thread keeps alive and unaliased until every step
// is done.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

const STEP_BITS: u32 = 20;
const STEP_MASK: u64 = (1 << STEP_BITS) - 1;

fn unpack(word: u64) -> (u64, usize, usize) {
    (
        word >> (2 * STEP_BITS),
        ((word >> STEP_BITS) & STEP_MASK) as usize,
        (word & STEP_MASK) as usize,
    )
}

/// The most steps one level may publish.
pub(super) const MAX_STEPS: usize = STEP_MASK as usize;

/// The default of [`Workers::min_work_ns`]: about what waking a parked
/// worker and handing it a level costs, several times over.
pub const MIN_WORK_NS: u64 = 20_000;

impl Workers {
    /// A pool for `threads` threads in all: the caller's and `threads − 1`
    /// workers (none for 0 or 1), at normal priority (an offline render's).
    /// Spawns the workers (allocates): call it off the audio thread, once
    /// per session.
    ///
    /// # Panics
    /// When the system refuses to start a worker; [`try_new`](Self::try_new)
    /// returns its refusal.
    pub fn new(threads: usize) -> Workers {
        Workers::try_new(threads).expect("the system starts the worker threads")
    }

    /// [`new`](Self::new) for a real-time session: the workers ask for
    /// `SCHED_FIFO` at priority 10 ([`realtime`](Self::realtime)
    /// says whether the system allowed it).
    ///
    /// # Panics
    /// When the system refuses to start a worker
    /// ([`try_new_realtime`](Self::try_new_realtime) returns its refusal).
    pub fn new_realtime(threads: usize) -> Workers {
        Workers::try_new_realtime(threads).expect("the system starts the worker threads")
    }

    /// [`new`](Self::new), or the system's refusal to start a worker (too
    /// many threads for its limits): the workers started before it are
    /// stopped and joined, and the error says how many of how many.
    pub fn try_new(threads: usize) -> std::io::Result<Workers> {
        Workers::spawn(threads, false)
    }

    /// [`new_realtime`](Self::new_realtime), or the system's refusal to
    /// start a worker, as [`try_new`](Self::try_new).
    pub fn try_new_realtime(threads: usize) -> std::io::Result<Workers> {
        Workers::spawn(threads, true)
    }

    fn spawn(threads: usize, raise: bool) -> std::io::Result<Workers> {
        let shared = Arc::new(Shared {
            word: AtomicU64::new(0),
            segments: (0..threads.max(1)).map(|_| AtomicU64::new(0)).collect(),
            done: AtomicUsize::new(0),
            job: UnsafeCell::new(Job {
                run: noop,
                data: std::ptr::null(),
            }),
            quit: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            min_work_ns: AtomicU64::new(MIN_WORK_NS),
            deadline_ns: AtomicU64::new(0),
            wake_at_ns: AtomicU64::new(0),
            origin: std::time::Instant::now(),
            tallies: (1..threads.max(1)).map(|_| Tally::default()).collect(),
            started: AtomicUsize::new(0),
            spins: if threads > std::thread::available_parallelism().map_or(1, usize::from) {
                (0, 0)
            } else {
                (IDLE_SPINS, WAIT_SPINS)
            },
            delay: (AtomicUsize::new(0), AtomicU64::new(0)),
        });
        let mut handles = Vec::new();
        for k in 1..threads.max(1) {
            let s = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("morphrt-worker-{k}"))
                .spawn(move || {
                    s.tallies[k - 1]
                        .os_id
                        .store(os_thread_id(), Ordering::Relaxed);
                    s.started.fetch_add(1, Ordering::Release);
                    worker(&s, k)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    let started = handles.len();
                    // The pool's drop stops and joins the workers started.
                    drop(Pool {
                        shared,
                        threads: handles.iter().map(|h| h.thread().clone()).collect(),
                        handles,
                        realtime: false,
                    });
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!(
                            "the system started {started} of the {} worker threads asked for, then refused one: {e}",
                            threads - 1
                        ),
                    ));
                }
            }
        }
        // Every worker has written its id and is in its loop, where it
        // neither allocates nor frees, before the pool is handed out.
        while shared.started.load(Ordering::Acquire) < handles.len() {
            std::thread::yield_now();
        }
        let threads = handles.iter().map(|h| h.thread().clone()).collect();
        let realtime = raise && handles.iter().all(raise_priority) || handles.is_empty();
        Ok(Workers {
            inner: Arc::new(Pool {
                shared,
                threads,
                handles,
                realtime,
            }),
        })
    }

    /// Whether every worker runs under real-time scheduling (`SCHED_FIFO`
    /// at priority 10), as asked by [`new_realtime`](Self::new_realtime)
    /// and allowed by the system when the pool was made; false for
    /// [`new`](Self::new)'s pool and where the system does not allow it
    /// (no privilege, no such policy), the workers then running at their
    /// normal priority. True for a pool without workers.
    pub fn realtime(&self) -> bool {
        self.inner.realtime
    }

    /// Threads in all, the caller's included.
    pub fn threads(&self) -> usize {
        self.inner.threads.len() + 1
    }

    /// Estimated nanoseconds a level's work must save before it is spread
    /// over the workers (a smaller level runs on the calling thread alone).
    pub fn min_work_ns(&self) -> u64 {
        self.inner.shared.min_work_ns.load(Ordering::Relaxed)
    }

    /// Sets [`min_work_ns`](Self::min_work_ns) (0: every level of more
    /// than one step is spread).
    pub fn set_min_work_ns(&self, ns: u64) {
        self.inner.shared.min_work_ns.store(ns, Ordering::Relaxed);
    }

    /// The OS thread ids of the workers, worker 1 first (Linux; 0
    /// elsewhere): for tests that watch what those threads do (count
    /// their allocations).
    pub fn worker_os_ids(&self) -> Vec<i32> {
        let t = &self.inner.shared.tallies;
        t.iter().map(|t| t.os_id.load(Ordering::Relaxed)).collect()
    }

    /// Steps (nodes of a level, lane groups, voices) worker `k` (1 to
    /// `threads() − 1`) has run.
    pub fn steps_run(&self, k: usize) -> u64 {
        self.inner.shared.tallies[k - 1]
            .steps
            .load(Ordering::Acquire)
    }

    /// Xruns of worker `k` (1 to `threads() − 1`): blocks in which it
    /// took up a level before the deadline
    /// [`set_deadline_after`](Self::set_deadline_after) gave and finished
    /// its steps after it, so that the caller waited for it past its
    /// budget.
    pub fn xruns(&self, k: usize) -> u64 {
        self.inner.shared.tallies[k - 1]
            .xruns
            .load(Ordering::Acquire)
    }

    /// What the pool adds to a level: publishing it, waking the workers,
    /// their claims and the wait for the last one. Each of `rounds` levels
    /// has one step per thread, each step busy for `step_ns`; the result
    /// is the median of (the level's time − `step_ns`), in nanoseconds (0
    /// for a pool without workers). Takes the pool for the calling thread
    /// while it runs: for `calibrate`, not for an audio thread.
    pub fn handoff_ns(&self, rounds: usize, step_ns: u64) -> f64 {
        let steps = self.threads();
        if steps < 2 || rounds == 0 {
            return 0.0;
        }
        unsafe fn busy(data: *const (), _: usize) {
            // SAFETY: `data` is the `u64` below, alive for the whole level.
            let ns = unsafe { *(data as *const u64) };
            let t = std::time::Instant::now();
            while (t.elapsed().as_nanos() as u64) < ns {
                std::hint::spin_loop();
            }
        }
        let mut times: Vec<f64> = (0..rounds)
            .map(|_| {
                let t = std::time::Instant::now();
                // SAFETY: `busy` only reads `step_ns`, which outlives the
                // call, from any thread.
                unsafe {
                    self.run(
                        Job {
                            run: busy,
                            data: &step_ns as *const u64 as *const (),
                        },
                        steps,
                    )
                };
                t.elapsed().as_nanos() as f64 - step_ns as f64
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2].max(0.0)
    }

    /// Sets the deadline of the block about to run: `ns` nanoseconds from
    /// now (0: none). Real-time safe (a clock read and atomic stores);
    /// the callback calls it as it starts, with its budget, which is also
    /// when the next callback is due: a worker that has spun out by then
    /// wakes 150 µs (`WAKE_EARLY_NS`) before it.
    pub fn set_deadline_after(&self, ns: u64) {
        let s = &*self.inner.shared;
        let at = match ns {
            0 => 0,
            ns => (s.origin.elapsed().as_nanos() as u64 + ns).max(1),
        };
        s.deadline_ns.store(at, Ordering::Relaxed);
        if at != 0 {
            s.wake_at_ns
                .store(at.saturating_sub(WAKE_EARLY_NS).max(1), Ordering::Relaxed);
        }
    }

    /// A hook for tests (`run --thread-test-delay`): worker `k` (0: none)
    /// sleeps `ns` after each step it claims, as a preempted worker would,
    /// so that it misses the callback's deadline.
    #[doc(hidden)]
    pub fn delay_worker(&self, k: usize, ns: u64) {
        let d = &self.inner.shared.delay;
        d.1.store(ns, Ordering::Relaxed);
        d.0.store(k, Ordering::Relaxed);
    }

    /// Runs `job` for steps `0..steps` on this thread and the workers;
    /// returns when every step is done. Real-time safe: no allocation,
    /// lock or blocking call. The engines of a session share one pool: while
    /// one thread runs a job on it (the audio thread), a job another thread
    /// brings (the control thread fast-forwarding an incoming engine) runs
    /// on that thread alone.
    ///
    /// # Safety
    /// `job.run(job.data, k)` must be safe to call for each `k` in
    /// `0..steps`, from any thread, concurrently with the calls for the
    /// other steps.
    pub(super) unsafe fn run(&self, job: Job, steps: usize) {
        debug_assert!(steps <= MAX_STEPS);
        let s = &*self.inner.shared;
        if s.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            for k in 0..steps {
                // SAFETY: the caller's contract.
                unsafe { (job.run)(job.data, k) };
            }
            return;
        }
        let (epoch, _, _) = unpack(s.word.load(Ordering::Relaxed));
        let epoch = (epoch + 1) & ((1 << 24) - 1);
        // SAFETY: every step of the previous level is done (this function
        // returned), so no worker reads the job now; see `Shared`.
        unsafe { *s.job.get() = job };
        s.done.store(0, Ordering::Relaxed);
        let segments = s.segments.len();
        for (j, seg) in s.segments.iter().enumerate() {
            let (from, to) = (steps * j / segments, steps * (j + 1) / segments);
            seg.store(
                epoch << (2 * STEP_BITS) | (to as u64) << STEP_BITS | from as u64,
                Ordering::Release,
            );
        }
        s.word.store(
            epoch << (2 * STEP_BITS) | (steps as u64) << STEP_BITS,
            Ordering::Release,
        );
        for t in &self.inner.threads {
            t.unpark();
        }
        let mine = claim_all(s, epoch, 0);
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) + mine < steps {
            if spins < s.spins.1 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        s.busy.store(false, Ordering::Release);
    }
}

unsafe fn noop(_: *const (), _: usize) {}

/// The `SCHED_FIFO` priority the workers ask for: above every thread of
/// normal priority, below the system's own real-time threads.
pub const WORKER_PRIORITY: i32 = 10;

/// Puts the thread of `h` under `SCHED_FIFO` at priority 10:
/// false if the system does not allow it.
#[cfg(unix)]
fn raise_priority(h: &JoinHandle<()>) -> bool {
    use std::os::unix::thread::JoinHandleExt;
    let param = libc::sched_param {
        sched_priority: WORKER_PRIORITY,
    };
    // SAFETY: the thread of `h` is alive (its handle is held, not joined)
    // and `param` is a valid `sched_param`.
    unsafe { libc::pthread_setschedparam(h.as_pthread_t(), libc::SCHED_FIFO, &param) == 0 }
}

#[cfg(not(unix))]
fn raise_priority(_: &JoinHandle<()>) -> bool {
    false
}

/// Claims and runs steps of level `epoch` until none is left, those of
/// its own segment first; returns how many this thread ran (the caller
/// counts its own; a worker adds its steps to `done`).
/// `k`: the worker number of the calling thread (0: the caller of
/// [`Workers::run`]).
fn claim_all(s: &Shared, epoch: u64, k: usize) -> usize {
    let mut ran = 0;
    let segments = s.segments.len();
    for j in 0..segments {
        let seg = &s.segments[(k + j) % segments];
        let mut word = seg.load(Ordering::Acquire);
        loop {
            let (e, end, next) = unpack(word);
            if e != epoch || next >= end {
                break;
            }
            match seg.compare_exchange_weak(word, word + 1, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => {
                    // SAFETY: the claim succeeded in `epoch`, whose job was
                    // written before it was published; see `Shared`.
                    let job = unsafe { *s.job.get() };
                    if k != 0 && s.delay.0.load(Ordering::Relaxed) == k {
                        std::thread::sleep(std::time::Duration::from_nanos(
                            s.delay.1.load(Ordering::Relaxed),
                        ));
                    }
                    // SAFETY: step `next` of this level is claimed by this
                    // thread alone; `Workers::run`'s contract.
                    unsafe { (job.run)(job.data, next) };
                    ran += 1;
                    word = seg.load(Ordering::Acquire);
                }
                Err(w) => word = w,
            }
        }
    }
    ran
}

/// The calling thread's OS id (Linux), 0 elsewhere.
fn os_thread_id() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions.
    return unsafe { libc::gettid() };
    #[cfg(not(target_os = "linux"))]
    return 0;
}

/// Worker `k`'s loop.
fn worker(s: &Shared, k: usize) {
    let tally = &s.tallies[k - 1];
    let mut seen = 0u64;
    loop {
        let mut spins = 0u32;
        // After a timed wake: spin for a level until then (ns after `origin`).
        let mut spin_until = 0u64;
        let epoch = loop {
            if s.quit.load(Ordering::Acquire) {
                return;
            }
            let (e, _, _) = unpack(s.word.load(Ordering::Acquire));
            if e != seen {
                break e;
            }
            if spins < s.spins.0 {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            let now = s.origin.elapsed().as_nanos() as u64;
            if now < spin_until {
                std::hint::spin_loop();
                continue;
            }
            // An oversubscribed pool does not spin for callbacks either.
            let wake_at = match s.spins.0 {
                0 => 0,
                _ => s.wake_at_ns.load(Ordering::Relaxed),
            };
            if wake_at > now + MIN_TIMED_PARK_NS {
                // Asleep until just before the next callback, then spinning
                // for its first level; woken earlier (a level published, or
                // an unpark left from one), it looks for a level and parks
                // again without spinning.
                std::thread::park_timeout(std::time::Duration::from_nanos(wake_at - now));
                let woke = s.origin.elapsed().as_nanos() as u64;
                if woke + MIN_TIMED_PARK_NS >= wake_at {
                    spin_until = woke + WAKE_SPIN_NS;
                    spins = 0;
                }
            } else {
                std::thread::park();
                spin_until = 0;
                spins = 0;
            }
        };
        seen = epoch;
        let woke = s.origin.elapsed().as_nanos() as u64;
        let ran = claim_all(s, epoch, k);
        if ran > 0 {
            tally.steps.fetch_add(ran as u64, Ordering::Release);
            // Late: woken before the deadline, done after it (a worker
            // that starts a level after the deadline made no one wait
            // past it). Counted before the steps are marked done, so the
            // caller sees the xrun when it returns.
            let deadline = s.deadline_ns.load(Ordering::Relaxed);
            if deadline != 0
                && woke <= deadline
                && s.origin.elapsed().as_nanos() as u64 > deadline
                && tally.late_at.swap(deadline, Ordering::Relaxed) != deadline
            {
                tally.xruns.fetch_add(1, Ordering::Release);
            }
            s.done.fetch_add(ran, Ordering::Release);
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::Release);
        for t in &self.threads {
            t.unpark();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Whether the system lets a thread of this process take `SCHED_FIFO`
    /// at the workers' priority, asked on a thread of the test's own.
    fn fifo_allowed() -> bool {
        std::thread::spawn(|| {
            let param = libc::sched_param {
                sched_priority: WORKER_PRIORITY,
            };
            // SAFETY: this thread's own handle and a valid `sched_param`.
            unsafe {
                libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0
            }
        })
        .join()
        .unwrap()
    }

    /// Each worker's scheduling policy and priority.
    fn policies(w: &Workers) -> Vec<(i32, i32)> {
        use std::os::unix::thread::JoinHandleExt;
        w.inner
            .handles
            .iter()
            .map(|h| {
                let mut policy = 0;
                let mut param = libc::sched_param { sched_priority: 0 };
                // SAFETY: a live worker's handle, valid out-pointers.
                let rc = unsafe {
                    libc::pthread_getschedparam(h.as_pthread_t(), &mut policy, &mut param)
                };
                assert_eq!(rc, 0);
                (policy, param.sched_priority)
            })
            .collect()
    }

    #[test]
    fn realtime_workers_run_under_fifo_exactly_when_the_system_allows_it() {
        let w = Workers::new_realtime(3);
        assert_eq!(w.realtime(), fifo_allowed());
        for (policy, priority) in policies(&w) {
            assert_eq!(policy == libc::SCHED_FIFO, w.realtime());
            if w.realtime() {
                assert_eq!(priority, WORKER_PRIORITY);
            }
        }
        assert!(Workers::new_realtime(1).realtime(), "no worker to raise");
    }

    #[test]
    fn an_offline_pool_keeps_its_workers_at_normal_priority() {
        let w = Workers::new(3);
        assert!(!w.realtime());
        assert_eq!(policies(&w), vec![(libc::SCHED_OTHER, 0); 2]);
    }

    /// CPU time worker 1 of `w` has used.
    fn worker_cpu(w: &Workers) -> std::time::Duration {
        use std::os::unix::thread::JoinHandleExt;
        let mut clock: libc::clockid_t = 0;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a live worker's handle and valid out-pointers.
        unsafe {
            assert_eq!(
                libc::pthread_getcpuclockid(w.inner.handles[0].as_pthread_t(), &mut clock),
                0
            );
            assert_eq!(libc::clock_gettime(clock, &mut ts), 0);
        }
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Callbacks 10 ms apart, each a level of two steps of 300 µs: the
    /// worker sleeps between them (it wakes shortly before each is due
    /// rather than spinning through the gap), and is awake to take a step
    /// of some of them.
    #[test]
    fn between_callbacks_a_worker_sleeps_until_the_next_is_due() {
        const PERIOD: std::time::Duration = std::time::Duration::from_millis(10);
        let w = Workers::new(2);
        unsafe fn busy(_: *const (), _: usize) {
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_micros(300) {
                std::hint::spin_loop();
            }
        }
        let start = std::time::Instant::now();
        let cpu = worker_cpu(&w);
        let callbacks = 40;
        for k in 1..=callbacks {
            w.set_deadline_after(PERIOD.as_nanos() as u64);
            // SAFETY: `busy` touches nothing.
            unsafe {
                w.run(
                    Job {
                        run: busy,
                        data: std::ptr::null(),
                    },
                    2,
                )
            };
            w.set_deadline_after(0);
            if let Some(left) = (PERIOD * k).checked_sub(start.elapsed()) {
                std::thread::sleep(left);
            }
        }
        let wall = start.elapsed();
        let used = worker_cpu(&w) - cpu;
        // Per callback: at most its step, its bounded spin after it, and
        // the spin from its early wake to the next callback's level.
        assert!(
            used < wall / 2,
            "the worker used {used:?} of CPU in {wall:?}: it spins between callbacks"
        );
        // On one core the caller may finish every level before the worker
        // is scheduled at all.
        if std::thread::available_parallelism().map_or(1, usize::from) >= 2 {
            assert!(
                w.steps_run(1) > 0,
                "the worker took no step of {callbacks} callbacks"
            );
        }
    }

    /// Each thread takes its own segment of a level first: of four steps
    /// on two threads, the caller runs 0 and 1, the worker 2 and 3. Each
    /// step waits (up to 10 s) until its partner in the other segment has
    /// started (0 with 2, 1 with 3), so neither thread can finish its first
    /// step before the other has claimed its own; with one counter for the
    /// whole level the worker would claim step 1, and steps 0 and 1 would
    /// each wait for a step no thread is free to start.
    #[test]
    fn each_thread_takes_its_own_segment_of_a_level_first() {
        struct Seen {
            thread: Vec<std::sync::Mutex<Option<std::thread::ThreadId>>>,
            started: Vec<AtomicBool>,
        }
        unsafe fn step(data: *const (), k: usize) {
            // SAFETY: `data` is the `Seen` below, alive for the level.
            let seen = unsafe { &*(data as *const Seen) };
            *seen.thread[k].lock().unwrap() = Some(std::thread::current().id());
            seen.started[k].store(true, Ordering::Release);
            let partner = (k + 2) % 4;
            let t = std::time::Instant::now();
            while !seen.started[partner].load(Ordering::Acquire)
                && t.elapsed() < std::time::Duration::from_secs(10)
            {
                std::thread::yield_now();
            }
        }
        let w = Workers::new(2);
        let seen = Seen {
            thread: (0..4).map(|_| std::sync::Mutex::new(None)).collect(),
            started: (0..4).map(|_| AtomicBool::new(false)).collect(),
        };
        let t = std::time::Instant::now();
        // SAFETY: `step` touches only `seen`, which outlives the level.
        unsafe {
            w.run(
                Job {
                    run: step,
                    data: &seen as *const Seen as *const (),
                },
                4,
            )
        };
        let ran: Vec<_> = seen
            .thread
            .iter()
            .map(|m| m.lock().unwrap().unwrap())
            .collect();
        let me = std::thread::current().id();
        assert_eq!(ran[0], me, "the caller runs step 0");
        assert_eq!(ran[1], me, "the caller runs step 1");
        assert!(ran[2] != me && ran[3] == ran[2], "the worker runs 2 and 3");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "no step waited out"
        );
    }

    /// A pool with more threads than cores neither spins its idle workers
    /// nor its waiting caller; one within the cores does both.
    #[test]
    fn only_a_pool_within_the_cores_spins() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        for threads in [2, cores, cores + 1, 2 * cores + 3] {
            let w = Workers::new(threads);
            let want = if threads > cores {
                (0, 0)
            } else {
                (IDLE_SPINS, WAIT_SPINS)
            };
            assert_eq!(
                w.inner.shared.spins, want,
                "{threads} threads on {cores} cores"
            );
            // Either way a level runs every step, once.
            let counts: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
            unsafe fn count(data: *const (), k: usize) {
                // SAFETY: `data` is `counts`, alive for the level.
                let counts = unsafe { &*(data as *const Vec<AtomicUsize>) };
                counts[k].fetch_add(1, Ordering::Relaxed);
            }
            for _ in 0..100 {
                // SAFETY: `count` only adds to `counts`, which outlives the level.
                unsafe {
                    w.run(
                        Job {
                            run: count,
                            data: &counts as *const Vec<AtomicUsize> as *const (),
                        },
                        counts.len(),
                    )
                };
            }
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 100));
        }
    }
}
