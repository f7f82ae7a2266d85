//! Passes 9 and 10: the `main` output bus, and the seed the session runs
//! with (given, required, or chosen from the clock under live).

use super::{did_you_mean, resolve_node, Ctx, Decl};
use crate::graph::{SeedSource, SourceRef};
use crate::scene::{capped_list, Loc};
use std::collections::HashMap;

/// The most channels the `main` bus may have: what a WAV file (a render, a
/// capture) can hold. `check`, `render` and `run` all refuse more here.
pub(crate) const MAX_MAIN_CHANNELS: usize = u16::MAX as usize;

/// Pass 9, outputs (`scenes/README.md`, *Reference: every field*): the
/// `main` bus must exist and have channels (at most [`MAX_MAIN_CHANNELS`]),
/// each an existing output port.
/// Sources are declaration indices with no delay yet.
pub(super) fn resolve_outputs(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &[Option<Decl>],
) -> Vec<SourceRef> {
    let scene = cx.scene;
    let top = Loc::path("");
    let mut main = Vec::new();
    match scene.outputs.iter().find(|b| b.name == "main") {
        None => {
            let names: Vec<&str> = scene.outputs.iter().map(|b| b.name.as_str()).collect();
            cx.error(
                scene.outputs_loc.as_ref().unwrap_or(&top),
                None,
                "the scene has no `main` output bus".to_string(),
                Some(if names.is_empty() {
                    "add \"outputs\": { \"main\": [\"node:out\"] }".to_string()
                } else {
                    format!(
                        "buses present: {}; `main` is what is played and rendered",
                        capped_list(&names, ", ")
                    )
                }),
            );
        }
        Some(bus) if bus.channels.is_empty() => {
            cx.error(
                &bus.loc,
                None,
                "the `main` bus has no channels".to_string(),
                None,
            );
        }
        Some(bus) if bus.channels.len() > MAX_MAIN_CHANNELS => {
            cx.error(
                &bus.loc,
                None,
                format!(
                    "the `main` bus has {} channels, more than the {MAX_MAIN_CHANNELS} a session can play or render (the most a WAV file holds)",
                    bus.channels.len()
                ),
                Some("mix some channels together before `main`".to_string()),
            );
        }
        Some(bus) => {
            for (ep, loc) in &bus.channels {
                let Some(i) = resolve_node(cx, index, ep, loc, "output") else {
                    continue;
                };
                let Some(d) = decls[i].as_ref() else { continue };
                let port = ep.port.as_deref().unwrap_or("out");
                match d.op.outputs.iter().position(|p| *p == port) {
                    Some(p) => main.push(SourceRef {
                        node: i,
                        port: p,
                        delay: 0,
                        feedback: 0,
                    }),
                    None => {
                        let help = did_you_mean(port, d.op.outputs.iter().copied());
                        cx.error(
                            loc,
                            Some(&ep.node),
                            format!("`{ep}`: operator `{}` has no output `{port}`", d.op.name),
                            Some(help),
                        )
                    }
                }
            }
        }
    }
    main
}

/// Pass 10, the seed (`scenes/README.md`, *Randomness*): the given one;
/// else, when a node draws noise, strict and repro require one and live
/// picks `auto` (a session's own), or one from the clock (reported so the
/// session can be heard again).
pub(super) fn choose_seed(
    cx: &mut Ctx<'_>,
    decls: &[Option<Decl>],
    seed_given: Option<u64>,
    auto: Option<u64>,
) -> SeedSource {
    let scene = cx.scene;
    let mut seed = match seed_given {
        Some(s) => SeedSource::Given(s),
        None => SeedSource::None,
    };
    for (i, d) in decls.iter().enumerate() {
        let Some(d) = d else { continue };
        if !d.op.uses_rng || seed_given.is_some() {
            continue;
        }
        if d.profile.profile.requires_seed() {
            cx.error(
                &scene.nodes[i].loc,
                Some(&scene.nodes[i].id),
                format!(
                    "node `{}` ({}) uses randomness, and {} needs an explicit seed",
                    scene.nodes[i].id, d.op.name, d.profile.profile
                ),
                Some("add \"seed\": 42 at the top of the scene, or pass --seed N".to_string()),
            );
        } else if seed == SeedSource::None {
            seed = SeedSource::Auto(auto.unwrap_or_else(auto_seed));
        }
    }
    seed
}

/// A seed from the clock, for live to pick for a scene that draws noise
/// and gives no seed (see `CompileOptions::auto_seed`).
pub fn auto_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    crate::dsp::rng::mix64(nanos) >> 16
}

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::compile::testing::{declared, errors, graph_scene, scene, with_profile};
    use crate::graph::CompileOptions;
    use crate::profile::Profile;

    #[test]
    fn the_main_bus_must_exist() {
        // The loader already insists on `main`; compile does not rely on it.
        let mut s = graph_scene(r#"{ "id": "o", "op": "sine" }"#, "", r#""o""#);
        s.outputs[0].name = "aux".to_string();
        let (mut cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        let index = HashMap::from([("o", 0)]);
        assert!(resolve_outputs(&mut cx, &index, &decls).is_empty());
        assert_eq!(errors(&cx), ["the scene has no `main` output bus"]);
        let s = graph_scene(r#"{ "id": "p", "op": "pan" }"#, "", r#""p:right", "p""#);
        let (mut cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        let index = HashMap::from([("p", 0)]);
        let main = resolve_outputs(&mut cx, &index, &decls);
        assert_eq!(main.iter().map(|s| s.port).collect::<Vec<_>>(), [1]);
        assert_eq!(errors(&cx), ["`p`: operator `pan` has no output `out`"]);
    }

    #[test]
    fn noise_needs_a_seed_except_under_live_which_picks_one() {
        let s = scene(
            r#"{ "version": "1.0", "nodes": [ { "id": "n", "op": "noise" } ],
                 "outputs": { "main": ["n"] } }"#,
        );
        let (mut cx, _, decls, ..) = declared(&s, &with_profile(Profile::Repro));
        assert_eq!(choose_seed(&mut cx, &decls, None, None), SeedSource::None);
        assert_eq!(cx.errors.len(), 1);
        assert_eq!(
            choose_seed(&mut cx, &decls, Some(7), None),
            SeedSource::Given(7)
        );
        let (mut cx, _, decls, ..) = declared(&s, &with_profile(Profile::Live));
        assert!(matches!(
            choose_seed(&mut cx, &decls, None, None),
            SeedSource::Auto(_)
        ));
        assert!(cx.errors.is_empty());
        // A session's own auto seed, when it has one; a given seed wins.
        assert_eq!(
            choose_seed(&mut cx, &decls, None, Some(99)),
            SeedSource::Auto(99)
        );
        assert_eq!(
            choose_seed(&mut cx, &decls, Some(7), Some(99)),
            SeedSource::Given(7)
        );
        // Repro still asks for a seed.
        let (mut cx, _, decls, ..) = declared(&s, &with_profile(Profile::Repro));
        assert_eq!(
            choose_seed(&mut cx, &decls, None, Some(99)),
            SeedSource::None
        );
        assert_eq!(cx.errors.len(), 1);
    }
}
