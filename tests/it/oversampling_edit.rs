//! A live edit of a nonlinear node's `oversampling` or `critical` is a cut
//! at the swap sample S (a discrete param switching), and the node's output
//! continues through it: the old factor's pending outputs carry and the new
//! factor's filters are primed from the input history, as across a profile
//! switch (`tests/it/migration.rs`). Clearing the filters and the latency
//! ring instead would output silence for the node's latency (45 samples)
//! from S, a click on every such edit.

use crate::support as common;

use morphrt::api::player::Scripted;
use morphrt::engine::incoming::SessionFixed;
use morphrt::profile::Profile;
use std::sync::atomic::{AtomicUsize, Ordering};

const BLOCK: usize = 64;

/// A 1 kHz sine at 0.5 into a `saturator` and a `diode_clipper` (one
/// channel each) with `params` added to both.
fn scene(params: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ {{ "id": "s", "op": "sine", "params": {{ "freq": "1kHz", "amp": 0.5 }} }},
             {{ "id": "sat", "op": "saturator", "params": {{ "drive": 4{params} }} }},
             {{ "id": "clip", "op": "diode_clipper", "params": {{ "drive": "12dB"{params} }} }} ],
  "edges": [ {{ "from": "s", "to": "sat" }}, {{ "from": "s", "to": "clip" }} ],
  "outputs": {{ "main": ["sat", "clip"] }} }}"#
    )
}

fn fixed_for(text: &str) -> SessionFixed {
    SessionFixed::from_plan(
        &common::plan(text, None, BLOCK),
        morphrt::host::files::resources::Folders::shared(Vec::new()),
    )
}

fn rms(x: &[f64]) -> f64 {
    (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt()
}

/// The longest run of samples quieter than 1e-3 in `x`.
fn longest_quiet(x: &[f64]) -> usize {
    let (mut run, mut most) = (0, 0);
    for v in x {
        run = if v.abs() < 1e-3 { run + 1 } else { 0 };
        most = most.max(run);
    }
    most
}

/// Plays `from` and edits it to `to` at about 0.1 s under `p`; checks each
/// channel has no gap around the swap sample and, after the carried
/// outputs, plays what the edited scene plays.
fn edit(from: &str, to: &str, p: Profile) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = common::temp_dir(&format!("oversampling-edit-{run}"));
    let path = dir.join("nl.json");
    let (a, b) = (scene(from), scene(to));
    std::fs::write(&path, &a).unwrap();
    let fixed = fixed_for(&a);
    let total = 9_600u64;
    let lead = 4 * BLOCK as u64;
    let mut s = Scripted::new(common::incoming(&a, &path, &fixed, p), 2);
    s.play_to(4_800 - lead);
    let applied = s.handover(common::incoming(&b, &path, &fixed, p), lead);
    let what = format!("{p}, {from:?} → {to:?}");
    assert!(
        !applied.migration.structural && applied.fade == 0,
        "{what}: the edit is a cut, not a crossfade: {:?}",
        applied.migration.notices
    );
    s.play_to(total);
    let got = s.into_output();
    let mut plain = Scripted::new(common::incoming(&b, &path, &fixed, p), 2);
    plain.play_to(total);
    let want = plain.into_output();
    let at = applied.swap_at as usize;
    // 2 ms either side.
    let w = 96;
    for (c, name) in ["saturator", "diode_clipper"].iter().enumerate() {
        let y: Vec<f64> = got.iter().skip(c).step_by(2).copied().collect();
        let z: Vec<f64> = want.iter().skip(c).step_by(2).copied().collect();
        let (before, after) = (rms(&y[at - w..at]), rms(&y[at..at + w]));
        let quiet = longest_quiet(&y[at - w..at + w]);
        eprintln!("{what} {name}: RMS {before:.4} → {after:.4}, quiet run {quiet}");
        assert!(
            quiet <= 3,
            "{what} {name}: {quiet} samples of near-silence around the swap at {at}"
        );
        assert!(
            after > 0.8 * before && after < 1.25 * before,
            "{what} {name}: RMS {before:.4} in the 2 ms before the swap, {after:.4} after"
        );
        // The old path's 45 pending outputs, then the new factor's path.
        let settled = at + 45 + w;
        let worst = y[settled..]
            .iter()
            .zip(&z[settled..])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!("{what} {name}: worst |diff| {worst:.3e} from the edited scene's run");
        assert!(
            worst < 2e-2,
            "{what} {name}: {worst:.3e} from what the edited scene plays, 3 ms after the swap"
        );
    }
}

#[test]
fn an_oversampling_edit_continues_the_output_through_the_swap() {
    let o = |f: &str| format!(r#", "oversampling": "{f}""#);
    for p in Profile::ALL {
        for (from, to) in [("2", "4"), ("4", "1"), ("1", "2"), ("default", "4")] {
            edit(&o(from), &o(to), p);
        }
    }
}

#[test]
fn a_critical_edit_under_live_continues_the_output_through_the_swap() {
    // Under live the default factor is 1×, 2× when critical.
    edit("", r#", "critical": true"#, Profile::Live);
    edit(
        r#", "critical": true"#,
        r#", "critical": false"#,
        Profile::Live,
    );
}
