//! Property test of the whole front end: random mutations of every shipped
//! scene never panic — in the loader, the compiler, or the first blocks of a
//! render under each profile. Deterministic (seeded), so a failure reproduces.

mod common;

use morphrt::engine::render_to_vec;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use morphrt::scene::load_str;
use std::panic::{catch_unwind, AssertUnwindSafe};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "0.5",
    "1e308",
    "-1e308",
    "1e-320",
    "4294967296",
    "18446744073709551616",
    "-0",
    "1000000",
    "8192",
    "8193",
    "1e-9",
];
const STRINGS: &[&str] = &[
    "\"-inf dB\"",
    "\"0Hz\"",
    "\"1e9kHz\"",
    "\"0samples\"",
    "\"-5ms\"",
    "\"200midi\"",
    "\"3ms\"",
    "\"x:y:z\"",
    "\"\"",
    "\"@resource:../x.wav\"",
    "\"sine\"",
    "\"mix\"",
    "\"delay\"",
    "\"cast\"",
    "\"noise\"",
    "\"strict\"",
    "\"live\"",
    "\"f32\"",
    "\"highpass\"",
    "\"in7\"",
    "\"out_r\"",
    "true",
    "null",
    "[]",
    "{}",
    "[1, \"-6dB\", 0]",
];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(3) {
        match rng.below(6) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s.remove(i);
            }
            1 => {
                let i = rng.below(s.len() + 1);
                let c = ['{', '}', '[', ']', ',', ':', '"', '0', '-', 'e', ' '][rng.below(11)];
                s.insert(i, c);
            }
            2 | 3 => {
                // Replace one number literal.
                let t: String = s.iter().collect();
                let spans: Vec<(usize, usize)> = number_spans(&t);
                if let Some(&(a, b)) = spans.get(rng.below(spans.len())) {
                    let rep = NUMBERS[rng.below(NUMBERS.len())];
                    let mut out: Vec<char> = t[..a].chars().collect();
                    out.extend(rep.chars());
                    out.extend(t[b..].chars());
                    s = out;
                }
            }
            4 => {
                // Replace one string literal (value or key).
                let t: String = s.iter().collect();
                let spans = string_spans(&t);
                if let Some(&(a, b)) = spans.get(rng.below(spans.len())) {
                    let rep = STRINGS[rng.below(STRINGS.len())];
                    s = format!("{}{}{}", &t[..a], rep, &t[b..]).chars().collect();
                }
            }
            _ => {
                // Delete one line.
                let t: String = s.iter().collect();
                let lines: Vec<&str> = t.lines().collect();
                let k = rng.below(lines.len());
                s = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != k)
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n")
                    .chars()
                    .collect();
            }
        }
    }
    s.into_iter().collect()
}

fn number_spans(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        if b[i] == b'"' {
            in_str = !in_str;
        } else if !in_str && (b[i].is_ascii_digit() || b[i] == b'-') {
            let a = i;
            while i < b.len() && (b[i].is_ascii_digit() || b"-+.eE".contains(&b[i])) {
                i += 1;
            }
            v.push((a, i));
            continue;
        }
        i += 1;
    }
    v
}

fn string_spans(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let a = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            v.push((a, (i + 1).min(b.len())));
        }
        i += 1;
    }
    v
}

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
                    ..CompileOptions::default()
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
