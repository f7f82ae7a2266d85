//! A counting global allocator for the real-time tests: allocations and
//! frees are counted per thread, and only inside [`realtime`] sections.
//! It is the allocator of the whole test binary: what other tests (other
//! threads) and code outside a section allocate is not counted.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

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

/// Allocations and frees counted on this thread so far.
pub fn counts() -> (usize, usize) {
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
