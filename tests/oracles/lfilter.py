"""Oracle for `biquad`: the RBJ Audio EQ Cookbook lowpass, computed here
from the cookbook's formulas and run by scipy.signal.lfilter in float64.

usage: python3 lfilter.py IN.f64 OUT.f64 SAMPLE_RATE CUTOFF_HZ Q
IN and OUT are raw little-endian float64 samples (mono).
"""
import math
import sys

import numpy as np
from scipy.signal import lfilter


def rbj_lowpass(fs, f0, q):
    w0 = 2.0 * math.pi * f0 / fs
    alpha = math.sin(w0) / (2.0 * q)
    cos_w0 = math.cos(w0)
    b = [(1.0 - cos_w0) / 2.0, 1.0 - cos_w0, (1.0 - cos_w0) / 2.0]
    a = [1.0 + alpha, -2.0 * cos_w0, 1.0 - alpha]
    return np.array(b) / a[0], np.array(a) / a[0]


def main():
    src, dst, fs, f0, q = sys.argv[1:6]
    x = np.fromfile(src, dtype="<f8")
    b, a = rbj_lowpass(float(fs), float(f0), float(q))
    lfilter(b, a, x).astype("<f8").tofile(dst)


if __name__ == "__main__":
    main()
