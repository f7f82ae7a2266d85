//! Records the git commit and build settings, for `morphrt --version`
//! (a benchmark or a journal from another build is then recognisable).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    // Features beyond the target's baseline that change what repro/live run.
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let notable: Vec<&str> = features
        .split(',')
        .filter(|f| matches!(*f, "avx" | "avx2" | "fma" | "avx512f" | "neon"))
        .collect();
    let detail = format!(
        "git {commit}, {arch}, {profile} build, target features: {}",
        if notable.is_empty() {
            "baseline".to_string()
        } else {
            notable.join("+")
        }
    );
    println!("cargo:rustc-env=MORPHRT_BUILD_DETAIL={detail}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
}
