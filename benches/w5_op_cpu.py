#!/usr/bin/env python3
"""CPU per sample of each operator of W5, from `perf`, for one or more builds.

W5 (`scenes/bench/w5.json`) is a recording through highpass -> compressor ->
reverb. `bench` feeds `input` silence, so this times whole renders of a 60 s
recording (a render of `scenes/pluck-delay.json`: plucks and echoes in steady
state) under `perf record -e cpu-clock -c 250000`, which samples only while
the process runs, so the figures hold on a loaded machine. Each symbol is
put with the operator it belongs to (the compressor with its detector and
the `exp`/`log` it calls), the rest is the engine and the WAV file's way in
and out. Per build and profile: the median of ROUNDS renders, in ns of CPU
per sample of the recording; the builds run in turn.

Run from the top of the repository after `cargo build --release`:

    python3 benches/w5_op_cpu.py                              # target/release/morphrt
    python3 benches/w5_op_cpu.py before=/tmp/old/morphrt after=target/release/morphrt
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile

ROUNDS = int(os.environ.get("ROUNDS", "3"))
PERIOD_NS = 250000
SECONDS = 60
PROFILES = ["strict", "repro", "live"]
PARTS = ["reverb", "compressor", "biquad", "rest", "whole process"]


def part_of(symbol):
    s = symbol.strip()
    if "reverb" in s:
        return "reverb"
    if "biquad" in s:
        return "biquad"
    if ("compressor" in s or "detector" in s or "ieee754_exp" in s or "ieee754_log" in s
            or s in ("exp@@GLIBC_2.29", "log@@GLIBC_2.29")
            or "libm::math::exp" in s or "libm::math::log" in s
            or "coef_exp" in s or "coef_ln" in s):
        return "compressor"
    return "rest"


def measure(binary, profile, rec, out, data):
    cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERIOD_NS), "-o", data,
           binary, "render", "scenes/bench/w5.json", "--input", rec, "--profile", profile,
           "--block-size", "64", "--format", "f32", "-q", "-o", out]
    subprocess.run(cmd, check=True, capture_output=True)
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol",
                             "-F", "sample,sym", "--stdio"],
                            check=True, capture_output=True, text=True).stdout
    samples = {p: 0 for p in PARTS}
    for line in report.splitlines():
        m = re.match(r"\s*(\d+)\s+\[[.k]\]\s+(.*)", line)
        if not m:
            continue
        n = int(m.group(1))
        samples[part_of(m.group(2))] += n
        samples["whole process"] += n
    frames = SECONDS * 48000
    return {p: samples[p] * PERIOD_NS / frames for p in PARTS}


def main():
    builds = []
    for arg in sys.argv[1:] or ["target/release/morphrt"]:
        label, _, path = arg.rpartition("=")
        builds.append((label or path, path))
    for _, path in builds:
        if not os.access(path, os.X_OK):
            sys.exit(f"no build at {path}: cargo build --release first")
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "rec.wav")
        subprocess.run([builds[-1][1], "render", "scenes/pluck-delay.json", "-d", f"{SECONDS}s",
                        "--format", "f32", "-q", "-o", rec], check=True)
        runs = {(b, p): [] for b, _ in builds for p in PROFILES}
        for _ in range(ROUNDS):
            for profile in PROFILES:
                for label, path in builds:
                    runs[(label, profile)].append(measure(
                        path, profile, rec, os.path.join(tmp, "out.wav"),
                        os.path.join(tmp, "perf.data")))
    print("| build | profile | " + " | ".join(PARTS) + " |")
    print("|---|---|" + "---|" * len(PARTS))
    for profile in PROFILES:
        for label, _ in builds:
            r = runs[(label, profile)]
            cells = [f"{statistics.median(x[p] for x in r):.1f}" for p in PARTS]
            print(f"| {label} | {profile} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
