//! Why `bench` or `calibrate` fails: a resource the scene's digest reads,
//! a golden that cannot be read, a parity check or `--ci` check that
//! failed. Each says in its `Display` what the user reads and keeps the
//! error underneath as its [`std::error::Error::source`].

use crate::host::machine::ResourceDigestError;
use crate::host::HostError;
use crate::host::LayerError;
use std::fmt;
use std::path::PathBuf;

/// A golden file that cannot be used.
#[derive(Debug)]
pub enum GoldenError {
    /// The file cannot be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a scene golden's JSON.
    NotGolden {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The golden covers no frames, or more than a render may have
    /// (`limit`, said as `limit_text`).
    Frames {
        path: PathBuf,
        frames: u64,
        limit: u64,
        limit_text: String,
    },
}

impl fmt::Display for GoldenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoldenError::Read { path, source } => {
                write!(f, "cannot read golden `{}`: {source}", path.display())
            }
            GoldenError::NotGolden { path, source } => {
                write!(f, "`{}` is not a scene golden: {source}", path.display())
            }
            GoldenError::Frames {
                path,
                frames,
                limit,
                limit_text,
            } => write!(
                f,
                "golden `{}` covers {frames} frames; a golden covers 1 … {limit} ({limit_text})",
                path.display()
            ),
        }
    }
}

impl std::error::Error for GoldenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GoldenError::Read { source, .. } => Some(source),
            GoldenError::NotGolden { source, .. } => Some(source),
            GoldenError::Frames { .. } => None,
        }
    }
}

/// Why a measurement fails.
#[derive(Debug)]
pub enum BenchError {
    /// A resource of the scene cannot be read for the scene's digest
    /// (exit 1).
    Digest(ResourceDigestError),
    /// The golden cannot be used: one named with `--golden` (`named`,
    /// exit 2) or the default one found beside the scene (exit 1).
    Golden { source: GoldenError, named: bool },
    /// The output differs from the golden: nothing was timed (exit 1).
    Parity { summary: String },
    /// `--ci` checks that missed, each in words (exit 1).
    Ci { misses: Vec<String> },
}

impl LayerError for BenchError {
    /// 2 for a golden the user named that cannot be used, else 1.
    fn exit_code(&self) -> i32 {
        match self {
            BenchError::Golden { named: true, .. } => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Digest(e) => write!(f, "{e}"),
            BenchError::Golden { source, .. } => write!(f, "{source}"),
            BenchError::Parity { summary } => {
                write!(f, "parity failed, nothing was timed: {summary}")
            }
            BenchError::Ci { misses } => write!(f, "--ci: {}", misses.join("; ")),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Digest(e) => Some(e),
            BenchError::Golden { source, .. } => Some(source),
            BenchError::Parity { .. } | BenchError::Ci { .. } => None,
        }
    }
}

impl From<BenchError> for HostError {
    fn from(e: BenchError) -> HostError {
        HostError::Layer(Box::new(e))
    }
}

impl From<ResourceDigestError> for BenchError {
    fn from(e: ResourceDigestError) -> BenchError {
        BenchError::Digest(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_golden_that_cannot_be_read_keeps_its_io_error_and_exits_2_when_named() {
        let path = std::path::Path::new("/nonexistent-morphrt-dir/drone.json");
        // What the golden's loader returns for a file it cannot read.
        let unreadable = || GoldenError::Read {
            path: path.to_path_buf(),
            source: std::fs::read(path).expect_err("no such file"),
        };
        let source = unreadable();
        let named = HostError::from(BenchError::Golden {
            source,
            named: true,
        });
        assert_eq!(named.exit_code(), 2);
        assert!(
            named
                .to_string()
                .starts_with("error: cannot read golden `/nonexistent-morphrt-dir/drone.json`: "),
            "{named}"
        );
        let golden = named.source().expect("the bench error");
        let io = golden
            .source()
            .and_then(Error::source)
            .and_then(|e| e.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
        let found = HostError::from(BenchError::Golden {
            source: unreadable(),
            named: false,
        });
        assert_eq!(found.exit_code(), 1);
    }

    #[test]
    fn a_failed_ci_check_lists_each_miss_and_exits_1() {
        let e = HostError::from(BenchError::Ci {
            misses: vec!["a".to_string(), "b".to_string()],
        });
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "error: --ci: a; b");
    }
}
