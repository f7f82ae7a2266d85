//! Seeded mutations for the fuzz tests: a small deterministic generator and
//! the edits it makes to scene text, JSON files, JSON Lines files and
//! binary files.
//! Every edit is a pure function of the generator's state, so a seed and a
//! case number reproduce a failure.
#![allow(dead_code)]

use serde_json::Value;

/// xorshift64*: fixed seeds, the same sequence on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }

    /// A number in `0 .. n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Number literals that sit at the edges of what readers accept.
pub const NUMBERS: &[&str] = &[
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

/// String and other literals a scene's values may be replaced by.
pub const STRINGS: &[&str] = &[
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

/// Values a JSON file's value may be replaced by: other types, the edges of
/// every integer type, NaN and infinities as strings, bit patterns.
pub const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "0.5",
    "1e308",
    "-1e308",
    "1e-320",
    "255",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e400",
    "\"NaN\"",
    "\"inf\"",
    "\"-inf\"",
    "\"0x7ff8000000000000\"",
    "\"0xfff0000000000000\"",
    "\"\"",
    "\"zz\"",
    "\"../../etc/passwd\"",
    "true",
    "null",
    "[]",
    "{}",
    "[[]]",
    "{\"a\": 1}",
];

/// One to three edits of scene text: a character deleted or inserted, a
/// number or a string literal replaced, a line deleted.
pub fn mutate(text: &str, rng: &mut Rng) -> String {
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

/// The byte ranges of number literals outside strings.
pub fn number_spans(t: &str) -> Vec<(usize, usize)> {
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

/// The byte ranges of string literals, quotes included.
pub fn string_spans(t: &str) -> Vec<(usize, usize)> {
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

/// One to three edits of raw bytes: a bit flipped, a byte set to an edge
/// value, the file cut at a random point, bytes inserted, deleted or
/// duplicated.
pub fn mutate_bytes(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(b.len());
        match rng.below(6) {
            0 if !b.is_empty() => b[i] ^= 1 << rng.below(8),
            1 if !b.is_empty() => b[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff]),
            2 => b.truncate(i),
            3 => {
                let n = 1 + rng.below(16);
                let fill: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                b.splice(i..i, fill);
            }
            4 => {
                let end = (i + 1 + rng.below(64)).min(b.len());
                b.drain(i..end);
            }
            _ => {
                let end = (i + 1 + rng.below(256)).min(b.len());
                let copy = b[i..end].to_vec();
                b.splice(i..i, copy);
            }
        }
    }
    b
}

/// Every value's JSON Pointer in `v`, the root first.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Array(a) => {
            for (k, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let key = k.replace('~', "~0").replace('/', "~1");
                pointers(x, format!("{at}/{key}"), out);
            }
        }
        _ => {}
    }
}

/// A placeholder value replaced by text afterwards, for literals a
/// `Value` cannot hold (`1e400`, deep nesting).
const MARK: &str = "\u{1}mark\u{1}";

/// One to three edits of a JSON document's values: one replaced by an edge
/// value or another type, two swapped, one removed or duplicated, one
/// nested thousands of levels deep. The text comes back compact (`lines`:
/// one line) or pretty-printed. Text that is not JSON is edited as text.
pub fn mutate_json(text: &str, rng: &mut Rng, one_line: bool) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(text) else {
        return mutate(text, rng);
    };
    let mut literal = None;
    for _ in 0..1 + rng.below(3) {
        let mut ps = Vec::new();
        pointers(&v, String::new(), &mut ps);
        let p = rng.pick(&ps).clone();
        match rng.below(8) {
            0..=3 => {
                let rep = *rng.pick(VALUES);
                let new = serde_json::from_str(rep).unwrap_or_else(|_| {
                    literal = Some(rep.to_string());
                    Value::String(MARK.to_string())
                });
                if let Some(x) = v.pointer_mut(&p) {
                    *x = new;
                }
            }
            4 => {
                let q = rng.pick(&ps).clone();
                let (Some(a), Some(b)) = (v.pointer(&p).cloned(), v.pointer(&q).cloned()) else {
                    continue;
                };
                if let Some(x) = v.pointer_mut(&p) {
                    *x = b;
                }
                if let Some(x) = v.pointer_mut(&q) {
                    *x = a;
                }
            }
            5 | 6 => edit_container(&mut v, &p, rng),
            _ => {
                let depth = 129 + rng.below(20_000);
                literal = Some("[".repeat(depth) + &"]".repeat(depth));
                if let Some(x) = v.pointer_mut(&p) {
                    *x = Value::String(MARK.to_string());
                }
            }
        }
    }
    let out = if one_line {
        serde_json::to_string(&v)
    } else {
        serde_json::to_string_pretty(&v)
    }
    .unwrap();
    let mark = serde_json::to_string(MARK).unwrap();
    match literal {
        Some(l) => out.replacen(&mark, &l, 1).replace(&mark, "null"),
        None => out,
    }
}

/// Removes one entry of the container holding `p`, or duplicates it.
fn edit_container(v: &mut Value, p: &str, rng: &mut Rng) {
    let Some(cut) = p.rfind('/') else {
        return;
    };
    let (parent, key) = (&p[..cut], &p[cut + 1..]);
    let dup = rng.below(2) == 0;
    match v.pointer_mut(parent) {
        Some(Value::Array(a)) => {
            let Ok(k) = key.parse::<usize>() else {
                return;
            };
            if dup {
                let x = a[k].clone();
                a.insert(k, x);
            } else {
                a.remove(k);
            }
        }
        Some(Value::Object(o)) => {
            let key = key.replace("~1", "/").replace("~0", "~");
            if dup {
                // A key twice is not expressible in a map: rename a copy.
                if let Some(x) = o.get(&key).cloned() {
                    o.insert(format!("{key}_"), x);
                }
            } else {
                o.shift_remove(&key);
            }
        }
        _ => {}
    }
}

/// One to three edits of a JSON Lines file: a line removed, duplicated or
/// swapped with another, or one line's JSON values edited.
pub fn mutate_lines(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        if lines.is_empty() {
            break;
        }
        let i = rng.below(lines.len());
        match rng.below(5) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            _ => lines[i] = mutate_json(&lines[i], rng, true),
        }
    }
    lines.join("\n") + "\n"
}

/// One to three number literals of JSON text replaced by the edges of
/// every integer type, huge, tiny and negative numbers: the file stays
/// JSON of the same shape, so a reader's range checks are what is tested.
pub fn mutate_numbers(text: &str, rng: &mut Rng) -> String {
    let numbers: Vec<&str> = VALUES
        .iter()
        .copied()
        .filter(|v| v.starts_with(|c: char| c == '-' || c.is_ascii_digit()))
        .collect();
    let mut t = text.to_string();
    for _ in 0..1 + rng.below(3) {
        let spans = number_spans(&t);
        if let Some(&(a, b)) = spans.get(rng.below(spans.len())) {
            t = format!("{}{}{}", &t[..a], rng.pick(&numbers), &t[b..]);
        }
    }
    t
}
