//! The examples: `examples/render.rs`, which uses `morphrt-core` alone,
//! renders what `morphrt render` renders, bit for bit under strict.

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
