//! What `morphrt plugin` appends to a copy of the plugin library: the
//! scene's text and every resource it reads, decoded, so the plugin needs
//! no file but itself.
//!
//! The file ends with a trailer of 24 bytes: the payload's length (u64),
//! its FNV-1a 64-bit hash (u64), both little-endian, and the magic
//! `MRTCLAP1`. The payload sits right before the trailer:
//!
//! | field | encoding |
//! |---|---|
//! | format version | u32 (1) |
//! | name (the plugin file's stem) | string |
//! | scene file name | string |
//! | scene text | string |
//! | resources | u32 count, then each: reference (`@resource:NAME`), file name, u32 sample rate, u32 channels, u64 frames, the samples (f64 bits, channel after channel) |
//! | watched scene (only in a `--watch` build) | string: the source scene's absolute path |
//!
//! A string is a u32 byte length and UTF-8 bytes; every number is
//! little-endian. Resources are stored decoded, so the plugin plays
//! exactly the samples the command line's resolver read.

use morphrt_core::graph::{Resolved, Resolver};
use morphrt_core::ops::AudioData;
use std::path::{Path, PathBuf};

/// The last 8 bytes of a plugin file with a payload.
pub const MAGIC: &[u8; 8] = b"MRTCLAP1";
/// The trailer's length: payload length, hash, magic.
pub const TRAILER: usize = 24;
const VERSION: u32 = 1;

/// A scene with everything it reads.
#[derive(Debug)]
pub struct Payload {
    /// The plugin file's stem: the default plugin name and id.
    pub name: String,
    /// The scene file's name, as diagnostics call it.
    pub scene_name: String,
    /// The scene's JSON text.
    pub scene: String,
    /// Every `@resource:` reference the scene reads, with its audio.
    pub resources: Vec<(String, AudioData)>,
    /// A development build's source scene file (absolute), which each
    /// instance watches and applies saves of ([`crate::watch`]).
    pub watch: Option<PathBuf>,
}

/// FNV-1a, 64 bits: the payload's checksum and the scene's identity in a
/// saved state.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Reads the payload's fields in order; every read checks its length.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| format!("the payload ends early (at byte {})", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn str(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "a string of the payload is not UTF-8".into())
    }
}

impl Payload {
    /// The payload's bytes (without the trailer).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_str(&mut out, &self.name);
        put_str(&mut out, &self.scene_name);
        put_str(&mut out, &self.scene);
        out.extend_from_slice(&(self.resources.len() as u32).to_le_bytes());
        for (reference, audio) in &self.resources {
            put_str(&mut out, reference);
            let file = audio
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            put_str(&mut out, &file);
            out.extend_from_slice(&audio.sample_rate.to_le_bytes());
            out.extend_from_slice(&(audio.channels.len() as u32).to_le_bytes());
            out.extend_from_slice(&(audio.frames() as u64).to_le_bytes());
            for ch in &audio.channels {
                for x in ch {
                    out.extend_from_slice(&x.to_bits().to_le_bytes());
                }
            }
        }
        if let Some(path) = &self.watch {
            put_str(&mut out, &path.to_string_lossy());
        }
        out
    }

    /// The payload and its trailer, to append to the plugin library.
    pub fn to_appendix(&self) -> Vec<u8> {
        let mut out = self.to_bytes();
        let (len, hash) = (out.len() as u64, fnv1a(&out));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&hash.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out
    }

    /// The payload of `bytes` (without the trailer).
    pub fn from_bytes(bytes: &[u8]) -> Result<Payload, String> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u32()?;
        if version != VERSION {
            return Err(format!(
                "the payload is of format {version}; this plugin reads format {VERSION}"
            ));
        }
        let name = r.str()?;
        let scene_name = r.str()?;
        let scene = r.str()?;
        let count = r.u32()?;
        let mut resources = Vec::new();
        for _ in 0..count {
            let reference = r.str()?;
            let file = r.str()?;
            let sample_rate = r.u32()?;
            let nch = r.u32()? as usize;
            let frames = r.u64()? as usize;
            let len = nch
                .checked_mul(frames)
                .and_then(|n| n.checked_mul(8))
                .ok_or("a resource of the payload is too long")?;
            let data = r.take(len)?;
            let channels = data
                .chunks_exact(8 * frames.max(1))
                .take(nch)
                .map(|ch| {
                    ch.chunks_exact(8)
                        .map(|b| {
                            let mut a = [0u8; 8];
                            a.copy_from_slice(b);
                            f64::from_bits(u64::from_le_bytes(a))
                        })
                        .collect()
                })
                .collect();
            let channels = if frames == 0 {
                vec![Vec::new(); nch]
            } else {
                channels
            };
            resources.push((
                reference,
                AudioData {
                    path: PathBuf::from(file),
                    sample_rate,
                    channels,
                },
            ));
        }
        let watch = if r.at < bytes.len() {
            Some(PathBuf::from(r.str()?))
        } else {
            None
        };
        if r.at != bytes.len() {
            return Err(format!(
                "the payload has {} bytes after its last field",
                bytes.len() - r.at
            ));
        }
        Ok(Payload {
            name,
            scene_name,
            scene,
            resources,
            watch,
        })
    }

    /// The payload at the end of the file `bytes` (a whole plugin file),
    /// and its hash; an error says what is missing or damaged.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<(Payload, u64), String> {
        let n = bytes.len();
        if n < TRAILER || &bytes[n - 8..] != MAGIC {
            return Err(
                "the plugin file carries no scene: write one with `morphrt plugin SCENE -o NAME.clap`"
                    .into(),
            );
        }
        let mut r = Reader {
            bytes: &bytes[n - TRAILER..n - 8],
            at: 0,
        };
        let (len, hash) = (r.u64()?, r.u64()?);
        let start = (n - TRAILER)
            .checked_sub(len as usize)
            .ok_or("the payload's length runs past the start of the file")?;
        let body = &bytes[start..n - TRAILER];
        if fnv1a(body) != hash {
            return Err("the scene appended to the plugin file is damaged (its hash differs): write the plugin again".into());
        }
        Ok((Payload::from_bytes(body)?, hash))
    }

    /// The payload at the end of the plugin file at `path`.
    pub fn read(path: &Path) -> Result<(Payload, u64), String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        Payload::from_file_bytes(&bytes)
    }

    /// The length of the plugin library itself in `bytes` (a file with or
    /// without a payload): what a new payload is appended after.
    pub fn library_len(bytes: &[u8]) -> usize {
        let n = bytes.len();
        if n >= TRAILER && &bytes[n - 8..] == MAGIC {
            let mut a = [0u8; 8];
            a.copy_from_slice(&bytes[n - TRAILER..n - 16]);
            let len = u64::from_le_bytes(a) as usize;
            if let Some(start) = (n - TRAILER).checked_sub(len) {
                return start;
            }
        }
        n
    }

    /// A resolver serving the payload's resources by reference.
    pub fn resolver(&self) -> PayloadResolver {
        PayloadResolver {
            resources: self
                .resources
                .iter()
                .map(|(r, a)| (r.clone(), copy(a)))
                .collect(),
        }
    }
}

/// A copy of `a` (audio data is not `Clone`: the engine shares it).
fn copy(a: &AudioData) -> AudioData {
    AudioData {
        path: a.path.clone(),
        sample_rate: a.sample_rate,
        channels: a.channels.clone(),
    }
}

/// The plugin's [`Resolver`]: `@resource:` references served from the
/// payload, never from the file system.
#[derive(Debug)]
pub struct PayloadResolver {
    resources: Vec<(String, AudioData)>,
}

impl Resolver for PayloadResolver {
    fn resolve(&self, reference: &str, _scene_dir: Option<&Path>) -> Result<Resolved, String> {
        let (_, audio) = self
            .resources
            .iter()
            .find(|(r, _)| r == reference)
            .ok_or_else(|| {
                format!("`{reference}` is not in the plugin (the scene was written without it)")
            })?;
        Ok(Resolved {
            path: audio.path.clone(),
            audio: copy(audio),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Payload {
        Payload {
            name: "Dub".into(),
            scene_name: "dub.json".into(),
            scene: "{ \"version\": \"1.0\" }".into(),
            resources: vec![(
                "@resource:ir.wav".into(),
                AudioData {
                    path: PathBuf::from("ir.wav"),
                    sample_rate: 44100,
                    channels: vec![vec![0.5, -0.25, 1e-300], vec![f64::MIN_POSITIVE, 0.0, -0.0]],
                },
            )],
            watch: None,
        }
    }

    #[test]
    fn a_payload_appended_to_a_library_reads_back_bit_for_bit() {
        let p = sample();
        let mut file = b"\x7fELF library bytes".to_vec();
        let lib = file.len();
        file.extend(p.to_appendix());
        let (back, hash) = Payload::from_file_bytes(&file).unwrap();
        assert_eq!(
            (&back.name, &back.scene_name, &back.scene),
            (&p.name, &p.scene_name, &p.scene)
        );
        assert_eq!(back.resources[0].0, p.resources[0].0);
        assert_eq!(back.resources[0].1.sample_rate, 44100);
        assert_eq!(back.resources[0].1.path, PathBuf::from("ir.wav"));
        let bits = |p: &Payload| -> Vec<u64> {
            p.resources[0]
                .1
                .channels
                .iter()
                .flatten()
                .map(|x| x.to_bits())
                .collect()
        };
        assert_eq!(bits(&back), bits(&p));
        assert_eq!(hash, fnv1a(&p.to_bytes()));
        assert_eq!(Payload::library_len(&file), lib);
        assert_eq!(Payload::library_len(&file[..lib]), lib);
        assert_eq!(back.watch, None);
    }

    #[test]
    fn a_watch_builds_payload_reads_back_the_scene_path() {
        let p = Payload {
            watch: Some(PathBuf::from("/home/me/scenes/dub.json")),
            ..sample()
        };
        let (back, _) = Payload::from_file_bytes(&p.to_appendix()).unwrap();
        assert_eq!(back.watch, p.watch);
        assert_eq!(back.scene, p.scene);
    }

    #[test]
    fn a_damaged_or_missing_payload_is_refused_with_what_to_do() {
        let mut file = b"library".to_vec();
        let e = Payload::from_file_bytes(&file).unwrap_err();
        assert!(e.contains("morphrt plugin SCENE"), "{e}");
        file.extend(sample().to_appendix());
        file[10] ^= 1;
        let e = Payload::from_file_bytes(&file).unwrap_err();
        assert!(e.contains("damaged"), "{e}");
    }

    #[test]
    fn the_resolver_serves_only_what_the_payload_holds() {
        let r = sample().resolver();
        let got = r.resolve("@resource:ir.wav", None).unwrap();
        assert_eq!(got.audio.channels[0], vec![0.5, -0.25, 1e-300]);
        let e = r.resolve("@resource:other.wav", None).unwrap_err();
        assert!(e.contains("not in the plugin"), "{e}");
    }

    #[test]
    fn the_hash_is_fnv1a() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x85944171f73967e8);
    }
}
