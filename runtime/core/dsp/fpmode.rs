//! The FP-mode guard: sets flush-to-zero / denormals-are-zero for the duration
//! of an engine block and restores the caller's mode afterwards (each
//! profile's mode: [`crate::profile`]).
//!
//! x86-64: MXCSR bits FTZ (15) and DAZ (6). aarch64: FPCR bit FZ (24), which
//! flushes both inputs and outputs. Other targets: a no-op; repro/live output
//! there may then differ in denormal handling (strict, which runs with
//! denormals on, is unaffected).

use std::marker::PhantomData;

#[cfg(target_arch = "x86_64")]
mod arch {
    const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

    #[inline]
    pub(crate) fn read() -> u32 {
        let mut v: u32 = 0;
        // SAFETY: stmxcsr stores the 32-bit MXCSR to the given address.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack, preserves_flags));
        }
        v
    }

    #[inline]
    pub(crate) fn write(v: u32) {
        // SAFETY: ldmxcsr loads MXCSR; only the FTZ/DAZ bits are changed by callers.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack, readonly, preserves_flags));
        }
    }

    #[inline]
    pub(crate) fn with_flush(v: u32, flush: bool) -> u32 {
        if flush {
            v | FTZ_DAZ
        } else {
            v & !FTZ_DAZ
        }
    }

    pub(crate) fn is_flush(v: u32) -> bool {
        v & FTZ_DAZ == FTZ_DAZ
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    const FZ: u64 = 1 << 24;

    #[inline]
    pub(crate) fn read() -> u64 {
        let v: u64;
        // SAFETY: reading FPCR has no side effects.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nomem, nostack, preserves_flags));
        }
        v
    }

    #[inline]
    pub(crate) fn write(v: u64) {
        // SAFETY: only the FZ bit is changed by callers.
        unsafe {
            std::arch::asm!("msr fpcr, {}", in(reg) v, options(nomem, nostack, preserves_flags));
        }
    }

    #[inline]
    pub(crate) fn with_flush(v: u64, flush: bool) -> u64 {
        if flush {
            v | FZ
        } else {
            v & !FZ
        }
    }

    pub(crate) fn is_flush(v: u64) -> bool {
        v & FZ == FZ
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    pub(crate) fn read() -> u32 {
        0
    }
    pub(crate) fn write(_v: u32) {}
    pub(crate) fn with_flush(v: u32, _flush: bool) -> u32 {
        v
    }
    pub(crate) fn is_flush(_v: u32) -> bool {
        false
    }
}

/// RAII guard around an engine block. Not `Send`: the FP mode is per thread.
pub struct FpGuard {
    saved: u64,
    _not_send: PhantomData<*const ()>,
}

impl FpGuard {
    /// Saves the caller's mode and sets flush-to-zero/DAZ on or off.
    #[inline]
    pub fn new(flush: bool) -> FpGuard {
        let saved = arch::read();
        arch::write(arch::with_flush(saved, flush));
        FpGuard {
            saved: saved as u64,
            _not_send: PhantomData,
        }
    }

    /// Switches mode inside the guarded section (between runs of nodes whose
    /// pinned profiles need different modes).
    #[inline]
    pub(crate) fn set_flush(&self, flush: bool) {
        arch::write(arch::with_flush(arch::read(), flush));
    }
}

impl Drop for FpGuard {
    #[inline]
    fn drop(&mut self) {
        #[allow(clippy::unnecessary_cast)]
        arch::write(self.saved as _);
    }
}

/// Whether flush-to-zero is currently on for this thread.
pub fn flush_is_on() -> bool {
    arch::is_flush(arch::read())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn guard_sets_and_restores() {
        let before = flush_is_on();
        {
            let g = FpGuard::new(true);
            assert!(flush_is_on());
            // A denormal result flushes to zero.
            let tiny = std::hint::black_box(f64::MIN_POSITIVE);
            assert_eq!(tiny * std::hint::black_box(0.5), 0.0);
            g.set_flush(false);
            assert!(!flush_is_on());
            assert!(tiny * std::hint::black_box(0.5) > 0.0);
        }
        assert_eq!(flush_is_on(), before);
    }
}
