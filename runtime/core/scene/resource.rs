//! `@resource:NAME` resolution (`scenes/README.md`, *Resources*).
//!
//! NAME is looked up in `resources/` next to the scene file, then in
//! `resources/` next to the scene's folder (so `scenes/x.json` finds the
//! project's top-level `resources/`), then in each directory given with
//! `--resources`, in order; the first existing file wins.
//! NAME must stay inside those directories: absolute paths and `..`
//! components are errors.

use crate::scene::capped_list;
use std::path::{Component, Path, PathBuf};

/// The prefix that marks a string param as a resource reference.
pub const PREFIX: &str = "@resource:";

/// Whether a string value is a resource reference.
pub fn is_resource(s: &str) -> bool {
    s.starts_with(PREFIX)
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

/// What a path that is not a regular file is, from its metadata (which
/// `std::fs::metadata` reads without opening it): `a directory`, `a FIFO
/// (named pipe)`, …
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        return "a file";
    }
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    "not a regular file"
}

/// Opens a file the program reads whole (a scene, a resource, a WAV to
/// plot) only if it is a regular file; anything else is refused, saying
/// what it is (`a FIFO (named pipe)`, `a character device`, …), as reading
/// a FIFO or a device would wait forever or never end. The type is checked
/// on the path first (links followed), then again on the opened file, which
/// is opened non-blocking so that a FIFO swapped in between cannot hang
/// the open.
pub fn open_regular(path: &Path) -> Result<std::fs::File, NotRegular> {
    let meta = std::fs::metadata(path).map_err(NotRegular::Io)?;
    if !meta.is_file() {
        return Err(NotRegular::Kind(file_kind(&meta)));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(NotRegular::Io)?;
    let meta = file.metadata().map_err(NotRegular::Io)?;
    if !meta.is_file() {
        return Err(NotRegular::Kind(file_kind(&meta)));
    }
    Ok(file)
}

/// The whole text of a regular file, opened by [`open_regular`].
pub fn read_regular_text(path: &Path) -> Result<String, NotRegular> {
    let mut f = open_regular(path)?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut f, &mut text).map_err(NotRegular::Io)?;
    Ok(text)
}

/// The whole content of a regular file, opened by [`open_regular`]; what
/// else the path is (a FIFO, which would block the read forever, a
/// device, a directory) is an error of kind `InvalidInput` saying so.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = open_regular(path).map_err(|e| match e {
        NotRegular::Io(e) => e,
        kind => std::io::Error::new(std::io::ErrorKind::InvalidInput, kind.to_string()),
    })?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut bytes)?;
    Ok(bytes)
}

/// Why [`open_regular`] refused a path.
#[derive(Debug)]
pub enum NotRegular {
    /// It is something other than a regular file: what, in words.
    Kind(&'static str),
    /// It could not be opened or inspected.
    Io(std::io::Error),
}

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRegular::Kind(k) => write!(f, "it is {k}, not a regular file"),
            NotRegular::Io(e) => write!(f, "{e}"),
        }
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
    fn is_resource_checks_the_prefix() {
        assert!(is_resource("@resource:hall.wav"));
        assert!(is_resource("@resource:"));
        assert!(!is_resource("hall.wav"));
        assert!(!is_resource("@Resource:hall.wav"));
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
}
