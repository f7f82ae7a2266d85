"""Writes and reads audio files with libsndfile (the `soundfile` package),
an encoder and decoder independent of morphrt's (Symphonia).

    soundfile_io.py write OUT FORMAT SUBTYPE RATE CHANNELS FRAMES [noise]
        A test signal (a sine per channel, a chirp, a decaying burst; or
        seeded white noise, which a lossy encoder spreads over many
        pages), written as FORMAT/SUBTYPE (soundfile's names: FLAC PCM_24,
        MP3 MPEG_LAYER_III, OGG VORBIS, AIFF PCM_16, WAV ULAW, ...).
    soundfile_io.py read-int IN OUT
        IN's samples as libsndfile decodes them to 32-bit integers
        (left-justified: a 16-bit sample v is v << 16), interleaved,
        little-endian int32.
    soundfile_io.py read-float IN OUT
        IN's samples as 64-bit floats, interleaved, little-endian.
"""
import sys

import numpy as np
import soundfile as sf


def signal(rate, channels, frames):
    t = np.arange(frames) / rate
    cols = []
    for c in range(channels):
        tone = 0.45 * np.sin(2 * np.pi * (330.0 + 220.0 * c) * t)
        chirp = 0.3 * np.sin(2 * np.pi * (50.0 + 4000.0 * t) * t)
        burst = 0.2 * np.exp(-t * 40.0) * np.sin(2 * np.pi * 2500.0 * t)
        cols.append(tone + chirp + burst)
    return np.stack(cols, axis=1)


def main():
    mode = sys.argv[1]
    if mode == "write":
        out, fmt, subtype = sys.argv[2], sys.argv[3], sys.argv[4]
        rate, channels, frames = (int(v) for v in sys.argv[5:8])
        if sys.argv[8:] == ["noise"]:
            data = 0.3 * np.random.default_rng(7).standard_normal((frames, channels))
        else:
            data = signal(rate, channels, frames)
        sf.write(out, data, rate, format=fmt, subtype=subtype)
    elif mode == "read-int":
        data, _ = sf.read(sys.argv[2], dtype="int32", always_2d=True)
        data.astype("<i4").tofile(sys.argv[3])
    elif mode == "read-float":
        data, _ = sf.read(sys.argv[2], dtype="float64", always_2d=True)
        data.astype("<f8").tofile(sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
