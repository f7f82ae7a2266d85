"""Oracle for `convolution`: the direct convolution of the input with the
impulse response by numpy.convolve in float64, cut to the input's length.

usage: python3 convolve.py IN.f64 IR.f64 OUT.f64
All three are raw little-endian float64 samples (mono).
"""
import sys

import numpy as np


def main():
    src, ir, dst = sys.argv[1:4]
    x = np.fromfile(src, dtype="<f8")
    h = np.fromfile(ir, dtype="<f8")
    np.convolve(x, h)[: len(x)].astype("<f8").tofile(dst)


if __name__ == "__main__":
    main()
