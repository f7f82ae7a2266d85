//! The examples: `examples/render.rs`, which uses `morphrt-core` alone,
//! renders what `morphrt render` renders, bit for bit under strict;
//! `examples/realtime.rs` plays a profile switch as `replay` redoes it.

use crate::support as common;

#[path = "../../examples/render.rs"]
mod render_example;

#[test]
fn the_core_only_render_example_equals_morphrt_render_bit_for_bit() {
    for (scene, seconds) in [
        ("scenes/pluck-delay.json", "2"),
        ("scenes/poly-pad.json", "1.5"),
    ] {
        let path = common::root().join(scene);
        let text = std::fs::read_to_string(&path).unwrap();
        let bytes = render_example::render(&text, &path, seconds.parse().unwrap())
            .unwrap_or_else(|e| panic!("{scene}: {e}"));
        assert!(
            !bytes.is_empty() && bytes.iter().any(|b| *b != 0),
            "{scene} is silent"
        );
        let out = common::temp_dir("examples").join("out.wav");
        let o = common::morphrt(&[
            "render",
            path.to_str().unwrap(),
            "--profile",
            "strict",
            "-d",
            &format!("{seconds}s"),
            "--hash",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let hash = common::stdout(&o);
        assert_eq!(
            morphrt::host::files::digest::sha256_hex(&bytes),
            hash.trim(),
            "{scene}"
        );
    }
}

#[test]
fn the_render_example_refuses_a_scene_that_names_a_resource_without_a_resolver() {
    let path = common::root().join("scenes/hall-reverb.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let err = render_example::render(&text, &path, 0.1).unwrap_err();
    assert!(err.contains("@resource:hall.wav"), "{err}");
    assert!(err.contains("supplies no resources"), "{err}");
}

#[path = "../../examples/realtime.rs"]
mod realtime_example;

/// The real-time example's loop (odd frame counts on an audio thread, a
/// profile switch from the controller) plays what the offline handover
/// with the same capture sample, swap sample and crossfade renders (what
/// `replay` redoes of a journal's switch), one block late, bit for bit.
#[test]
fn the_core_only_realtime_example_switches_profile_as_the_replayed_handover_does() {
    use morphrt::api::player::Scripted;
    use morphrt::engine::incoming::Incoming;
    use morphrt::graph::{compile, CompileOptions};
    use morphrt::profile::Profile;
    let path = common::root().join("scenes/drone.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let played = realtime_example::play(&text, 0.6).unwrap();
    let (n, s, fade) = played.switch;
    assert!(n > 0 && s >= n && fade > 0, "{:?}", played.switch);
    let incoming = |profile| {
        let scene = morphrt::scene::load_str(&text, "scene.json", None).unwrap();
        let options = CompileOptions {
            profile: Some(profile),
            sample_rate: Some(48_000),
            ..CompileOptions::default()
        };
        Incoming::from_plan(compile(&scene, &options).unwrap(), None, Vec::new())
    };
    let channels = played.output.len();
    let mut scripted = Scripted::new(incoming(Profile::Strict), channels);
    scripted
        .handover_at(incoming(Profile::Repro), n, s, fade)
        .unwrap();
    let b = played.latency;
    let total = played.output[0].len();
    scripted.play_to((total - b) as u64);
    let offline = scripted.output();
    for (c, host) in played.output.iter().enumerate() {
        assert!(
            host[..b].iter().all(|x| *x == 0.0),
            "the latency is silence"
        );
        let late: Vec<u32> = host[b..].iter().map(|x| x.to_bits()).collect();
        let off: Vec<u32> = (0..total - b)
            .map(|i| (offline[i * channels + c] as f32).to_bits())
            .collect();
        assert!(late == off, "channel {c}");
        assert!(host.iter().any(|x| *x != 0.0), "channel {c} is silent");
    }
}
