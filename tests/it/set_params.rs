//! `morphrt render --set node.param=value` and `--set-file`: the same
//! bytes as rendering the scene with those params edited in, and errors
//! that name the node, the param and what is valid.

use crate::support as common;

use common::{morphrt, root, stderr, stdout, temp_dir};

/// The hash `render --hash` prints for `args` after the scene.
fn hash(scene: &str, args: &[&str]) -> String {
    let mut all = vec![
        "render",
        scene,
        "--profile",
        "strict",
        "-d",
        "0.5s",
        "--hash",
        "-q",
        "-o",
        "/dev/null",
    ];
    all.extend_from_slice(args);
    let o = morphrt(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

/// scenes/pluck-delay.json with `edits` (node, param, value) written into
/// its node params, saved in `dir`.
fn edited(dir: &std::path::Path, edits: &[(&str, &str, serde_json::Value)]) -> String {
    let text = std::fs::read_to_string(root().join("scenes/pluck-delay.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for (node, param, value) in edits {
        let n = doc["nodes"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|n| n["id"] == *node)
            .unwrap();
        n["params"][*param] = value.clone();
    }
    let path = dir.join("edited.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn set_renders_the_bytes_of_the_scene_edited_by_hand() {
    let dir = temp_dir("set-edited");
    let scene = "scenes/pluck-delay.json";
    let by_hand = edited(
        &dir,
        &[
            ("tone_lp", "cutoff", "900Hz".into()),
            ("echo", "feedback", 0.3.into()),
            ("tone_lp", "mode", "highpass".into()),
        ],
    );
    let want = hash(&by_hand, &[]);
    let got = hash(
        scene,
        &[
            "--set",
            "tone_lp.cutoff=900Hz",
            "--set",
            "echo.feedback=0.3",
            "--set",
            "tone_lp.mode=highpass",
        ],
    );
    assert_eq!(got, want);
    assert_ne!(got, hash(scene, &[]), "the params change the sound");
    // The same set from a file; a later --set wins over it.
    let file = dir.join("sweep.json");
    std::fs::write(
        &file,
        r#"{ "tone_lp.cutoff": "900Hz", "echo.feedback": 0.9, "tone_lp.mode": "highpass" }"#,
    )
    .unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(
        hash(scene, &["--set-file", f, "--set", "echo.feedback=0.3"]),
        want
    );
}

#[test]
fn a_bad_set_exits_2_naming_the_node_param_and_what_is_valid() {
    let dir = temp_dir("set-bad");
    let out = dir.join("x.wav");
    let out = out.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["render", "scenes/pluck-delay.json", "-o", out, "-d", "0.1s"];
        all.extend_from_slice(args);
        morphrt(&all)
    };
    let o = run(&["--set", "lowpass.cutoff=900Hz"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("no node `lowpass`") && e.contains("tone_lp"),
        "{e}"
    );
    let o = run(&["--set", "tone_lp.cutoff=3ms"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("pluck-delay.json (with --set)")
            && e.contains("tone_lp")
            && e.contains("frequency"),
        "{e}"
    );
    let o = run(&["--set", "cutoff=3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("node.param"), "{}", stderr(&o));
    let file = dir.join("list.json");
    std::fs::write(&file, "[1, 2]").unwrap();
    let o = run(&["--set-file", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("one object"), "{}", stderr(&o));
    assert!(!dir.join("x.wav").exists(), "no output after a refused set");
}
