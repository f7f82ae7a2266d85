//! Review (branch review2): a profile switch must not shift time or drop
//! audio in a nonlinear node whose oversampling factor differs between the
//! two profiles (DESIGN §4 "switching profile never shifts time", §6 "state
//! keeps flowing"). `saturator` with the default oversampling runs 1× under
//! strict and 2× under repro; its `Oversampler` restores histories of stages
//! the old factor never fed, and the latency ring `comp` is read at another
//! tap, so the output jumps 39 samples ahead and then goes silent for ~40.
//! This test FAILS on the reviewed code (worst |diff| ≈ 0.27 on a 0.5 sine).

mod common;

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;

const SAT: &str = r#"{ "version": "1.0", "seed": 1, "sample_rate": 48000,
  "nodes": [ {"id":"s","op":"sine","params":{"freq":"100Hz","amp":0.5}},
             {"id":"sat","op":"saturator","params":{"drive":"0dB"}} ],
  "edges": [ {"from":"s","to":"sat"} ],
  "outputs": {"main":["sat"]} }"#;

fn engine(p: Profile) -> Engine {
    let scene = morphrt::scene::load_str(SAT, "sat.json", None).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(p),
            ..CompileOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    Engine::new(plan)
}

fn run(e: &mut Engine, to: u64) -> Vec<f64> {
    let mut out = Vec::new();
    while e.clock() < to {
        let n = ((to - e.clock()) as usize).min(e.block_size());
        e.process_block(n);
        let b = e.bus();
        out.extend((0..b.frames()).map(|i| b.get(0, i)));
    }
    out
}

#[test]
fn a_profile_switch_keeps_a_saturator_continuous() {
    let (at, len) = (12_000u64, 200u64);
    for (from, to) in [
        (Profile::Strict, Profile::Repro),
        (Profile::Repro, Profile::Strict),
    ] {
        let mut a = engine(from);
        run(&mut a, at);
        let st = a.snapshot();
        let mut b = engine(to);
        b.restore(&st).unwrap();
        let got = run(&mut b, at + len);
        let want = run(&mut engine(to), at + len)[at as usize..].to_vec();
        let (worst, i) = got
            .iter()
            .zip(&want)
            .enumerate()
            .map(|(i, (g, w))| ((g - w).abs(), i))
            .fold((0.0, 0), |m, x| if x.0 > m.0 { x } else { m });
        assert!(
            worst < 0.01,
            "{from} -> {to}: output {:+.4} vs {:+.4} at switch+{i} (|diff| {worst:.3}): \
             the switch dropped or shifted audio",
            got[i],
            want[i]
        );
    }
}
