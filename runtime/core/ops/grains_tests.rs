//! `grains`' tests: the node against a plain simulation written here (the
//! grain scheduler, the windows and the reads as the module docs state
//! them, every draw taken from Philox directly), the grain count over a
//! long run against the density, the pool's limit, f32 against f64, and
//! what non-finite input does.
use super::*;
use crate::dsp::Precision;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::{AudioData, Value};
use std::sync::Arc;

const SR: f64 = 48000.0;

/// Word `n` of stream `s` of the harness's key, from rand_philox.
fn word(s: u32, n: u64) -> u32 {
    let h = crate::dsp::rng::hash64(1, "node", 0);
    let key = [h as u32, (h >> 32) as u32];
    let b = n / 4;
    rand_philox::philox4x32_10([b as u32, (b >> 32) as u32, s, 0], key)[(n % 4) as usize]
}

/// What the simulation plays: a file's channels, or an input signal
/// through a buffer of `buffer` samples.
enum Src<'a> {
    File(&'a [Vec<f64>]),
    Input { x: &'a [f64], buffer: usize },
}

/// The static params of a simulated node.
struct Setup {
    position: f64,
    size: f64,
    density: f64,
    pitch: f64,
    spread: f64,
    pan_spread: f64,
    window: &'static str,
    amp: f64,
    max_grains: usize,
}

/// One grain of the simulation: where it started reading, its speed,
/// length, age and gains.
struct Grain {
    start: f64,
    rate: f64,
    len: usize,
    age: usize,
    gains: (f64, f64),
}

/// The window at sample `k` of `len`, straight from its formula.
fn window(name: &str, k: usize, len: usize) -> f64 {
    let (k, n) = (k as f64, len as f64);
    match name {
        "hann" => 0.5 - 0.5 * libm::cos(2.0 * std::f64::consts::PI * k / n),
        "triangle" => 1.0 - (2.0 * k - n).abs() / n,
        "trapezoid" => (4.0 * k.min(n - k) / n).min(1.0),
        _ => unreachable!(),
    }
}

/// A signal linear between its samples at fractional index `t`, 0 outside.
fn at(x: &[f64], t: f64) -> f64 {
    let i = t.floor();
    let get = |i: f64| {
        if i >= 0.0 && (i as usize) < x.len() {
            x[i as usize]
        } else {
            0.0
        }
    };
    get(i) + (t - i) * (get(i + 1.0) - get(i))
}

/// Modulation signals by param name.
type Mods<'a> = &'a [(&'a str, Vec<f64>)];

/// Param `name` at sample `n`: `base`, plus its modulation if any, held to
/// the param's range (NaN: `base`).
fn param(mods: Mods, name: &str, base: f64, n: usize) -> f64 {
    let Some((_, sig)) = mods.iter().find(|(m, _)| *m == name) else {
        return base;
    };
    let ParamKind::Number { min, max, .. } = GRAINS.params[GRAINS.param_index(name).unwrap()].kind
    else {
        unreachable!()
    };
    let v = base + sig[n];
    if v < min {
        min
    } else if v > max {
        max
    } else if v.is_nan() {
        base
    } else {
        v
    }
}

/// `frames` of both outputs, and how many grains were skipped because
/// the pool was full.
fn simulate(src: &Src, s: &Setup, frames: usize) -> (Vec<Vec<f64>>, usize) {
    simulate_modulated(src, s, &[], frames)
}

/// [`simulate`] with params modulated.
fn simulate_modulated(src: &Src, s: &Setup, mods: Mods, frames: usize) -> (Vec<Vec<f64>>, usize) {
    let mut grains: Vec<Grain> = Vec::new();
    let mut skipped = 0;
    let mut out = vec![Vec::with_capacity(frames), Vec::with_capacity(frames)];
    for n in 0..frames {
        let (mut left, mut right) = (0.0, 0.0);
        let density = param(mods, "density", s.density, n);
        if (word(0, n as u64) as f64) < density / SR * 4294967296.0 {
            if grains.len() == s.max_grains {
                skipped += 1;
            } else {
                let size = param(mods, "size", s.size, n);
                let len = ((size * SR).round() as usize).max(1);
                let rate = libm::exp2(param(mods, "pitch", s.pitch, n) / 12.0);
                let j = word(1, n as u64) as f64 / 2147483648.0 - 1.0;
                let (position, spread) = (
                    param(mods, "position", s.position, n),
                    param(mods, "spread", s.spread, n),
                );
                let place = (position + spread * j).clamp(0.0, 1.0);
                let q = word(2, n as u64) as f64 / 2147483648.0 - 1.0;
                let pan_spread = param(mods, "pan_spread", s.pan_spread, n);
                let theta = std::f64::consts::FRAC_PI_4 * (1.0 + q * pan_spread);
                let gains = if q * pan_spread == 0.0 {
                    (1.0, 1.0)
                } else {
                    (
                        2f64.sqrt() * libm::cos(theta),
                        2f64.sqrt() * libm::sin(theta),
                    )
                };
                // Where in the source the grain's first sample is: a frame
                // of the file, or an absolute input index.
                let start = match src {
                    Src::File(ch) => place * ch[0].len() as f64,
                    Src::Input { buffer, .. } => {
                        let b = *buffer as f64;
                        let (l, span) = (len as f64 - 1.0, 1.0 + place * (b - 1.0));
                        let back = span
                            .min(b - (1.0 - rate).max(0.0) * l)
                            .max(1.0 + (rate - 1.0).max(0.0) * l);
                        n as f64 - back
                    }
                };
                grains.push(Grain {
                    start,
                    rate,
                    len,
                    age: 0,
                    gains,
                });
            }
        }
        for g in &mut grains {
            let w = window(s.window, g.age, g.len);
            let t = g.start + g.rate * g.age as f64;
            let (a, b) = match src {
                Src::File(ch) => (at(&ch[0], t), at(ch.last().unwrap(), t)),
                Src::Input { x, .. } => (at(x, t), at(x, t)),
            };
            let amp = param(mods, "amp", s.amp, n);
            left += amp * g.gains.0 * w * a;
            right += amp * g.gains.1 * w * b;
            g.age += 1;
        }
        grains.retain(|g| g.age < g.len);
        out[0].push(left);
        out[1].push(right);
    }
    (out, skipped)
}

fn runner(params: &[(&str, Value)], n_inputs: usize, precision: Precision) -> NodeRunner {
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        &GRAINS,
        values_with(&GRAINS, params),
        profile,
        Some(precision),
        SR,
        4096,
        n_inputs,
    )
    .unwrap()
}

fn params(s: &Setup) -> Vec<(&'static str, Value)> {
    let window = WINDOWS.iter().position(|w| *w == s.window).unwrap();
    vec![
        ("position", Value::Number(s.position)),
        ("size", Value::Number(s.size)),
        ("density", Value::Number(s.density)),
        ("pitch", Value::Number(s.pitch)),
        ("spread", Value::Number(s.spread)),
        ("pan_spread", Value::Number(s.pan_spread)),
        ("window", Value::Enum(window)),
        ("amp", Value::Number(s.amp)),
        ("max_grains", Value::Integer(s.max_grains as i64)),
    ]
}

fn audio(channels: Vec<Vec<f64>>) -> Arc<AudioData> {
    Arc::new(AudioData {
        path: "t.wav".into(),
        sample_rate: 48000,
        channels,
    })
}

fn largest_difference(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

/// Grains of a stereo file, each window, up and down in pitch, jittered
/// and panned, with a pool small enough to fill: the node plays what the
/// simulation does (to rounding: the node accumulates its read positions
/// and hann's rotation sample by sample and sums in another order), at
/// every block size; grains were skipped.
#[test]
fn file_grains_are_the_documented_simulation() {
    use crate::ops::conformance::test_signal;
    let file = vec![test_signal(21, 6000), test_signal(22, 6000)];
    for (window, pitch) in [("hann", 7.0), ("triangle", -5.0), ("trapezoid", 12.0)] {
        let s = Setup {
            position: 0.4,
            size: 0.004,
            density: 3000.0,
            pitch,
            spread: 0.3,
            pan_spread: 0.8,
            window,
            amp: 0.7,
            max_grains: 6,
        };
        let (want, skipped) = simulate(&Src::File(&file), &s, 9000);
        assert!(
            skipped > 20,
            "{window}: the pool filled ({skipped} skipped)"
        );
        let mut p = params(&s);
        p.push(("file", Value::Resource(audio(file.clone()))));
        for blocks in [vec![64], vec![1], vec![37, 500, 3]] {
            let got = runner(&p, 0, Precision::F64).run(&[], &[], 9000, &blocks);
            let err = largest_difference(&want, &got);
            assert!(err < 1e-9, "{window} {blocks:?}: {err:e}");
        }
        assert!(want[0].iter().any(|v| *v != 0.0) && want[0] != want[1]);
    }
}

/// Grains of the input: read back through the buffer at positions and
/// pitches that push against both of its ends, so the holds on the first
/// delay do their work; the node plays the simulation.
#[test]
fn input_grains_are_the_documented_simulation() {
    use crate::ops::conformance::test_signal;
    let x = test_signal(23, 12000);
    let buffer = 2400;
    for (position, pitch, window) in [
        (0.0, 12.0, "hann"),
        (1.0, -12.0, "triangle"),
        (0.5, 3.0, "trapezoid"),
    ] {
        let s = Setup {
            position,
            size: 0.01,
            density: 800.0,
            pitch,
            spread: 0.5,
            pan_spread: 1.0,
            window,
            amp: 1.0,
            max_grains: 32,
        };
        let (want, _) = simulate(&Src::Input { x: &x, buffer }, &s, 12000);
        let mut p = params(&s);
        p.push(("buffer", Value::Number(buffer as f64 / SR)));
        let got = runner(&p, 1, Precision::F64).run(std::slice::from_ref(&x), &[], 12000, &[64, 7]);
        let err = largest_difference(&want, &got);
        assert!(err < 1e-9, "{window}: {err:e}");
        assert!(want[0].iter().any(|v| *v != 0.0));
    }
}

/// The sum of every sample of grains reading a file of ones is the number
/// of grains times one window's sum: over ten seconds at 100 grains a
/// second the count is within five standard deviations of 1000 (each
/// sample starts a grain with probability density/sr: σ ≈ 31.6).
#[test]
fn the_grain_count_over_a_long_run_is_the_density() {
    let frames = 480_000;
    let mut r = runner(
        &[
            ("file", Value::Resource(audio(vec![vec![1.0; 1000]]))),
            ("size", Value::Number(0.001)),
            ("density", Value::Number(100.0)),
            ("window", Value::Enum(2)),
            ("max_grains", Value::Integer(1024)),
        ],
        0,
        Precision::F64,
    );
    let out = r.run(&[], &[], frames, &[4096]);
    let one: f64 = (0..48).map(|k| window("trapezoid", k, 48)).sum();
    let count = out[0].iter().sum::<f64>() / one;
    assert!((count - count.round()).abs() < 1e-6, "{count}");
    let p = 100.0 / SR;
    let (mean, sd) = (frames as f64 * p, (frames as f64 * p * (1.0 - p)).sqrt());
    assert!(
        (count - mean).abs() < 5.0 * sd,
        "{count} grains, expected {mean}"
    );
}

/// With one slot and a grain due at every sample, each grain plays to its
/// end and the next starts at the sample after it: the triangle repeats
/// every `len` samples exactly, never two at once.
#[test]
fn a_full_pool_skips_the_grains_due_until_a_slot_frees() {
    let len = 48;
    let mut r = runner(
        &[
            ("file", Value::Resource(audio(vec![vec![1.0; 100_000]]))),
            ("size", Value::Number(len as f64 / SR)),
            ("density", Value::Number(SR)),
            ("window", Value::Enum(1)),
            ("max_grains", Value::Integer(1)),
        ],
        0,
        Precision::F64,
    );
    let out = r.run(&[], &[], 4800, &[64, 5]);
    for (n, y) in out[0].iter().enumerate() {
        let want = window("triangle", n % len, len);
        assert!((y - want).abs() < 1e-15, "sample {n}: {y} vs {want}");
    }
}

/// f32 (repro, live) runs the same f64 grains over samples rounded to
/// f32 and rounds the sum: within 1e-6 of strict, grain for grain.
#[test]
fn f32_is_within_a_millionth_of_strict() {
    use crate::ops::conformance::test_signal;
    let x = test_signal(24, 20000);
    let p = [
        ("size", Value::Number(0.02)),
        ("density", Value::Number(200.0)),
        ("pitch", Value::Number(-7.0)),
        ("spread", Value::Number(0.2)),
        ("pan_spread", Value::Number(0.5)),
        ("position", Value::Number(0.1)),
        ("buffer", Value::Number(0.5)),
    ];
    let strict = runner(&p, 1, Precision::F64).run(std::slice::from_ref(&x), &[], 20000, &[64]);
    for profile in [Profile::Repro, Profile::Live] {
        let mut r = NodeRunner::new(
            &GRAINS,
            values_with(&GRAINS, &p),
            profile,
            None,
            SR,
            4096,
            1,
        )
        .unwrap();
        let got = r.run(std::slice::from_ref(&x), &[], 20000, &[128]);
        let err = largest_difference(&strict, &got);
        assert!(err > 0.0 && err < 1e-6, "{profile}: {err:e}");
    }
}

/// NaN and infinite input samples are stored as silence: the output stays
/// finite, and once the buffer has moved past them it is what a silent
/// stretch gives.
#[test]
fn non_finite_input_is_stored_as_silence() {
    use crate::ops::conformance::test_signal;
    let p = [
        ("size", Value::Number(0.005)),
        ("density", Value::Number(2000.0)),
        ("buffer", Value::Number(0.05)),
        ("spread", Value::Number(0.5)),
    ];
    let clean = test_signal(25, 8000);
    let mut dirty = clean.clone();
    for (i, v) in dirty[1000..3000].iter_mut().enumerate() {
        *v = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][i % 3];
    }
    let mut silent = clean.clone();
    silent[1000..3000].fill(0.0);
    let got = runner(&p, 1, Precision::F64).run(&[dirty], &[], 8000, &[64]);
    let want = runner(&p, 1, Precision::F64).run(&[silent], &[], 8000, &[64]);
    assert!(got.iter().flatten().all(|v| v.is_finite()));
    assert_eq!(got, want);
}

/// A file and a connected `in` is an error naming both.
#[test]
fn a_file_and_a_connected_input_is_an_error() {
    let r = NodeRunner::new(
        &GRAINS,
        values_with(
            &GRAINS,
            &[("file", Value::Resource(audio(vec![vec![0.5; 10]])))],
        ),
        Profile::Strict,
        None,
        SR,
        64,
        1,
    );
    assert_eq!(
        r.err().as_deref(),
        Some("give `file` or connect `in`, not both")
    );
}

/// Every case of `golden/ops/grains.json` (its params, input and
/// modulation as stored) is what the simulation plays, to rounding.
#[test]
fn the_golden_vectors_are_the_documented_simulation() {
    use crate::dsp::bits::from_hex;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../golden/ops/grains.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let hex = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| from_hex(h.as_str().unwrap()).unwrap())
            .collect()
    };
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for case in cases {
        let p = &case["params"];
        let number =
            |name: &str, default: f64| p[name].as_str().map_or(default, |h| from_hex(h).unwrap());
        let s = Setup {
            position: number("position", 0.0),
            size: number("size", 0.1),
            density: number("density", 10.0),
            pitch: number("pitch", 0.0),
            spread: number("spread", 0.0),
            pan_spread: number("pan_spread", 0.0),
            window: WINDOWS
                .iter()
                .find(|w| Some(**w) == p["window"].as_str())
                .unwrap_or(&"hann"),
            amp: number("amp", 1.0),
            max_grains: p["max_grains"].as_u64().unwrap_or(32) as usize,
        };
        let mods: Vec<(&str, Vec<f64>)> = case["modulation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["param"].as_str().unwrap(), hex(&m["signal"])))
            .collect();
        let inputs: Vec<Vec<f64>> = case["inputs"].as_array().unwrap().iter().map(hex).collect();
        let file = crate::ops::conformance::test_audio().channels.clone();
        let src = if p["file"].is_null() {
            Src::Input {
                x: &inputs[0],
                buffer: (number("buffer", 4.0) * SR).ceil() as usize,
            }
        } else {
            Src::File(&file)
        };
        let (want, _) = simulate_modulated(&src, &s, &mods, 256);
        let got = [hex(&case["outputs"]["out"]), hex(&case["outputs"]["out_r"])];
        assert!(want[0].iter().any(|v| *v != 0.0));
        let err = largest_difference(&want, &got);
        assert!(err < 1e-9, "{p}: {err:e}");
    }
}

/// The declared cost grows with the grains sounding on average, `density
/// · size`, and stops growing at `max_grains`.
#[test]
fn the_cost_follows_the_grains_sounding_up_to_the_pool() {
    use crate::profile::{NodeProfile, Overrides};
    let cost = |density: f64, max_grains: i64| {
        let v = values_with(
            &GRAINS,
            &[
                ("density", Value::Number(density)),
                ("max_grains", Value::Integer(max_grains)),
            ],
        );
        (GRAINS.cost)(
            &NodeProfile::resolve(Profile::Strict, &Overrides::default(), None),
            &v,
        )
    };
    assert!(cost(300.0, 64) > 5.0 * cost(30.0, 64));
    assert_eq!(cost(3000.0, 8), cost(300.0, 8));
}
