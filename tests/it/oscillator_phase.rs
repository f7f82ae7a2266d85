//! `saw`, `square` and `triangle` take `phase`, a phase offset in radians like
//! `sine`'s: the wave starts that far into its cycle. A quarter cycle is
//! exact in the u64 phase, so where the step is exact too (375 Hz at
//! 48 kHz: 2^57 of the 2^64 a sample) the shifted wave is the plain one a
//! quarter period later, bit for bit in every profile; where the step is
//! rounded (480 Hz), a quarter period of steps misses a quarter cycle by
//! less than one unit of 2^-64 a step, and the two agree to within
//! rounding; the default (0) plays what
//! the operators played before the param existed (the goldens in `golden/`
//! check that).

use crate::support as common;

use common::engine;
use morphrt::engine::render_to_vec;
use morphrt::profile::Profile;

/// 375 Hz at 48 kHz: 128 samples a period, so a quarter is 32 samples.
const PERIOD: usize = 128;
const FRAMES: usize = 4 * 48 * PERIOD;

fn osc(op: &str, extra: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "nodes": [ {{ "id": "o", "op": "{op}",
              "params": {{ "freq": "375Hz", "amp": 0.8{extra} }} }} ],
             "outputs": {{ "main": ["o"] }} }}"#
    )
}

fn play(text: &str, profile: Profile) -> Vec<f64> {
    render_to_vec(&mut engine(text, Some(profile), 64), FRAMES as u64).swap_remove(0)
}

/// `shifted[k]` against `plain[k + lead]`, bit for bit.
fn assert_leads(shifted: &[f64], plain: &[f64], lead: usize, what: &str) {
    for k in 0..FRAMES - lead {
        assert_eq!(
            shifted[k].to_bits(),
            plain[k + lead].to_bits(),
            "{what}: sample {k}: {} vs {} a quarter period on",
            shifted[k],
            plain[k + lead]
        );
    }
}

#[test]
fn a_quarter_cycle_of_phase_is_the_wave_a_quarter_period_on_in_every_profile() {
    let quarter = core::f64::consts::FRAC_PI_2;
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        for (op, extra) in [
            ("saw", ""),
            ("square", ""),
            ("square", r#", "duty": 0.3"#),
            ("triangle", ""),
        ] {
            let plain = play(&osc(op, extra), profile);
            let ahead = play(
                &osc(op, &format!(r#"{extra}, "phase": {quarter}"#)),
                profile,
            );
            let behind = play(
                &osc(op, &format!(r#"{extra}, "phase": -{quarter}"#)),
                profile,
            );
            let what = format!("{op}{extra} under {profile}");
            assert_leads(&ahead, &plain, PERIOD / 4, &what);
            // −π/2: the plain wave is the shifted one a quarter period on.
            assert_leads(&plain, &behind, PERIOD / 4, &what);
            assert!(ahead != plain, "{what}: the phase changes the output");
        }
    }
}

#[test]
fn phase_in_degrees_is_the_same_offset() {
    // 90deg converts to 90·(π/180) rad, which rounds to π/2 exactly.
    for op in ["saw", "square", "triangle"] {
        let plain = play(&osc(op, ""), Profile::Strict);
        let deg = play(&osc(op, r#", "phase": "90deg""#), Profile::Strict);
        assert_leads(&deg, &plain, PERIOD / 4, &format!("{op} at 90deg"));
    }
}

#[test]
fn phase_zero_plays_what_no_phase_plays() {
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        for op in ["saw", "square", "triangle"] {
            let plain = play(&osc(op, ""), profile);
            for zero in ["0", "-0.0", r#""0deg""#] {
                let z = play(&osc(op, &format!(r#", "phase": {zero}"#)), profile);
                assert!(z == plain, "{op} phase {zero} under {profile}");
            }
        }
    }
}

#[test]
fn phase_is_documented_and_kept_in_snapshots() {
    for op in ["saw", "square", "triangle"] {
        let o = common::morphrt(&["ops", op]);
        let out = common::stdout(&o);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(
            out.contains("phase"),
            "`morphrt ops {op}` lists phase:\n{out}"
        );
        assert!(out.contains("rad"), "in radians:\n{out}");
    }
    let dir = common::temp_dir("osc-phase");
    let scene = dir.join("saw.json");
    std::fs::write(&scene, osc("saw", r#", "phase": "90deg""#)).unwrap();
    let snap = dir.join("snap.json");
    let o = common::morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "-d",
        "0.5s",
        "-o",
        dir.join("a.wav").to_str().unwrap(),
        "--snapshot-at",
        "0.25s",
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        text.contains(r#""phase""#),
        "the snapshot keeps the param:\n{text}"
    );
    // Resuming continues exactly where the whole render went.
    let o = common::morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--resume",
        snap.to_str().unwrap(),
        "-d",
        "0.25s",
        "-o",
        dir.join("b.wav").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let (whole, rest) = (
        common::read_f32(&dir.join("a.wav")),
        common::read_f32(&dir.join("b.wav")),
    );
    assert!(whole[whole.len() - rest.len()..] == rest[..]);
}

#[test]
fn a_modulated_phase_is_added_sample_by_sample() {
    // A dc source of π/2 into `phase` plays what a static π/2 plays.
    let quarter = core::f64::consts::FRAC_PI_2;
    for op in ["saw", "square", "triangle"] {
        let modulated = format!(
            r#"{{ "version": "1.0", "nodes": [
                  {{ "id": "o", "op": "{op}", "params": {{ "freq": "375Hz", "amp": 0.8 }} }},
                  {{ "id": "p", "op": "dc", "params": {{ "value": {quarter} }} }} ],
                 "edges": [ {{ "from": "p", "to": "o:phase" }} ],
                 "outputs": {{ "main": ["o"] }} }}"#
        );
        for profile in [Profile::Strict, Profile::Repro] {
            let plain = play(&osc(op, ""), profile);
            let m = play(&modulated, profile);
            assert_leads(
                &m,
                &plain,
                PERIOD / 4,
                &format!("{op} modulated under {profile}"),
            );
        }
    }
}

/// 480 Hz at 48 kHz: 100 samples a period, a quarter is 25 samples, but the
/// step (2^64 / 100, rounded down) is not exact: 25 steps fall short of a
/// quarter cycle by under 25 units of 2^-64 of a cycle. The shifted wave
/// and the plain one a quarter period on then agree within 1e-12 in f64
/// (strict) and within 1e-6 in f32 (one rounding of the phase), and are
/// not required to match bit for bit.
#[test]
fn a_quarter_cycle_of_phase_at_an_inexact_step_is_within_rounding_of_a_quarter_period_on() {
    let quarter = core::f64::consts::FRAC_PI_2;
    let lead = 25;
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        let bound = if profile == Profile::Strict {
            1e-12
        } else {
            1e-6
        };
        for (op, extra) in [("saw", ""), ("square", ""), ("triangle", "")] {
            let text = |phase: &str| {
                format!(
                    r#"{{ "version": "1.0", "nodes": [ {{ "id": "o", "op": "{op}",
                          "params": {{ "freq": "480Hz", "amp": 0.8{extra}{phase} }} }} ],
                         "outputs": {{ "main": ["o"] }} }}"#
                )
            };
            let plain = play(&text(""), profile);
            let ahead = play(&text(&format!(r#", "phase": {quarter}"#)), profile);
            let worst = (0..FRAMES - lead)
                .map(|k| (ahead[k] - plain[k + lead]).abs())
                .fold(0.0f64, f64::max);
            assert!(
                worst <= bound,
                "{op} under {profile}: {worst:e} from the wave a quarter period on"
            );
            assert!(
                ahead != plain,
                "{op} under {profile}: the phase changes the output"
            );
        }
    }
}
