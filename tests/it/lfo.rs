//! `lfo` in scenes: routed into a filter's cutoff it adds in Hz; its bad
//! settings are located errors naming the node and what is valid; and, as
//! a node drawing on the seeded streams, it needs the scene's seed under
//! strict and repro.

use crate::support as common;

use common::{morphrt, stderr, stdout, temp_dir};
use morphrt::engine::render_to_vec;
use morphrt::profile::Profile;

/// A scene with an lfo (params `params`, on line 4) into a lowpass's
/// cutoff, `seed` the top-level seed entry (with its comma) or "".
fn scene(params: &str, seed: &str) -> String {
    format!(
        r#"{{
  "version": "1.0"{seed},
  "nodes": [
    {{ "id": "wobble", "op": "lfo", "params": {{ {params} }} }},
    {{ "id": "src", "op": "saw", "params": {{ "freq": "110Hz" }} }},
    {{ "id": "lp", "op": "biquad", "params": {{ "cutoff": "1kHz" }} }}
  ],
  "edges": [ {{ "from": "src", "to": "lp" }}, {{ "from": "wobble", "to": "lp:cutoff" }} ],
  "outputs": {{ "main": ["lp"] }}
}}"#
    )
}

#[test]
fn bad_lfo_settings_are_located_errors_saying_what_is_valid() {
    let dir = temp_dir("lfo-bad");
    let seed = r#", "seed": 1"#;
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "shape",
            r#""shape": "smooth-random""#,
            seed,
            &[
                "`smooth-random` is not a valid `shape`",
                "did you mean `smooth_random`",
            ],
        ),
        (
            "rate_unit",
            r#""rate": "250ms""#,
            seed,
            &["`rate`", "frequency"],
        ),
        (
            "rate_range",
            r#""rate": "2000kHz""#,
            seed,
            &["`rate` = 2000000 is out of range", "Hz"],
        ),
        (
            "rate_big",
            r#""rate": 2000000"#,
            seed,
            &[
                "`rate` = 2000000 is out of range",
                "valid range: -1000000 … 1000000 Hz",
            ],
        ),
        (
            "bipolar",
            r#""bipolar": "yes""#,
            seed,
            &["`bipolar` takes true or false"],
        ),
        (
            "amount_unit",
            r#""amount": "300Hz""#,
            seed,
            &["`amount`", "amplitude"],
        ),
        (
            "no_seed",
            r#""shape": "sine", "amount": 300"#,
            "",
            &["uses randomness", "needs an explicit seed", "\"seed\": 42"],
        ),
    ];
    for (name, params, seed, needles) in cases {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, scene(params, seed)).unwrap();
        let o = morphrt(&["check", path.to_str().unwrap(), "--profile", "strict"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}.json:4:")),
            "{name}: no line 4 in:\n{err}"
        );
        assert!(err.contains("wobble"), "{name}: no node in:\n{err}");
        for needle in *needles {
            assert!(
                err.contains(needle),
                "{name}: expected `{needle}` in:\n{err}"
            );
        }
    }
    // A rate above Nyquist is a located warning, not an error.
    let path = dir.join("fast.json");
    std::fs::write(&path, scene(r#""rate": "30kHz""#, seed)).unwrap();
    let o = morphrt(&["check", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("fast.json:4:"), "{err}");
    assert!(err.contains("`rate` 30000 Hz is above Nyquist"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_lfo_into_a_cutoff_swings_it_by_amount_hz_around_the_static_value() {
    // The lfo alone with a 1000 Hz offset stands in for the cutoff it would
    // be added to: 1000 ± 300 Hz, reaching both ends.
    let text = r#"{ "version": "1.0", "seed": 1,
      "nodes": [ { "id": "w", "op": "lfo",
                   "params": { "shape": "triangle", "rate": "46.875Hz", "amount": 300, "offset": 1000 } } ],
      "outputs": { "main": ["w"] } }"#;
    // (Not live: its main bus is clipped to ±1.)
    for profile in [Profile::Strict, Profile::Repro] {
        let out = render_to_vec(&mut common::engine(text, Some(profile), 64), 4096).swap_remove(0);
        let lo = out.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!((lo, hi), (700.0, 1300.0), "{profile}");
        // 1024 samples a period: the triangle's peak a quarter in.
        assert_eq!(out[256], 1300.0);
        assert_eq!(out[768], 700.0);
    }
    // The routed scene checks and renders.
    let dir = temp_dir("lfo-route");
    let path = dir.join("route.json");
    std::fs::write(
        &path,
        scene(
            r#""shape": "sample_hold", "rate": "4Hz", "amount": 300"#,
            r#", "seed": 7"#,
        ),
    )
    .unwrap();
    let o = morphrt(&["check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ops_lfo_documents_every_param() {
    let o = morphrt(&["ops", "lfo"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    for word in [
        "shape",
        "rate",
        "phase",
        "bipolar",
        "amount",
        "offset",
        "seed",
        "sample_hold",
        "smooth_random",
        "cutoff",
    ] {
        assert!(out.contains(word), "`morphrt ops lfo` lacks {word}:\n{out}");
    }
}

#[test]
fn a_resumed_lfo_continues_bit_for_bit() {
    // sample_hold at 7 Hz (a fractional period) into a cutoff: the snapshot
    // at 0.25 s holds the phase and the period count, and the resumed
    // render is the whole render's tail.
    let dir = temp_dir("lfo-resume");
    let path = dir.join("route.json");
    std::fs::write(
        &path,
        scene(
            r#""shape": "smooth_random", "rate": "7Hz", "amount": 300, "phase": "30deg""#,
            r#", "seed": 7"#,
        ),
    )
    .unwrap();
    let (scene_path, snap) = (path.to_str().unwrap(), dir.join("snap.json"));
    let (a, b) = (dir.join("a.wav"), dir.join("b.wav"));
    let o = morphrt(&[
        "render",
        scene_path,
        "-d",
        "0.5s",
        "-o",
        a.to_str().unwrap(),
        "--snapshot-at",
        "0.25s",
        "--snapshot-out",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&snap).unwrap();
    assert!(
        text.contains(r#""cycle""#),
        "the snapshot holds the period count:\n{text}"
    );
    let o = morphrt(&[
        "render",
        scene_path,
        "--resume",
        snap.to_str().unwrap(),
        "-d",
        "0.25s",
        "-o",
        b.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (whole, rest) = (common::read_f32(&a), common::read_f32(&b));
    assert!(!rest.is_empty());
    assert!(whole[whole.len() - rest.len()..] == rest[..]);
    let _ = std::fs::remove_dir_all(&dir);
}
