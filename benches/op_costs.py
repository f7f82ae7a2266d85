#!/usr/bin/env python3
"""Every operator's cost per sample under strict, repro and live.

For each operator `morphrt ops` lists, writes a small scene to a temporary
folder: the operator as node `x`, every audio input fed a real signal (a
110 Hz saw plus a 1.3 kHz square and quiet noise, summed by a `mix`), its
params set as a sound designer would set them (a modulation effect sweeping,
a compressor over its threshold), its outputs to the main bus. Then runs

    morphrt bench SCENE --profile P --block-size 64 -d DUR --runs 1 --json

per profile, REPEAT times, and takes the least ns/sample of node `x` from
bench's per-node timers (the other runs lost time to the machine's other
work). Prints a Markdown table; `--json FILE` also writes the figures. A
figure marked * was timed with a loose parity bound: that profile's render
is further from strict than its default bound (see `measure`).

Run from the top of the repository after `cargo build --release`:

    python3 benches/op_costs.py                # every operator, about 3 minutes
    python3 benches/op_costs.py svf delay      # some of them
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

MORPHRT = os.environ.get("MORPHRT", "target/release/morphrt")
PROFILES = ["strict", "repro", "live"]

# The params of node `x` per operator, where the defaults are not what a
# scene would play. Values are scene values (units as strings).
PARAMS = {
    "sine": {"freq": "220Hz", "amp": 0.2},
    "saw": {"freq": "220Hz", "amp": 0.2},
    "square": {"freq": "220Hz", "amp": 0.2},
    "triangle": {"freq": "220Hz", "amp": 0.2},
    "wavetable": {"freq": "220Hz", "amp": 0.2, "harmonics": [1, 0.5, 0.33, 0.25, 0.2, 0.16]},
    "noise": {"amp": 0.2},
    "dust": {"density": 200, "amp": 0.5},
    "impulse": {"freq": "100Hz", "amp": 0.5},
    "lfo": {"rate": "2Hz", "amount": 0.5},
    "dc": {"value": 0.25},
    "sampler": {"file": "@resource:kick.wav", "loop": True, "amp": 0.5},
    "pluck": {"freq": "220Hz", "decay": "2s"},
    "biquad": {"mode": "lowpass", "cutoff": "1.2kHz", "q": 0.9},
    "onepole": {"mode": "lowpass", "cutoff": "1.2kHz"},
    "svf": {"mode": "lowpass", "cutoff": "1.2kHz", "q": 0.9},
    "ladder": {"cutoff": "1.2kHz", "resonance": 0.5},
    "adsr": {"attack": "5ms", "decay": "100ms", "sustain": 0.5, "release": "100ms"},
    "env": {"levels": [0, 1, 0.3, 0], "times": [0.01, 0.1, 0.2], "sustain": 2},
    "compressor": {"threshold": "-24dB", "ratio": 4},
    "limiter": {"ceiling": "-6dB"},
    "gate": {"threshold": "-20dB"},
    "gain": {"gain": "-6dB"},
    "pan": {"pos": 0.3},
    "balance": {"pos": 0.3},
    "width": {"width": 1.5},
    "lag": {"up": "5ms", "down": "20ms"},
    "slew": {"up": 200, "down": 200},
    "clip": {"lo": -0.3, "hi": 0.3},
    "quantise": {"step": 0.125},
    "crossfade": {"mix": 0.3},
    "delay": {"time": "375ms", "feedback": 0.5, "mix": 0.4, "max_time": "1s"},
    "comb": {"time": "7ms", "gain": 0.7},
    "allpass": {"time": "5ms", "gain": 0.5},
    "chorus": {"voices": 3},
    "convolution": {"ir": "@resource:room.wav", "mix": 0.3},
    "reverb": {"mix": 0.3},
    "saturator": {"drive": 4},
    "diode_clipper": {"drive": 4},
    "shaper": {"drive": 4},
    "crush": {"bits": 8, "rate": "12kHz"},
    "sequencer": {"steps": [0, 3, 7, 12, 7, 3, 0, -5], "rate": 0.04},
}

# Params driven by a control signal rather than the audio source: a gate or
# trigger from a 4 Hz square (sample_hold's `trig`), as a voice's gate is.
GATED = {"adsr": "gate", "env": "gate", "pluck": "trigger", "sample_hold": "trig"}


def scene(op):
    """The scene measuring `op` (from its `ops --json` entry)."""
    name = op["name"]
    nodes = [
        {"id": "x", "op": name, "params": PARAMS.get(name, {})},
    ]
    edges = []
    inputs = op["inputs"]
    if op.get("variadic_inputs") or name == "mix":
        inputs = ["in0", "in1"]
    if inputs:
        nodes += [
            {"id": "saw", "op": "saw", "params": {"freq": "110Hz", "amp": 0.3}},
            {"id": "sq", "op": "square", "params": {"freq": "1.3kHz", "amp": 0.1}},
            {"id": "hiss", "op": "noise", "params": {"amp": 0.05}},
            {"id": "src", "op": "mix"},
        ]
        edges += [{"from": s, "to": f"src:in{k}"} for k, s in enumerate(("saw", "sq", "hiss"))]
        for port in inputs:
            if name in ("saw", "square") and port == "sync":
                continue
            edges.append({"from": "src", "to": f"x:{port}"})
    if name in GATED:
        nodes.append({"id": "clock", "op": "square", "params": {"freq": "4Hz", "amp": 0.5, "duty": 0.3}})
        edges.append({"from": "clock", "to": f"x:{GATED[name]}"})
    outs = [f"x:{o}" for o in op["outputs"]]
    return {
        "version": "1.0",
        "seed": 1,
        "sample_rate": 48000,
        "nodes": nodes,
        "edges": edges,
        "outputs": {"main": outs[:2]},
    }


def one_thread():
    """`--threads 1`, or nothing for a build older than the flag (one thread then)."""
    help_text = subprocess.run([MORPHRT, "bench", "--help"], capture_output=True, text=True).stdout
    return ["--threads", "1"] if "--threads" in help_text else []


def bench(path, profile, duration, golden=None):
    """bench's JSON report, or an error string."""
    cmd = [
        MORPHRT, "bench", path, "--profile", profile, "--block-size", "64",
        "-d", duration, "--runs", "1", "--json", "-q", *one_thread(),
        "--resources", "resources",
    ]
    if golden:
        cmd += ["--golden", golden]
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return (r.stderr.strip().splitlines() or ["no output"])[-1]


def measure(path, profile, duration):
    """(ns/sample of node `x` from one bench run, whether parity needed a
    looser bound than the profile's), or an error string.

    An operator whose repro or live render strays from strict by more than
    the profile's default bound (a different algorithm, such as 2x
    oversampling, or block-accurate triggers) is timed against a golden
    written here with the strict render's hash and a bound of 1."""
    report = bench(path, profile, duration)
    loose = False
    if isinstance(report, dict) and not report["timing"] and report["parity"].get("strict_sha256"):
        par = report["parity"]
        golden = path + ".golden.json"
        with open(golden, "w") as f:
            json.dump({
                "scene": path, "profile": "strict", "frames": par["frames"],
                "sample_rate": 48000, "sha256": par["strict_sha256"],
                "parity": {"repro": 1.0, "live": 1.0},
            }, f)
        report = bench(path, profile, duration, golden)
        loose = True
    if not isinstance(report, dict):
        return report
    if not report["timing"]:
        return "parity: " + str(report["parity"].get("summary"))
    for n in report["timing"]["nodes"]:
        if n["id"] == "x":
            return (n["ns_per_sample"], loose)
    return "node x not timed"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ops", nargs="*", help="operators to measure (default: all)")
    ap.add_argument("-d", "--duration", default="4s", help="audio per bench run (default 4s)")
    ap.add_argument("--repeat", type=int, default=5, help="bench runs per profile; the least counts (default 5)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    listing = json.loads(subprocess.run([MORPHRT, "ops", "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    ops = [o for o in listing if not args.ops or o["name"] in args.ops]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        print("| operator | strict | repro | live |")
        print("|---|---|---|---|")
        for op in ops:
            path = os.path.join(tmp, op["name"] + ".json")
            with open(path, "w") as f:
                json.dump(scene(op), f)
            row, loose = {}, set()
            for p in PROFILES:
                got = [measure(path, p, args.duration) for _ in range(args.repeat)]
                nums = [g for g in got if isinstance(g, tuple)]
                row[p] = min(g[0] for g in nums) if nums else got[0]
                if any(g[1] for g in nums):
                    loose.add(p)
            figures[op["name"]] = row

            def cell(p):
                if not isinstance(row[p], float):
                    return f"({row[p]})"
                return f"{row[p]:.1f}" + ("*" if p in loose else "")

            print(f"| `{op['name']}` | " + " | ".join(cell(p) for p in PROFILES) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
