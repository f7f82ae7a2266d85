//! `morphrt plugin`: a scene as a self-contained CLAP plugin. The built
//! plugin library (`libmorphrt_clap.so`, next to the `morphrt`
//! executable) is copied and the scene's text and every resource it
//! reads under any profile are appended to the copy
//! ([`morphrt_clap::payload`]), through the one writer's output rules.

use crate::graph::{CompileOptions, Resolved, Resolver};
use crate::host::files::error::FileError;
use crate::host::files::resources::Folders;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::{load_plan, HostError};
use crate::ops::AudioData;
use crate::profile::Profile;
use crate::scene::{Diagnostic, Shown};
use morphrt_clap::payload::Payload;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What `morphrt plugin` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct PluginOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    /// The plugin file to write (NAME.clap).
    ///
    /// Its stem is the plugin's name, and its id `morphrt.NAME`, unless
    /// the scene's `"plugin"` object says otherwise. Written under
    /// `render`'s output rules.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// The plugin library to copy (default: `libmorphrt_clap.so` next to
    /// the `morphrt` executable, or in the `deps/` folder beside it).
    #[arg(long, value_name = "FILE")]
    pub library: Option<PathBuf>,
    /// A development build: the plugin also watches the scene file and
    /// applies each save as `run` does (state carried, changed params
    /// glide, structural edits crossfade); a bad save is reported through
    /// the host's log and the plugin keeps playing.
    #[arg(long)]
    pub watch: bool,
}

/// `plugin -o`: a CLAP plugin file.
pub const PLUGIN_KIND: Kind = Kind {
    writer: "plugin",
    what: "CLAP plugins",
    noun: "",
    flag: "-o",
    extensions: &["clap"],
    stream: false,
    pipe_hint: "",
};

/// The library's file name on this platform.
pub const LIBRARY: &str = "libmorphrt_clap.so";

/// A resolver that serves what the command line's folders serve and
/// keeps a copy of every resource it read, to go into the plugin.
#[derive(Debug)]
struct Recording {
    inner: Folders,
    read: Mutex<Vec<(String, AudioData)>>,
}

impl Resolver for Recording {
    fn resolve(&self, reference: &str, scene_dir: Option<&Path>) -> Result<Resolved, String> {
        let got = self.inner.resolve(reference, scene_dir)?;
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if !read.iter().any(|(r, _)| r == reference) {
            read.push((
                reference.to_string(),
                AudioData {
                    path: got.audio.path.clone(),
                    sample_rate: got.audio.sample_rate,
                    channels: got.audio.channels.clone(),
                },
            ));
        }
        Ok(got)
    }

    fn problems(&self) -> Vec<(String, String)> {
        self.inner.problems()
    }
}

/// Why `morphrt plugin` cannot build the plugin (exit 1).
#[derive(Debug)]
pub enum PluginError {
    /// The plugin library is not at `path`.
    NoLibrary(PathBuf),
    /// The scene's path cannot be made absolute for `--watch`.
    Watch {
        scene: PathBuf,
        source: std::io::Error,
    },
    /// The plugin library at `path` cannot be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::NoLibrary(path) => write!(
                f,
                "the plugin library `{}` is not there: build it with `cargo build --release -p morphrt-clap` (it is written next to the `morphrt` executable), or name one with --library",
                path.display()
            ),
            PluginError::Watch { scene, source } => {
                write!(f, "cannot watch `{}`: {source}", scene.display())
            }
            PluginError::Read { path, source } => write!(
                f,
                "cannot read the plugin library `{}`: {source}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for PluginError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PluginError::NoLibrary(_) => None,
            PluginError::Watch { source, .. } | PluginError::Read { source, .. } => Some(source),
        }
    }
}

/// Where the plugin library is: `--library`, else next to the running
/// executable, else in cargo's `deps/` folder beside it (where `cargo
/// test` leaves it). A missing one is an error naming the build command.
fn library(opts: &PluginOptions) -> Result<PathBuf, PluginError> {
    let path = match &opts.library {
        Some(p) => p.clone(),
        None => {
            let dir = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(PathBuf::from))
                .unwrap_or_default();
            let beside = dir.join(LIBRARY);
            let deps = dir.join("deps").join(LIBRARY);
            if !beside.is_file() && deps.is_file() {
                deps
            } else {
                beside
            }
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(PluginError::NoLibrary(path))
    }
}

/// `morphrt plugin`: checks the scene under every profile (errors exit 2,
/// as `check`), copies the plugin library and appends the scene and its
/// resources. Says what it wrote on `log`.
pub fn plugin(opts: &PluginOptions, log: &mut dyn Write) -> Result<(), HostError> {
    let recording = Arc::new(Recording {
        inner: Folders::new(opts.resources.clone()),
        read: Mutex::new(Vec::new()),
    });
    let mut first = None;
    for profile in [
        None,
        Some(Profile::Strict),
        Some(Profile::Repro),
        Some(Profile::Live),
    ] {
        let options = CompileOptions {
            profile,
            resolver: Some(recording.clone()),
            ..CompileOptions::default()
        };
        let plan = load_plan(&opts.scene, &options)?;
        first.get_or_insert(plan);
    }
    let plan = first.expect("compiled once at least");
    if !plan.warnings.is_empty() {
        let _ = writeln!(log, "{}", Shown::new(&plan.warnings));
    }
    let text = crate::scene::read_scene_text(&opts.scene).map_err(HostError::Input)?;
    let scene_name = opts
        .scene
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene.json".into());
    let name = opts
        .output
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene".into());
    let described = morphrt_clap::bundle::Describe::of(
        &text,
        &name,
        plan.voice_modules() > 0,
        plan.input_width() > 0,
    )
    .map_err(|e| {
        HostError::Input(vec![Diagnostic::error(
            &opts.scene.display().to_string(),
            None,
            e,
        )])
    })?;
    let resources = std::mem::take(&mut *recording.read.lock().unwrap_or_else(|e| e.into_inner()));
    let watch = if opts.watch {
        Some(
            std::fs::canonicalize(&opts.scene).map_err(|source| PluginError::Watch {
                scene: opts.scene.clone(),
                source,
            })?,
        )
    } else {
        None
    };
    let payload = Payload {
        name,
        scene_name,
        scene: text,
        resources,
        watch,
    };
    let lib_path = library(opts)?;
    let lib = std::fs::read(&lib_path).map_err(|source| PluginError::Read {
        path: lib_path.clone(),
        source,
    })?;
    let mut bytes = lib[..Payload::library_len(&lib)].to_vec();
    bytes.extend(payload.to_appendix());
    let mut inputs = Inputs::default();
    inputs.add("the scene", &opts.scene);
    inputs.add("the plugin library", &lib_path);
    for (reference, path) in &plan.resources {
        inputs.add(&format!("resource `{reference}`, read from"), path);
    }
    let out = Output::prepare(&opts.output, &inputs, bytes.len() as u64, &PLUGIN_KIND)?;
    out.write_all(&bytes, &mut std::io::sink())
        .map_err(|e: FileError| HostError::from(e))?;
    let _ = writeln!(
        log,
        "wrote `{}`: CLAP plugin `{}` ({}), {} with {} resource(s); copy it to ~/.clap/ to install it",
        opts.output.display(),
        described.name,
        described.id,
        crate::host::files::rules::format_bytes(bytes.len() as u64),
        payload.resources.len()
    );
    if let Some(path) = &payload.watch {
        let _ = writeln!(
            log,
            "a development build: it applies each save of `{}` while it plays",
            path.display()
        );
    }
    Ok(())
}
