//! What a render made, measured on the way out: sample peak, clipped
//! samples and DC offset per channel, so a clipped or offset render is
//! noticed when it is written, not when someone listens to it.

use crate::host::files::wav::WavFormat;
use crate::scene::capped_list;

/// One channel's measurements.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelLevels {
    /// The largest |sample| at engine precision, before conversion.
    pub peak: f64,
    /// Samples the file could not hold: clamped to full scale in integer
    /// formats; in f32, samples over 0 dBFS (kept in the file, but they
    /// clip when played or converted).
    pub clipped: u64,
    /// Sums of the samples for the DC offset: frame `n` of the render
    /// (from 0) is added to `sums[n % SUMS]`, each sum in frame order, so
    /// no block size changes them and the sums run side by side.
    sums: [f64; SUMS],
    frames: u64,
}

/// How many sums a channel's DC offset is added in.
const SUMS: usize = 4;

impl ChannelLevels {
    /// The mean sample value (0 for an empty render): the sums of frames
    /// `n % 4` = 0, 1, 2, 3 added as `(s0 + s1) + (s2 + s3)`, over the
    /// frames.
    pub fn dc_offset(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            let s = &self.sums;
            ((s[0] + s[1]) + (s[2] + s[3])) / self.frames as f64
        }
    }

    /// The sample peak in dB relative to full scale (`None` for silence).
    pub fn peak_dbfs(&self) -> Option<f64> {
        dbfs(self.peak)
    }
}

/// Levels of a whole render.
#[derive(Clone, Debug, PartialEq)]
pub struct Levels {
    /// The format the samples were written in (it decides what clips).
    pub format: WavFormat,
    /// One entry per channel, in file order.
    pub channels: Vec<ChannelLevels>,
}

/// The larger of `m` and every |x| of `xs` (NaNs are no peak, as in
/// `f64::max`), in lanes.
#[inline]
fn peak<S: Copy + Into<f64>>(m: f64, xs: &[S]) -> f64 {
    const LANES: usize = 8;
    let mut peaks = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (p, &x) in peaks.iter_mut().zip(chunk) {
            let a = x.into().abs();
            *p = if a > *p { a } else { *p };
        }
    }
    for (p, &x) in peaks.iter_mut().zip(rest) {
        let a = x.into().abs();
        *p = if a > *p { a } else { *p };
    }
    peaks.iter().fold(m, |m, &p| m.max(p))
}

/// `20·log10(x)`, or `None` for 0 (silence has no level in dB).
pub fn dbfs(x: f64) -> Option<f64> {
    (x > 0.0).then(|| 20.0 * libm::log10(x))
}

impl Levels {
    /// Empty measurements for `channels` channels written as `format`.
    pub fn new(channels: usize, format: WavFormat) -> Levels {
        Levels {
            format,
            channels: vec![ChannelLevels::default(); channels],
        }
    }

    /// Counts one sample of channel `c`; `clipped` says whether the
    /// conversion to the file's format clipped it.
    #[inline]
    pub fn add(&mut self, c: usize, x: f64, clipped: bool) {
        let ch = &mut self.channels[c];
        ch.peak = ch.peak.max(x.abs());
        ch.sums[(ch.frames % SUMS as u64) as usize] += x;
        ch.clipped += clipped as u64;
        ch.frames += 1;
    }

    /// Counts samples `frames` of every channel of `chans` (one buffer
    /// per channel, in order), of which `clipped[c]` clipped in channel
    /// `c`: the same as [`add`](Self::add) for each sample in order (the
    /// peak, a maximum, is taken in lanes; the sums side by side).
    pub fn add_frames<S: Copy + Into<f64>>(
        &mut self,
        chans: &[Vec<S>],
        frames: std::ops::Range<usize>,
        clipped: impl Fn(usize) -> u64,
    ) {
        for (c, (ch, xs)) in self.channels.iter_mut().zip(chans).enumerate() {
            let xs = &xs[frames.clone()];
            ch.peak = peak(ch.peak, xs);
            // Sample `i` of the run is frame `first + i`, so it goes to
            // `mine[i % SUMS]`.
            let first = (ch.frames % SUMS as u64) as usize;
            let mut mine: [f64; SUMS] = std::array::from_fn(|k| ch.sums[(first + k) % SUMS]);
            let quads = xs.chunks_exact(SUMS);
            let rest = quads.remainder();
            for quad in quads {
                for (m, &x) in mine.iter_mut().zip(quad) {
                    *m += x.into();
                }
            }
            for (m, &x) in mine.iter_mut().zip(rest) {
                *m += x.into();
            }
            for (k, m) in mine.into_iter().enumerate() {
                ch.sums[(first + k) % SUMS] = m;
            }
            ch.frames += xs.len() as u64;
            ch.clipped += clipped(c);
        }
    }

    /// The highest sample peak of any channel.
    pub fn peak(&self) -> f64 {
        self.channels.iter().map(|c| c.peak).fold(0.0, f64::max)
    }

    /// Clipped samples over all channels.
    pub fn clipped(&self) -> u64 {
        self.channels.iter().map(|c| c.clipped).sum()
    }

    /// One line for the log: the peak, each channel's peak and DC offset,
    /// and whether anything clipped.
    pub fn summary(&self) -> String {
        let db = |x: Option<f64>| x.map_or("-inf".to_string(), |d| format!("{d:.2}"));
        let mut s = format!("peak {} dBFS", db(dbfs(self.peak())));
        if self.channels.len() > 1 {
            let per = self
                .channels
                .iter()
                .enumerate()
                .map(|(i, c)| format!("ch{} {}", i + 1, db(c.peak_dbfs())));
            s += &format!(" ({})", capped_list(per, ", "));
        }
        let dc = self
            .channels
            .iter()
            .map(|c| format!("{:+.6}", c.dc_offset()));
        s += &format!(", DC offset {}", capped_list(dc, " / "));
        match self.clipped() {
            0 => s += ", no clipped samples",
            n => s += &format!(", {n} clipped samples"),
        }
        s
    }

    /// A warning when anything clipped, naming the channels.
    pub fn clip_warning(&self) -> Option<String> {
        let n = self.clipped();
        if n == 0 {
            return None;
        }
        let per = capped_list(
            self.channels
                .iter()
                .enumerate()
                .filter(|(_, c)| c.clipped > 0)
                .map(|(i, c)| format!("ch{}: {}", i + 1, c.clipped)),
            ", ",
        );
        let peak = dbfs(self.peak()).unwrap_or(0.0);
        Some(match self.format {
            WavFormat::F32 => format!(
                "warning: {n} samples over 0 dBFS ({}; peak {peak:+.2} dBFS): f32 keeps them, but they clip when played or converted to an integer format; lower the output gain by at least {:.2} dB",
                per,
                peak
            ),
            _ => format!(
                "warning: {n} samples clipped to full scale ({}; peak {peak:+.2} dBFS); lower the output gain by at least {:.2} dB, or render --format f32",
                per,
                peak
            ),
        })
    }

    /// The machine-readable form, for `render --json`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "peak": self.peak(),
            "peak_dbfs": dbfs(self.peak()),
            "clipped": self.clipped(),
            "per_channel": self.channels.iter().map(|c| serde_json::json!({
                "peak": c.peak,
                "peak_dbfs": c.peak_dbfs(),
                "clipped": c.clipped,
                "dc_offset": c.dc_offset(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_dc_and_clipping_per_channel() {
        let mut l = Levels::new(2, WavFormat::I16);
        for (a, b) in [(0.5, -1.5), (-0.25, 0.5), (0.0, 0.5), (0.25, 0.5)] {
            l.add(0, a, false);
            l.add(1, b, b.abs() > 1.0);
        }
        assert_eq!(l.channels[0].peak, 0.5);
        assert_eq!(l.channels[1].peak, 1.5);
        assert_eq!(l.channels[0].dc_offset(), 0.125);
        assert_eq!(l.channels[1].dc_offset(), 0.0);
        assert_eq!(l.clipped(), 1);
        assert_eq!(l.peak(), 1.5);
        let w = l.clip_warning().unwrap();
        assert!(
            w.contains("1 samples clipped") && w.contains("ch2: 1"),
            "{w}"
        );
        assert!(l.summary().contains("1 clipped samples"), "{}", l.summary());
    }

    #[test]
    fn full_scale_is_0_dbfs_and_half_is_about_minus_6() {
        assert_eq!(dbfs(1.0), Some(0.0));
        let half = dbfs(0.5).unwrap();
        assert!((half + 6.0206).abs() < 1e-4, "{half}");
        assert_eq!(dbfs(0.0), None);
        let silent = Levels::new(1, WavFormat::F32);
        assert!(silent.summary().starts_with("peak -inf dBFS"));
        assert!(silent.clip_warning().is_none());
        assert_eq!(silent.json()["peak_dbfs"], serde_json::Value::Null);
    }
}
