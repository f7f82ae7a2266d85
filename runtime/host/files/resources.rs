//! Where a scene's `@resource:NAME` files come from for the command line:
//! the folders it searches ([`Folders`], the engine's [`Resolver`]) and the
//! WAV reader that decodes them.
//!
//! NAME is looked up in `resources/` next to the scene file, then in
//! `resources/` next to the scene's folder (so `scenes/x.json` finds the
//! project's top-level `resources/`), then in each directory given with
//! `--resources`, in order; the first existing file wins.
//! NAME must stay inside those directories: absolute paths and `..`
//! components are errors.

use crate::graph::{Resolved, Resolver};
use crate::ops::AudioData;
use crate::scene::capped_list;
use crate::scene::resource::{file_kind, PREFIX};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The command line's resolver: `--resources` directories searched after
/// the scene's own, and references bound to exact files (a replay reads
/// the copies its journal kept).
#[derive(Clone, Debug, Default)]
pub struct Folders {
    /// `--resources` directories, searched after the scene's `resources/`.
    pub dirs: Vec<PathBuf>,
    /// Resource references (`@resource:NAME`) bound to exact files, before
    /// any lookup.
    pub pinned: Vec<(String, PathBuf)>,
}

impl Folders {
    /// A resolver searching `dirs` after the scene's own folders.
    pub fn new(dirs: Vec<PathBuf>) -> Folders {
        Folders {
            dirs,
            pinned: Vec::new(),
        }
    }

    /// [`Folders::new`] as the engine's compile options hold a resolver.
    pub fn shared(dirs: Vec<PathBuf>) -> Option<Arc<dyn Resolver>> {
        Some(Arc::new(Folders::new(dirs)))
    }
}

/// Compile options whose resolver searches only the scene's own
/// `resources/` folders: what `render` compiles with when no
/// `--resources` is given.
pub fn compile_options() -> crate::graph::CompileOptions {
    crate::graph::CompileOptions {
        resolver: Folders::shared(Vec::new()),
        ..crate::graph::CompileOptions::default()
    }
}

impl Resolver for Folders {
    fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for dir in &self.dirs {
            let problem = match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => continue,
                Ok(_) => "is a file, not a directory".to_string(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
                Err(e) => format!("cannot be read: {e}"),
            };
            out.push((
                format!("--resources `{}` {problem}", dir.display()),
                "--resources takes a directory of files that scenes name as \"@resource:NAME\""
                    .to_string(),
            ));
        }
        out
    }

    fn resolve(&self, reference: &str, scene_dir: Option<&Path>) -> Result<Resolved, String> {
        let pinned = self
            .pinned
            .iter()
            .find(|(r, _)| r == reference)
            .map(|(_, p)| p.clone());
        let path = match pinned {
            Some(p) => p,
            None => resolve(reference, scene_dir, &self.dirs)?,
        };
        let audio = read_wav(&path)?;
        Ok(Resolved { path, audio })
    }
}

/// The directories searched, in order.
fn search_dirs(scene_dir: Option<&Path>, extra_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = scene_dir {
        dirs.push(d.join("resources"));
        let parent = if d.as_os_str().is_empty() || d == Path::new(".") {
            PathBuf::from("..")
        } else {
            d.join("..")
        };
        dirs.push(parent.join("resources"));
    }
    dirs.extend(extra_dirs.iter().cloned());
    dirs
}

fn list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        "no directories to search (the scene has no directory and no --resources was given)"
            .to_string()
    } else {
        let names = capped_list(dirs.iter().map(|d| format!("`{}`", d.display())), ", ");
        format!("searched directories: {names}")
    }
}

/// Resolves `reference` (the full `@resource:NAME` string) to an existing file.
/// The error says why the name is invalid or lists every path tried.
pub fn resolve(
    reference: &str,
    scene_dir: Option<&Path>,
    extra_dirs: &[PathBuf],
) -> Result<PathBuf, String> {
    let dirs = search_dirs(scene_dir, extra_dirs);
    let Some(name) = reference.strip_prefix(PREFIX) else {
        return Err(format!(
            "`{reference}` is not a resource reference (expected `{PREFIX}NAME`)"
        ));
    };
    if name.is_empty() {
        return Err(format!(
            "`{reference}` names no file (expected `{PREFIX}NAME`, NAME relative to a resource directory; {})",
            list(&dirs)
        ));
    }
    let path = Path::new(name);
    // `/x`, `C:\x`, `\x`: anything rooted, on any platform.
    let rooted = path.is_absolute()
        || path.has_root()
        || name.starts_with(['/', '\\'])
        || path
            .components()
            .any(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        || (name.len() >= 2
            && name.as_bytes()[1] == b':'
            && name.as_bytes()[0].is_ascii_alphabetic());
    if rooted {
        return Err(format!(
            "resource `{name}` is an absolute path; resource names are relative to a resource directory ({})",
            list(&dirs)
        ));
    }
    // Check `..` on both separators, so a scene means the same on every OS.
    if name.split(['/', '\\']).any(|part| part == "..")
        || path.components().any(|c| c == Component::ParentDir)
    {
        return Err(format!(
            "resource `{name}` contains `..`; resources may not escape their directory ({})",
            list(&dirs)
        ));
    }
    if dirs.is_empty() {
        return Err(format!("resource `{name}` not found: {}", list(&dirs)));
    }
    let tried: Vec<PathBuf> = dirs.iter().map(|d| d.join(path)).collect();
    // Something there that is not a file (a directory, a FIFO), found by
    // its metadata alone: a FIFO is never opened, as reading it would wait.
    let mut not_a_file: Option<(&PathBuf, &'static str)> = None;
    for (dir, found) in dirs.iter().zip(&tried) {
        match std::fs::metadata(found) {
            Ok(m) if m.is_file() => {}
            Ok(m) => {
                not_a_file = not_a_file.or(Some((found, file_kind(&m))));
                continue;
            }
            Err(_) => continue,
        }
        // A link inside a resource directory must not lead out of it.
        let inside = match (dir.canonicalize(), found.canonicalize()) {
            (Ok(d), Ok(f)) => f.starts_with(d),
            _ => false,
        };
        if !inside {
            return Err(format!(
                "resource `{name}` resolves to `{}`, outside `{}` (through a link); resources may not escape their directory",
                found.canonicalize().unwrap_or_else(|_| found.clone()).display(),
                dir.display()
            ));
        }
        return Ok(found.clone());
    }
    let names = capped_list(tried.iter().map(|p| format!("`{}`", p.display())), ", ");
    Err(match not_a_file {
        Some((p, kind)) => format!(
            "resource `{name}` is not a file: `{}` is {kind}; tried {names}",
            p.display()
        ),
        None => format!("resource `{name}` not found; tried {names}"),
    })
}

/// Decodes a WAV file (integer PCM scaled by 2^-(bits-1), or 32-bit float).
/// What is not one is refused saying what it is: a directory, a FIFO or
/// a device (known from its metadata before it is opened, and checked
/// again on the open file: reading a FIFO would wait for a writer), an
/// empty file, another file, another WAV format.
pub fn read_wav(path: &Path) -> Result<AudioData, String> {
    use crate::scene::resource::{open_regular, NotRegular};
    let shown = path.display();
    let file = open_regular(path).map_err(|e| match e {
        NotRegular::Kind(k) => format!("`{shown}` is {k}, not a WAV file"),
        NotRegular::Io(e) => format!("cannot read `{shown}`: {e}"),
    })?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?
        .len();
    if len == 0 {
        return Err(format!(
            "`{shown}` is empty (0 bytes), not a WAV file; {WAV_FORMATS_READ}"
        ));
    }
    let reader = hound::WavReader::new(std::io::BufReader::new(file))
        .map_err(|e| unreadable_wav(path, &e))?;
    let spec = reader.spec();
    let nch = spec.channels as usize;
    if nch == 0 {
        return Err(format!("`{}` has no channels", path.display()));
    }
    let declared = reader.len() as usize;
    let interleaved: Vec<f64> = match spec.sample_format {
        hound::SampleFormat::Float => decode(
            reader.into_samples::<f32>(),
            |v| v as f64,
            path,
            declared,
            nch,
        )?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f64;
            let samples = reader.into_samples::<i32>();
            decode(samples, |v| v as f64 * scale, path, declared, nch)?
        }
    };
    if let Some(k) = interleaved.iter().position(|x| !x.is_finite()) {
        return Err(format!(
            "`{}` holds a non-finite sample (NaN or infinity) at frame {}, channel {}",
            path.display(),
            k / nch,
            k % nch
        ));
    }
    let frames = interleaved.len() / nch;
    let channels = (0..nch)
        .map(|c| (0..frames).map(|f| interleaved[f * nch + c]).collect())
        .collect();
    Ok(AudioData {
        path: path.to_path_buf(),
        sample_rate: spec.sample_rate,
        channels,
    })
}

/// The WAV files [`read_wav`] reads, for its messages.
pub const WAV_FORMATS_READ: &str =
    "morphrt reads WAV files of 8-, 16-, 24- or 32-bit integer PCM or 32-bit float samples";

/// Every sample of a WAV file's data chunk, converted by `f`; a file that
/// ends before the `declared` samples of its header is named as cut short,
/// with how far its samples go.
fn decode<T>(
    samples: impl Iterator<Item = hound::Result<T>>,
    f: impl Fn(T) -> f64,
    path: &Path,
    declared: usize,
    nch: usize,
) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for s in samples {
        match s {
            Ok(v) => out.push(f(v)),
            Err(e) if is_short_read(&e) => {
                return Err(format!(
                    "`{}` is cut short: its header declares {declared} samples ({} frames of {nch} channels), but the file ends after {} (was it not completely written?)",
                    path.display(),
                    declared / nch,
                    out.len()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "cannot decode `{}` at sample {}: {e}",
                    path.display(),
                    out.len()
                ))
            }
        }
    }
    Ok(out)
}

/// Whether hound stopped because the file ended (it says so in an
/// `ErrorKind::Other` error of its own).
fn is_short_read(e: &hound::Error) -> bool {
    matches!(e, hound::Error::IoError(io)
        if io.kind() == std::io::ErrorKind::UnexpectedEof
            || io.to_string() == "Failed to read enough bytes.")
}

/// Why `path` could not be opened as a WAV file, from its first bytes: not
/// a RIFF WAVE file at all, a WAV of a format it does not read (named), or
/// what the decoder said.
fn unreadable_wav(path: &Path, e: &hound::Error) -> String {
    let shown = path.display();
    let mut head = Vec::new();
    if let Ok(f) = crate::scene::resource::open_regular(path) {
        use std::io::Read;
        let _ = f.take(4096).read_to_end(&mut head);
    }
    if head.len() < 12 || &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return format!(
            "`{shown}` is not a WAV file (it does not start with a RIFF WAVE header; {} bytes); {WAV_FORMATS_READ}",
            std::fs::metadata(path).map_or(0, |m| m.len())
        );
    }
    let cut = is_short_read(e);
    match wav_format(&head) {
        Some(what) => format!("`{shown}` holds {what}, which is not read; {WAV_FORMATS_READ}"),
        None if cut => format!(
            "`{shown}` is cut short: it ends inside its header, after {} bytes (was it not completely written?)",
            std::fs::metadata(path).map_or(0, |m| m.len())
        ),
        None => format!("cannot read `{shown}` as a WAV file: {e}; {WAV_FORMATS_READ}"),
    }
}

/// The sample format a RIFF WAVE header declares, in words (`64-bit float
/// samples`, `ADPCM-compressed audio`), when its `fmt ` chunk is among the
/// first bytes and is not one [`read_wav`] reads.
fn wav_format(head: &[u8]) -> Option<String> {
    let u16_at = |i: usize| Some(u16::from_le_bytes(head.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_le_bytes(head.get(i..i + 4)?.try_into().ok()?));
    let mut at = 12;
    while at + 8 <= head.len() {
        let len = u32_at(at + 4)? as usize;
        if &head[at..at + 4] == b"fmt " {
            let body = at + 8;
            let mut tag = u16_at(body)?;
            let bits = u16_at(body + 14)?;
            if tag == 0xFFFE {
                // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format GUID's first two bytes.
                tag = u16_at(body + 24)?;
            }
            return unread_format(tag, bits);
        }
        at = at
            .saturating_add(8)
            .saturating_add(len)
            .saturating_add(len & 1);
    }
    None
}

/// A WAV `fmt ` chunk's format tag (the sub-format's, for
/// WAVE_FORMAT_EXTENSIBLE) and bits per sample in words (`64-bit float
/// samples`, `ADPCM-compressed audio`) when morphrt does not read it;
/// `None` for the formats it reads.
pub fn unread_format(tag: u16, bits: u16) -> Option<String> {
    match (tag, bits) {
        (1, 8 | 16 | 24 | 32) | (3, 32) => None,
        (1, b) => Some(format!("{b}-bit integer samples")),
        (3, b) => Some(format!("{b}-bit float samples")),
        (2 | 0x11, _) => Some("ADPCM-compressed audio".to_string()),
        (6, _) => Some("A-law audio".to_string()),
        (7, _) => Some("μ-law audio".to_string()),
        (0x55, _) => Some("MP3 audio".to_string()),
        (t, _) => Some(format!("audio in format 0x{t:04x}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "morphrt-resource-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn scene_resources_dir_wins_over_extra_dirs() {
        let scene = TempDir::new();
        let extra = TempDir::new();
        touch(&scene.0.join("resources/hall.wav"));
        touch(&extra.0.join("hall.wav"));
        touch(&extra.0.join("irs/room.wav"));
        let extras = [extra.0.clone()];
        assert_eq!(
            resolve("@resource:hall.wav", Some(&scene.0), &extras).unwrap(),
            scene.0.join("resources/hall.wav")
        );
        assert_eq!(
            resolve("@resource:irs/room.wav", Some(&scene.0), &extras).unwrap(),
            extra.0.join("irs/room.wav")
        );
        assert_eq!(
            resolve("@resource:hall.wav", None, &extras).unwrap(),
            extra.0.join("hall.wav")
        );
    }

    #[test]
    fn extra_dirs_are_searched_in_order() {
        let a = TempDir::new();
        let b = TempDir::new();
        touch(&a.0.join("x.wav"));
        touch(&b.0.join("x.wav"));
        touch(&b.0.join("y.wav"));
        let extras = [a.0.clone(), b.0.clone()];
        assert_eq!(
            resolve("@resource:x.wav", None, &extras).unwrap(),
            a.0.join("x.wav")
        );
        assert_eq!(
            resolve("@resource:y.wav", None, &extras).unwrap(),
            b.0.join("y.wav")
        );
    }

    #[test]
    fn a_directory_is_not_a_resource() {
        let scene = TempDir::new();
        std::fs::create_dir_all(scene.0.join("resources/sub")).unwrap();
        let e = resolve("@resource:sub", Some(&scene.0), &[]).unwrap_err();
        assert!(
            e.contains("is not a file:") && e.contains("` is a directory"),
            "{e}"
        );
        // A file of that name in a later directory still wins.
        let extra = TempDir::new();
        touch(&extra.0.join("sub"));
        let found = resolve(
            "@resource:sub",
            Some(&scene.0),
            std::slice::from_ref(&extra.0),
        );
        assert_eq!(found.unwrap(), extra.0.join("sub"));
    }

    #[test]
    fn missing_resource_lists_every_path_tried() {
        let scene = TempDir::new();
        let extra = TempDir::new();
        let e = resolve(
            "@resource:none.wav",
            Some(&scene.0),
            std::slice::from_ref(&extra.0),
        )
        .unwrap_err();
        assert!(e.contains("not found"), "{e}");
        let first = scene.0.join("resources").join("none.wav");
        let second = extra.0.join("none.wav");
        assert!(e.contains(&first.display().to_string()), "{e}");
        assert!(e.contains(&second.display().to_string()), "{e}");
        let e = resolve("@resource:none.wav", None, &[]).unwrap_err();
        assert!(e.contains("no directories"), "{e}");
    }

    #[test]
    fn escaping_names_are_rejected() {
        let scene = TempDir::new();
        touch(&scene.0.join("secret.wav"));
        let dir = Some(scene.0.as_path());
        for bad in [
            "@resource:../secret.wav",
            "@resource:a/../../secret.wav",
            "@resource:..",
            "@resource:a\\..\\b.wav",
        ] {
            let e = resolve(bad, dir, &[]).unwrap_err();
            assert!(e.contains("`..`"), "{bad}: {e}");
            assert!(e.contains("searched directories"), "{bad}: {e}");
        }
        for bad in [
            "@resource:/etc/passwd",
            "@resource:\\x.wav",
            "@resource:C:\\x.wav",
        ] {
            let e = resolve(bad, dir, &[]).unwrap_err();
            assert!(e.contains("absolute"), "{bad}: {e}");
        }
        let e = resolve("@resource:", dir, &[]).unwrap_err();
        assert!(e.contains("names no file"), "{e}");
        let e = resolve("hall.wav", dir, &[]).unwrap_err();
        assert!(e.contains("not a resource reference"), "{e}");
    }

    #[test]
    fn dotted_names_that_do_not_escape_are_fine() {
        let scene = TempDir::new();
        touch(&scene.0.join("resources/a..b.wav"));
        touch(&scene.0.join("resources/sub/c.wav"));
        let dir = Some(scene.0.as_path());
        assert!(resolve("@resource:a..b.wav", dir, &[]).is_ok());
        assert!(resolve("@resource:./sub/c.wav", dir, &[]).is_ok());
    }

    /// The shipped impulse responses are the convolution operator's
    /// `synth_ir` output, bit for bit. Regenerate:
    /// `MORPHRT_BLESS=1 cargo test --release --lib impulse_responses`.
    #[test]
    fn shipped_impulse_responses_are_reproducible() {
        use crate::ops::convolution::{synth_ir, BENCH_IR_SEED, HALL_SEED, ROOM_SEED};
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("resources");
        for (name, secs, rt60, seed, channels) in [
            ("hall.wav", 2.0, 1.8, HALL_SEED, 2),
            ("room.wav", 0.3, 0.25, ROOM_SEED, 2),
            ("bench-ir.wav", 2.0, 1.8, BENCH_IR_SEED, 1),
        ] {
            let ir = synth_ir(secs, rt60, seed, channels, 48000.0);
            let path = root.join(name);
            if std::env::var_os("MORPHRT_BLESS").is_some() {
                if cfg!(debug_assertions) {
                    panic!("bless in a release build");
                }
                let spec = hound::WavSpec {
                    channels: channels as u16,
                    sample_rate: 48000,
                    bits_per_sample: 32,
                    sample_format: hound::SampleFormat::Float,
                };
                let mut w = hound::WavWriter::create(&path, spec).unwrap();
                for i in 0..ir[0].len() {
                    for c in &ir {
                        w.write_sample(c[i] as f32).unwrap();
                    }
                }
                w.finalize().unwrap();
            }
            let file = read_wav(&path).unwrap();
            assert_eq!(file.sample_rate, 48000);
            assert_eq!(file.channels.len(), channels, "{name}");
            for (c, (got, want)) in file.channels.iter().zip(&ir).enumerate() {
                assert_eq!(got.len(), want.len(), "{name}");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        (*w as f32 as f64).to_bits(),
                        "{name} ch {c} frame {i}"
                    );
                }
            }
        }
    }
}
