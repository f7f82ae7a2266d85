"""The same effects chain in morphrt's Python module and in pedalboard, in
one process, on the same 60 s stereo array: highpass 80 Hz → compressor
(−20 dB, 4:1) → reverb. Best of 5 runs each; prints × real time and the
ratio. Then the cost of a `Processor.process` call at block 64 against the
same engine called from Rust (`cargo bench --bench processor`).

    python3 -m pip install ./python pedalboard   # a release build of the module
    python3 benches/vs_pedalboard.py

morphrt plays the chain as a scene (biquad highpass → compressor →
reverb, the recording's left channel in, the reverb's stereo out, as
`morphrt render --input` plays it); pedalboard runs HighpassFilter →
Compressor → Reverb on both channels. A measurement, not a test: the
figures depend on the machine and its load.
"""

import sys
import time

import numpy as np

import morphrt

RATE = 48000
SECONDS = 60
RUNS = 5

CHAIN = {
    "version": "1.0",
    "sample_rate": RATE,
    "nodes": [
        {"id": "mic", "op": "input", "params": {"channel": 0}},
        {"id": "hp", "op": "biquad", "params": {"mode": "highpass", "cutoff": "80Hz", "q": 0.707}},
        {"id": "comp", "op": "compressor",
         "params": {"threshold": "-20dB", "ratio": 4, "attack": "5ms", "release": "100ms"}},
        {"id": "room", "op": "reverb", "params": {"mix": 0.3}},
    ],
    "edges": [{"from": "mic", "to": "hp"}, {"from": "hp", "to": "comp"}, {"from": "comp", "to": "room"}],
    "outputs": {"main": ["room:out", "room:out_r"]},
}


def recording():
    """60 s of stereo music-like material: a plucked tone through an echo
    (scenes/pluck-delay.json) on both channels, float32."""
    mono = morphrt.render("scenes/pluck-delay.json", duration=SECONDS, profile="live")[0]
    return np.ascontiguousarray(np.stack([mono, mono * 0.9]).astype(np.float32))


def best(f):
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def chains(x):
    import pedalboard

    board = pedalboard.Pedalboard([
        pedalboard.HighpassFilter(cutoff_frequency_hz=80),
        pedalboard.Compressor(threshold_db=-20, ratio=4, attack_ms=5, release_ms=100),
        pedalboard.Reverb(wet_level=0.3, dry_level=0.7),
    ])
    pb = best(lambda: board(x, RATE, reset=True))
    print(f"pedalboard {pedalboard.__version__}: {SECONDS / pb:7.1f} x real time ({pb:.3f} s)")
    for profile in ["live", "repro", "strict"]:
        t = best(lambda: morphrt.render(CHAIN, input=x, profile=profile))
        print(f"morphrt {profile:6}:  {SECONDS / t:7.1f} x real time ({t:.3f} s), "
              f"{pb / t:.2f}x pedalboard")


def calls(x):
    frames = 64 * 2 ** 14  # 22 s at 48 kHz in calls of 64 frames
    for profile, dtype in [("live", np.float32), ("strict", np.float32), ("strict", np.float64)]:
        block = np.ascontiguousarray(x[:1, :frames], dtype=dtype)
        p = morphrt.Processor(CHAIN, profile=profile, block_size=64)

        def run():
            for at in range(0, frames, 64):
                p.process(block[:, at:at + 64])

        t = best(run)
        print(f"Processor.process, block 64, {profile:6} {np.dtype(dtype).name}: "
              f"{t / (frames // 64) * 1e9:7.0f} ns a call ({frames / RATE / t:.1f} x real time)")


def main(argv):
    x = recording()
    if "--calls" not in argv:
        chains(x)
    if "--chains" not in argv:
        calls(x)


if __name__ == "__main__":
    main(sys.argv[1:])
