#!/usr/bin/env python3
"""`morphrt.render(..., threads=N)` against `threads=1`, in one run.

Renders each scene 30 s under live (5 s for the voices), at one thread
and at N in turn, ROUNDS rounds, and gives the best and median wall
time of each and their ratios. Every render's samples are compared with
the first one's: a difference fails the script.

The scenes: a voice module of 16 sounding voices (the one
`benches/threads.py` renders), W1 and W4 at block 64, cut in two as
`morphrt render` into a file cuts them (half of the sum ahead on a
thread of its own; GUIDE.md, Threads), W4 at block 512, where its level
of 64 bandpasses is worth spreading, and the shipped `poly-pad`, a voice
module whose voices stay under the pool's threshold.

Run from the top of the repository with the module installed
(`python3 -m pip install ./python`):

    python3 benches/python_threads.py [ROUNDS] [--threads N]
"""

import argparse
import importlib.util
import os
import statistics
import tempfile
import time

import morphrt


def voices16():
    """The 16-voice scene of `benches/threads.py`, as text."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("threads", os.path.join(here, "threads.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.voices16()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="morphrt-python-threads-")
    v16 = os.path.join(tmp, "voices16.json")
    with open(v16, "w") as f:
        f.write(voices16())
    cases = [
        ("16 voices, block 64", v16, 5, 64),
        ("W1, block 64", "scenes/bench/w1.json", 30, 64),
        ("W4, block 64", "scenes/bench/w4.json", 30, 64),
        ("W4, block 512", "scenes/bench/w4.json", 30, 512),
        ("poly-pad, block 64", "scenes/poly-pad.json", 30, 64),
    ]
    n = a.threads
    print(f"morphrt.render(profile=\"live\", threads=1 | {n}), best and median of {a.rounds}, "
          f"{os.cpu_count()} cores")
    for name, scene, seconds, block in cases:
        times = {1: [], n: []}
        first = None
        for _ in range(a.rounds):
            for t in (1, n):
                start = time.perf_counter()
                out = morphrt.render(scene, duration=seconds, profile="live",
                                     block_size=block, threads=t)
                times[t].append(time.perf_counter() - start)
                data = out.tobytes()
                if first is None:
                    first = data
                elif data != first:
                    raise SystemExit(f"{name}: threads={t} gave other samples than threads=1")
        best = {t: min(v) * 1e3 for t, v in times.items()}
        median = {t: statistics.median(v) * 1e3 for t, v in times.items()}
        print(f"{name:22s} 1: {best[1]:7.1f}/{median[1]:7.1f} ms   {n}: {best[n]:7.1f}/{median[n]:7.1f} ms"
              f"   {best[1] / best[n]:.2f}x / {median[1] / median[n]:.2f}x")


if __name__ == "__main__":
    main()
