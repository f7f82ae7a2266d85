//! `profile_config` (the scene's profile settings, with the scene-only
//! `block_size`, `flush_to_zero` and `rng_seed`) and `profile_overrides` (a
//! node's or module's): one reader for both, told apart by `Scope`; and
//! `rng_seed` checked against `seed` once the whole scene is read.

use super::read::numeric;
use super::report::valid_list;
use super::Loader;
use crate::dsp::Precision;
use crate::profile::{Overrides, MAX_BLOCK_SIZE};
use crate::scene::pos::child_key;
use crate::scene::{Diagnostic, Loc, Scene, SceneConfig};
use serde_json::{Map, Value};

/// Top-level scene fields that people may try to set per node or module.
pub(crate) const TOP_LEVEL_SETTINGS: [&str; 3] = ["sample_rate", "seed", "duration"];
pub(crate) const FFT_NORMS: [&str; 3] = ["backward", "ortho", "forward"];
pub(crate) const PRECISIONS: [&str; 2] = ["f32", "f64"];
pub(crate) const MAX_ITERATIONS: u64 = 10_000;

/// Scene-only `profile_config` settings.
#[derive(Default)]
pub(super) struct SceneOnly {
    block_size: Option<usize>,
    flush_to_zero: Option<bool>,
    rng_seed: Option<(u64, Loc)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// The scene's `profile_config`.
    Scene,
    /// A node's or module's `profile_overrides`.
    Local,
}

impl Loader<'_> {
    /// The scene's `profile_config`. Returns its `rng_seed`, which
    /// [`Loader::rng_seed_alias`] checks once `seed` is read too.
    pub(super) fn profile_config(
        &mut self,
        v: &Value,
        p: &str,
        config: &mut SceneConfig,
    ) -> Option<(u64, Loc)> {
        let obj = self.object(v, p, "profile_config", None)?;
        let (ov, only) = self.overrides(obj, p, Scope::Scene, None);
        *config = SceneConfig {
            overrides: ov,
            block_size: only.block_size,
            flush_to_zero: only.flush_to_zero,
        };
        only.rng_seed
    }

    /// `profile_config.rng_seed` is an alias of `seed`: it sets the seed
    /// when there is none, and must agree with it when there is.
    pub(super) fn rng_seed_alias(&mut self, rng_seed: Option<(u64, Loc)>, scene: &mut Scene) {
        let Some((seed, loc)) = rng_seed else {
            return;
        };
        match scene.seed {
            Some(s) if s != seed => {
                let first = scene.seed_loc.clone().unwrap_or_default();
                let d = Diagnostic::error(
                    self.file,
                    Some(loc),
                    format!("`profile_config.rng_seed` ({seed}) differs from `seed` ({s})"),
                );
                let help = format!(
                    "`rng_seed` is an alias of `seed` (line {}:{}); give one of them, or the same value",
                    first.line, first.col
                );
                self.emit(d, None, Some(help));
            }
            Some(_) => {}
            None => {
                scene.seed = Some(seed);
                scene.seed_loc = Some(loc);
            }
        }
    }

    /// `profile_config` (scope `Scene`) or `profile_overrides` (scope `Local`).
    pub(super) fn overrides(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
        scope: Scope,
        node: Option<&str>,
    ) -> (Overrides, SceneOnly) {
        let mut o = Overrides::default();
        let mut only = SceneOnly::default();
        let mut known: Vec<&str> = Overrides::KEYS.to_vec();
        if scope == Scope::Scene {
            known.extend(Overrides::SCENE_ONLY_KEYS);
        }
        let where_ = match scope {
            Scope::Scene => "`profile_config`",
            Scope::Local => "`profile_overrides`",
        };
        for (key, v) in obj {
            let kp = child_key(path, key);
            let p = kp.as_str();
            let k = key.as_str();
            match k {
                "profile" => o.profile = self.profile(v, p, node),
                "precision" => {
                    o.precision = self
                        .choice(v, p, "precision", &PRECISIONS, node)
                        .and_then(Precision::parse)
                }
                "fft_provider" => {
                    o.fft_provider = self.string(v, p, "fft_provider", node).map(str::to_string)
                }
                "fft_norm" => {
                    o.fft_norm = self
                        .choice(v, p, "fft_norm", &FFT_NORMS, node)
                        .map(str::to_string)
                }
                "oversampling" => {
                    let n = match numeric(v).as_u64() {
                        Some(n @ (1 | 2 | 4)) => Some(n as u32),
                        _ => {
                            let found = self.found(v, p);
                            self.error(
                                p,
                                node,
                                format!("`oversampling` must be 1, 2 or 4, found {found}"),
                                "valid: 1, 2 or 4 (an integer factor)".to_string(),
                            );
                            None
                        }
                    };
                    o.oversampling = n;
                }
                "solver_tolerance" => match numeric(v).as_f64() {
                    Some(t) if t.is_finite() && t > 0.0 => o.solver_tolerance = Some(t),
                    _ => {
                        let found = self.found(v, p);
                        self.error(
                            p,
                            node,
                            format!("`solver_tolerance` must be a positive number, found {found}"),
                            "valid: a number greater than 0, e.g. `1e-6`".to_string(),
                        );
                    }
                },
                "max_iterations" => {
                    o.max_iterations = self
                        .int(v, p, "max_iterations", 1, MAX_ITERATIONS, node)
                        .map(|n| n as u32)
                }
                "block_size" | "flush_to_zero" | "rng_seed" if scope == Scope::Scene => match k {
                    "block_size" => {
                        only.block_size = self
                            .int(v, p, "block_size", 1, MAX_BLOCK_SIZE as u64, node)
                            .map(|n| n as usize)
                    }
                    "flush_to_zero" => {
                        only.flush_to_zero = self.boolean(v, p, "flush_to_zero", node)
                    }
                    _ => {
                        if let Some(s) = self.seed(v, p, "rng_seed") {
                            only.rng_seed = Some((s, self.pos.loc(p)));
                        }
                    }
                },
                _ if Overrides::SCENE_ONLY_KEYS.contains(&k) || TOP_LEVEL_SETTINGS.contains(&k) => {
                    let (msg, help) = if scope == Scope::Local {
                        let place = if Overrides::SCENE_ONLY_KEYS.contains(&k) {
                            "the scene's top-level `profile_config`"
                        } else {
                            "the top level of the scene"
                        };
                        (
                            format!("`{k}` is a scene-level setting; it cannot be set in `profile_overrides`"),
                            format!("set it in {place}; `profile_overrides` accepts {}", valid_list(&Overrides::KEYS)),
                        )
                    } else {
                        // A top-level field written inside profile_config: not fatal.
                        let loc = self.pos.key_loc(p);
                        self.warning(
                            loc,
                            node,
                            format!("unknown field `{k}` in {where_} (ignored)"),
                            format!("`{k}` is a top-level field of the scene; move it out of `profile_config`"),
                        );
                        continue;
                    };
                    let loc = self.pos.key_loc(p);
                    let d = Diagnostic::error(self.file, Some(loc), msg);
                    self.emit(d, node, Some(help));
                }
                _ => self.unknown_key(k, path, &known, where_, node),
            }
        }
        (o, only)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::dsp::Precision;
    use crate::profile::Profile;

    #[test]
    fn profile_config_and_overrides() {
        let s = load(
            r#"{"version": "1.0", "seed": 7,
            "profile_config": {"profile": "live", "precision": "f32", "fft_provider": "rustfft",
              "fft_norm": "ortho", "oversampling": 4, "solver_tolerance": 1e-6,
              "max_iterations": 64, "block_size": 256, "flush_to_zero": false, "rng_seed": 7},
            "nodes": [{"id": "a", "op": "sine", "profile_overrides": {"oversampling": 2, "profile": "strict"}}],
            "outputs": {"main": "a"}}"#,
        )
        .unwrap();
        let o = &s.config.overrides;
        assert_eq!(o.profile, Some(Profile::Live));
        assert_eq!(o.precision, Some(Precision::F32));
        assert_eq!(o.fft_provider.as_deref(), Some("rustfft"));
        assert_eq!(o.fft_norm.as_deref(), Some("ortho"));
        assert_eq!(o.oversampling, Some(4));
        assert_eq!(o.solver_tolerance, Some(1e-6));
        assert_eq!(o.max_iterations, Some(64));
        assert_eq!(s.config.block_size, Some(256));
        assert_eq!(s.config.flush_to_zero, Some(false));
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.nodes[0].overrides.oversampling, Some(2));
        assert_eq!(s.nodes[0].overrides.profile, Some(Profile::Strict));
        assert!(s.nodes[0].overrides_loc.is_some());

        // rng_seed alone sets the seed.
        let s = load(&scene_with(", \"profile_config\": {\"rng_seed\": 9}")).unwrap();
        assert_eq!(s.seed, Some(9));
        assert_eq!(s.seed_loc.unwrap().path, "profile_config.rng_seed");
    }

    #[test]
    fn profile_config_values_out_of_range() {
        let bad_config = [
            ("\"block_size\": 0", "`block_size` is out of range"),
            ("\"block_size\": 8193", "1 to 8192"),
            ("\"precision\": \"f16\"", "`f16` is not a valid `precision`"),
            ("\"oversampling\": 3", "`oversampling` must be 1, 2 or 4"),
            (
                "\"oversampling\": \"2x\"",
                "`oversampling` must be 1, 2 or 4",
            ),
            ("\"solver_tolerance\": 0", "positive number"),
            ("\"solver_tolerance\": -1e-6", "positive number"),
            ("\"solver_tolerance\": \"1e-6x\"", "positive number"),
            ("\"solver_tolerance\": \"-1e-6\"", "positive number"),
            ("\"max_iterations\": 0", "1 to 10000"),
            ("\"max_iterations\": 10001", "1 to 10000"),
            ("\"fft_norm\": \"orth\"", "did you mean `ortho`?"),
            ("\"fft_provider\": 1", "`fft_provider` must be a string"),
            (
                "\"rng_seed\": -3",
                "`rng_seed` must be a non-negative integer",
            ),
        ];
        for (cfg, needle) in bad_config {
            one_error(
                &scene_with(&format!(", \"profile_config\": {{{cfg}}}")),
                needle,
            );
        }
        let e = one_error(
            &scene_with(", \"seed\": 1,\n \"profile_config\": {\"rng_seed\": 2}"),
            "differs from `seed`",
        );
        assert_eq!(at(&e), (3, 33));
        assert!(e.help.unwrap().contains("alias"));
        assert!(load(&scene_with(
            ", \"seed\": 2, \"profile_config\": {\"rng_seed\": 2}"
        ))
        .is_ok());
    }

    #[test]
    fn scene_only_keys_in_overrides_are_errors() {
        for key in [
            "block_size",
            "flush_to_zero",
            "rng_seed",
            "sample_rate",
            "seed",
        ] {
            let text = format!(
                "{{\"version\": \"1.0\", \"nodes\": [{{\"id\": \"a\", \"op\": \"sine\",\n  \"profile_overrides\": {{\"{key}\": 1}}}}],\n\"outputs\": {{\"main\": \"a\"}}}}"
            );
            let e = one_error(&text, "is a scene-level setting");
            assert_eq!(at(&e), (2, 25), "{key}");
            assert_eq!(e.node.as_deref(), Some("a"));
            assert!(e.help.unwrap().starts_with("set it in"));
        }
        let text = r#"{"version": "1.0", "modules": [{"id": "m", "profile_overrides": {"block_size": 64}, "nodes": []}],
            "nodes": [{"id": "a", "op": "sine"}], "outputs": {"main": "a"}}"#;
        one_error(text, "`block_size` is a scene-level setting");
    }
}
