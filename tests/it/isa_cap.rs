//! `MORPHRT_ISA`, which caps the instruction set the kernels use: strict
//! plays the same bits at every cap; repro and live play the same bits
//! with AVX2 as with AVX-512, and other bits without AVX2 on a CPU with FMA
//! (GUIDE, "Profiles"); a value morphrt does not know is refused before
//! anything is written; `bench`'s comparison key and a journal name the
//! feature level the kernels play.

use crate::support::{root, stderr, stdout, temp_dir};
use std::path::Path;
use std::process::Output;

/// `morphrt ARGS` with `MORPHRT_ISA` set to `isa`, or unset.
fn morphrt_at(isa: Option<&str>, args: &[&str]) -> Output {
    let mut c = crate::support::bin();
    c.args(args).current_dir(root());
    match isa {
        Some(v) => c.env("MORPHRT_ISA", v),
        None => c.env_remove("MORPHRT_ISA"),
    };
    c.output().expect("run morphrt")
}

/// The bytes of a 1 s render of `scenes/dub-chain.json`, whose reverb and
/// compressor fuse multiply-adds under repro and live where the CPU has FMA.
fn render(isa: Option<&str>, profile: &str, out: &Path) -> Vec<u8> {
    let o = morphrt_at(
        isa,
        &[
            "render",
            "scenes/dub-chain.json",
            "--profile",
            profile,
            "-d",
            "1s",
            "--format",
            "f32",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{isa:?} {profile}: {}", stderr(&o));
    std::fs::read(out).unwrap()
}

fn has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx512" => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512dq")
            }
            "avx2" => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

#[test]
fn a_cap_changes_no_strict_bit_and_avx2_plays_the_bits_of_avx512() {
    let dir = temp_dir("bits");
    for profile in ["strict", "repro", "live"] {
        let at =
            |isa: Option<&str>| render(isa, profile, &dir.join(format!("{profile}-{isa:?}.wav")));
        let free = at(None);
        assert_eq!(at(Some("avx512")), free, "{profile}: avx512 is no cap here");
        assert_eq!(
            at(Some("avx2")),
            free,
            "{profile}: AVX2 against the CPU's widest"
        );
        let base = at(Some("base"));
        if profile == "strict" || !has("avx2") {
            assert_eq!(base, free, "{profile}: base");
        } else {
            assert_ne!(
                base, free,
                "{profile}: without AVX2 the biquads do not fuse"
            );
        }
    }
}

#[test]
fn an_unknown_isa_is_refused_before_anything_is_written() {
    let dir = temp_dir("refused");
    let out = dir.join("out.wav");
    let o = morphrt_at(
        Some("sse4"),
        &[
            "render",
            "scenes/bench/w4.json",
            "-d",
            "0.1s",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("MORPHRT_ISA") && e.contains("sse4") && e.contains("base, avx2 or avx512"),
        "{e}"
    );
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn bench_names_the_level_the_kernels_run_at_in_its_comparison_key() {
    let args = [
        "bench",
        "scenes/bench/w4.json",
        "--profile",
        "live",
        "-d",
        "50ms",
        "--runs",
        "1",
        "--json",
    ];
    let key = |isa: Option<&str>| {
        let o = morphrt_at(isa, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        v["key"].to_string()
    };
    let free = key(None);
    assert!(!free.contains("MORPHRT_ISA"), "{free}");
    // A cap at the CPU's own level changes nothing, so splits no key.
    assert_eq!(key(Some("avx512")), free);
    if has("avx512") {
        let capped = key(Some("avx2"));
        assert!(
            capped.contains("x86-64-v3") && !capped.contains("x86-64-v4"),
            "{capped}"
        );
    }
    if has("avx2") {
        let capped = key(Some("base"));
        assert!(capped.contains("x86-64-v2, MORPHRT_ISA=base"), "{capped}");
    }
}

#[test]
fn a_session_under_a_cap_replays_bit_for_bit_under_the_same_cap_and_warns_without_it() {
    let dir = temp_dir("journal");
    let scene = dir.join("dub.json");
    std::fs::copy(root().join("scenes/dub-chain.json"), &scene).unwrap();
    let (journal, capture) = (dir.join("take.jsonl"), dir.join("played.wav"));
    let o = morphrt_at(
        Some("base"),
        &[
            "run",
            scene.to_str().unwrap(),
            "--device",
            "clock",
            "--profile",
            "live",
            "--duration",
            "0.5s",
            "--no-watch",
            "--journal",
            journal.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let played = std::fs::read(&capture).unwrap();
    let replay = |isa: Option<&str>, name: &str| {
        let out = dir.join(name);
        let o = morphrt_at(
            isa,
            &[
                "replay",
                journal.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        (std::fs::read(out).unwrap(), stderr(&o))
    };
    let (same, said) = replay(Some("base"), "again.wav");
    assert!(same == played, "the same cap replays what was played");
    assert!(!said.contains("CPU feature level"), "{said}");
    if has("avx2") {
        let o = morphrt_at(None, &["replay", "--info", journal.to_str().unwrap()]);
        let info = format!("{}{}", stdout(&o), stderr(&o));
        assert!(info.contains("x86-64-v2, MORPHRT_ISA=base"), "{info}");
    }
    let (other, said) = replay(None, "uncapped.wav");
    assert!(said.contains("CPU feature level"), "{said}");
    if has("avx2") {
        assert!(other != played, "without the cap the reverb fuses");
    }
}
