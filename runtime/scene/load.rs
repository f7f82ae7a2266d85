use super::{Diagnostic, Scene};
pub fn load_file(_path: &std::path::Path) -> Result<Scene, Vec<Diagnostic>> {
    todo!()
}
pub fn load_str(
    _text: &str,
    _file: &str,
    _dir: Option<std::path::PathBuf>,
) -> Result<Scene, Vec<Diagnostic>> {
    todo!()
}
