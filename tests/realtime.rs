//! The engine's block loop never allocates or frees: every shipped scene,
//! every profile, odd block lengths, events and ramps, run under a counting
//! global allocator that only counts inside the real-time section.

mod common;

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static IN_RT: Cell<bool> = const { Cell::new(false) };
    // Per thread, so tests running in parallel do not count each other.
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static FREES: Cell<usize> = const { Cell::new(0) };
}

fn count(c: &'static std::thread::LocalKey<Cell<usize>>) {
    c.with(|c| c.set(c.get() + 1));
}

fn counts() -> (usize, usize) {
    (ALLOCS.with(Cell::get), FREES.with(Cell::get))
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if IN_RT.with(|f| f.get()) {
            count(&ALLOCS);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if IN_RT.with(|f| f.get()) {
            count(&FREES);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if IN_RT.with(|f| f.get()) {
            count(&ALLOCS);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` as real-time code: any allocation or free inside is counted.
fn realtime<R>(f: impl FnOnce() -> R) -> R {
    IN_RT.with(|c| c.set(true));
    let r = f();
    IN_RT.with(|c| c.set(false));
    r
}

#[test]
fn the_counter_catches_an_allocation() {
    let before = counts();
    realtime(|| drop(std::hint::black_box(vec![1u8; 16])));
    let after = counts();
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1));
}

#[test]
fn process_block_never_allocates_or_frees() {
    let blocks = 2000;
    for path in common::shipped_scenes() {
        let scene = morphrt::scene::load_file(&path).unwrap();
        for p in Profile::ALL {
            let plan = compile(
                &scene,
                &CompileOptions {
                    profile: Some(p),
                    seed: Some(1),
                    ..CompileOptions::default()
                },
            )
            .unwrap();
            let mut e = Engine::new(plan);
            let bs = e.block_size();
            // Jump close to the scene's events so ramps and splits run too.
            let (a0, f0) = counts();
            realtime(|| {
                for k in 0..blocks {
                    // Whole blocks mostly, with odd lengths mixed in.
                    let n = if k % 7 == 3 { 1 + (k * 37) % bs } else { bs };
                    e.process_block(n);
                    std::hint::black_box(e.bus().get(0, 0));
                }
            });
            let (a1, f1) = counts();
            assert_eq!(
                (a1 - a0, f1 - f0),
                (0, 0),
                "{} under {p}: allocations/frees inside process_block",
                path.display()
            );
            // Snapshot and restore are off the audio thread, but restore into
            // an existing engine must not allocate either (profile switches).
            let st = e.snapshot();
            let (a0, f0) = counts();
            realtime(|| e.restore(&st).unwrap());
            let (a1, f1) = counts();
            assert_eq!(
                (a1 - a0, f1 - f0),
                (0, 0),
                "{} under {p}: restore allocated",
                path.display()
            );
        }
    }
}

/// The real callback path (`PlayerCell::fill`, as cpal calls it) for at
/// least 10,000 engine blocks of every shipped scene under live, with a
/// device period that differs from the block size so the FIFO splits blocks.
#[test]
fn the_callback_never_allocates_over_10000_blocks_of_every_scene() {
    use morphrt::host::player::{Controls, Meters, Player, PlayerCell};
    use std::sync::Arc;
    for path in common::shipped_scenes() {
        let scene = morphrt::scene::load_file(&path).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(Profile::Live),
                seed: Some(1),
                ..CompileOptions::default()
            },
        )
        .unwrap();
        let block = plan.block_size;
        let engine = Engine::new(plan);
        let meters = Arc::new(Meters::default());
        let controls = Arc::new(Controls::default());
        let player = Player::new(
            engine,
            2,
            None,
            240,
            meters.clone(),
            controls.clone(),
            std::time::Instant::now(),
        );
        let cell = PlayerCell::new(player);
        let period = 48; // frames per callback, not the block size
        let mut buf = vec![0.0f32; period * 2];
        // Enough callbacks for 10,000 whole blocks before the stop near the end.
        let callbacks = 10_000 * block / period + 200;
        let before = counts();
        realtime(|| {
            for k in 0..callbacks {
                if k == callbacks - 100 {
                    // Stop near the end: the fade runs inside the callback too.
                    controls
                        .stop
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                cell.fill(&mut buf);
            }
        });
        let after = counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (0, 0),
            "{}: the callback allocated or freed",
            path.display()
        );
        let blocks = meters.clock.load(std::sync::atomic::Ordering::Relaxed) / block as u64;
        assert!(blocks >= 10_000, "{}: only {blocks} blocks", path.display());
        assert!(
            meters.finished.load(std::sync::atomic::Ordering::Relaxed),
            "the stop fade completed"
        );
    }
}
