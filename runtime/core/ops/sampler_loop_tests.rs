//! Tests of the sampler's start offset, loop points (forward and
//! ping-pong), crossfaded seam and pitch tracking, each against positions
//! and formulas computed here.

use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::AudioData;
use std::sync::Arc;

const SR: f64 = 48000.0;

fn audio(l: &[f64]) -> Arc<AudioData> {
    Arc::new(AudioData {
        path: "t.wav".into(),
        sample_rate: 48000,
        channels: vec![l.to_vec()],
    })
}

/// Seconds of `frames` frames at 48 kHz.
fn frames(n: f64) -> Value {
    Value::Number(n / SR)
}

fn runner(l: &[f64], set: &[(&str, Value)]) -> NodeRunner {
    let mut params = vec![("file", Value::Resource(audio(l)))];
    params.extend(set.iter().cloned());
    NodeRunner::new(
        &SAMPLER,
        values_with(&SAMPLER, &params),
        Profile::Strict,
        Some(Precision::F64),
        SR,
        256,
        0,
    )
    .unwrap()
}

/// The file read at fractional frame `p`, the frame after `last` being
/// `after` (a forward loop's seam).
fn interp(l: &[f64], p: f64, last: usize, after: usize) -> f64 {
    let i = p.floor() as usize;
    let f = p - i as f64;
    let next = if i == last { l[after] } else { l[i + 1] };
    l[i] + f * (next - l[i])
}

#[test]
fn a_forward_loop_repeats_its_region_after_playing_into_it() {
    let l = test_signal(21, 100);
    let loop_on = [
        ("loop", Value::Bool(true)),
        ("loop_start", frames(20.0)),
        ("loop_end", frames(60.0)),
    ];
    let out = runner(&l, &loop_on).run(&[], &[], 300, &[64]);
    for n in 0..300 {
        let want = if n < 60 { l[n] } else { l[20 + (n - 20) % 40] };
        assert_eq!(out[0][n], want, "frame {n}");
    }
    // At rate 0.75 the position between the loop's last and first frame
    // interpolates across the seam.
    let mut set = loop_on.to_vec();
    set.push(("rate", Value::Number(0.75)));
    let out = runner(&l, &set).run(&[], &[], 300, &[7]);
    for (n, y) in out[0].iter().enumerate() {
        let mut p = 0.75 * n as f64;
        if p >= 60.0 {
            p = 20.0 + (p - 20.0) % 40.0;
        }
        let want = interp(&l, p, 59, 20);
        assert!((y - want).abs() <= 1e-15, "frame {n}: {y} vs {want}");
    }
}

#[test]
fn a_ping_pong_loop_turns_at_its_first_and_last_frames() {
    let l = test_signal(22, 64);
    for (rate, blocks) in [(1.0, 1), (0.5, 64), (-1.5, 13)] {
        let out = runner(
            &l,
            &[
                ("loop", Value::Bool(true)),
                ("loop_mode", Value::Enum(1)),
                ("start", frames(15.0)),
                ("loop_start", frames(10.0)),
                ("loop_end", frames(30.0)),
                ("rate", Value::Number(rate)),
            ],
        )
        .run(&[], &[], 400, &[blocks]);
        // A bouncing point, stepped here: 10 … 29 and back.
        let (mut p, mut v) = (15.0f64, rate);
        for (n, y) in out[0].iter().enumerate() {
            let want = interp(&l, p, usize::MAX, 0);
            assert!((y - want).abs() <= 1e-15, "rate {rate} frame {n}");
            p += v;
            if p > 29.0 {
                p = 58.0 - p;
                v = -v;
            } else if p < 10.0 {
                p = 20.0 - p;
                v = -v;
            }
        }
    }
}

#[test]
fn playback_and_a_trigger_start_at_the_start_offset() {
    let l = test_signal(23, 200);
    let mut r = runner(&l, &[("start", frames(25.0))]);
    let out = r.run(&[], &[], 100, &[32]);
    assert_eq!(out[0], l[25..125]);
    r.param_state(TRIGGER).value = 1.0;
    let out = r.run(&[], &[], 100, &[32]);
    assert_eq!(out[0][..75], l[25..100], "restarted at frame 25");
    // Reset goes back there too.
    r.node().reset();
    r.set_clock(0);
    let out = r.run(&[], &[], 10, &[10]);
    assert_eq!(out[0], l[25..35]);
}

#[test]
fn pitch_over_root_sets_the_speed_in_equal_temperament() {
    let l = test_signal(24, 400);
    let midi = |n: f64| 440.0 * libm::pow(2.0, (n - 69.0) / 12.0);
    assert!((MIDDLE_C_HZ - midi(60.0)).abs() < 1e-12);
    // An octave over the root plays at twice the speed.
    let out = runner(
        &l,
        &[
            ("pitch", Value::Number(midi(69.0))),
            ("root", Value::Number(midi(57.0))),
        ],
    )
    .run(&[], &[], 150, &[64]);
    for n in 0..150 {
        assert_eq!(out[0][n], l[2 * n], "frame {n}");
    }
    // A fifth over it (7 semitones) with rate 0.5: 0.5 · 2^(7/12) frames
    // per sample.
    let speed = 0.5 * libm::pow(2.0, 7.0 / 12.0);
    let out = runner(
        &l,
        &[
            ("pitch", Value::Number(midi(67.0))),
            ("rate", Value::Number(0.5)),
        ],
    )
    .run(&[], &[], 300, &[64]);
    for (n, y) in out[0].iter().enumerate() {
        let want = interp(&l, speed * n as f64, usize::MAX, 0);
        // The increment is the speed rounded to 2^−32 frames.
        assert!((y - want).abs() <= 1e-6, "frame {n}");
    }
}

/// A sine of period 1000/26.5 frames looped over 1000 frames (26.5
/// periods): the seam jumps by most of the sine's swing unless crossfaded.
fn seam_case(crossfade: f64) -> (Vec<f64>, Vec<f64>) {
    let tau = 2.0 * core::f64::consts::PI;
    let l: Vec<f64> = (0..2000)
        .map(|i| 0.8 * libm::sin(tau * i as f64 * 26.5 / 1000.0))
        .collect();
    let out = runner(
        &l,
        &[
            ("loop", Value::Bool(true)),
            ("start", frames(400.0)),
            ("loop_start", frames(500.0)),
            ("loop_end", frames(1500.0)),
            ("crossfade", frames(crossfade)),
        ],
    )
    .run(&[], &[], 3000, &[256]);
    (l, out[0].clone())
}

fn largest_step(y: &[f64]) -> f64 {
    y.windows(2).fold(0.0, |m, w| m.max((w[1] - w[0]).abs()))
}

#[test]
fn a_crossfaded_loop_has_no_step_at_its_seam() {
    // The sine's own largest step: 0.8 · 2π · 26.5 / 1000 ≈ 0.133.
    let (l, plain) = seam_case(0.0);
    let slope = largest_step(&l);
    // Output frame k plays file frame 400 + k until the wrap at 1500.
    let seam = 1100;
    let jump = (plain[seam] - plain[seam - 1]).abs();
    let (_, faded) = seam_case(200.0);
    let worst = largest_step(&faded);
    eprintln!(
        "loop seam: step {jump:.3} without crossfade, largest step {worst:.3} with 200 frames \
         (the sine's own {slope:.3})"
    );
    assert!(jump > 4.0 * slope, "the test's seam must jump: {jump}");
    // The fade adds at most Δw · |b − a| ≤ 1.6 / 200 to the sine's step.
    assert!(worst <= slope + 1.6 / 200.0 + 1e-12, "{worst} vs {slope}");
    // The formula, frame by frame: in the last 200 frames of the loop,
    // (1 − w)·s(p) + w·s(p − 1000).
    for (k, y) in faded.iter().enumerate() {
        let p = 400 + k;
        let p = if p >= 1500 { 500 + (p - 500) % 1000 } else { p };
        let want = if p >= 1300 {
            let w = (p - 1300) as f64 / 200.0;
            l[p] + w * (l[p - 1000] - l[p])
        } else {
            l[p]
        };
        assert!((y - want).abs() <= 1e-15, "frame {k}");
    }
}

#[test]
fn the_crossfade_is_held_to_the_frames_before_the_loop() {
    // loop_start 30: a 200-frame crossfade asked, 30 frames played.
    let l = test_signal(25, 300);
    let out = runner(
        &l,
        &[
            ("loop", Value::Bool(true)),
            ("loop_start", frames(30.0)),
            ("loop_end", frames(130.0)),
            ("crossfade", frames(200.0)),
        ],
    )
    .run(&[], &[], 130, &[64]);
    for (p, y) in out[0].iter().enumerate() {
        let want = if p >= 100 {
            let w = (p - 100) as f64 / 30.0;
            l[p] + w * (l[p - 100] - l[p])
        } else {
            l[p]
        };
        assert!((y - want).abs() <= 1e-15, "frame {p}");
    }
}

#[test]
fn loop_mode_edits_and_a_restore_keep_the_position_inside_the_loop() {
    let l = test_signal(26, 100);
    let set = [
        ("loop", Value::Bool(true)),
        ("loop_start", frames(10.0)),
        ("loop_end", frames(20.0)),
    ];
    let mut r = runner(&l, &set);
    r.run(&[], &[], 15, &[15]);
    // Ping-pong from frame 15: 15 … 19, then back down.
    r.node().set_discrete(LOOP_MODE, &Value::Enum(1));
    let out = r.run(&[], &[], 8, &[8]);
    assert_eq!(
        out[0],
        [l[15], l[16], l[17], l[18], l[19], l[18], l[17], l[16]]
    );
    // The direction is state: a fresh node restored from it goes on down.
    let st = r.snapshot();
    assert!(st.get_bool("backwards").unwrap());
    let mut set2 = set.to_vec();
    set2.push(("loop_mode", Value::Enum(1)));
    let mut other = runner(&l, &set2);
    other.node().restore(&st).unwrap();
    let out = other.run(&[], &[], 3, &[3]);
    assert_eq!(out[0], [l[15], l[14], l[13]]);
    // Restored into a node whose loop lies elsewhere, the position wraps
    // into that loop.
    let mut moved = runner(
        &l,
        &[
            ("loop", Value::Bool(true)),
            ("loop_start", frames(5.0)),
            ("loop_end", frames(9.0)),
        ],
    );
    moved.node().restore(&st).unwrap();
    let out = moved.run(&[], &[], 2, &[2]);
    // Frame 15 (the saved position) is 5 + (15 − 5) mod 4 = 7.
    assert_eq!(out[0], [l[7], l[8]]);
}
