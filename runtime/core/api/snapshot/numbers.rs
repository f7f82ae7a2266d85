//! Numbers that keep every bit in the snapshot's JSON: an f64 as a JSON
//! number when finite and a bit pattern otherwise ([`Num`]), sample arrays
//! as hex strings of IEEE bit patterns ([`HexF64`], [`HexF32`]), profiles
//! and precisions by name.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// An f64 that is a JSON number when finite (exact with `float_roundtrip`)
/// and a `0x…` bit-pattern string otherwise, so no value is ever lost.
#[derive(Clone, Copy, Debug)]
pub struct Num(pub f64);

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&format!("0x{:016x}", self.0.to_bits()))
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number, or an f64 bit pattern as \"0x\" and 16 hex digits")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                let bits = v
                    .strip_prefix("0x")
                    .filter(|h| h.len() == 16)
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .ok_or_else(|| E::custom(format!("`{v}` is not an f64 bit pattern")))?;
                Ok(Num(f64::from_bits(bits)))
            }
        }
        d.deserialize_any(V)
    }
}

/// f64 samples as one string of 16-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF64(pub Vec<f64>);

/// f32 samples as one string of 8-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF32(pub Vec<f32>);

impl PartialEq for HexF64 {
    fn eq(&self, other: &HexF64) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl PartialEq for HexF32 {
    fn eq(&self, other: &HexF32) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn encode_hex(values: impl ExactSizeIterator<Item = u64>, digits: usize) -> String {
    let mut out = Vec::with_capacity(values.len() * digits);
    for v in values {
        for k in (0..digits).rev() {
            out.push(HEX_DIGITS[((v >> (4 * k)) & 15) as usize]);
        }
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

fn decode_hex(text: &str, digits: usize) -> Result<Vec<u64>, String> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(digits) {
        return Err(format!(
            "a sample array of {} hex digits is not a whole number of {digits}-digit values",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / digits);
    for (i, chunk) in bytes.chunks_exact(digits).enumerate() {
        let mut v = 0u64;
        for (j, &c) in chunk.iter().enumerate() {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => {
                    return Err(format!(
                        "byte 0x{c:02x} at offset {} of a sample array is not a hex digit",
                        i * digits + j
                    ))
                }
            };
            v = v << 4 | d as u64;
        }
        out.push(v);
    }
    Ok(out)
}

impl Serialize for HexF64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits()), 16))
    }
}

impl Serialize for HexF32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits() as u64), 8))
    }
}

impl<'de> Deserialize<'de> for HexF64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF64, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 16).map_err(serde::de::Error::custom)?;
        Ok(HexF64(bits.into_iter().map(f64::from_bits).collect()))
    }
}

impl<'de> Deserialize<'de> for HexF32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF32, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 8).map_err(serde::de::Error::custom)?;
        Ok(HexF32(
            bits.into_iter().map(|b| f32::from_bits(b as u32)).collect(),
        ))
    }
}

pub(super) mod profile_name {
    use crate::profile::Profile;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Profile, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Profile, D::Error> {
        let s = String::deserialize(d)?;
        Profile::parse(&s).ok_or_else(|| {
            D::Error::custom(format!(
                "`{s}` is not a profile (valid: strict, repro, live)"
            ))
        })
    }
}

pub(super) mod precision_name {
    use crate::dsp::Precision;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Precision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Precision, D::Error> {
        let s = String::deserialize(d)?;
        Precision::parse(&s)
            .ok_or_else(|| D::Error::custom(format!("`{s}` is not a precision (valid: f32, f64)")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_arrays_keep_every_bit() {
        let f64s = vec![
            0.0,
            -0.0,
            1.0,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef),
            0.1 + 0.2,
        ];
        let json = serde_json::to_string(&HexF64(f64s.clone())).unwrap();
        assert!(json.starts_with("\"0000000000000000"));
        let back: HexF64 = serde_json::from_str(&json).unwrap();
        assert_eq!(back, HexF64(f64s.clone()));
        let f32s: Vec<f32> = vec![0.1, -0.0, 1e-40, f32::NAN, 16_777_217.0];
        let back: HexF32 =
            serde_json::from_str(&serde_json::to_string(&HexF32(f32s.clone())).unwrap()).unwrap();
        assert_eq!(back, HexF32(f32s));
        assert!(serde_json::from_str::<HexF64>("\"3ff00000000000\"").is_err());
        assert!(serde_json::from_str::<HexF32>("\"3f80000g\"").is_err());
        for x in f64s {
            let back: Num = serde_json::from_str(&serde_json::to_string(&Num(x)).unwrap()).unwrap();
            assert_eq!(back, Num(x), "{x:e}");
        }
    }
}
