//! Exact text for sample values: IEEE-754 bit patterns in hex, as golden
//! files store them.

/// Each value as 16 hex digits of its bit pattern.
pub(crate) fn to_hex(v: &[f64]) -> Vec<String> {
    v.iter().map(|x| format!("{:016x}", x.to_bits())).collect()
}

/// The value whose bit pattern the hex digits spell, if they do.
pub(crate) fn from_hex(s: &str) -> Option<f64> {
    u64::from_str_radix(s, 16).ok().map(f64::from_bits)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_every_bit() {
        let v = [0.0, -0.0, 1.0 / 3.0, f64::MIN_POSITIVE / 2.0, f64::NAN];
        let back: Vec<f64> = super::to_hex(&v)
            .iter()
            .map(|s| super::from_hex(s).unwrap())
            .collect();
        for (a, b) in v.iter().zip(&back) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
        assert_eq!(super::from_hex("zz"), None);
    }
}
