"""`morphrt.render(midi=...)` and `morphrt.render(input=PATH)`: a MIDI file
(path or bytes) and an audio file (WAV, FLAC, at another rate) reach the
scene as they do through `morphrt render --midi` and `--input`, bit for
bit under strict."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import morphrt

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("MORPHRT_BIN", str(ROOT / "target" / "debug" / "morphrt"))
KEYS = ROOT / "scenes/midi/keys.json"


def cli_hash(scene, seconds, *extra):
    """The SHA-256 `morphrt render --hash` prints under strict."""
    out = subprocess.run(
        [BIN, "render", str(scene), "--profile", "strict", "-d", f"{seconds}s",
         "--hash", "-q", "-o", os.devnull, *extra],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def array_hash(a):
    return hashlib.sha256(np.ascontiguousarray(a.T).tobytes()).hexdigest()


def vlq(n):
    """A MIDI variable-length quantity."""
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.insert(0, (n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out)


def smf(events, ppq=96):
    """A format 0 standard MIDI file of (tick, message bytes), 120 bpm."""
    track, last = b"", 0
    for tick, msg in sorted(events, key=lambda e: e[0]):
        track += vlq(tick - last) + bytes(msg)
        last = tick
    track += vlq(0) + b"\xff\x2f\x00"
    return (b"MThd" + (6).to_bytes(4, "big") + (0).to_bytes(2, "big") + (1).to_bytes(2, "big")
            + ppq.to_bytes(2, "big") + b"MTrk" + len(track).to_bytes(4, "big") + track)


# At 120 bpm and 96 ticks a quarter, a tick is 1/192 s: 250 samples at 48 kHz.
FIRST_NOTE_TICK = 96
PERFORMANCE = smf(
    [(FIRST_NOTE_TICK, [0x90, 60, 100]), (FIRST_NOTE_TICK + 48, [0x90, 64, 70]),
     (240, [0x80, 60, 0]), (288, [0x80, 64, 0])]
    + [(FIRST_NOTE_TICK + 8 * i, [0xB0, 74, 10 + 9 * i]) for i in range(12)])


def test_a_midi_file_plays_the_scene_as_morphrt_render_midi_does(tmp_path):
    mid = tmp_path / "keys.mid"
    mid.write_bytes(PERFORMANCE)
    a = morphrt.render(KEYS, midi=mid, duration=2, profile="strict")
    assert a.dtype == np.float64 and a.shape == (1, 96000)
    assert array_hash(a) == cli_hash(KEYS, 2, "--midi", str(mid))
    # The first note starts at its tick's sample, where its envelope is
    # still 0: silence up to it, sound from the next sample on.
    first = np.flatnonzero(np.abs(a).max(axis=0))[0]
    assert first == FIRST_NOTE_TICK * 250 + 1, first
    assert np.abs(a).max() > 0.01
    # The same file as bytes, and as a str path.
    assert np.array_equal(morphrt.render(KEYS, midi=PERFORMANCE, duration=2), a)
    assert np.array_equal(morphrt.render(str(KEYS), midi=str(mid), duration=2), a)
    # The CC 74 sweep moves the filter: without it the notes sound otherwise.
    plain = smf([e for e in [(FIRST_NOTE_TICK, [0x90, 60, 100]), (FIRST_NOTE_TICK + 48, [0x90, 64, 70]),
                             (240, [0x80, 60, 0]), (288, [0x80, 64, 0])]])
    assert not np.array_equal(morphrt.render(KEYS, midi=plain, duration=2), a)


def test_a_render_with_midi_and_no_duration_runs_to_the_files_last_event():
    a = morphrt.render(KEYS, midi=PERFORMANCE)
    assert a.shape == (1, 288 * 250)


def test_midi_controls_that_set_params_land_as_on_the_command_line(tmp_path):
    scene = ROOT / "scenes/played-synth.json"
    mid = tmp_path / "p.mid"
    mid.write_bytes(PERFORMANCE)
    a = morphrt.render(scene, midi=mid, duration=1.5, profile="strict")
    assert array_hash(a) == cli_hash(scene, 1.5, "--midi", str(mid))


@pytest.mark.parametrize("midi,exc,words", [
    (b"RIFF....", ValueError, "not a standard MIDI file"),
    (PERFORMANCE[:30], ValueError, "midi: the bytes"),
    ("/no/such/file.mid", FileNotFoundError, "no file `/no/such/file.mid`"),
    (12, TypeError, "path of a MIDI file or its bytes"),
])
def test_a_bad_midi_argument_raises_an_exception_saying_what_is_wrong(midi, exc, words):
    with pytest.raises(exc) as e:
        morphrt.render(KEYS, midi=midi, duration=0.1)
    assert words in str(e.value), str(e.value)


def test_midi_for_a_scene_no_midi_moves_is_refused():
    tone = {"version": "1.0", "sample_rate": 48000,
            "nodes": [{"id": "osc", "op": "sine", "params": {"freq": "440Hz"}}],
            "outputs": {"main": ["osc"]}}
    with pytest.raises(ValueError, match="maps no MIDI"):
        morphrt.render(tone, midi=PERFORMANCE, duration=0.1)


FX = {
    "version": "1.0",
    "sample_rate": 48000,
    "nodes": [
        {"id": "mic", "op": "input", "params": {"channel": 0}},
        {"id": "hp", "op": "biquad", "params": {"mode": "highpass", "cutoff": "80Hz", "q": 0.7}},
        {"id": "verb", "op": "reverb", "params": {"mix": 0.3}},
    ],
    "edges": [{"from": "mic", "to": "hp"}, {"from": "hp", "to": "verb"}],
    "outputs": {"main": ["verb:out", "verb:out_r"]},
}


@pytest.mark.parametrize("name,subtype", [("in.wav", "FLOAT"), ("in.flac", "PCM_16"), ("in.wav", "PCM_24")])
@pytest.mark.parametrize("rate", [48000, 44100])
def test_an_input_file_renders_as_morphrt_render_input_does(tmp_path, name, subtype, rate):
    sf = pytest.importorskip("soundfile")
    x = np.random.default_rng(6).standard_normal((rate // 4, 2)) * 0.2
    path = tmp_path / name
    sf.write(path, x, rate, subtype=subtype)
    scene = tmp_path / "fx.json"
    scene.write_text(json.dumps(FX))
    a = morphrt.render(FX, input=path, duration=0.25, profile="strict")
    assert a.dtype == np.float64 and a.shape == (2, 12000)
    assert np.abs(a).max() > 0.01
    assert array_hash(a) == cli_hash(scene, 0.25, "--input", str(path))
    if rate == 48000 and subtype == "FLOAT":
        # Nothing converted: the file's samples are what an array of them plays.
        read, _ = sf.read(path, dtype="float64", always_2d=True)
        assert np.array_equal(morphrt.render(FX, input=read.T, duration=0.25), a)


def test_a_scene_without_a_rate_renders_at_its_input_files_rate(tmp_path):
    sf = pytest.importorskip("soundfile")
    x = np.random.default_rng(8).standard_normal(22050) * 0.2
    path = tmp_path / "in.flac"
    sf.write(path, x, 44100, subtype="PCM_24")
    scene = dict(FX)
    del scene["sample_rate"]
    a = morphrt.render(scene, input=path)
    assert a.shape == (2, 22050), "the file's length at its own rate"
    file = tmp_path / "fx.json"
    file.write_text(json.dumps(scene))
    assert array_hash(a) == cli_hash(file, 0.5, "--input", str(path))


def test_a_bad_input_file_raises_an_exception_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file"):
        morphrt.render(FX, input=tmp_path / "missing.wav", duration=0.1)
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio at all" * 10)
    with pytest.raises(ValueError) as e:
        morphrt.render(FX, input=junk, duration=0.1)
    assert "junk.wav" in str(e.value) and str(e.value).startswith("input: "), str(e.value)
