//! Analysis windows (periodic unless stated), computed in f64 with the
//! pinned `libm::cos` only, so they are bit-exact everywhere.
//!
//! For a window of length N and denominator D (N when periodic, the
//! "DFT-even" form used for STFT; N − 1 when symmetric), sample k uses
//! θ = (2π·k)/D, evaluated as `TAU * k / D` in that order:
//!
//! - Hann: 0.5 − 0.5·cos θ
//! - Hamming: 0.54 − 0.46·cos θ
//! - Blackman: 0.42 − 0.5·cos θ + 0.08·cos 2θ
//! - Rectangular: 1
//!
//! A window of length 1 is `[1.0]` and of length 0 is empty (as NumPy).
//!
//! The bits are a contract: `spectral_gate` windows with this periodic Hann,
//! and its strict goldens were generated from exactly this expression. Folding
//! the argument to min(k, D − k) would make the halves mirror each other bit
//! for bit, but it changes about a third of the samples in the last bit (the
//! cosine of 2π − x is not rounded like the cosine of x), so the halves agree
//! to within the rounding of the argument instead (below 1e-15).

use core::f64::consts::TAU;

/// A window shape. The operators use Hann (`spectral_gate`); the others
/// are kept as the reference shapes the tests check against NumPy.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Window {
    Hann,
    Hamming,
    Blackman,
    Rectangular,
}

#[cfg_attr(not(test), allow(dead_code))]
impl Window {
    pub(crate) const ALL: [Window; 4] = [
        Window::Hann,
        Window::Hamming,
        Window::Blackman,
        Window::Rectangular,
    ];

    /// The name used in scenes and reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Window::Hann => "hann",
            Window::Hamming => "hamming",
            Window::Blackman => "blackman",
            Window::Rectangular => "rectangular",
        }
    }

    /// Parses a name from [`Window::name`].
    pub(crate) fn parse(s: &str) -> Option<Window> {
        match s {
            "hann" => Some(Window::Hann),
            "hamming" => Some(Window::Hamming),
            "blackman" => Some(Window::Blackman),
            "rectangular" => Some(Window::Rectangular),
            _ => None,
        }
    }
}

/// The window `kind` of length `n`; `periodic` (the default everywhere in
/// morphrt) divides by N, otherwise by N − 1 (symmetric).
pub(crate) fn window(kind: Window, n: usize, periodic: bool) -> Vec<f64> {
    if n <= 1 {
        return vec![1.0; n];
    }
    let d = if periodic { n } else { n - 1 };
    (0..n)
        .map(|k| {
            let theta = TAU * k as f64 / d as f64;
            match kind {
                Window::Hann => 0.5 - 0.5 * libm::cos(theta),
                Window::Hamming => 0.54 - 0.46 * libm::cos(theta),
                Window::Blackman => 0.42 - 0.5 * libm::cos(theta) + 0.08 * libm::cos(2.0 * theta),
                Window::Rectangular => 1.0,
            }
        })
        .collect()
}

/// The periodic window (the default).
pub(crate) fn periodic(kind: Window, n: usize) -> Vec<f64> {
    window(kind, n, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!((a - b).abs() <= tol, "[{i}] {a:e} vs {b:e}: {got:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for w in Window::ALL {
            assert_eq!(Window::parse(w.name()), Some(w));
        }
        assert_eq!(Window::parse("hanning"), None);
    }

    #[test]
    fn known_values() {
        // NumPy/SciPy: scipy.signal.get_window('hann', 4) (periodic).
        close(&window(Window::Hann, 4, true), &[0.0, 0.5, 1.0, 0.5], 1e-15);
        // numpy.hanning(5) (symmetric).
        close(
            &window(Window::Hann, 5, false),
            &[0.0, 0.5, 1.0, 0.5, 0.0],
            1e-15,
        );
        // numpy.hamming(5).
        close(
            &window(Window::Hamming, 5, false),
            &[0.08, 0.54, 1.0, 0.54, 0.08],
            1e-15,
        );
        // numpy.blackman(5): [0, 0.34, 1, 0.34, 0] (ends ~-1.4e-17).
        close(
            &window(Window::Blackman, 5, false),
            &[0.0, 0.34, 1.0, 0.34, 0.0],
            1e-15,
        );
        // Periodic Hamming of 4: 0.54 - 0.46·cos(πk/2).
        close(
            &window(Window::Hamming, 4, true),
            &[0.08, 0.54, 1.0, 0.54],
            1e-15,
        );
        close(&window(Window::Rectangular, 3, true), &[1.0; 3], 0.0);
        assert_eq!(window(Window::Hann, 1, true), vec![1.0]);
        assert_eq!(window(Window::Hann, 1, false), vec![1.0]);
        assert!(window(Window::Hann, 0, true).is_empty());
    }

    #[test]
    fn periodic_is_the_symmetric_window_one_longer() {
        for kind in Window::ALL {
            for n in [4usize, 7, 64, 1024] {
                let p = window(kind, n, true);
                let s = window(kind, n + 1, false);
                close(&p, &s[..n], 1e-15);
                assert_eq!(periodic(kind, n), p);
            }
        }
    }

    /// The halves mirror each other up to the rounding of θ: `TAU·k/D` is
    /// within about 3 ulps of its true value near 2π (≈ 1.3e-15), and the
    /// window moves by at most half of that.
    #[test]
    fn symmetric_to_rounding() {
        for kind in Window::ALL {
            for n in [2usize, 3, 4, 5, 16, 17, 1000, 1024, 65536] {
                let s = window(kind, n, false);
                for k in 0..n {
                    let d = (s[k] - s[n - 1 - k]).abs();
                    assert!(d <= 1e-15, "{kind:?} {n} {k}: {d:e}");
                }
                let p = window(kind, n, true);
                for k in 1..n {
                    let d = (p[k] - p[n - k]).abs();
                    assert!(d <= 1e-15, "{kind:?} {n} {k}: {d:e}");
                }
            }
        }
    }

    /// `spectral_gate`'s strict goldens were generated with this expression
    /// in this order; any other (a folded argument, `cos` of `π·k/(N/2)`)
    /// differs in the last bit somewhere.
    #[test]
    fn periodic_hann_is_the_expression_the_spectral_goldens_need() {
        let mut n = 16usize;
        while n <= 65536 {
            let w = periodic(Window::Hann, n);
            for (k, got) in w.iter().enumerate() {
                let want = 0.5 - 0.5 * libm::cos(2.0 * core::f64::consts::PI * k as f64 / n as f64);
                assert_eq!(got.to_bits(), want.to_bits(), "n={n} k={k}");
            }
            n *= 2;
        }
    }

    #[test]
    fn peak_and_range() {
        for kind in Window::ALL {
            let w = window(kind, 1024, true);
            // Blackman's 0.42 + 0.5 + 0.08 rounds to 1 − 2⁻⁵³.
            assert!((w[512] - 1.0).abs() <= 1e-15, "{kind:?}: {}", w[512]);
            assert!(w.iter().all(|&v| (-1e-16..=1.0).contains(&v)), "{kind:?}");
        }
    }

    /// Σ_j w[k + j·hop] over all shifts is constant: 1 at 50% overlap and 2
    /// at 75% overlap for the periodic Hann.
    #[test]
    fn periodic_hann_is_cola() {
        for n in [16usize, 256, 1024] {
            let w = window(Window::Hann, n, true);
            for (hop, want) in [(n / 2, 1.0), (n / 4, 2.0)] {
                for k in 0..hop {
                    let sum: f64 = (0..n / hop).map(|j| w[k + j * hop]).sum();
                    assert!((sum - want).abs() <= 1e-12, "n={n} hop={hop} k={k}: {sum}");
                }
            }
        }
    }
}
