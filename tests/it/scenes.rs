//! Every shipped scene: its strict render matches `golden/scenes/` at block
//! sizes 64 and 4096, and its repro and live renders are within the scene's
//! parity bound of strict (latency-aligned relative RMS, excluding one block
//! plus any ramp around each event). A scene that reads audio input renders
//! [`common::TestInput`]: the same bits at both block sizes and within the
//! default bounds, and, where `golden/scenes/` holds a golden for it (a
//! scene that makes its own sound of the input, as `granular-input.json`
//! does), that golden as well.
//!
//! Regenerate (deliberately, saying why in the commit):
//! `MORPHRT_BLESS=1 cargo test --release --test it scenes::strict_renders`
//! (blessing writes an input scene's golden only where one is already: to
//! give an input scene its first, create the file, `{}`, and bless).

use crate::support as common;

use morphrt::bench::parity::{self, excluded, golden_frames, rel_rms};
use morphrt::engine::render_to_vec;
use morphrt::graph::{compile, CompileOptions, Plan};
use morphrt::host::offline::render_hash;
use morphrt::profile::Profile;
use morphrt::{engine::Engine, scene};
use serde_json::json;
use std::path::Path;

fn plan(path: &Path, profile: Profile, block: Option<usize>) -> Plan {
    let s = scene::load_file(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e[0]));
    compile(
        &s,
        &CompileOptions {
            profile: Some(profile),
            block_size: block,
            resolver: morphrt::host::files::resources::Folders::shared(Vec::new()),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {}", path.display(), e[0]))
}

#[test]
fn strict_renders_match_goldens_and_profiles_stay_within_parity() {
    let bless = std::env::var_os("MORPHRT_BLESS").is_some();
    let scenes = common::shipped_scenes();
    assert!(scenes.len() >= 6, "at least six shipped scenes");
    for path in &scenes {
        let name = common::stem(path);
        let gpath = common::root().join(format!("golden/scenes/{name}.json"));
        let p64 = plan(path, Profile::Strict, Some(64));
        let n = golden_frames(&p64);
        let skip = excluded(&p64, parity::guard(p64.block_size));
        let strict_latency = p64.latency as i64;
        let reads_input = !p64.inputs().is_empty();
        let strict = render_to_vec(
            &mut common::fed(Engine::new(plan(path, Profile::Strict, Some(64)))),
            n,
        );
        let peak = strict.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(
            peak > 0.01 && peak <= 1.0,
            "{name}: strict peak {peak} should be audible and within ±1"
        );
        let h64 = render_hash(common::fed(Engine::new(p64)), n);
        let h4096 = render_hash(
            common::fed(Engine::new(plan(path, Profile::Strict, Some(4096)))),
            n,
        );
        assert_eq!(
            h64, h4096,
            "{name}: strict hash differs between block sizes 64 and 4096"
        );
        let (p_repro, p_live) = (
            plan(path, Profile::Repro, None),
            plan(path, Profile::Live, None),
        );
        let lag = |p: &Plan| p.latency as i64 - strict_latency;
        let (lag_repro, lag_live) = (lag(&p_repro), lag(&p_live));
        // Where `check` reports another algorithm under live (convolution
        // engine, oversampling, solver stop rule), live must really run it.
        let algorithms = |p: &Plan| -> Vec<serde_json::Value> {
            morphrt::graph::check_json(p)["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    let mut c = n["choices"].clone();
                    if let Some(o) = c.as_object_mut() {
                        // Math policies always differ; FFT norms can be exact twins.
                        o.remove("math");
                        o.remove("fft");
                    }
                    c
                })
                .collect()
        };
        let live_differs = algorithms(&p_repro) != algorithms(&p_live);
        let repro = render_to_vec(&mut common::fed(Engine::new(p_repro)), n);
        let live = render_to_vec(&mut common::fed(Engine::new(p_live)), n);
        if live_differs {
            assert!(
                repro != live,
                "{name}: check reports other algorithms under live, but live renders repro's bits"
            );
        }
        let e_repro = rel_rms(&strict, &repro, lag_repro, &skip);
        let e_live = rel_rms(&strict, &live, lag_live, &skip);
        if reads_input && !gpath.exists() {
            let (bound_repro, bound_live) = (
                Profile::Repro.default_parity_bound(),
                Profile::Live.default_parity_bound(),
            );
            assert!(e_repro <= bound_repro, "{name}: repro parity {e_repro:e}");
            assert!(e_live <= bound_live, "{name}: live parity {e_live:e}");
            assert!(e_repro > 0.0, "{name}: repro is bit-identical to strict");
            continue;
        }
        if bless {
            if cfg!(debug_assertions) {
                panic!("generate goldens in a release build");
            }
            let doc = json!({
                "scene": format!("scenes/{name}.json"),
                "description": "SHA-256 of the strict render (interleaved little-endian main-bus samples at engine precision), block size 64; parity bounds are relative RMS against strict.",
                "profile": "strict",
                "frames": n,
                "sample_rate": p64_rate(path),
                "sha256": h64,
                "parity": { "repro": Profile::Repro.default_parity_bound(), "live": Profile::Live.default_parity_bound() },
                "measured_parity": { "repro": e_repro, "live": e_live },
            });
            std::fs::create_dir_all(gpath.parent().unwrap()).unwrap();
            std::fs::write(&gpath, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
            continue;
        }
        let golden = parity::Golden::load(&gpath).unwrap_or_else(|e| {
            panic!("{e}; generate with MORPHRT_BLESS=1 cargo test --release --test it scenes::strict_renders")
        });
        assert_eq!(golden.frames, n, "{name}: golden length");
        assert_eq!(
            golden.sha256, h64,
            "{name}: strict render differs from its golden"
        );
        let bound_repro = golden.parity.repro;
        let bound_live = golden.parity.live;
        assert!(
            e_repro <= bound_repro,
            "{name}: repro parity {e_repro:e} > {bound_repro:e}"
        );
        assert!(
            e_live <= bound_live,
            "{name}: live parity {e_live:e} > {bound_live:e}"
        );
        // A regression guard tighter than the bound: each golden records the
        // parity measured when it was made; growing more than 10× over it
        // means something changed, even while still inside the bound.
        let measured: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&gpath).unwrap()).unwrap();
        for (profile, e) in [("repro", e_repro), ("live", e_live)] {
            let was = measured["measured_parity"][profile].as_f64().unwrap_or(0.0);
            assert!(
                e <= 10.0 * was.max(1e-9),
                "{name}: {profile} parity {e:e} is over 10× the {was:e} recorded in its golden"
            );
        }
        // Different algorithms/precisions really ran: not identical to strict.
        assert!(
            e_repro > 0.0,
            "{name}: repro is bit-identical to strict; is it running at f32?"
        );
    }
    if !bless {
        let names: Vec<String> = scenes.iter().map(|p| common::stem(p)).collect();
        for golden in std::fs::read_dir(common::root().join("golden/scenes")).unwrap() {
            let golden = golden.unwrap().path();
            assert!(
                names.contains(&common::stem(&golden)),
                "a golden without a scene: {}",
                golden.display()
            );
        }
        for path in scenes
            .iter()
            .filter(|p| plan(p, Profile::Strict, None).inputs().is_empty())
        {
            let name = common::stem(path);
            assert!(
                common::root()
                    .join(format!("golden/scenes/{name}.json"))
                    .exists(),
                "a scene (that reads no input) without a golden: {name}"
            );
        }
    }
}

fn p64_rate(path: &Path) -> u32 {
    scene::load_file(path).unwrap().sample_rate
}
