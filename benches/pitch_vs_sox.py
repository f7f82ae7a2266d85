"""`pitch_shift` beside sox's `pitch` effect, measured on the same sines:
3 s of a sine at 0.5 (440 Hz, where morphrt's two taps, 2400 samples
apart at the default 100 ms window, meet in phase; 1005 Hz, a quarter
period apart; 1010 Hz, in antiphase) shifted by
−12, −5, +3.5, +7 and +12 semitones (`sox in.wav out.wav pitch CENTS`,
its defaults; morphrt at its defaults, strict). The steady state (0.3 s
to 2.7 s) of each is measured by:

- zc: the median interval between upward zero crossings, as the
  operator's tests measure it: the pitch repeated between splices;
- dft: the peak of a Hann-windowed DFT of the whole steady state,
  refined by parabolic interpolation of the log magnitude: the strongest
  line over seconds;
- level: the RMS over 20 ms windows 1 ms apart, its mean against the
  input's (dB) and its range (max − min, dB).

Pitches are in cents from the asked shift. Not run in CI (sox may be
missing): `cargo build --release && python3 benches/pitch_vs_sox.py`.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.io.wavfile as wav

SR = 48000
ROOT = Path(__file__).resolve().parent.parent
SHIFTS = [-12.0, -5.0, 3.5, 7.0, 12.0]


def binary():
    """The most recently built morphrt, release or debug."""
    built = [ROOT / "target" / b / "morphrt" for b in ["release", "debug"]]
    built = [b for b in built if b.exists()]
    if not built:
        sys.exit("build morphrt first: cargo build --release")
    return max(built, key=lambda b: b.stat().st_mtime)


def zc_hz(y):
    s = np.signbit(y)
    i = np.nonzero(s[:-1] & ~s[1:])[0]
    t = i + y[i] / (y[i] - y[i + 1])
    return SR / np.median(np.diff(t))


def dft_hz(y):
    n = len(y)
    spec = np.abs(np.fft.rfft(y * np.hanning(n), 8 * n))
    k = int(np.argmax(spec))
    a, b, c = np.log(spec[k - 1 : k + 2])
    return (k + 0.5 * (a - c) / (a - 2 * b + c)) * SR / (8 * n)


def levels_db(y):
    win = int(0.02 * SR)
    c = np.concatenate([[0.0], np.cumsum(y * y)])
    starts = np.arange(0, len(y) - win, 48)
    return 10 * np.log10((c[starts + win] - c[starts]) / win)


def cents(hz, want):
    return 1200 * np.log2(hz / want)


def measure(y, hz, st):
    y = y[int(0.3 * SR) : int(2.7 * SR)]
    want = hz * 2 ** (st / 12)
    l = levels_db(y)
    return (
        cents(zc_hz(y), want),
        cents(dft_hz(y), want),
        np.mean(l) - 10 * np.log10(0.125),
        l.max() - l.min(),
    )


def main():
    if shutil.which("sox") is None:
        print("sox is not installed: skipped")
        return
    morphrt = binary()
    print(f"{'input shift':>21} {'zc cents':>9} {'dft cents':>10} {'level dB':>9} {'range dB':>9}")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "resources").mkdir()
        for hz in [440.0, 1005.0, 1010.0]:
            t = np.arange(3 * SR) / SR
            x = (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
            wav.write(d / "resources" / "sine.wav", SR, x)
            for st in SHIFTS:
                (d / "ps.json").write_text(
                    '{ "version": "1.0", "sample_rate": 48000, "duration": "3s",'
                    ' "nodes": [ { "id": "src", "op": "sampler", "params": { "file": "@resource:sine.wav" } },'
                    ' { "id": "ps", "op": "pitch_shift", "params": { "semitones": %r } } ],'
                    ' "edges": [ { "from": "src", "to": "ps" } ], "outputs": { "main": ["ps"] } }' % st
                )
                subprocess.run(
                    [morphrt, "render", d / "ps.json", "--profile", "strict", "-q", "-o", d / "m.wav"],
                    check=True,
                )
                # The output is late by the latency (2402 samples): line it up.
                y = wav.read(d / "m.wav")[1].astype(float)[2402:]
                subprocess.run(
                    ["sox", d / "resources" / "sine.wav", "-e", "floating-point", "-b", "32",
                     d / "s.wav", "pitch", str(100 * st)],
                    check=True,
                )
                z = wav.read(d / "s.wav")[1].astype(float)
                for name, sig in [("morphrt", y), ("sox", z)]:
                    zc, dft, level, spread = measure(sig, hz, st)
                    print(
                        f"{hz:>4.0f} Hz {st:+5.1f} {name:>7} {zc:+9.3f} {dft:+10.2f} "
                        f"{level:+9.2f} {spread:9.2f}"
                    )


if __name__ == "__main__":
    main()
