//! Property test of the whole front end: random mutations of every shipped
//! scene never panic — in the loader, the compiler, or the first blocks of a
//! render under each profile. Deterministic (seeded), so a failure reproduces.

use crate::support as common;
use crate::support::mutate;

use morphrt::engine::render_to_vec;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use morphrt::scene::load_str;
use mutate::{mutate, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn mutated_scenes_never_panic_anywhere_in_the_front_end() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut loaded, mut compiled) = (0, 0);
    for path in common::shipped_scenes() {
        let text = std::fs::read_to_string(&path).unwrap();
        let dir = path.parent().map(|d| d.to_path_buf());
        for k in 0..150 {
            let m = mutate(&text, &mut rng);
            let profile = Profile::ALL[rng.below(3)];
            let block = [1usize, 64, 4096][rng.below(3)];
            let r = catch_unwind(AssertUnwindSafe(|| {
                let Ok(scene) = load_str(&m, "fuzz.json", dir.clone()) else {
                    return (false, false);
                };
                let opts = CompileOptions {
                    profile: Some(profile),
                    block_size: Some(block),
                    seed: Some(1),
                    ..morphrt::host::files::resources::compile_options()
                };
                let Ok(plan) = compile(&scene, &opts) else {
                    return (true, false);
                };
                let mut e = Engine::new(plan);
                let out = render_to_vec(&mut e, 300);
                assert!(
                    out.iter().flatten().all(|x| x.is_finite()),
                    "non-finite output escaped the NaN guard"
                );
                (true, true)
            }));
            match r {
                Ok((l, c)) => {
                    loaded += l as usize;
                    compiled += c as usize;
                }
                Err(_) => panic!(
                    "{} mutation {k} ({profile}, block {block}) panicked; scene:\n{m}",
                    path.display()
                ),
            }
        }
    }
    eprintln!("{loaded} mutated scenes loaded, {compiled} compiled and rendered");
    // The mutations must exercise the compiler and engine, not only the parser.
    assert!(
        compiled > 100,
        "only {compiled} of the mutated scenes compiled ({loaded} loaded)"
    );
}
