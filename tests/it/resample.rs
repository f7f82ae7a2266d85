//! Sample-rate conversion (`dsp::resample`): the strict polyphase converter
//! and the rubato one behind the same streaming face, measured with an
//! independent analysis (numpy's FFT, scipy's filter design) at 44.1 → 48,
//! 48 → 44.1, 96 → 48 and 22.05 → 48 kHz.
//!
//! The tones are coherent: a tone sits on bin `j` of an `N_out`-point FFT of
//! the output and completes `j` whole periods in the matching `N_in` input
//! frames (`N_in / N_out = from / to`), so a rectangular window shows every
//! tone, alias and image on an exact bin with no leakage.

use crate::support::counting::{counts, realtime};
use crate::support::temp_dir;
use morphrt::dsp::resample::{
    converter, prototype, ratio, Method, Polyphase, RateConverter, RateError, CUTOFF, KAISER_BETA,
    TAPS_PER_RATIO,
};
use sha2::{Digest, Sha256};
use std::f64::consts::PI;
use std::path::Path;
use std::process::Command;

/// The conversions the quality figures are measured at.
const PAIRS: [(u32, u32); 4] = [
    (44100, 48000),
    (48000, 44100),
    (96000, 48000),
    (22050, 48000),
];

/// The analysis, independent of the converter: numpy's FFT and scipy's
/// Kaiser-windowed FIR design.
///
/// - `design N CUTOFF BETA L RUST.f64`: prints the largest difference
///   between scipy's `firwin(N, CUTOFF, window=("kaiser", BETA)) × L` and
///   the taps in the file, relative to the largest tap.
/// - `tones N_OUT N_IN RUNS.f64 TONES.txt`: the file holds one run of
///   `N_OUT` output frames per line of TONES (`bin amplitude` pairs); for
///   each run prints the gain in dB of every tone below the output Nyquist
///   (`bin:gain`), then `spur` and the largest other component in dB
///   relative to the tones' amplitude, then `collide` if an alias or image
///   of one tone would land on another tone's bin.
/// - `delay N NYQ_BINS Y.f64`: prints the delay in output frames of the
///   response in the file, from the slope of its phase over the bins up to
///   `NYQ_BINS` (least squares).
const ANALYSIS: &str = r#"
import sys
import numpy as np
mode = sys.argv[1]
if mode == "design":
    from scipy.signal import firwin
    n, cutoff, beta, l = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    got = np.fromfile(sys.argv[6], dtype="<f8")
    want = firwin(n, cutoff, window=("kaiser", beta)) * l
    assert len(got) == len(want), (len(got), len(want))
    print(np.max(np.abs(got - want)) / np.max(np.abs(want)))
elif mode == "tones":
    n_out, n_in = int(sys.argv[2]), int(sys.argv[3])
    runs = np.fromfile(sys.argv[4], dtype="<f8").reshape(-1, n_out)
    specs = [l.split() for l in open(sys.argv[5]).read().splitlines()]
    for y, spec in zip(runs, specs):
        tones = [(int(spec[i]), float(spec[i + 1])) for i in range(0, len(spec), 2)]
        amp = np.abs(np.fft.rfft(y)) * 2.0 / n_out
        mask = np.ones(len(amp), dtype=bool)
        out = []
        for b, a in tones:
            if b < n_out // 2:
                out.append("%d:%.9f" % (b, 20 * np.log10(amp[b] / a)))
                mask[b] = False
        ref = min(a for _, a in tones)
        out.append("spur %.3f" % (20 * np.log10(max(amp[mask].max(), 1e-300) / ref)))
        bins = np.array(sorted({b for b, _ in tones}))
        q = np.arange(n_out // np.gcd(n_in, n_out))
        for b, _ in tones:
            for s in (b, -b):
                f = (s + q * n_in) % n_out
                f = np.minimum(f, n_out - f)
                if np.isin(f[f != b], bins).any():
                    out.append("collide")
        print(" ".join(out))
elif mode == "delay":
    n, top = int(sys.argv[2]), int(sys.argv[3])
    y = np.fromfile(sys.argv[4], dtype="<f8")
    spec = np.fft.rfft(y, n)
    k = np.arange(1, top)
    phase = np.unwrap(np.angle(spec[1:top]))
    slope = np.polyfit(k, phase, 1)[0]
    print(-slope * n / (2 * np.pi))
"#;

fn analyse(args: &[&str]) -> String {
    let o = Command::new("python3")
        .arg("-c")
        .arg(ANALYSIS)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the analysis: {e}"));
    assert!(
        o.status.success(),
        "the analysis failed (numpy and scipy: `python3 -m pip install numpy scipy`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn write_f64(path: &Path, x: &[f64]) {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Converts `input` (interleaved, `channels` channels): pushes in sizes
/// cycling through `pushes`, pulls in sizes cycling through `pulls` after
/// each push, then finishes and pulls the tail.
fn convert_chunked(
    conv: &mut dyn RateConverter,
    input: &[f64],
    pushes: &[usize],
    pulls: &[usize],
) -> Vec<f64> {
    let ch = conv.channels();
    let frames = input.len() / ch;
    let mut out = Vec::new();
    let mut scratch = vec![0.0; 8192 * ch];
    let mut at = 0;
    let mut turn = 0;
    let mut pull = |conv: &mut dyn RateConverter, out: &mut Vec<f64>, turn: &mut usize| loop {
        let n = pulls[*turn % pulls.len()].min(8192);
        *turn += 1;
        let got = conv.pull(&mut scratch[..n * ch]);
        out.extend_from_slice(&scratch[..got * ch]);
        if got < n {
            return;
        }
    };
    while at < frames {
        let n = pushes[turn % pushes.len()].min(frames - at);
        let mut taken = 0;
        while taken < n {
            taken += conv.push(&input[(at + taken) * ch..(at + n) * ch]);
            pull(conv, &mut out, &mut turn);
        }
        at += n;
    }
    conv.finish();
    pull(conv, &mut out, &mut turn);
    assert_eq!(
        (out.len() / ch) as u64,
        conv.output_frames(frames as u64),
        "a finished conversion gives every output frame before the input's end"
    );
    out
}

fn convert(method: Method, from: u32, to: u32, ch: usize, input: &[f64]) -> Vec<f64> {
    let mut conv = converter(method, from, to, ch, 4096).unwrap();
    convert_chunked(conv.as_mut(), input, &[4096], &[4096])
}

/// A reproducible noise in [−1, 1) (a 64-bit LCG's top bits).
fn noise(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// `sin(2π·j·n/period + phase)` with the angle reduced exactly first.
fn tone(n: usize, j: u64, period: u64, phase: f64) -> f64 {
    let k = (j * n as u64) % period;
    libm::sin(2.0 * PI * k as f64 / period as f64 + phase)
}

#[test]
fn strict_output_is_the_same_bits_whatever_the_push_and_pull_sizes() {
    let input = noise(2 * 6000, 7);
    for (from, to) in PAIRS {
        let whole = convert(Method::Polyphase, from, to, 2, &input);
        for (pushes, pulls) in [
            (&[1usize][..], &[1usize][..]),
            (&[7], &[64]),
            (&[64], &[7]),
            (&[4096], &[1]),
            (&[3, 500, 1, 77, 4096, 13], &[2, 999, 5]),
        ] {
            let mut conv = Polyphase::new(from, to, 2, 4096).unwrap();
            let got = convert_chunked(&mut conv, &input, pushes, pulls);
            assert!(
                got.iter()
                    .map(|v| v.to_bits())
                    .eq(whole.iter().map(|v| v.to_bits())),
                "{from} → {to} Hz: pushes {pushes:?}, pulls {pulls:?} change the output"
            );
        }
        // A reset converter gives the same bits again.
        let mut conv = Polyphase::new(from, to, 2, 4096).unwrap();
        let _ = convert_chunked(&mut conv, &noise(2 * 999, 3), &[64], &[64]);
        conv.reset();
        let again = convert_chunked(&mut conv, &input, &[4096], &[4096]);
        assert!(again
            .iter()
            .map(|v| v.to_bits())
            .eq(whole.iter().map(|v| v.to_bits())));
    }
}

#[test]
fn strict_output_is_the_prototype_evaluated_at_each_output_time() {
    // y[m] = Σ_k x[k]·h[m·M + c − k·L], summed here by k in one pass; the
    // converter sums in another order, so they agree to rounding.
    let input = noise(1500, 11);
    for (from, to) in PAIRS {
        let h = prototype(from, to).unwrap();
        let (l, m) = ratio(from, to).unwrap();
        let c = (h.len() - 1) / 2;
        let got = convert(Method::Polyphase, from, to, 1, &input);
        let peak = h.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let mut worst = 0.0f64;
        for (mi, y) in got.iter().enumerate() {
            let t = (mi * m + c) as i64;
            let mut want = 0.0;
            for (k, x) in input.iter().enumerate() {
                let n = t - (k * l) as i64;
                if n >= 0 && (n as usize) < h.len() {
                    want += x * h[n as usize];
                }
            }
            worst = worst.max((y - want).abs());
        }
        assert!(
            worst < 1e-12 * peak * l as f64,
            "{from} → {to} Hz: strict output differs from the direct sum by {worst:e}"
        );
    }
}

#[test]
fn strict_sums_each_output_in_its_documented_order() {
    // Four running partial sums over the taps in ascending order
    // (tap i into partial i mod 4), then (s0 + s1) + (s2 + s3): this order,
    // written out here as plain scalar code, gives the converter's bits.
    let input = noise(3000, 5);
    for (from, to) in PAIRS {
        let h = prototype(from, to).unwrap();
        let (l, m) = ratio(from, to).unwrap();
        let c = (h.len() - 1) / 2;
        let conv = Polyphase::new(from, to, 1, 4096).unwrap();
        let taps = conv.taps_per_phase();
        let got = convert(Method::Polyphase, from, to, 1, &input);
        for (mi, y) in got.iter().enumerate() {
            let t = mi * m + c;
            let (p, newest) = ((t % l), (t / l) as i64);
            let mut s = [0.0f64; 4];
            for i in 0..taps {
                let n = p + (taps - 1 - i) * l;
                let k = newest - taps as i64 + 1 + i as i64;
                let g = if n < h.len() { h[n] } else { 0.0 };
                let x = if k >= 0 && (k as usize) < input.len() {
                    input[k as usize]
                } else {
                    0.0
                };
                s[i % 4] += g * x;
            }
            let want = (s[0] + s[1]) + (s[2] + s[3]);
            assert_eq!(y.to_bits(), want.to_bits(), "{from} → {to} Hz, frame {mi}");
        }
    }
}

/// The kernel this CPU picks (AVX: several dot products side by side,
/// each in its own register) and the portable one (one at a time, the
/// order written out above) give the same bits, over 1, 2 and 3 channels
/// and any push and pull sizes.
#[test]
fn strict_kernels_give_the_same_bits_over_any_channels_and_sizes() {
    for (from, to) in PAIRS {
        for ch in [1usize, 2, 3] {
            let input = noise(ch * 3001, 13 + ch as u64);
            let mut picked = Polyphase::new(from, to, ch, 4096).unwrap();
            let want = convert_chunked(&mut picked, &input, &[4096], &[4096]);
            for (pushes, pulls) in [
                (&[4096usize][..], &[4096usize][..]),
                (&[1], &[1]),
                (&[3, 500, 1, 77], &[2, 999, 5]),
            ] {
                for portable in [false, true] {
                    let conv = Polyphase::new(from, to, ch, 4096).unwrap();
                    let mut conv = if portable { conv.portable() } else { conv };
                    let got = convert_chunked(&mut conv, &input, pushes, pulls);
                    assert!(
                        got.iter()
                            .map(|v| v.to_bits())
                            .eq(want.iter().map(|v| v.to_bits())),
                        "{from} → {to} Hz, {ch} ch, portable {portable}: pushes {pushes:?}, pulls {pulls:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn prototype_equals_scipys_kaiser_windowed_sinc() {
    let dir = temp_dir("design");
    for (from, to) in PAIRS {
        let h = prototype(from, to).unwrap();
        let (l, m) = ratio(from, to).unwrap();
        let r = l.max(m);
        assert_eq!(h.len(), TAPS_PER_RATIO * r - 1);
        let path = dir.join(format!("{from}-{to}.f64"));
        write_f64(&path, &h);
        let cutoff = format!("{:.17e}", CUTOFF / r as f64);
        let rel: f64 = analyse(&[
            "design",
            &h.len().to_string(),
            &cutoff,
            &KAISER_BETA.to_string(),
            &l.to_string(),
            path.to_str().unwrap(),
        ])
        .trim()
        .parse()
        .unwrap();
        assert!(
            rel < 1e-12,
            "{from} → {to} Hz: the prototype differs from scipy's by {rel:e} of its peak"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn prototype_bytes_are_pinned() {
    // The taps checked against scipy above, pinned to the bit: a change to
    // the design (and so to every strict conversion) changes this hash and
    // must be made on purpose.
    let mut sha = Sha256::new();
    for (from, to) in PAIRS {
        for tap in prototype(from, to).unwrap() {
            sha.update(tap.to_le_bytes());
        }
    }
    let hex: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "e79e1db50cee24df291da599b161e1a01539aae203cea65aa7b5288fc3fcf4eb"
    );
}

/// The sweep of one conversion: tone bins from 1 to the input's Nyquist,
/// denser across the transition band, and the passband's top bin.
fn sweep_bins(n_in: u64, n_out: u64, low_nyq_bins: f64) -> Vec<u64> {
    let mut bins: Vec<u64> = (1..=40).map(|i| i * (n_in / 2 - 1) / 40).collect();
    bins.extend((0..=16).map(|i| (low_nyq_bins * (0.84 + 0.02 * i as f64)) as u64));
    bins.push((0.9 * low_nyq_bins) as u64);
    bins.retain(|&b| b >= 1 && b < n_in / 2 && b != n_out / 2);
    bins.sort_unstable();
    bins.dedup();
    bins
}

struct Figures {
    /// The tone's gain in dB against its bin's frequency as a fraction of
    /// the lower Nyquist.
    passband: Vec<(f64, f64)>,
    /// The largest component that is not a tone, dB below the tones.
    worst_spur_db: f64,
}

/// Converts each run of tones (`(bin, amplitude, phase)`) with `method`
/// and measures the steady-state output with the analysis.
fn measure(
    method: Method,
    from: u32,
    to: u32,
    runs: &[Vec<(u64, f64, f64)>],
    tag: &str,
) -> Figures {
    let (l, m) = ratio(from, to).unwrap();
    let (n_out, n_in) = frames_of(l as u64, m as u64);
    let dir = temp_dir(&format!("{tag}-{from}-{to}"));
    let mut data = Vec::new();
    let mut spec = String::new();
    // Settle for well over a filter length, then take one period.
    let settle_out = 4096usize;
    let total_in = ((settle_out + n_out as usize) * m).div_ceil(l) + 4096;
    for run in runs {
        let input: Vec<f64> = (0..total_in)
            .map(|n| run.iter().map(|&(b, a, ph)| a * tone(n, b, n_in, ph)).sum())
            .collect();
        let y = convert(method, from, to, 1, &input);
        data.extend_from_slice(&y[settle_out..settle_out + n_out as usize]);
        for (b, a, _) in run {
            spec.push_str(&format!("{b} {a:e} "));
        }
        spec.push('\n');
    }
    let runs_path = dir.join("runs.f64");
    let spec_path = dir.join("tones.txt");
    write_f64(&runs_path, &data);
    std::fs::write(&spec_path, spec).unwrap();
    let report = analyse(&[
        "tones",
        &n_out.to_string(),
        &n_in.to_string(),
        runs_path.to_str().unwrap(),
        spec_path.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let bin_hz = to as f64 / n_out as f64;
    let low_nyq = from.min(to) as f64 / 2.0;
    let mut fig = Figures {
        passband: Vec::new(),
        worst_spur_db: f64::NEG_INFINITY,
    };
    assert_eq!(report.lines().count(), runs.len());
    for line in report.lines() {
        assert!(
            !line.contains("collide"),
            "{from} → {to} Hz: two tones share a bin: {line}"
        );
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "spur" {
                let db: f64 = words.next().unwrap().parse().unwrap();
                fig.worst_spur_db = fig.worst_spur_db.max(db);
            } else if let Some((b, g)) = w.split_once(':') {
                let f = b.parse::<f64>().unwrap() * bin_hz / low_nyq;
                fig.passband.push((f, g.parse().unwrap()));
            }
        }
    }
    fig
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `(N_out, N_in)`: periods of about 10 000 output frames whose ratio is
/// the conversion's.
fn frames_of(l: u64, m: u64) -> (u64, u64) {
    let k = (10_000 / l.max(m)).max(1).next_power_of_two();
    (l * k, m * k)
}

fn check_quality(method: Method, rejection_db: f64) {
    for (from, to) in PAIRS {
        let (l, m) = ratio(from, to).unwrap();
        let (n_out, n_in) = frames_of(l as u64, m as u64);
        let low_nyq_bins = from.min(to) as f64 / 2.0 / (to as f64 / n_out as f64);
        // Swept sines at full scale.
        let sines: Vec<Vec<(u64, f64, f64)>> = sweep_bins(n_in, n_out, low_nyq_bins)
            .into_iter()
            .map(|b| vec![(b, 1.0, 0.0)])
            .collect();
        // One multitone: 12 tones of amplitude 1/12 at scattered bins and
        // phases. Every alias and image of a tone at bin b lands on a bin
        // ≡ ±b modulo gcd(N_in, N_out), so tones in distinct classes never
        // hide one another's.
        let g = gcd(n_in, n_out);
        let r = noise(400, 99);
        let mut multitone: Vec<(u64, f64, f64)> = Vec::new();
        let mut classes = Vec::new();
        for pair in r.chunks_exact(2) {
            let b = 1 + ((pair[0] + 1.0) / 2.0 * (n_in / 2 - 2) as f64) as u64;
            let class = (b % g).min(g - b % g);
            if multitone.len() < 12 && !classes.contains(&class) {
                classes.push(class);
                multitone.push((b, 1.0 / 12.0, PI * pair[1]));
            }
        }
        assert_eq!(multitone.len(), 12);
        let mut runs = sines;
        runs.push(multitone);
        let fig = measure(method, from, to, &runs, method.name());
        let flat: Vec<&(f64, f64)> = fig.passband.iter().filter(|(f, _)| *f <= 0.9).collect();
        assert!(flat.len() >= 15, "{from} → {to} Hz: measured the passband");
        for (f, g) in flat {
            assert!(
                g.abs() <= 0.01,
                "{} {from} → {to} Hz: gain {g:.6} dB at {f:.3} × the lower Nyquist",
                method.name()
            );
        }
        assert!(
            fig.worst_spur_db <= -rejection_db,
            "{} {from} → {to} Hz: aliasing or imaging at {:.1} dB",
            method.name(),
            fig.worst_spur_db
        );
        eprintln!(
            "{} {from} → {to} Hz: worst alias or image {:.1} dB",
            method.name(),
            fig.worst_spur_db
        );
    }
}

#[test]
fn strict_passband_is_flat_and_aliases_and_images_are_140_db_down() {
    check_quality(Method::Polyphase, 140.0);
}

#[test]
fn library_passband_is_flat_and_aliases_and_images_are_100_db_down() {
    check_quality(Method::Library, 100.0);
}

/// Converts a unit impulse at input frame `k` and returns the delay of the
/// response in output frames, measured from its phase.
fn impulse_delay(method: Method, from: u32, to: u32, k: usize) -> f64 {
    let mut input = vec![0.0; k + 20_000];
    input[k] = 1.0;
    let y = convert(method, from, to, 1, &input);
    let dir = temp_dir(&format!("delay-{}-{from}-{to}-{k}", method.name()));
    let path = dir.join("y.f64");
    write_f64(&path, &y);
    let n = y.len();
    // Bins up to 0.8 × the lower Nyquist: well inside the passband.
    let top = (0.8 * from.min(to) as f64 / 2.0 / (to as f64 / n as f64)) as usize;
    let d: f64 = analyse(&[
        "delay",
        &n.to_string(),
        &top.to_string(),
        path.to_str().unwrap(),
    ])
    .trim()
    .parse()
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    d
}

fn check_alignment(method: Method) {
    for (from, to) in PAIRS {
        for k in [0usize, 1000, 1001, 1037] {
            let want = k as f64 * to as f64 / from as f64;
            let got = impulse_delay(method, from, to, k);
            assert!(
                (got - want).abs() <= 0.5,
                "{} {from} → {to} Hz: an impulse at input frame {k} comes out at {got:.4}, \
                 not {want:.4} (± 0.5)",
                method.name()
            );
        }
    }
}

#[test]
fn strict_impulse_comes_out_at_its_input_time() {
    check_alignment(Method::Polyphase);
}

#[test]
fn library_impulse_comes_out_at_its_input_time() {
    check_alignment(Method::Library);
}

#[test]
fn output_lags_a_stream_by_at_most_the_reported_latency() {
    for method in [Method::Polyphase, Method::Library] {
        for (from, to) in PAIRS {
            let mut conv = converter(method, from, to, 1, 64).unwrap();
            let latency = conv.latency() as u64;
            let mut out = vec![0.0; 4096];
            let mut ready = 0u64;
            let mut tightest = u64::MAX;
            for n in 1..=20_000u64 {
                assert_eq!(conv.push(&[0.5]), 1);
                ready += conv.pull(&mut out) as u64;
                let lag = conv.output_frames(n) - ready;
                assert!(
                    lag <= latency,
                    "{} {from} → {to} Hz: after {n} input frames {ready} output frames are \
                     ready, {lag} behind; the reported latency is {latency}",
                    method.name()
                );
                tightest = tightest.min(latency - lag);
            }
            if method == Method::Polyphase {
                // The strict converter's latency is its lookahead, not more.
                assert!(
                    tightest <= 1,
                    "{from} → {to} Hz: latency {latency} overstated"
                );
            }
        }
    }
}

#[test]
fn library_output_is_the_same_bits_whatever_the_push_and_pull_sizes() {
    let input = noise(2 * 6000, 8);
    for (from, to) in PAIRS {
        let whole = convert(Method::Library, from, to, 2, &input);
        for (pushes, pulls) in [
            (&[1usize][..], &[3usize][..]),
            (&[3, 500, 1, 77, 4096], &[2, 999]),
        ] {
            let mut conv = converter(Method::Library, from, to, 2, 4096).unwrap();
            let got = convert_chunked(conv.as_mut(), &input, pushes, pulls);
            assert!(
                got.iter()
                    .map(|v| v.to_bits())
                    .eq(whole.iter().map(|v| v.to_bits())),
                "{from} → {to} Hz: pushes {pushes:?}, pulls {pulls:?} change the output"
            );
        }
    }
}

#[test]
fn push_and_pull_never_allocate() {
    for method in [Method::Polyphase, Method::Library] {
        let mut conv = converter(method, 44100, 48000, 2, 512).unwrap();
        let input = noise(2 * 512, 1);
        let mut out = vec![0.0; 2 * 1024];
        let before = counts();
        realtime(|| {
            for _ in 0..40 {
                let mut at = 0;
                while at < 512 {
                    at += conv.push(&input[2 * at..]);
                    while conv.pull(&mut out) > 0 {}
                }
            }
            conv.finish();
            while conv.pull(&mut out) > 0 {}
            conv.reset();
        });
        assert_eq!(counts(), before, "{} allocated or freed", method.name());
    }
}

/// rubato's FFT refused a block holding a NaN or an infinity, and the
/// input's reader thread panicked: the library converter reads one as
/// silence; the strict one passes it through its filter.
#[test]
fn the_library_converter_reads_a_nan_or_an_infinity_as_silence() {
    let clean = noise(2 * 8000, 5);
    let mut spoiled = clean.clone();
    let mut zeroed = clean.clone();
    for (at, v) in [
        (2 * 3000, f64::NAN),
        (2 * 5000 + 1, f64::INFINITY),
        (2 * 7001, f64::NEG_INFINITY),
    ] {
        spoiled[at] = v;
        zeroed[at] = 0.0;
    }
    let got = convert(Method::Library, 44100, 48000, 2, &spoiled);
    let want = convert(Method::Library, 44100, 48000, 2, &zeroed);
    assert!(!got.is_empty() && got.iter().all(|v| v.is_finite()));
    assert!(got
        .iter()
        .map(|v| v.to_bits())
        .eq(want.iter().map(|v| v.to_bits())));
    assert!(got != convert(Method::Library, 44100, 48000, 2, &clean));
    let strict = convert(Method::Polyphase, 44100, 48000, 2, &spoiled);
    assert!(strict.iter().any(|v| v.is_nan()));
}

#[test]
fn equal_rates_pass_frames_through_unchanged() {
    let input = noise(2 * 1000, 4);
    let got = convert(Method::Polyphase, 48000, 48000, 2, &input);
    assert!(got
        .iter()
        .map(|v| v.to_bits())
        .eq(input.iter().map(|v| v.to_bits())));
}

#[test]
fn a_full_buffer_takes_fewer_frames_until_output_is_pulled() {
    let mut conv = Polyphase::new(44100, 48000, 1, 100).unwrap();
    let input = noise(10_000, 2);
    let mut taken = 0;
    while taken < input.len() {
        let n = conv.push(&input[taken..]);
        if n == 0 {
            break;
        }
        taken += n;
    }
    assert!(
        taken < input.len(),
        "an unpulled converter stops taking input"
    );
    let mut out = vec![0.0; 10_000];
    assert!(conv.pull(&mut out) > 0);
    assert!(conv.push(&input[taken..]) > 0, "pulling makes room");
}

#[test]
fn bad_rates_are_refused_with_what_would_be_valid() {
    let e = Polyphase::new(0, 48000, 2, 64).unwrap_err();
    assert_eq!(
        e,
        RateError::ZeroRate {
            from_hz: 0,
            to_hz: 48000
        }
    );
    assert!(e.to_string().contains("at least 1 Hz"), "{e}");
    let e = Polyphase::new(48000, 47999, 2, 64).unwrap_err();
    assert!(
        matches!(
            e,
            RateError::RatioTooFine {
                up: 47999,
                down: 48000,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("47999/48000"), "{e}");
    assert!(matches!(
        converter(Method::Library, 44100, 48000, 0, 64),
        Err(RateError::NoChannels)
    ));
}
