"""The rejection of `sox rate -v` and `sox rate -h`, measured as
tests/it/resample.rs measures morphrt's converters (its
`strict_passband_is_flat_and_aliases_and_images_are_140_db_down` and
`library_…_100_db_down` print morphrt's figures with `--nocapture`), so the
two can be read side by side.

The tones are coherent: a tone sits on bin `j` of an `N_out`-point FFT of
the output and completes `j` whole periods in the matching `N_in` input
frames, so a rectangular window shows every tone, alias and image on an
exact bin. For each conversion: 58 swept sines and one multitone of 12
tones, each converted by sox from 64-bit float to 64-bit float; the figure
is the largest component that is not a tone, in dB below the tones, over
all of them, and the passband's largest deviation up to 0.9 × the lower
Nyquist. Tones are at half scale (sox's samples are 32-bit integers
inside; a full-scale sine near Nyquist would clip there).

    python3 benches/resample_quality_vs_sox.py
"""

import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

PAIRS = [(44100, 48000), (48000, 44100), (96000, 48000), (22050, 48000)]
AMP = 0.5


def frames_of(l, m):
    k = 1 << max(0, math.ceil(math.log2(max(1, 10_000 // max(l, m)))))
    return l * k, m * k


def sweep_bins(n_in, n_out, low_nyq_bins):
    bins = [i * (n_in // 2 - 1) // 40 for i in range(1, 41)]
    bins += [int(low_nyq_bins * (0.84 + 0.02 * i)) for i in range(17)]
    bins.append(int(0.9 * low_nyq_bins))
    return sorted({b for b in bins if 1 <= b < n_in // 2 and b != n_out // 2})


def sox(quality, src, dst, x, tmp):
    inp, out = Path(tmp) / "in.f64", Path(tmp) / "out.f64"
    x.astype("<f8").tofile(inp)
    subprocess.run(
        ["sox", "-t", "f64", "-r", str(src), "-c", "1", str(inp),
         "-t", "f64", str(out), "rate", quality, str(dst)],
        check=True,
    )
    return np.fromfile(out, dtype="<f8")


def measure(quality, src, dst, tmp):
    g = math.gcd(src, dst)
    l, m = dst // g, src // g
    n_out, n_in = frames_of(l, m)
    low_nyq_bins = min(src, dst) / 2.0 / (dst / n_out)
    runs = [[(b, AMP, 0.0)] for b in sweep_bins(n_in, n_out, low_nyq_bins)]
    rng = np.random.default_rng(99)
    gg = math.gcd(n_in, n_out)
    multi, classes = [], set()
    while len(multi) < 12:
        b = int(rng.integers(1, n_in // 2 - 1))
        c = min(b % gg, gg - b % gg)
        if c not in classes and b < n_out // 2:
            classes.add(c)
            multi.append((b, AMP / 12, float(rng.uniform(-math.pi, math.pi))))
    runs.append(multi)
    settle = 4096
    total_in = ((settle + n_out) * m + l - 1) // l + 4096
    n = np.arange(total_in)
    worst, flat = -math.inf, 0.0
    for run in runs:
        x = sum(a * np.sin(2 * np.pi * ((b * n) % n_in) / n_in + ph) for b, a, ph in run)
        y = sox(quality, src, dst, x, tmp)[settle:settle + n_out]
        amp = np.abs(np.fft.rfft(y)) * 2.0 / n_out
        mask = np.ones(len(amp), dtype=bool)
        for b, a, _ in run:
            if b < n_out // 2:
                mask[b] = False
                if b * (dst / n_out) <= 0.9 * min(src, dst) / 2:
                    flat = max(flat, abs(20 * math.log10(amp[b] / a)))
        ref = min(a for _, a, _ in run)
        worst = max(worst, 20 * math.log10(max(amp[mask].max(), 1e-300) / ref))
    return worst, flat


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for quality in ("-v", "-h"):
            for src, dst in PAIRS:
                worst, flat = measure(quality, src, dst, tmp)
                print(f"sox rate {quality} {src} → {dst} Hz: worst alias or image {worst:.1f} dB, "
                      f"passband within {flat:.4f} dB to 0.9 × the lower Nyquist")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
