#!/usr/bin/env python3
"""Renders the SuperCollider references of tests/it/sc_peers.rs with scsynth.

Needs only `scsynth` (no sclang): each SynthDef is written here in the
SCgf version 2 binary format and played in a non-real-time score
(`scsynth -N`). Each reference is a 32-bit float WAV at 48 kHz whose last
channel is the UGen's output and whose other channels are its inputs, as
scsynth computed them, so a test feeds the same samples to morphrt through
`render --input`. The scsynth version is written to VERSION.

    python3 tests/peers/sc/render.py        # from the repository's root
"""

import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SR = 48000

SCALAR, CONTROL, AUDIO = 0, 1, 2

# BinaryOpUGen's special indices.
OP_MUL, OP_ROUND = 2, 19


def pstr(s):
    b = s.encode()
    return struct.pack(">B", len(b)) + b


class Def:
    """A SynthDef under construction: constants and UGens, in order."""

    def __init__(self, name):
        self.name = name
        self.consts = []
        self.ugens = []
        # Seeds the synth's random generator before any noise UGen starts,
        # so every render of the references is the same.
        self.ugen("RandSeed", SCALAR, [1, 1966])

    def const(self, x):
        x = float(np.float32(x))
        if x not in self.consts:
            self.consts.append(x)
        return (-1, self.consts.index(x))

    def inp(self, x):
        return x if isinstance(x, tuple) else self.const(x)

    def ugen(self, cls, rate, inputs, outputs=1, special=0):
        self.ugens.append((cls, rate, [self.inp(i) for i in inputs], outputs, special))
        return (len(self.ugens) - 1, 0)

    def ar(self, cls, *inputs, special=0):
        return self.ugen(cls, AUDIO, inputs, 1, special)

    def binop(self, op, a, b):
        return self.ar("BinaryOpUGen", a, b, special=op)

    def out(self, *channels):
        self.ugen("Out", AUDIO, [0, *channels], outputs=0)

    def bytes(self):
        b = pstr(self.name)
        b += struct.pack(">i", len(self.consts))
        b += b"".join(struct.pack(">f", c) for c in self.consts)
        b += struct.pack(">ii", 0, 0)  # no params, no param names
        b += struct.pack(">i", len(self.ugens))
        for cls, rate, inputs, outputs, special in self.ugens:
            b += pstr(cls) + struct.pack(">biih", rate, len(inputs), outputs, special)
            for src, idx in inputs:
                b += struct.pack(">ii", src, idx)
            b += bytes([rate]) * outputs
        b += struct.pack(">h", 0)  # no variants
        return b"SCgf" + struct.pack(">ih", 2, 1) + b


def osc_msg(addr, *args):
    def pad(b):
        return b + b"\0" * (4 - len(b) % 4)

    tags = ","
    data = b""
    for a in args:
        if isinstance(a, int):
            tags += "i"
            data += struct.pack(">i", a)
        elif isinstance(a, float):
            tags += "f"
            data += struct.pack(">f", a)
        elif isinstance(a, str):
            tags += "s"
            data += pad(a.encode())
        else:
            tags += "b"
            data += struct.pack(">i", len(a)) + a + b"\0" * (-len(a) % 4)
    return pad(addr.encode()) + pad(tags.encode()) + data


def bundle(t, *msgs):
    b = b"#bundle\0" + struct.pack(">Q", int(t * 2**32))
    for m in msgs:
        b += struct.pack(">i", len(m)) + m
    return struct.pack(">i", len(b)) + b


def write_wav(path, x):
    """A plain IEEE-float WAV (format 3), `x` frames × channels."""
    x = np.asarray(x, dtype="<f4")
    frames, ch = x.shape
    data = x.tobytes()
    fmt = struct.pack("<HHIIHH", 3, ch, SR, SR * ch * 4, ch * 4, 32)
    riff = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    riff += b"data" + struct.pack("<I", len(data)) + data
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(riff)) + riff)


def read_wav(path):
    with open(path, "rb") as f:
        d = f.read()
    pos, ch, data = 12, None, None
    while pos < len(d):
        cid, n = d[pos : pos + 4], struct.unpack("<I", d[pos + 4 : pos + 8])[0]
        body = d[pos + 8 : pos + 8 + n]
        if cid == b"fmt ":
            ch = struct.unpack("<H", body[2:4])[0]
        elif cid == b"data":
            data = body
        pos += 8 + n + (n & 1)
    return np.frombuffer(data, dtype="<f4").reshape(-1, ch)


def render(d, channels, frames):
    """Plays SynthDef `d` for `frames` samples; its Out writes `channels`."""
    with tempfile.TemporaryDirectory() as tmp:
        score = os.path.join(tmp, "score.osc")
        wav = os.path.join(tmp, "out.wav")
        end = (frames + 256) / SR
        with open(score, "wb") as f:
            f.write(bundle(0.0, osc_msg("/d_recv", d.bytes()), osc_msg("/s_new", d.name, 1000, 0, 0)))
            f.write(bundle(end, osc_msg("/c_set", 0, 0)))
        cmd = ["scsynth", "-N", score, "_", wav, str(SR), "WAV", "float",
               "-o", str(channels), "-i", "0", "-z", "64", "-D", "0"]
        subprocess.run(cmd, check=True, capture_output=True)
        y = read_wav(wav)
    assert y.shape[0] >= frames, (d.name, y.shape)
    return y[:frames]


# ------------------------------------------------------------- references
# Each returns (SynthDef, channels, frames).

SHORT = 4800  # 0.1 s: the formula comparisons
LONG = 24000  # 0.5 s: the measured ones


def stepped(d, rate, amp):
    """A random staircase: white noise latched `rate` times a second, 0
    until the first step (half a step in), so every UGen starts on 0."""
    noise = d.ar("WhiteNoise")
    return d.binop(OP_MUL, d.ar("Latch", noise, d.ar("Impulse", rate, 0.5)), amp)


def lagud():
    d = Def("lagud")
    x = stepped(d, 60, 0.8)
    d.out(x, d.ar("LagUD", x, 0.005, 0.012))
    return d, 2, SHORT


def slew():
    d = Def("slew")
    x = stepped(d, 60, 0.8)
    d.out(x, d.ar("Slew", x, 150.0, 60.0))
    return d, 2, SHORT


def latch():
    d = Def("latch")
    x = d.ar("SinOsc", 97.0, 0)
    trig = d.ar("SinOsc", 431.0, 0.3)
    d.out(x, trig, d.ar("Latch", x, trig))
    return d, 3, SHORT


def linlin():
    d = Def("linlin")
    x = d.binop(OP_MUL, d.ar("SinOsc", 50.0, 0), 1.5)
    lo, hi, a, b = -1.0, 1.0, 200.0, 800.0
    clipped = d.ar("Clip", x, lo, hi)
    scale = (b - a) / (hi - lo)
    d.out(x, d.ar("MulAdd", clipped, scale, a - lo * scale))
    return d, 2, SHORT


def linexp():
    d = Def("linexp")
    x = d.binop(OP_MUL, d.ar("SinOsc", 50.0, 0), 1.5)
    clipped = d.ar("Clip", x, -1.0, 1.0)
    d.out(x, d.ar("LinExp", clipped, -1.0, 1.0, 110.0, 880.0))
    return d, 2, SHORT


def envgen(name, levels, times, shapes, curves):
    """EnvGen.ar of an Env without release or loop nodes, gate 1."""
    d = Def(name)
    env = [levels[0], len(times), -99, -99]
    for k, t in enumerate(times):
        env += [levels[k + 1], t, shapes[k], curves[k]]
    d.out(d.ar("EnvGen", 1, 1, 0, 1, 0, *env))
    return d, 1, SHORT


# EnvGen counts a segment's samples as its f32 time times the rate,
# truncated: times of whole samples that are exact in binary (multiples of
# 2^-7 s, 375 samples) give both envelopes the same segments; decimal
# times show where they part.
CURVE_LEVELS = [0, 1, 0.3, 0.8, 0]
CURVES = [-4, 3, -2, 5]


def env_curves():
    return envgen("env_curves", CURVE_LEVELS, [0.0078125, 0.015625, 0.0234375, 0.03125], [5] * 4, CURVES)


def env_curves_decimal():
    return envgen("env_curves_decimal", CURVE_LEVELS, [0.01, 0.02, 0.015, 0.03], [5] * 4, CURVES)


def env_exp():
    return envgen("env_exp", [0.01, 1, 0.2, 0.5], [0.015625, 0.03125, 0.0234375], [2, 2, 2], [0, 0, 0])


def feedback(name, cls, delay, g):
    d = Def(name)
    x = d.binop(OP_MUL, d.ar("WhiteNoise"), d.ar("Decay", d.ar("Impulse", 25.0, 0), 0.004))
    decay = delay * np.log(0.001) / np.log(g)
    d.out(x, d.ar(cls, x, 0.02, delay, decay))
    return d, 2, SHORT


def comb_l():
    return feedback("combl", "CombL", 0.00537, 0.7)


def allpass_l():
    return feedback("allpassl", "AllpassL", 0.00313, 0.5)


def fold():
    d = Def("fold")
    x = d.binop(OP_MUL, d.ar("SinOsc", 110.0, 0), 2.5)
    d.out(x, d.ar("Fold", x, -1.0, 1.0))
    return d, 2, SHORT


def clip():
    d = Def("clip")
    x = d.binop(OP_MUL, d.ar("SinOsc", 110.0, 0), 2.5)
    d.out(x, d.ar("Clip", x, -1.0, 1.0))
    return d, 2, SHORT


def crush():
    d = Def("crush")
    x = d.binop(OP_MUL, d.ar("SinOsc", 233.0, 0), 0.9)
    held = d.ar("Latch", x, d.ar("Impulse", 11025.0, 0))
    d.out(x, d.binop(OP_ROUND, held, 0.125))
    return d, 2, SHORT


def pluck():
    d = Def("pluck")
    burst = d.binop(OP_MUL, d.ar("WhiteNoise"), 0.5)
    d.out(d.ar("Pluck", burst, d.ar("Impulse", 0.0, 0), 0.05, 1 / 220, 1.0, 0.3))
    return d, 1, LONG


def pink():
    d = Def("pink")
    d.out(d.ar("PinkNoise"))
    return d, 1, LONG


def brown():
    d = Def("brown")
    d.out(d.ar("BrownNoise"))
    return d, 1, LONG


def dust():
    d = Def("dust")
    d.out(d.ar("Dust", 2000.0))
    return d, 1, LONG


REFERENCES = [lagud, slew, latch, linlin, linexp, env_curves, env_curves_decimal, env_exp, comb_l, allpass_l,
              fold, clip, crush, pluck, pink, brown, dust]


def main():
    version = subprocess.run(["scsynth", "-v"], capture_output=True, text=True).stdout.strip()
    for make in REFERENCES:
        d, channels, frames = make()
        y = render(d, channels, frames)
        write_wav(os.path.join(HERE, f"{d.name}.wav"), y)
        print(f"{d.name}.wav: {frames} frames, {channels} channel(s)")
    with open(os.path.join(HERE, "VERSION"), "w") as f:
        f.write(version + "\n")
    print(version)


if __name__ == "__main__":
    sys.exit(main())
