//! "Did you mean" suggestions.

/// The candidate closest to `name` by Damerau–Levenshtein distance (optimal
/// string alignment: insert, delete, substitute, swap two adjacent
/// characters), if that distance is at most `max(2, len(name) / 3)`.
/// Ties go to the earliest candidate. Distances count characters.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let a: Vec<char> = name.chars().collect();
    let limit = (a.len() / 3).max(2);
    let mut best: Option<(usize, &'a str)> = None;
    let mut seen = Vec::new();
    for c in candidates {
        seen.push(c);
        let d = distance(&a, &c.chars().collect::<Vec<_>>());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c).or_else(|| prefix_match(name, &seen))
}

/// A candidate that the name starts with, or that starts with the name
/// (`frequency` → `freq`), when edit distance finds nothing close.
fn prefix_match<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .copied()
        .filter(|c| c.chars().count() >= 3 && name.chars().count() >= 3)
        .find(|c| name.starts_with(c) || c.starts_with(name))
}

/// Optimal-string-alignment distance between two character sequences.
fn distance(a: &[char], b: &[char]) -> usize {
    let w = b.len() + 1;
    // Three rows: i-2, i-1, i.
    let mut prev2 = vec![0usize; w];
    let mut prev: Vec<usize> = (0..w).collect();
    let mut cur = vec![0usize; w];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(
            &a.chars().collect::<Vec<_>>(),
            &b.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn distances() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("", "ab"), 2);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("profle", "profile"), 1);
        assert_eq!(d("porfile", "profile"), 1); // adjacent swap
        assert_eq!(d("ca", "abc"), 3); // OSA, not unrestricted
        assert_eq!(d("héllo", "hello"), 1); // characters, not bytes
    }

    #[test]
    fn closest_within_limit() {
        let keys = ["version", "profile", "seed", "sample_rate", "nodes"];
        assert_eq!(closest("profle", keys), Some("profile"));
        assert_eq!(closest("porfile", keys), Some("profile"));
        assert_eq!(closest("sampel_rate", keys), Some("sample_rate"));
        assert_eq!(closest("node", keys), Some("nodes"));
        assert_eq!(closest("xyzzy", keys), None);
        assert_eq!(closest("anything", std::iter::empty()), None);
    }

    #[test]
    fn limit_is_max_of_two_and_a_third() {
        // Short names: up to 2 edits.
        assert_eq!(closest("ab", ["xy"]), Some("xy"));
        assert_eq!(closest("ab", ["xyz"]), None);
        // 12 characters: up to 4 edits.
        assert_eq!(
            closest("abcdefghijkl", ["abcdefghWXYZ"]),
            Some("abcdefghWXYZ")
        );
        assert_eq!(closest("abcdefghijkl", ["abcdefgVWXYZ"]), None);
    }

    #[test]
    fn ties_go_to_the_first_candidate() {
        assert_eq!(closest("cat", ["bat", "hat", "cut"]), Some("bat"));
        assert_eq!(closest("cat", ["dog", "cart", "cast"]), Some("cart"));
        assert_eq!(closest("sine", ["saw", "sine", "sin"]), Some("sine"));
    }
}
