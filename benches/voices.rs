//! What voices cost: CPU time per second of audio of a voice module (a saw
//! with a little noise, a state-variable lowpass, an ADSR and a gain per
//! voice) with 8 voices of which 2 sound, against 2 voices both sounding
//! and 8 voices all sounding, under live and strict at block 64. The 6
//! voices that play nothing are free, and a free voice's nodes are not
//! run, so 8-of-2 should cost about what 2-of-2 does (the sum over 8 voice
//! outputs is what is left), and 8-of-8 about four times as much. Rounds
//! are interleaved and the best of each kept, so the ratios stay
//! comparable on a noisy machine. Measures only; asserts nothing.
//!
//! `cargo bench --bench voices [-- SECONDS [ROUNDS]]`

use morphrt::engine::{run_blocks, Engine};
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::time::Instant;

const BLOCK: usize = 64;
const SR: f64 = 48000.0;

/// The scene: `voices` voices, `sounding` notes held from the start.
fn scene(voices: usize, sounding: usize) -> String {
    let notes: Vec<String> = (0..sounding)
        .map(|k| {
            format!(
                r#"{{ "time": "0s", "module": "pad", "note": {}, "velocity": 0.5 }}"#,
                48 + 3 * k
            )
        })
        .collect();
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000, "seed": 1,
  "modules": [ {{ "id": "pad", "voices": {voices},
      "note": {{ "pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain" }},
      "nodes": [
        {{ "id": "osc", "op": "saw", "params": {{ "amp": 0.1 }} }},
        {{ "id": "air", "op": "noise", "params": {{ "amp": 0.003 }} }},
        {{ "id": "tone", "op": "mix" }},
        {{ "id": "lp", "op": "svf", "params": {{ "cutoff": "2kHz" }} }},
        {{ "id": "env", "op": "adsr", "params": {{ "attack": "5ms", "sustain": 0.7 }} }},
        {{ "id": "vca", "op": "multiply" }},
        {{ "id": "vel", "op": "gain" }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "tone:in0" }}, {{ "from": "air", "to": "tone:in1" }}, {{ "from": "tone", "to": "lp" }},
             {{ "from": "lp", "to": "vca:a" }}, {{ "from": "env", "to": "vca:b" }}, {{ "from": "vca", "to": "vel" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [ {} ] }}"#,
        notes.join(", ")
    )
}

fn engine(voices: usize, sounding: usize, profile: Profile) -> Engine {
    let text = scene(voices, sounding);
    let s = morphrt::scene::load_str(&text, "voices.json", None).expect("the bench scene loads");
    let plan = compile(
        &s,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(BLOCK),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .expect("the bench scene compiles");
    Engine::new(plan)
}

/// Seconds of CPU to render `frames` (the engine built outside the timing).
fn time(voices: usize, sounding: usize, profile: Profile, frames: u64) -> f64 {
    let mut e = engine(voices, sounding, profile);
    let t = Instant::now();
    run_blocks(
        &mut e,
        frames,
        |bus| {
            std::hint::black_box(bus.get(0, 0));
        },
        |_| {},
    );
    let secs = t.elapsed().as_secs_f64();
    let playing = e.voices_sounding()[0].1;
    assert_eq!(
        playing, sounding,
        "{voices} voices: {sounding} should sound"
    );
    secs
}

fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seconds = args.first().copied().unwrap_or(10.0);
    let rounds = args.get(1).map_or(5, |r| *r as usize).max(1);
    let frames = (seconds * SR) as u64;
    let cases = [(8, 2), (2, 2), (8, 8)];
    let profiles = [Profile::Live, Profile::Strict];
    let mut best = [[f64::INFINITY; 3]; 2];
    for _ in 0..rounds {
        for (p, &profile) in profiles.iter().enumerate() {
            for (c, &(voices, sounding)) in cases.iter().enumerate() {
                let t = time(voices, sounding, profile, frames);
                best[p][c] = best[p][c].min(t);
            }
        }
    }
    println!("voice module cost, block {BLOCK}, {seconds} s of audio, best of {rounds} rounds:");
    println!("  profile  8 voices/2 sound  2 voices/2 sound  8 voices/8 sound   8of2 : 2of2   8of8 : 2of2");
    for (p, profile) in profiles.iter().enumerate() {
        let per_second = |c: usize| best[p][c] / seconds * 1e3;
        println!(
            "  {:<7}  {:>10.3} ms/s     {:>10.3} ms/s     {:>10.3} ms/s     {:>8.2}×     {:>8.2}×",
            profile.to_string(),
            per_second(0),
            per_second(1),
            per_second(2),
            best[p][0] / best[p][1],
            best[p][2] / best[p][1],
        );
    }
}
