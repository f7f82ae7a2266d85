//! The output stage does not depend on the calling thread's FP mode: a
//! host that calls back with flush-to-zero / denormals-are-zero set gets
//! the same bits from the crossfade, the f32 conversion and the stop fade
//! as one that does not, and as `replay` computes.

use crate::support as common;

use morphrt::api::player::Scripted;
use morphrt::dsp::fpmode::FpGuard;
use morphrt::engine::incoming::Incoming;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::host::live::player::{Meters, Player, Switches};
use morphrt::profile::Profile;
use std::sync::Arc;

/// A stereo scene of two constants: `a` left, `b` right.
fn scene(a: f64, b: f64) -> String {
    format!(
        r#"{{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ {{ "id": "l", "op": "dc", "params": {{ "value": {a:e} }} }},
             {{ "id": "r", "op": "dc", "params": {{ "value": {b:e} }} }} ],
  "outputs": {{ "main": ["l", "r"] }} }}"#
    )
}

fn engine(text: &str, p: Profile) -> Engine {
    common::engine(text, Some(p), 64)
}

/// Runs `f` with the thread's FTZ/DAZ on (`flush`) or off, as a host
/// calling back would have set them.
fn as_caller<R>(flush: bool, f: impl FnOnce() -> R) -> R {
    let _mode = FpGuard::new(flush);
    f()
}

fn bits64(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A scene compiled under `p` at block 64, to be handed over.
fn incoming(text: &str, p: Profile) -> Incoming {
    let sc = morphrt::scene::load_str(text, "t.json", None).unwrap();
    let opts = CompileOptions {
        profile: Some(p),
        block_size: Some(64),
        ..morphrt::host::files::resources::compile_options()
    };
    Incoming::from_plan(compile(&sc, &opts).unwrap(), None, Vec::new())
}

/// A crossfade between engines of f64 denormals (strict keeps them).
fn crossfade(p: Profile) -> Vec<f64> {
    let mut s = Scripted::new(incoming(&scene(1e-310, 3e-310), p), 2);
    let next = incoming(&scene(2e-310, -1e-309), p);
    assert!(s.handover_at(next, 0, 0, 256).is_ok());
    s.play_to(512);
    s.into_output()
}

#[test]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn a_crossfade_of_denormals_is_the_same_under_the_callers_ftz_and_daz() {
    for p in Profile::ALL {
        let plain = as_caller(false, || crossfade(p));
        let flushed = as_caller(true, || crossfade(p));
        assert_eq!(bits64(&plain), bits64(&flushed), "under {p}");
        if p == Profile::Strict {
            // Strict keeps IEEE denormals: the fade really computed some.
            assert!(
                plain
                    .iter()
                    .any(|x| *x != 0.0 && x.abs() < f64::MIN_POSITIVE),
                "no denormal in the strict crossfade"
            );
        }
    }
}

/// Frames the callback plays before its stop fade ends.
const PLAYED: usize = 20 * 48 + 240;

/// Plays `first`, a handover to `next` saved at 0 and swapped at 128
/// with a 256-frame crossfade, and a stop fade from the 21st callback
/// through the real callback; returns what the device got until the fade
/// ended.
fn callback_output(first: Engine, next: Engine) -> Vec<f32> {
    let controls = Arc::new(Switches::default());
    let mut player = Player::new(
        first,
        2,
        None,
        240,
        Arc::new(Meters::default()),
        controls.clone(),
        std::time::Instant::now(),
    );
    let mut link = player.link();
    let mut next = next;
    next.migrate(&player.engine().snapshot(), 0);
    morphrt::engine::incoming::advance_to(&mut next, 128);
    assert!(link
        .send(morphrt::host::live::player::ToAudio::Offer {
            engine: Box::new(next),
            at: 128,
            fade: 256,
        })
        .is_ok());
    let mut out = vec![0.0f32; 48 * 2];
    let mut all = Vec::new();
    for k in 0..40 {
        if k == 20 {
            controls
                .stop
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        player.fill(&mut out);
        all.extend_from_slice(&out);
    }
    all.truncate(PLAYED * 2);
    all
}

#[test]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn the_callbacks_f32_output_is_the_same_under_the_callers_ftz_and_daz() {
    // Normal in f64, denormal in f32: only FTZ makes them zero.
    let (a, b) = (scene(1e-40, -3e-39), scene(2e-40, 5e-41));
    for p in [Profile::Strict, Profile::Repro] {
        let run = || callback_output(engine(&a, p), engine(&b, p));
        let plain = as_caller(false, run);
        let flushed = as_caller(true, run);
        assert_eq!(bits32(&plain), bits32(&flushed), "under {p}");
        if p == Profile::Strict {
            // Strict plays IEEE denormals, whatever the caller's mode.
            assert!(
                plain
                    .iter()
                    .any(|x| *x != 0.0 && x.abs() < f32::MIN_POSITIVE),
                "no f32 denormal in the strict output"
            );
        }
    }
}

#[test]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn replays_device_samples_match_the_callbacks_under_any_callers_mode() {
    let (a, b) = (scene(1e-40, -3e-39), scene(2e-40, 5e-41));
    let p = Profile::Strict;
    let live = as_caller(true, || callback_output(engine(&a, p), engine(&b, p)));
    for flush in [false, true] {
        let replayed = as_caller(flush, || {
            let plan = |t: &str| {
                let sc = morphrt::scene::load_str(t, "t.json", None).unwrap();
                let opts = CompileOptions {
                    profile: Some(p),
                    block_size: Some(64),
                    ..morphrt::host::files::resources::compile_options()
                };
                Incoming::from_plan(compile(&sc, &opts).unwrap(), None, Vec::new())
            };
            let mut d = Scripted::new(plan(&a), 2);
            d.handover_at(plan(&b), 0, 128, 256).unwrap();
            let frames = PLAYED as u64;
            d.play_to(frames + 64);
            // The stop fade began at the first frame of callback 20.
            d.into_device_samples(frames, Some((20 * 48, 240)))
        });
        assert_eq!(bits32(&replayed), bits32(&live), "caller flush {flush}");
    }
}
