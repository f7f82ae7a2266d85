//! Where `plot` puts its tick marks and what their labels say: round values
//! (1, 2 or 5 × 10ⁿ on a linear axis, decades — and 2 and 5 times them
//! when there is room — on a log one), only as many as the pixels hold
//! without two labels touching, and a layout that drops a label rather than
//! let it overlap another.

/// One tick of an axis: its offset along the panel, in pixels from the
/// panel's left or top edge, and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// Pixels from the panel's left (time) or top (levels, frequency) edge.
    pub at: u32,
    /// What the label says.
    pub label: String,
}

/// The smallest step of the form 1, 2 or 5 × 10ⁿ that is at least `min`.
pub fn round_step(min: f64) -> f64 {
    let min = min.max(1e-12);
    let decade = libm::pow(10.0, libm::floor(libm::log10(min)));
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|s| *s >= min * (1.0 - 1e-9))
        .unwrap_or(10.0 * decade)
}

/// The decimals that show every multiple of a round `step` exactly.
pub fn decimals(step: f64) -> usize {
    (-libm::floor(libm::log10(step) + 1e-9)).max(0.0) as usize
}

/// The multiples of `step` in `lo ..= hi`, lowest first.
pub fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = libm::ceil(lo / step - 1e-9) as i64;
    let last = libm::floor(hi / step + 1e-9) as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The time axis of a `pixels`-wide panel showing `from … to` seconds: the
/// smallest round step whose labels (`"1.5 s"`), each `cell` pixels a
/// character, stand at least two characters apart; and its ticks.
pub fn time_ticks(from: f64, to: f64, pixels: u32, cell: u32) -> (f64, Vec<Tick>) {
    let span = to - from;
    let per_px = span / pixels.max(1) as f64;
    let label = |t: f64, step: f64| format!("{:.*} s", decimals(step), t);
    let mut step = round_step(per_px * 6.0 * cell as f64);
    for _ in 0..8 {
        let widest = label(from, step).len().max(label(to, step).len());
        let needed = per_px * ((widest + 2) as u32 * cell) as f64;
        if step >= needed * (1.0 - 1e-9) {
            break;
        }
        step = round_step(needed);
    }
    let ticks = multiples(from, to, step)
        .into_iter()
        .map(|t| Tick {
            at: (((t - from) / span * pixels as f64).round() as u32).min(pixels - 1),
            label: label(t, step),
        })
        .collect();
    (step, ticks)
}

/// Round values of `lo ..= hi` at least `min_px` apart on a `pixels`-tall
/// linear axis: the first of `steps` that is wide enough, else the
/// smallest round step that is.
pub fn linear_values(lo: f64, hi: f64, pixels: u32, min_px: u32, steps: &[f64]) -> Vec<f64> {
    let min = (hi - lo) * min_px as f64 / pixels.max(1) as f64;
    let step = steps
        .iter()
        .copied()
        .find(|s| *s >= min)
        .unwrap_or_else(|| round_step(min));
    multiples(lo, hi, step)
}

/// Decades of `lo ..= hi` (and 2 and 5 times each where one such step is
/// at least `min_px` of the `pixels`-tall log axis), lowest first.
pub fn log_values(lo: f64, hi: f64, pixels: u32, min_px: u32) -> Vec<f64> {
    let decades = libm::log10(hi / lo);
    let px_per_2x = libm::log10(2.0) / decades * pixels as f64;
    let factors: &[f64] = if px_per_2x >= min_px as f64 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let first = libm::floor(libm::log10(lo)) as i32;
    let last = libm::ceil(libm::log10(hi)) as i32;
    let mut v = Vec::new();
    for n in first..=last {
        for m in factors {
            let f = m * libm::pow(10.0, n as f64);
            if f >= lo * (1.0 - 1e-9) && f <= hi * (1.0 + 1e-9) {
                v.push(f);
            }
        }
    }
    v
}

/// `v` with at most three decimals and no trailing zeros (`2.5`, `20`).
fn short(v: f64) -> String {
    let s = format!("{:.3}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A frequency label: `"50 Hz"`, `"1 kHz"`, `"2.5 kHz"`.
pub fn hz_label(f: f64) -> String {
    if f >= 1000.0 {
        format!("{} kHz", short(f / 1000.0))
    } else {
        format!("{} Hz", short(f))
    }
}

/// A level label: `"0 dB"`, `"-60 dB"`.
pub fn db_label(db: f64) -> String {
    format!("{} dB", short(db))
}

/// A sample-value label, signed: `"+1"`, `"0"`, `"-0.5"`.
pub fn amplitude_label(v: f64) -> String {
    let s = short(v);
    if v > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// Lays labels along one axis: each item is the pixel its label is centred
/// on and the label's size along the axis. A label is moved inside
/// `lo .. hi` when it would stick out, and left out (`None`) when it would
/// come within `gap` pixels of one already placed; otherwise the result is
/// where the label starts.
pub fn place(items: &[(i64, u32)], lo: i64, hi: i64, gap: u32) -> Vec<Option<i64>> {
    let mut taken: Vec<(i64, i64)> = Vec::new();
    items
        .iter()
        .map(|&(centre, size)| {
            let size = size as i64;
            if size > hi - lo {
                return None;
            }
            let start = (centre - size / 2).clamp(lo, hi - size);
            let end = start + size;
            let clear = taken
                .iter()
                .all(|&(a, b)| end + gap as i64 <= a || start >= b + gap as i64);
            clear.then(|| {
                taken.push((start, end));
                start
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_steps_are_one_two_or_five_times_a_power_of_ten() {
        for (min, want) in [
            (0.3, 0.5),
            (1.0, 1.0),
            (1.01, 2.0),
            (0.0021, 0.005),
            (6.0, 10.0),
        ] {
            let step = round_step(min);
            assert!((step - want).abs() < want * 1e-9, "{min}: {step}");
        }
    }

    #[test]
    fn time_labels_stand_apart_and_show_their_decimals() {
        let (step, ticks) = time_ticks(0.0, 3.0, 1200, 8);
        assert_eq!(step, 0.2);
        assert_eq!(
            ticks[0],
            Tick {
                at: 0,
                label: "0.0 s".into()
            }
        );
        assert_eq!(ticks.last().unwrap().label, "3.0 s");
        let (step, ticks) = time_ticks(0.9, 1.1, 200, 8);
        assert_eq!(step, 0.1);
        let at: Vec<u32> = ticks.iter().map(|t| t.at).collect();
        assert_eq!(at, [0, 100, 199]);
        assert_eq!(ticks[1].label, "1.0 s");
    }

    #[test]
    fn log_axes_add_twos_and_fives_only_where_there_is_room() {
        assert_eq!(log_values(20.0, 24000.0, 240, 48), [100.0, 1000.0, 10000.0]);
        assert_eq!(
            log_values(20.0, 24000.0, 1000, 48)[..3],
            [20.0, 50.0, 100.0]
        );
    }

    #[test]
    fn labels_that_would_overlap_are_left_out() {
        let placed = place(&[(0, 10), (5, 10), (30, 10), (100, 10)], 0, 100, 2);
        assert_eq!(placed, [Some(0), None, Some(25), Some(90)]);
    }

    #[test]
    fn labels_read_as_numbers_with_units() {
        assert_eq!(hz_label(2500.0), "2.5 kHz");
        assert_eq!(hz_label(20.0), "20 Hz");
        assert_eq!(db_label(-120.0), "-120 dB");
        assert_eq!(amplitude_label(1.0), "+1");
        assert_eq!(amplitude_label(-0.5), "-0.5");
    }
}
