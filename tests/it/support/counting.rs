//! A counting global allocator for the real-time tests: allocations and
//! frees are counted per thread, and only inside [`realtime`] sections.
//! It is the allocator of the whole test binary: what other tests (other
//! threads) and code outside a section allocate is not counted. Threads
//! the test does not run its own code on (a JACK process thread, which
//! libjack creates) are counted whole while [`watch`]ed, by their OS
//! thread id.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// Threads counted whole, by OS thread id (0: a free place).
const WATCHED_AT_ONCE: usize = 8;
static WATCHED: [AtomicI32; WATCHED_AT_ONCE] = [const { AtomicI32::new(0) }; WATCHED_AT_ONCE];
static WATCHED_ALLOCS: [AtomicUsize; WATCHED_AT_ONCE] =
    [const { AtomicUsize::new(0) }; WATCHED_AT_ONCE];
static WATCHED_FREES: [AtomicUsize; WATCHED_AT_ONCE] =
    [const { AtomicUsize::new(0) }; WATCHED_AT_ONCE];

struct Counting;

thread_local! {
    static IN_RT: Cell<bool> = const { Cell::new(false) };
    // Per thread, so tests running in parallel (and writer threads) do not
    // count each other.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static FREES: Cell<usize> = const { Cell::new(0) };
}

fn count(c: &'static std::thread::LocalKey<Cell<usize>>) {
    c.with(|c| c.set(c.get() + 1));
}

thread_local! {
    /// This thread's OS id, once asked (0: not yet).
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// The place of the calling thread among the watched ones, if it is one
/// (none while this thread records a backtrace: what that allocates is
/// the test's, not the thread's).
fn watched_place() -> Option<usize> {
    if WATCHED.iter().all(|w| w.load(Ordering::Relaxed) == 0) {
        return None;
    }
    if RECORDING.try_with(Cell::get).unwrap_or(true) {
        return None;
    }
    let tid = TID
        .try_with(|t| {
            if t.get() == 0 {
                // SAFETY: gettid has no preconditions.
                t.set(unsafe { libc::gettid() });
            }
            t.get()
        })
        .ok()?;
    WATCHED
        .iter()
        .position(|w| w.load(Ordering::Relaxed) == tid)
}

thread_local! {
    /// This thread is recording a backtrace ([`record_first`]).
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// Where a watched thread first allocated or freed since [`watch`]
/// (`kind` and a backtrace), for the message of a failed test.
static FIRST: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Records, the first time a watched thread allocates or frees since
/// [`watch`], what it did and its backtrace; what recording allocates is
/// not counted.
fn record_first(kind: &str) {
    if RECORDING.try_with(|r| r.replace(true)).unwrap_or(true) {
        return;
    }
    if let Ok(mut first) = FIRST.try_lock() {
        if first.is_none() {
            let trace = std::backtrace::Backtrace::force_capture();
            *first = Some(format!("{kind}\n{trace}"));
        }
    }
    RECORDING.with(|r| r.set(false));
}

/// What the watched threads first allocated or freed since [`watch`], with
/// its backtrace (none if nothing).
pub fn watched_first() -> Option<String> {
    FIRST.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Counts every allocation and free of the OS threads `tids` from now
/// on, wherever they run, until [`unwatch`]; returns their places, for
/// [`watched_counts`].
pub fn watch(tids: &[i32]) -> Vec<usize> {
    *FIRST.lock().unwrap_or_else(|e| e.into_inner()) = None;
    tids.iter()
        .map(|&tid| {
            (0..WATCHED_AT_ONCE)
                .find(|&i| {
                    if WATCHED[i].load(Ordering::SeqCst) != 0 {
                        return false;
                    }
                    WATCHED_ALLOCS[i].store(0, Ordering::Relaxed);
                    WATCHED_FREES[i].store(0, Ordering::Relaxed);
                    WATCHED[i]
                        .compare_exchange(0, tid, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                })
                .expect("a free place to watch a thread")
        })
        .collect()
}

/// Allocations and frees counted on the watched threads at `places`
/// since [`watch`].
pub fn watched_counts(places: &[usize]) -> (usize, usize) {
    places.iter().fold((0, 0), |(a, f), &i| {
        (
            a + WATCHED_ALLOCS[i].load(Ordering::SeqCst),
            f + WATCHED_FREES[i].load(Ordering::SeqCst),
        )
    })
}

/// Stops counting the threads at `places`.
pub fn unwatch(places: &[usize]) {
    for &i in places {
        WATCHED[i].store(0, Ordering::SeqCst);
    }
}

/// The OS ids of this process's threads now (`/proc/self/task`).
pub fn thread_ids() -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .expect("read /proc/self/task")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Allocations and frees counted on this thread so far.
pub fn counts() -> (usize, usize) {
    (ALLOCS.with(Cell::get), FREES.with(Cell::get))
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if IN_RT.with(|f| f.get()) {
            count(&ALLOCS);
        }
        if let Some(i) = watched_place() {
            WATCHED_ALLOCS[i].fetch_add(1, Ordering::Relaxed);
            record_first("an allocation");
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if IN_RT.with(|f| f.get()) {
            count(&FREES);
        }
        if let Some(i) = watched_place() {
            WATCHED_FREES[i].fetch_add(1, Ordering::Relaxed);
            record_first("a free");
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if IN_RT.with(|f| f.get()) {
            count(&ALLOCS);
        }
        if let Some(i) = watched_place() {
            WATCHED_ALLOCS[i].fetch_add(1, Ordering::Relaxed);
            record_first("a reallocation");
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` as real-time code: any allocation or free inside is counted.
/// The section ends when `f` returns or unwinds.
pub fn realtime<R>(f: impl FnOnce() -> R) -> R {
    struct End;
    impl Drop for End {
        fn drop(&mut self) {
            IN_RT.with(|c| c.set(false));
        }
    }
    IN_RT.with(|c| c.set(true));
    let _end = End;
    f()
}
