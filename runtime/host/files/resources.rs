//! Where a scene's `@resource:NAME` files come from for the command line:
//! the folders it searches ([`Folders`], the engine's [`Resolver`]) and the
//! reader that decodes them.
//!
//! NAME is looked up in `resources/` next to the scene file, then in
//! `resources/` next to the scene's folder (so `scenes/x.json` finds the
//! project's top-level `resources/`), then in each directory given with
//! `--resources`, in order; the first existing file wins.
//! NAME must stay inside those directories: absolute paths and `..`
//! components are errors.

pub use super::error::ResourceError;
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

    /// The core's resolver hands its error on as the text of a scene
    /// diagnostic, so the typed [`ResourceError`] becomes its message here.
    fn resolve(&self, reference: &str, scene_dir: Option<&Path>) -> Result<Resolved, String> {
        let pinned = self
            .pinned
            .iter()
            .find(|(r, _)| r == reference)
            .map(|(_, p)| p.clone());
        let path = match pinned {
            Some(p) => p,
            None => resolve(reference, scene_dir, &self.dirs).map_err(|e| e.to_string())?,
        };
        let audio = read_wav(&path).map_err(|e| e.to_string())?;
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
) -> Result<PathBuf, ResourceError> {
    let dirs = search_dirs(scene_dir, extra_dirs);
    let Some(name) = reference.strip_prefix(PREFIX) else {
        return Err(ResourceError::NotAReference {
            reference: reference.to_string(),
            prefix: PREFIX,
        });
    };
    if name.is_empty() {
        return Err(ResourceError::NoName {
            reference: reference.to_string(),
            prefix: PREFIX,
            searched: list(&dirs),
        });
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
        return Err(ResourceError::Absolute {
            name: name.to_string(),
            searched: list(&dirs),
        });
    }
    // Check `..` on both separators, so a scene means the same on every OS.
    if name.split(['/', '\\']).any(|part| part == "..")
        || path.components().any(|c| c == Component::ParentDir)
    {
        return Err(ResourceError::Escapes {
            name: name.to_string(),
            searched: list(&dirs),
        });
    }
    if dirs.is_empty() {
        return Err(ResourceError::NowhereToLook {
            name: name.to_string(),
            searched: list(&dirs),
        });
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
            return Err(ResourceError::OutsideThroughLink {
                name: name.to_string(),
                target: found.canonicalize().unwrap_or_else(|_| found.clone()),
                dir: dir.clone(),
            });
        }
        return Ok(found.clone());
    }
    let names = capped_list(tried.iter().map(|p| format!("`{}`", p.display())), ", ");
    Err(match not_a_file {
        Some((p, kind)) => ResourceError::NotAFile {
            name: name.to_string(),
            path: p.clone(),
            kind,
            tried: names,
        },
        None => ResourceError::NotFound {
            name: name.to_string(),
            tried: names,
        },
    })
}

/// Decodes an audio file of any format read (WAV, AIFF/AIFC, FLAC, MP3,
/// Ogg Vorbis; see [`super::wav_in`]), integer samples scaled by
/// 2^−(bits−1) ([`super::wav_in::Scale::Resource`]). What is not one is
/// refused saying what it is: a directory, a FIFO or a device (known from
/// its metadata before it is opened, and checked again on the open file:
/// reading a FIFO would wait for a writer), an empty file, another file, a
/// format not read, a file cut short or damaged (and where).
pub fn read_wav(path: &Path) -> Result<AudioData, ResourceError> {
    let (sample_rate, channels) = super::wav_in::read_all(path).map_err(ResourceError::Read)?;
    let nch = channels.len();
    let first_bad = channels
        .iter()
        .enumerate()
        .filter_map(|(c, ch)| ch.iter().position(|x| !x.is_finite()).map(|f| (f, c)))
        .min();
    if let Some((frame, c)) = first_bad {
        return Err(ResourceError::NonFinite {
            path: path.to_path_buf(),
            frame,
            channel: c,
        });
    }
    debug_assert!(nch > 0);
    Ok(AudioData {
        path: path.to_path_buf(),
        sample_rate,
        channels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_that_cannot_be_read_keeps_its_io_error_under_its_message() {
        use std::error::Error;
        let path = Path::new("/nonexistent-morphrt-dir/hall.wav");
        let e = read_wav(path).unwrap_err();
        assert!(matches!(e, ResourceError::Read(_)), "{e:?}");
        assert!(e.to_string().starts_with("cannot read "), "{e}");
        let mut next: Option<&(dyn Error + 'static)> = Some(&e);
        let mut io = None;
        while let Some(err) = next {
            io = io.or(err.downcast_ref::<std::io::Error>());
            next = err.source();
        }
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }
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
        let e = resolve("@resource:sub", Some(&scene.0), &[])
            .unwrap_err()
            .to_string();
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
        .unwrap_err()
        .to_string();
        assert!(e.contains("not found"), "{e}");
        let first = scene.0.join("resources").join("none.wav");
        let second = extra.0.join("none.wav");
        assert!(e.contains(&first.display().to_string()), "{e}");
        assert!(e.contains(&second.display().to_string()), "{e}");
        let e = resolve("@resource:none.wav", None, &[])
            .unwrap_err()
            .to_string();
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
            let e = resolve(bad, dir, &[]).unwrap_err().to_string();
            assert!(e.contains("`..`"), "{bad}: {e}");
            assert!(e.contains("searched directories"), "{bad}: {e}");
        }
        for bad in [
            "@resource:/etc/passwd",
            "@resource:\\x.wav",
            "@resource:C:\\x.wav",
        ] {
            let e = resolve(bad, dir, &[]).unwrap_err().to_string();
            assert!(e.contains("absolute"), "{bad}: {e}");
        }
        let e = resolve("@resource:", dir, &[]).unwrap_err().to_string();
        assert!(e.contains("names no file"), "{e}");
        let e = resolve("hall.wav", dir, &[]).unwrap_err().to_string();
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
