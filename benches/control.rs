//! Control input, measured at block 64. Measures only; asserts nothing.
//!
//! The audio thread's cost per applied control message: two players of
//! `scenes/played-synth.json` under live are called back alternately in
//! one run, block by block, one of them taking K control records a block
//! through its control ring (the filter's cutoff, alternately stepped and
//! ramped over 5 ms, every record landing in that block), the other
//! none. The difference of their mean callback times divided by K is the
//! cost of one applied message (taking it from the ring, queueing it,
//! landing it, reporting it, and the chunk split it causes); reported for
//! K = 1, 16 and 256 (the most one block takes), from the means and from
//! the medians (steadier on a shared machine), with the ratio of the
//! callback times.
//!
//! `cargo bench --bench control [-- SECONDS]` (default 5 s of audio per K).

use morphrt::engine::{ControlRecord, Engine};
use morphrt::graph::ControlValue;
use morphrt::host::live::player::{Controls, Meters, Player};
use morphrt::profile::Profile;
use std::sync::Arc;
use std::time::Instant;

const BLOCK: usize = 64;
const RATE: usize = 48_000;

fn engine(profile: Profile) -> Engine {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/played-synth.json");
    let scene = morphrt::scene::load_file(std::path::Path::new(path)).unwrap();
    let plan = morphrt::graph::compile(
        &scene,
        &morphrt::graph::CompileOptions {
            profile: Some(profile),
            block_size: Some(BLOCK),
            ..Default::default()
        },
    )
    .unwrap();
    Engine::new(plan)
}

fn player(e: Engine) -> Player {
    Player::new(
        e,
        2,
        None,
        64,
        Arc::new(Meters::default()),
        Arc::new(Controls::default()),
        Instant::now(),
    )
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Mean and median callback times (ns) of a plain player and one taking
/// `k` records a block, over `blocks` blocks each, alternating.
fn compare(k: usize, blocks: usize) -> ((f64, f64), (f64, f64), u64) {
    let plain_engine = engine(Profile::Live);
    let fed_engine = engine(Profile::Live);
    let (node, param) = fed_engine.find_param("lp", "cutoff").unwrap();
    let id = fed_engine.id();
    let mut plain = player(plain_engine);
    let mut fed = player(fed_engine);
    let mut link = fed.control_link();
    let mut out = vec![0.0f32; BLOCK * 2];
    let (mut t_plain, mut t_fed) = (Vec::with_capacity(blocks), Vec::with_capacity(blocks));
    let mut seq = 0u64;
    let mut applied = 0u64;
    for b in 0..blocks {
        let clock = (b * BLOCK) as u64;
        for i in 0..k {
            seq += 1;
            let r = ControlRecord {
                sample: clock + (i * BLOCK / k.max(1)) as u64,
                node: node as u32,
                param: param as u16,
                value: ControlValue::Number(300.0 + ((seq * 37) % 4000) as f64),
                ramp: if seq % 2 == 0 { 240 } else { 0 },
                engine: id,
                seq,
            };
            let _ = link.records.push(r);
        }
        let t = Instant::now();
        plain.fill(&mut out);
        t_plain.push(t.elapsed().as_nanos() as f64);
        let t = Instant::now();
        fed.fill(&mut out);
        t_fed.push(t.elapsed().as_nanos() as f64);
        while let Ok(r) = link.reports.pop() {
            if matches!(r.outcome, morphrt::engine::Outcome::Applied { .. }) {
                applied += 1;
            }
        }
    }
    (
        (mean(&t_plain), median(&mut t_plain)),
        (mean(&t_fed), median(&mut t_fed)),
        applied,
    )
}

fn main() {
    let seconds: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5.0);
    let blocks = ((seconds * RATE as f64) as usize / BLOCK).max(100);
    println!(
        "control cost: scenes/played-synth.json, live, block {BLOCK}, {blocks} blocks per run, plain and fed players alternating"
    );
    println!("   K  plain mean  fed mean   ratio   plain p50  fed p50   per message: mean   p50    applied");
    for k in [1usize, 16, 256] {
        let ((pm, p50), (fm, f50), applied) = compare(k, blocks);
        println!(
            "{k:>4}  {:>8.0} ns  {:>8.0} ns  ×{:.2}   {:>7.0} ns  {:>7.0} ns  {:>9.1} ns  {:>6.1} ns  {applied}",
            pm,
            fm,
            fm / pm,
            p50,
            f50,
            (fm - pm) / k as f64,
            (f50 - p50) / k as f64
        );
    }
}
