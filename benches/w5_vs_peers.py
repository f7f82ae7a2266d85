#!/usr/bin/env python3
"""W5 in every profile against sox and pedalboard, timed in one run.

W5 (`scenes/bench/w5.json`) is a recording through highpass 80 Hz ->
compressor (-20 dB, 4:1) -> reverb. The recording is a 60 s render of
`scenes/pluck-delay.json` (plucks and echoes in steady state). Timed, in
turn, for ROUNDS rounds, best of each:

- morphrt `render --input` under strict, repro and live, block 64, f32 WAV
  out (mono in, stereo out): the whole process, for each build given;
- sox 14.4: `highpass 80 compand 0.005,0.1 6:-70,-70,-20,-20,0,-15 0 -90
  0.0 reverb 50`, f32 stereo out: the whole process;
- pedalboard: HighpassFilter(80) -> Compressor(-20, 4, 5, 100) -> Reverb()
  on the recording given as stereo, in-process processing time only
  (which favours it: no start-up, no file read or write).

Run from the top of the repository after `cargo build --release`, with
sox on the PATH and `python3 -m pip install pedalboard soundfile`:

    python3 benches/w5_vs_peers.py [ROUNDS] [BUILD ...]   # default 5, target/release/morphrt

A measurement, not a test: the figures depend on the machine and its load;
the ratios of one run are what compare.
"""

import os
import subprocess
import sys
import tempfile
import time

PROFILES = ["live", "repro", "strict"]
PEDALBOARD = """
import sys, time, numpy as np, soundfile as sf
from pedalboard import Pedalboard, HighpassFilter, Compressor, Reverb
x, sr = sf.read(sys.argv[1], dtype="float32")
x = np.stack([x, x]) if x.ndim == 1 else x.T
board = Pedalboard([HighpassFilter(80), Compressor(-20, 4, 5, 100), Reverb()])
best = 1e9
for _ in range(int(sys.argv[2])):
    a = time.perf_counter(); board(x, sr); best = min(best, time.perf_counter() - a)
print(best)
"""


def wall(cmd):
    a = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - a


def main():
    args = sys.argv[1:]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 5
    builds = args or ["target/release/morphrt"]
    with tempfile.TemporaryDirectory() as d:
        rec = os.path.join(d, "rec.wav")
        subprocess.run([builds[0], "render", "scenes/pluck-delay.json", "-d", "60s",
                        "--format", "f32", "-q", "-o", rec], check=True)
        cmds = {}
        for b in builds:
            for p in PROFILES:
                name = f"morphrt {p}" + (f" ({b})" if len(builds) > 1 else "")
                cmds[name] = [b, "render", "scenes/bench/w5.json", "--input", rec, "--profile", p,
                              "--block-size", "64", "--format", "f32", "-q",
                              "-o", os.path.join(d, "w5.wav")]
        cmds["sox"] = ["sox", rec, "-c", "2", "-e", "floating-point", "-b", "32",
                       os.path.join(d, "sox.wav"), "highpass", "80", "compand", "0.005,0.1",
                       "6:-70,-70,-20,-20,0,-15", "0", "-90", "0.0", "reverb", "50"]
        best = {k: float("inf") for k in [*cmds, "pedalboard"]}
        for _ in range(rounds):
            for k, c in cmds.items():
                best[k] = min(best[k], wall(c))
            r = subprocess.run([sys.executable, "-c", PEDALBOARD, rec, "2"],
                               check=True, capture_output=True, text=True)
            best["pedalboard"] = min(best["pedalboard"], float(r.stdout.split()[-1]))
    for k, t in best.items():
        line = f"{k:40s} {t * 1000:7.1f} ms {60 / t:7.1f}x real time"
        if k.startswith("morphrt"):
            line += f"   {best['sox'] / t:.2f}x sox, {best['pedalboard'] / t:.2f}x pedalboard"
        print(line)


if __name__ == "__main__":
    main()
