//! The per-node times `run` reports at the end.

mod common;

use common::stderr;

#[test]
fn run_ends_with_the_three_most_expensive_nodes() {
    let o = common::morphrt(&[
        "run",
        "scenes/drone.json",
        "--device",
        "clock",
        "--duration",
        "0.3s",
        "--no-watch",
        "--no-journal",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("nodes by time: "))
        .unwrap_or_else(|| panic!("no per-node summary in:\n{err}"));
    let entries: Vec<&str> = line["nodes by time: ".len()..].split(", ").collect();
    assert_eq!(entries.len(), 3, "{line}");
    let shares: Vec<f64> = entries
        .iter()
        .map(|e| {
            let pct = e.split(") ").nth(1).unwrap().split(" %").next().unwrap();
            pct.parse().unwrap()
        })
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{line}");
    assert!(shares.iter().all(|s| *s > 0.0), "{line}");
}
