//! What the plugin knows about its scene before any instance exists: the
//! payload, the descriptor, the ports and the params, read once when the
//! host loads the file.

use crate::payload::{fnv1a, Payload, PayloadResolver};
use morphrt_core::api::{Loaded, ParamList};
use morphrt_core::graph::CompileOptions;
use std::sync::Arc;

/// The CLAP features a scene's `"plugin"` object may name (and the ones
/// the plugin gives itself by default).
pub const FEATURES: [&str; 6] = [
    "instrument",
    "audio-effect",
    "synthesizer",
    "sampler",
    "drum",
    "utility",
];

/// The descriptor's fields, from the scene's optional `"plugin"` object
/// and the plugin file's name.
#[derive(Clone, Debug, PartialEq)]
pub struct Describe {
    /// The plugin's id (`morphrt.NAME` by default, NAME lower-case).
    pub id: String,
    /// Its name (the file's stem by default).
    pub name: String,
    /// Its vendor (`morphrt` by default).
    pub vendor: String,
    /// Its CLAP features.
    pub features: Vec<String>,
}

impl Describe {
    /// The descriptor of the scene `text` written as `stem`.clap: an
    /// instrument when it plays notes, else an audio effect when it reads
    /// an input. An error names the JSON path of a field of the wrong type.
    pub fn of(text: &str, stem: &str, notes: bool, input: bool) -> Result<Describe, String> {
        let slug: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let mut d = Describe {
            id: format!("morphrt.{slug}"),
            name: stem.to_string(),
            vendor: "morphrt".to_string(),
            features: vec![if notes || !input {
                "instrument"
            } else {
                "audio-effect"
            }
            .to_string()],
        };
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("the scene is not JSON: {e}"))?;
        let Some(obj) = json.get("plugin") else {
            return Ok(d);
        };
        let obj = obj
            .as_object()
            .ok_or("`plugin` must be an object (id, name, vendor, features)")?;
        for (key, v) in obj {
            let text = |v: &serde_json::Value| -> Result<String, String> {
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
                    _ => Err(format!("`plugin.{key}` must be a non-empty string")),
                }
            };
            match key.as_str() {
                "id" => d.id = text(v)?,
                "name" => d.name = text(v)?,
                "vendor" => d.vendor = text(v)?,
                "features" => {
                    let list = v.as_array().ok_or(
                        "`plugin.features` must be a list of CLAP features, e.g. [\"audio-effect\"]",
                    )?;
                    d.features = list
                        .iter()
                        .enumerate()
                        .map(|(i, f)| match f.as_str() {
                            Some(s) if !s.is_empty() && !s.contains('\0') => Ok(s.to_string()),
                            _ => Err(format!(
                                "`plugin.features[{i}]` must be a CLAP feature such as {}",
                                FEATURES.join(", ")
                            )),
                        })
                        .collect::<Result<_, _>>()?;
                }
                other => {
                    return Err(format!(
                        "`plugin.{other}` is not a field of `plugin` (valid: id, name, vendor, features)"
                    ))
                }
            }
        }
        if [&d.id, &d.name, &d.vendor].iter().any(|s| s.contains('\0')) {
            return Err("`plugin` fields may not hold a NUL character".into());
        }
        Ok(d)
    }
}

/// A param as the host sees it: its CLAP id and its index in the
/// activation's [`ParamList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamId {
    /// The CLAP id: a hash of the param's id string.
    pub clap: u32,
    /// The index in the [`ParamList`] (and in the host's list).
    pub index: u32,
}

/// The CLAP id of the param whose id string is `id`: the FNV-1a hash of
/// the string folded to 32 bits, so it stays the same across builds and
/// edits of other params. `u32::MAX` (CLAP's invalid id) is never used.
pub fn clap_id(id: &str) -> u32 {
    let h = fnv1a(id.as_bytes());
    let folded = (h ^ (h >> 32)) as u32;
    if folded == u32::MAX {
        0
    } else {
        folded
    }
}

/// The loaded scene: everything the factory and every instance share.
pub struct Bundle {
    /// The scene and its resources.
    pub payload: Payload,
    /// The payload's hash: the scene's identity in a saved state.
    pub hash: u64,
    /// The resolver instances compile with.
    pub resolver: Arc<PayloadResolver>,
    /// The descriptor's fields.
    pub describe: Describe,
    /// The params, in the host's order.
    pub params: ParamList,
    /// Each param's CLAP id, by index; sorted copy for lookups.
    pub ids: Vec<u32>,
    sorted: Vec<ParamId>,
    /// Channels the scene reads (0: no audio input port).
    pub inputs: usize,
    /// Channels of the main bus.
    pub outputs: usize,
    /// Voice modules (0: no note port).
    pub voice_modules: usize,
    /// The scene's own latency in samples (on top of the processor's block).
    pub latency: usize,
}

impl Bundle {
    /// Loads the scene of `payload` (hash `hash`) as the plugin plays it.
    pub fn new(payload: Payload, hash: u64) -> Result<Bundle, String> {
        let resolver = Arc::new(payload.resolver());
        let options = CompileOptions {
            resolver: Some(resolver.clone()),
            ..CompileOptions::default()
        };
        let loaded = Loaded::from_text(&payload.scene, &payload.scene_name, None, &options)
            .map_err(|d| d.to_string())?;
        let plan = loaded.plan();
        let inputs = plan.input_width();
        let outputs = plan.main.len();
        let voice_modules = plan.voice_modules();
        let latency = plan.latency;
        let describe = Describe::of(&payload.scene, &payload.name, voice_modules > 0, inputs > 0)?;
        let (_, params) = loaded.into_parts();
        let mut ids: Vec<u32> = Vec::with_capacity(params.len());
        for p in params.iter() {
            let mut id = clap_id(p.id());
            // Two ids folding to one hash: the later one probes onwards.
            while ids.contains(&id) {
                id = id.wrapping_add(1) % u32::MAX;
            }
            ids.push(id);
        }
        let mut sorted: Vec<ParamId> = ids
            .iter()
            .enumerate()
            .map(|(i, &clap)| ParamId {
                clap,
                index: i as u32,
            })
            .collect();
        sorted.sort_by_key(|p| p.clap);
        Ok(Bundle {
            payload,
            hash,
            resolver,
            describe,
            params,
            ids,
            sorted,
            inputs,
            outputs,
            voice_modules,
            latency,
        })
    }

    /// The [`ParamList`] index of the param with CLAP id `clap`.
    /// Real-time safe (a binary search).
    pub fn index_of(&self, clap: u32) -> Option<u32> {
        self.sorted
            .binary_search_by_key(&clap, |p| p.clap)
            .ok()
            .map(|k| self.sorted[k].index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_defaults_from_the_file_name_and_reads_the_plugin_object() {
        let d = Describe::of("{}", "Dub Chain", false, true).unwrap();
        assert_eq!(d.id, "morphrt.dub-chain");
        assert_eq!(d.name, "Dub Chain");
        assert_eq!(d.features, ["audio-effect"]);
        let d = Describe::of("{}", "Pad", true, false).unwrap();
        assert_eq!(d.features, ["instrument"]);
        let text = r#"{ "plugin": { "id": "com.me.dub", "name": "Dub", "vendor": "Me", "features": ["audio-effect", "delay"] } }"#;
        let d = Describe::of(text, "x", false, true).unwrap();
        assert_eq!(
            (d.id.as_str(), d.name.as_str(), d.vendor.as_str()),
            ("com.me.dub", "Dub", "Me")
        );
        assert_eq!(d.features, ["audio-effect", "delay"]);
        let e = Describe::of(r#"{ "plugin": { "name": 3 } }"#, "x", false, false).unwrap_err();
        assert!(e.contains("`plugin.name`"), "{e}");
        let e = Describe::of(r#"{ "plugin": { "kind": "x" } }"#, "x", false, false).unwrap_err();
        assert!(e.contains("`plugin.kind`") && e.contains("id, name"), "{e}");
        let e =
            Describe::of(r#"{ "plugin": { "features": [1] } }"#, "x", false, false).unwrap_err();
        assert!(e.contains("`plugin.features[0]`"), "{e}");
    }

    #[test]
    fn a_clap_id_is_the_folded_hash_of_the_id_string() {
        let h = fnv1a(b"lp.cutoff");
        assert_eq!(clap_id("lp.cutoff"), (h ^ (h >> 32)) as u32);
        assert_ne!(clap_id("lp.cutoff"), clap_id("lp.q"));
    }
}
