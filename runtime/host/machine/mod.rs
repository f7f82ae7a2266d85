//! What a measurement depends on besides the scene: the machine and the
//! build. Two timings compare only when these agree, so every bench report
//! and every stored calibration carries them.

pub mod calibration;

use crate::host::files::digest::{hex, sha256_hex};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// The machine and build a timing was taken on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineKey {
    /// `release` or `debug` (whether debug assertions are compiled in):
    /// the two differ in speed by an order of magnitude.
    pub build: String,
    /// The morphrt version.
    pub version: String,
    /// CPU model name.
    pub cpu: String,
    /// x86-64 micro-architecture level (v2/v3/v4), which selects rustfft's
    /// SIMD code, or the architecture elsewhere.
    pub cpu_level: String,
    /// Logical cores available to this process.
    pub cores: usize,
}

impl MachineKey {
    /// The key of the running process on this machine.
    pub fn current() -> MachineKey {
        let (cpu, cpu_level) = cpu_info();
        MachineKey {
            build: build_profile().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            cpu,
            cpu_level,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        }
    }
}

/// `release` or `debug`, from `cfg!(debug_assertions)`.
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// A resource of the scene that cannot be read for its digest: the
/// reference (`@resource:ir.wav`), the file, and the I/O error.
#[derive(Debug)]
pub struct ResourceDigestError {
    pub name: String,
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl std::fmt::Display for ResourceDigestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read resource `{}` ({}): {}",
            self.name,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for ResourceDigestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// SHA-256 (lower-case hex) of the scene file's bytes followed by the
/// SHA-256 of each resource it reads, in the plan's order: a changed
/// impulse response changes the work as much as a changed scene does.
pub fn scene_sha256(
    scene_text: &[u8],
    resources: &[(String, PathBuf)],
) -> Result<String, ResourceDigestError> {
    let mut h = Sha256::new();
    h.update(scene_text);
    for (name, path) in resources {
        let bytes = std::fs::read(path).map_err(|source| ResourceDigestError {
            name: name.clone(),
            path: path.clone(),
            source,
        })?;
        h.update(Sha256::digest(&bytes));
    }
    Ok(hex(&h.finalize()))
}

/// The CPU model and feature level, as journals and benchmarks record them.
pub fn cpu_info() -> (String, String) {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let level = match crate::dsp::vector::isa_cap() {
        Ok(Some(cap)) => capped_level(cpu_level(), cap),
        _ => cpu_level(),
    };
    (model, level)
}

/// The feature level whose repro and live bits the kernels play under
/// `MORPHRT_ISA=cap` on a CPU of `level`: `avx2` on x86-64-v4 plays
/// x86-64-v3's, a cap at or above the CPU's level changes nothing, and
/// `base` on a CPU with AVX2 is named with the cap, since the FFT (whose
/// library picks its own instruction set) still uses AVX there, which a
/// CPU without it would not.
fn capped_level(level: String, cap: &str) -> String {
    match (level.as_str(), cap) {
        ("x86-64-v4", "avx2") => "x86-64-v3".to_string(),
        ("x86-64-v4" | "x86-64-v3", "base") => {
            format!("x86-64-v2, {}=base", crate::dsp::vector::ISA_VAR)
        }
        _ => level,
    }
}

#[cfg(target_arch = "x86_64")]
fn cpu_level() -> String {
    let v2 = is_x86_feature_detected!("sse4.2") && is_x86_feature_detected!("popcnt");
    let v3 = v2
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("bmi2");
    let v4 = v3 && is_x86_feature_detected!("avx512f");
    match (v2, v3, v4) {
        (_, _, true) => "x86-64-v4",
        (_, true, _) => "x86-64-v3",
        (true, _, _) => "x86-64-v2",
        _ => "x86-64",
    }
    .to_string()
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_level() -> String {
    std::env::consts::ARCH.to_string()
}

/// SHA-256 of the running executable: two sessions with the same build id
/// ran the same code. Hashed once per process (a debug build is over
/// 100 MB, and a replay asks more than once).
pub fn build_id() -> String {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        std::env::current_exe()
            .and_then(std::fs::read)
            .map(|b| sha256_hex(&b))
            .unwrap_or_else(|_| "unknown".to_string())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scene_hash_covers_the_text_and_each_resource() {
        let dir = std::env::temp_dir().join(format!("morphrt-machine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ir = dir.join("ir.wav");
        std::fs::write(&ir, b"one").unwrap();
        let res = vec![("@resource:ir.wav".to_string(), ir.clone())];
        let a = scene_sha256(b"{}", &res).unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, scene_sha256(b"{ }", &res).unwrap());
        assert_ne!(a, scene_sha256(b"{}", &[]).unwrap());
        std::fs::write(&ir, b"two").unwrap();
        assert_ne!(a, scene_sha256(b"{}", &res).unwrap());
        std::fs::remove_file(&ir).unwrap();
        let e = scene_sha256(b"{}", &res).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "cannot read resource `@resource:ir.wav` ({}): ",
                ir.display()
            )),
            "{e}"
        );
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn the_key_names_this_build() {
        let k = MachineKey::current();
        assert_eq!(k.build, build_profile());
        assert!(k.cores >= 1);
        assert!(!k.cpu.is_empty() && !k.cpu_level.is_empty());
    }
}
