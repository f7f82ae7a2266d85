"""`gate` beside sox's `compand` set up as a gate, measured on the same
bursts: a 440 Hz tone at −6 dBFS for 0.3 s over noise at −50 dBFS, then
the noise alone for 0.5 s, three times. For each: the gain on the tone
once open, the attenuation of the noise between bursts, and how long after
a burst starts the output is within 1 dB of the input, and after it ends
until the noise is 20 dB down. morphrt's gate: threshold −30 dB, range
80 dB, attack 1 ms, hold 20 ms, release 20 ms; sox: `compand 0.001,0.02
-30.1,-110,-30,-30 0 -90 0` (its detector's attack and decay are the
times; below −30 dB the transfer falls to −110 dB). Not run in CI.

    cargo build && python3 benches/gate_vs_sox.py
"""

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import scipy.io.wavfile as wav

SR = 48000
ROOT = Path(__file__).resolve().parent.parent


def signal():
    rng = np.random.default_rng(1)
    n = int(0.8 * SR)
    t = np.arange(n) / SR
    one = 10 ** (-50 / 20) * rng.uniform(-1, 1, n)
    one[: int(0.3 * SR)] += 0.5 * np.sin(2 * np.pi * 440 * t[: int(0.3 * SR)])
    return np.tile(one, 3).astype(np.float32)


def figures(name, x, y):
    period, on = int(0.8 * SR), int(0.3 * SR)
    open_gain, closed, t_open, t_close = [], [], [], []
    for k in range(3):
        a = k * period
        seg = slice(a + on // 2, a + on)
        open_gain.append(10 * np.log10(np.mean(y[seg] ** 2) / np.mean(x[seg] ** 2)))
        quiet = slice(a + on + int(0.2 * SR), a + period)
        closed.append(10 * np.log10(np.mean(y[quiet] ** 2) / np.mean(x[quiet] ** 2)))
        win = 48
        env = lambda s, i: np.sqrt(np.mean(s[i : i + win] ** 2)) + 1e-30
        i = a
        while 20 * np.log10(env(y, i) / env(x, i)) < -1:
            i += 1
        t_open.append((i - a) / SR * 1e3)
        i = a + on
        while 20 * np.log10(env(y, i) / env(x, i)) > -20 and i < a + period - win:
            i += 1
        t_close.append((i - a - on) / SR * 1e3)
    print(
        f"{name:>8}: open {np.mean(open_gain):+.2f} dB, closed {np.mean(closed):.1f} dB, "
        f"opens in {np.mean(t_open):.2f} ms, 20 dB down {np.mean(t_close):.1f} ms after the burst"
    )


def main():
    x = signal()
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "resources").mkdir()
        wav.write(d / "resources" / "bursts.wav", SR, x)
        dur = len(x) / SR
        (d / "gate.json").write_text(
            '{ "version": "1.0", "sample_rate": 48000, "duration": "%.6fs",'
            ' "nodes": [ { "id": "src", "op": "sampler", "params": { "file": "@resource:bursts.wav" } },'
            ' { "id": "gt", "op": "gate", "params": { "threshold": -30, "range": 80, "attack": "1ms",'
            ' "hold": "20ms", "release": "20ms" } } ],'
            ' "edges": [ { "from": "src", "to": "gt" } ], "outputs": { "main": ["gt"] } }' % dur
        )
        subprocess.run(
            [ROOT / "target/debug/morphrt", "render", d / "gate.json", "--profile", "strict",
             "-q", "-o", d / "morphrt.wav"],
            check=True,
        )
        _, y = wav.read(d / "morphrt.wav")
        figures("morphrt", x.astype(float), y.astype(float)[: len(x)])
        subprocess.run(
            ["sox", d / "resources" / "bursts.wav", "-e", "floating-point", "-b", "32",
             d / "sox.wav", "compand", "0.001,0.02", "-30.1,-110,-30,-30", "0", "-90", "0"],
            check=True,
        )
        _, y = wav.read(d / "sox.wav")
        figures("sox", x.astype(float), y.astype(float)[: len(x)])


if __name__ == "__main__":
    main()
