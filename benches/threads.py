#!/usr/bin/env python3
"""Render speed at 1, 2, 4 and 8 threads, and the same bytes at each.

Each scene renders 30 s under `--profile live` at block 64 (as
`../peers`-style comparisons do) with `--threads N`, whole process, the
thread counts in turn, ROUNDS rounds; the table gives the best wall time
at each count as a real-time factor and the speed-up over one thread. Every
output is compared with the one-thread output byte for byte: a difference
is reported and fails the script.

The scenes: the bench workloads W1 (256 sines -> lowpass) and W4 (64 noises
-> bandpass -> sum), a voice module of 16 sounding voices (two saws, noise,
a ladder filter, an envelope each; written to a temporary file), and the
shipped `dub-chain`, `hall-reverb` and `poly-pad`.

Every timed render writes to a path that is free: the previous round's
file there is removed before the timer starts (a render over a file
makes the kernel free the old one inside its `rename`, about 1.2 ms for
W1's 5.7 MB here, at every thread count alike; supernova's outputs are
treated the same).

The column after the speed-up gives the same ratio of the render's own
time (from the real-time factor its summary line gives: the blocks
played and written), which leaves
out what every render pays once — the process's start, the scene's
compile (and at two threads or more the cut of `ahead.rs`) and the final
sync of the file — about 6 ms at one thread and 9 at two for W1.

With `--ceiling`, each round also renders the scene at one thread twice at
once (two processes, each alone in its work, nothing shared): the last
column gives what the machine gives two such renders against one,
2 × (one alone) / (both at once) — the most two threads could gain on it
with no hand-over at all. A machine whose cores share a power or clock
budget, or whose wide vector units slow down when both cores use them,
gives less than 2.

With `--halves`, each round also cuts the scene at its widest sum (the
node with the most incoming edges) into two scenes that share nothing:
each keeps half of the sum's inputs, in order, with everything upstream
of them, and the sum and what follows it. Both halves render at once at
one thread, and the last column gives (whole scene at one thread) /
(both halves at once): the most any split of that sum over two threads
could gain on this machine, each thread running ahead on its half with
nothing handed over (the process, the file and the per-block work are
paid by both).

With `--supernova DIR`, each round also renders W1 and W4 with
SuperCollider's multi-core server, `supernova -T N` in non-real-time
mode, at each thread count, from the scores `DIR/w1_par.osc` and
`DIR/w4_par.osc` (the same work as 8 synths in a `ParGroup`, 48 kHz,
block 64, 32-bit float, as the peers' comparison script writes them): a
line under the scene gives its real-time factor at each count, its
speed-up over one thread, and how many different sets of samples its
renders wrote at each count and in all (their `data` chunks; morphrt's
whole files are compared as above).

With `--clock`, it plays instead: the voice module with 8 … 64 sounding
voices on `run --device clock` (the real-time clock without a sound card)
for 10 s at block 64 under live, at each thread count, and gives the DSP
load (mean, p99) and the xruns, split into callbacks that overran their
budget (the engine's doing) and callbacks that started late (the
machine's scheduler's); the heaviest count with no overrun is the figure.

Run from the top of the repository after `cargo build --release`:

    python3 benches/threads.py [ROUNDS] [--block-size N] [--threads 1,2,4,8]
                               [--profile P] [--scenes W1,W4] [--ceiling] [--halves]
                               [--supernova DIR]
    python3 benches/threads.py --clock [--threads 1,2]
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time

BIN = "target/release/morphrt"


def voices16(count=16):
    """A voice module with `count` voices, all sounding from the start."""
    notes = ", ".join(
        f'{{ "time": "0s", "module": "pad", "note": {30 + k}, "velocity": 0.5 }}'
        for k in range(count)
    )
    return f"""{{ "version": "1.0", "sample_rate": 48000, "seed": 1,
  "modules": [ {{ "id": "pad", "voices": {count},
      "note": {{ "pitch": "osc.freq", "gate": "env.gate", "velocity": "vel.gain" }},
      "nodes": [
        {{ "id": "osc", "op": "saw", "params": {{ "amp": 0.05 }} }},
        {{ "id": "osc2", "op": "saw", "params": {{ "freq": 221.3, "amp": 0.05 }} }},
        {{ "id": "air", "op": "noise", "params": {{ "amp": 0.003 }} }},
        {{ "id": "tone", "op": "mix" }},
        {{ "id": "lp", "op": "ladder", "params": {{ "cutoff": "1.5kHz", "resonance": 0.4 }} }},
        {{ "id": "env", "op": "adsr", "params": {{ "attack": "5ms", "sustain": 0.7 }} }},
        {{ "id": "vca", "op": "multiply" }},
        {{ "id": "vel", "op": "gain" }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "tone:in0" }}, {{ "from": "osc2", "to": "tone:in1" }},
             {{ "from": "air", "to": "tone:in2" }}, {{ "from": "tone", "to": "lp" }},
             {{ "from": "lp", "to": "vca:a" }}, {{ "from": "env", "to": "vca:b" }},
             {{ "from": "vca", "to": "vel" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [ {notes} ] }}"""


def free(*paths):
    """Removes the files at `paths` that exist (the previous round's
    outputs), before a timer starts."""
    for p in paths:
        if os.path.exists(p):
            os.remove(p)


def wav_data(path):
    """The bytes of a WAV file's `data` chunk (the samples, without the
    header chunks a writer may stamp with the time)."""
    with open(path, "rb") as f:
        b = f.read()
    at = 12
    while at + 8 <= len(b):
        tag, size = b[at:at + 4], int.from_bytes(b[at + 4:at + 8], "little")
        if tag == b"data":
            return b[at + 8:at + 8 + size]
        at += 8 + size + (size & 1)
    sys.exit(f"no data chunk in {path}")


def halves(scene, tmp):
    """`scene` cut at the node with the most incoming edges into two files
    that share nothing: each keeps half of that node's inputs (in their
    order) and everything upstream of them, and every node upstream of
    none of the inputs."""
    import json
    with open(scene) as f:
        s = json.load(f)
    if "nodes" not in s or "edges" not in s:
        return []
    ins = {}
    for e in s["edges"]:
        ins.setdefault(e["to"].split(":")[0], []).append(e["from"].split(":")[0])
    if not ins or max(len(v) for v in ins.values()) < 2:
        return []
    sum_node = max(ins, key=lambda n: len(ins[n]))
    members = ins[sum_node]

    def upstream(n, seen):
        if n not in seen:
            seen.add(n)
            for m in ins.get(n, []):
                upstream(m, seen)
        return seen

    every = set()
    for m in members:
        upstream(m, every)
    paths = []
    for k, part in enumerate([members[: len(members) // 2], members[len(members) // 2:]]):
        keep = set()
        for m in part:
            upstream(m, keep)
        keep |= {n["id"] for n in s["nodes"]} - every
        t = dict(s)
        t["nodes"] = [n for n in s["nodes"] if n["id"] in keep]
        t["edges"] = [e for e in s["edges"]
                      if e["from"].split(":")[0] in keep and e["to"].split(":")[0] in keep]
        # Events for a node the half does not keep go with it.
        if "events" in s:
            t["events"] = [e for e in s["events"] if e.get("node") in keep]
        path = os.path.join(tmp, f"half{k}-{os.path.basename(scene)}")
        with open(path, "w") as f:
            json.dump(t, f)
        paths.append(path)
    return paths


def beside(scene):
    """`--resources` for where `scene` finds its resources, for a half of it
    written elsewhere (`halves`)."""
    here = os.path.dirname(os.path.abspath(scene))
    dirs = [os.path.join(here, "resources"), os.path.join(here, "..", "resources")]
    return [x for d in dirs if os.path.isdir(d) for x in ("--resources", d)]


def clock(counts, tmp):
    """The voice module at growing sizes on the clock device."""
    import re
    print("run --device clock -d 10s --profile live --block-size 64, voices all sounding")
    print("voices  threads  load mean  load p99  overran  started late  worker xruns")
    for voices in [8, 16, 24, 32, 48, 64]:
        scene = os.path.join(tmp, f"voices{voices}.json")
        with open(scene, "w") as f:
            f.write(voices16(voices))
        for n in counts:
            cmd = [BIN, "run", scene, "--device", "clock", "--duration", "10s", "--no-watch",
                   "--no-journal", "--block-size", "64", "--profile", "live", "--threads", str(n)]
            r = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL)
            err = r.stderr.decode()
            played = next((l for l in err.splitlines() if l.startswith("played ")), None)
            if r.returncode != 0 or played is None:
                sys.exit(f"failed: {' '.join(cmd)}\n{err[-600:]}")
            num = lambda pat: int(m.group(1)) if (m := re.search(pat, played)) else 0
            load = re.search(r"DSP load mean ([\d.]+)%, p99 ([\d.]+)%", played)
            worker = re.search(r"worker xruns \([^)]*\): ([^;]*)", played)
            overran, late = num(r"(\d+) overran"), num(r"(\d+) started late")
            workers = worker.group(1) if worker else "-"
            print(f"{voices:>6}  {n:>7}  {load.group(1):>8}%  {load.group(2):>7}%  "
                  f"{overran:>7}  {late:>12}  {workers}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=5)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--clock", action="store_true")
    ap.add_argument("--profile", default="live")
    ap.add_argument("--scenes", help="comma-separated names of the table's scenes to run")
    ap.add_argument("--ceiling", action="store_true",
                    help="also time two one-thread renders at once (the machine's own limit)")
    ap.add_argument("--halves", action="store_true",
                    help="also time the scene's two halves at once (any split's limit)")
    ap.add_argument("--supernova", metavar="DIR",
                    help="also time supernova -T N on DIR/w1_par.osc and DIR/w4_par.osc")
    a = ap.parse_args()
    if a.supernova and (a.clock or a.seconds != 30.0):
        sys.exit("--supernova times the 30 s scores beside 30 s renders: without --clock or --seconds")
    if a.supernova and subprocess.run(["sh", "-c", "command -v supernova"],
                                      capture_output=True).returncode != 0:
        sys.exit("--supernova: no `supernova` on PATH (Debian: supercollider-supernova)")
    tmp = tempfile.mkdtemp(prefix="morphrt-threads-")
    if a.clock:
        clock([int(t) for t in (a.threads if a.threads != "1,2,4,8" else "1,2").split(",")], tmp)
        return
    counts = [int(t) for t in a.threads.split(",")]
    v16 = os.path.join(tmp, "voices16.json")
    with open(v16, "w") as f:
        f.write(voices16())
    scenes = [
        ("W1", "scenes/bench/w1.json"),
        ("W4", "scenes/bench/w4.json"),
        ("16 voices", v16),
        ("dub-chain", "scenes/dub-chain.json"),
        ("hall-reverb", "scenes/hall-reverb.json"),
        ("poly-pad", "scenes/poly-pad.json"),
    ]
    print(
        f"render -d {a.seconds:g}s --profile {a.profile} --block-size {a.block_size} --threads N, "
        f"best of {a.rounds}, {os.cpu_count()} cores"
    )
    print("scene        " + "".join(f"{f'{n} thr x rt':>14}" for n in counts) + "   speed-up over 1"
          + "   the render's own time"
          + ("   two 1-thread renders at once" if a.ceiling else "")
          + ("   two halves at once" if a.halves else ""))
    bad = False
    if a.scenes:
        scenes = [(n, p) for n, p in scenes if n in a.scenes.split(",")]
    for name, scene in scenes:
        best = {n: float("inf") for n in counts}
        # The render's own time (from the real-time factor its summary
        # gives: the blocks played and written, without the process's
        # start, the compile and the file's final sync).
        own = {n: float("inf") for n in counts}
        outs = {n: os.path.join(tmp, f"{n}.wav") for n in counts}

        def cmd(n, out):
            return [BIN, "render", scene, "-d", f"{a.seconds}s", "--profile", a.profile,
                    "--block-size", str(a.block_size), "--threads", str(n), "--format", "f32",
                    "-o", out]

        score = {"W1": "w1_par.osc", "W4": "w4_par.osc"}.get(name)
        score = os.path.join(a.supernova, score) if a.supernova and score else None
        if score and not os.path.isfile(score):
            sys.exit(f"--supernova: no score `{score}`")
        peer = {n: float("inf") for n in counts}
        peer_outputs = {n: set() for n in counts}

        def supernova(n):
            out = os.path.join(tmp, f"sn{n}.wav")
            free(out)
            c = ["supernova", "-T", str(n), "-N", score, "_", out, str(48000), "WAV", "float",
                 "-o", "1", "-i", "0", "-z", str(a.block_size), "-m", "131072", "-D", "0"]
            t = time.perf_counter()
            r = subprocess.run(c, capture_output=True)
            dt = time.perf_counter() - t
            if r.returncode != 0:
                sys.exit(f"failed: {' '.join(c)}\n{r.stderr.decode()[-600:]}")
            peer_outputs[n].add(hashlib.sha256(wav_data(out)).hexdigest())
            return dt

        pair = halved = float("inf")
        parts = halves(scene, tmp) if a.halves else []
        if a.halves and not parts:
            print(f"{name}: no sum to cut in two (--halves skips it)")

        def at_once(cmds):
            t = time.perf_counter()
            both = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    for c in cmds]
            errs = [p.communicate()[1] for p in both]
            if any(p.returncode != 0 for p in both):
                sys.exit(f"failed: two renders at once\n" + b"".join(errs).decode()[-600:])
            return time.perf_counter() - t

        for _ in range(a.rounds):
            for n in counts:
                free(outs[n])
                t = time.perf_counter()
                r = subprocess.run(cmd(n, outs[n]), capture_output=True)
                dt = time.perf_counter() - t
                if r.returncode != 0:
                    sys.exit(f"failed: {' '.join(cmd(n, outs[n]))}\n{r.stderr.decode()[-600:]}")
                best[n] = min(best[n], dt)
                own[n] = min(own[n], a.seconds / float(
                    re.search(rb"\(([0-9.]+)x real time\)", r.stderr).group(1)))
            if score:
                for n in counts:
                    peer[n] = min(peer[n], supernova(n))
            if a.ceiling:
                free(*(os.path.join(tmp, f"pair{k}.wav") for k in range(2)))
                pair = min(pair, at_once([cmd(1, os.path.join(tmp, f"pair{k}.wav"))
                                          for k in range(2)]))
            if parts:
                free(*(os.path.join(tmp, f"half{k}.wav") for k in range(2)))
                halved = min(halved, at_once([
                    [c if c != scene else part for c in cmd(1, os.path.join(tmp, f"half{k}.wav"))]
                    + beside(scene)
                    for k, part in enumerate(parts)]))
        ref = open(outs[counts[0]], "rb").read()
        same = all(open(outs[n], "rb").read() == ref for n in counts)
        bad |= not same
        rtf = {n: a.seconds / best[n] for n in counts}
        print(
            f"{name:<13}" + "".join(f"{rtf[n]:>14.1f}" for n in counts) + "   "
            + " ".join(f"{rtf[n] / rtf[counts[0]]:.2f}" for n in counts[1:])
            + "   " + " ".join(f"{own[counts[0]] / own[n]:.2f}" for n in counts[1:])
            + (f"   {2 * best[1] / pair:.2f}" if a.ceiling and 1 in best else "")
            + (f"   {best[1] / halved:.2f}" if parts and 1 in best else "")
            + ("" if same else "   OUTPUTS DIFFER")
        )
        if score:
            # The score's length is the scene's 30 s.
            prt = {n: 30.0 / peer[n] for n in counts}
            print(
                f"{'  supernova':<13}" + "".join(f"{prt[n]:>14.1f}" for n in counts) + "   "
                + " ".join(f"{prt[n] / prt[counts[0]]:.2f}" for n in counts[1:])
                + "   different samples in " + ", ".join(
                    f"{len(peer_outputs[n])} of {a.rounds} at {n}" for n in counts)
                + f"; {len(set().union(*peer_outputs.values()))} in all"
            )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
