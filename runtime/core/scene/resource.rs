//! `@resource:NAME` resolution (`scenes/README.md`, *Resources*).
//!
//! NAME is looked up in `resources/` next to the scene file, then in
//! `resources/` next to the scene's folder (so `scenes/x.json` finds the
//! project's top-level `resources/`), then in each directory given with
//! `--resources`, in order; the first existing file wins.
//! NAME must stay inside those directories: absolute paths and `..`
//! components are errors.

use std::path::Path;

/// The prefix that marks a string param as a resource reference.
pub const PREFIX: &str = "@resource:";

/// Whether a string value is a resource reference.
pub(crate) fn is_resource(s: &str) -> bool {
    s.starts_with(PREFIX)
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

    #[test]
    fn is_resource_checks_the_prefix() {
        assert!(is_resource("@resource:hall.wav"));
        assert!(is_resource("@resource:"));
        assert!(!is_resource("hall.wav"));
        assert!(!is_resource("@Resource:hall.wav"));
    }
}
