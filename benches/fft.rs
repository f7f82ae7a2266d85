//! Real FFT speed: the reference provider against rustfft/realfft, one
//! forward plus one inverse transform per iteration (norm ortho), f64 and
//! f32, best of several rounds. Measures only; asserts nothing.
//!
//! `cargo bench --bench fft`

use morphrt::dsp::fft::{plan_real, Complex, FftNorm, FftProvider, RealFft};
use morphrt::dsp::Sample;
use std::hint::black_box;
use std::time::Instant;

/// Nanoseconds per transform (the mean of a forward and an inverse).
fn time<S: Sample>(provider: FftProvider, n: usize) -> f64 {
    let mut fft: Box<dyn RealFft<S>> = plan_real::<S>(provider, n, FftNorm::Ortho);
    let mut x: Vec<S> = (0..n)
        .map(|k| S::from_f64(((k * 7919) % 1000) as f64 / 500.0 - 1.0))
        .collect();
    let mut spec = vec![Complex::new(S::ZERO, S::ZERO); n / 2 + 1];
    let mut back = vec![S::ZERO; n];
    // About 2e7 butterflies' worth of work per round.
    let iters = (20_000_000 / (n * n.trailing_zeros() as usize)).max(10);
    let mut best = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..iters {
            fft.forward(black_box(&mut x), &mut spec);
            fft.inverse(black_box(&mut spec), &mut back);
            black_box(&back);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best * 1e9 / (2 * iters) as f64
}

fn main() {
    println!("ns per real transform (mean of forward and inverse), best of 7 rounds");
    println!(
        "{:>6} {:<5} {:>12} {:>12} {:>10}",
        "n", "prec", "reference", "rustfft", "ref/rust"
    );
    for n in [256usize, 1024, 4096] {
        let r = time::<f64>(FftProvider::Reference, n);
        let f = time::<f64>(FftProvider::RustFft, n);
        println!("{n:>6} {:<5} {r:>12.0} {f:>12.0} {:>9.2}x", "f64", r / f);
        let r = time::<f32>(FftProvider::Reference, n);
        let f = time::<f32>(FftProvider::RustFft, n);
        println!("{n:>6} {:<5} {r:>12.0} {f:>12.0} {:>9.2}x", "f32", r / f);
    }
}
