//! Statistics the benchmarks report.

/// The `q` quantile (0…1) of `v` (sorted in place): the smallest value
/// that at least `q` of them are at or under; NaN when empty.
pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}
