//! `@resource:NAME` resolution.
use std::path::{Path, PathBuf};
pub fn is_resource(s: &str) -> bool {
    s.starts_with("@resource:")
}
pub fn resolve(
    _reference: &str,
    _scene_dir: Option<&Path>,
    _extra_dirs: &[PathBuf],
) -> Result<PathBuf, String> {
    Err("unimplemented".into())
}
