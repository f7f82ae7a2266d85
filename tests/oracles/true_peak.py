"""Oracle for `limiter`'s `true_peak`: the largest magnitude of the signal
4x oversampled by scipy.signal.resample_poly (its own Kaiser-windowed
polyphase FIR, independent of the ITU-R BS.1770-4 interpolator the
limiter uses), printed as a linear value.

usage: python3 true_peak.py IN.f64
IN holds raw little-endian float64 samples (mono).
"""
import sys

import numpy as np
from scipy.signal import resample_poly


def main():
    x = np.fromfile(sys.argv[1], dtype="<f8")
    print(repr(float(np.max(np.abs(resample_poly(x, 4, 1))))))


if __name__ == "__main__":
    main()
