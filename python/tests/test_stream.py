"""`morphrt.Processor` and `morphrt.Scene`: streaming in any block sizes is
the offline render delayed by the latency (bit for bit under strict, and
the `morphrt render` WAV's samples), params and notes land where they are
set, snapshots continue bit for bit, the profile switches mid-stream, bad
input raises located exceptions, and processors in threads are
independent."""

import json
import os
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

import morphrt

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("MORPHRT_BIN", str(ROOT / "target" / "debug" / "morphrt"))

# A recording through highpass → compressor → reverb, stereo out.
FX = {
    "version": "1.0",
    "sample_rate": 48000,
    "nodes": [
        {"id": "mic", "op": "input", "params": {"channel": 0}},
        {"id": "hp", "op": "biquad", "params": {"mode": "highpass", "cutoff": "80Hz", "q": 0.7}},
        {"id": "comp", "op": "compressor", "params": {"threshold": -20, "ratio": 4}},
        {"id": "verb", "op": "reverb", "params": {"mix": 0.3}},
    ],
    "edges": [{"from": "mic", "to": "hp"}, {"from": "hp", "to": "comp"}, {"from": "comp", "to": "verb"}],
    "outputs": {"main": ["verb:out", "verb:out_r"]},
}

TONE = {
    "version": "1.0",
    "sample_rate": 48000,
    "nodes": [
        {"id": "osc", "op": "saw", "params": {"freq": "110Hz", "amp": 0.3}},
        {"id": "lp", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "900Hz", "q": 0.7}},
        {"id": "echo", "op": "delay", "params": {"time": "7ms", "feedback": 0.5, "mix": 0.5}},
    ],
    "edges": [{"from": "osc", "to": "lp"}, {"from": "lp", "to": "echo"}],
    "outputs": {"main": ["echo", "lp"]},
}


def noise(frames, seed=1):
    """Quiet noise, exactly representable in float32 (what the processor takes)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(frames) * 0.1).astype(np.float32)


def stream(p, x, sizes, seed=0):
    """Runs `x` (channels, frames) through `p` in calls of random sizes."""
    rng = np.random.default_rng(seed)
    out, at = [], 0
    while at < x.shape[1]:
        n = int(rng.choice(sizes))
        out.append(p.process(x[:, at:at + n]))
        at += n
    return np.concatenate(out, axis=1)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_streaming_in_random_block_sizes_is_the_offline_render_delayed_by_the_latency():
    x = noise(24000)[None, :]
    p = morphrt.Processor(FX, profile="strict")
    got = stream(p, x, [1, 7, 64, 100, 333, 1024, 5000])
    b = p.latency
    assert b > 0 and got.shape == (2, 24000) and got.dtype == np.float32
    assert not got[:, :b].any(), "the first block of output is the latency's silence"
    offline = morphrt.render(FX, input=x, duration="24000samples")
    assert same_bits(got[:, b:], offline[:, :-b].astype(np.float32))
    assert np.abs(got).max() > 0.01
    # Another slicing, the same bits.
    q = morphrt.Processor(FX, profile="strict")
    assert same_bits(stream(q, x, [3, 480], seed=9), got)


def test_processor_output_is_what_morphrt_render_writes(tmp_path):
    import scipy.io.wavfile
    x = noise(12000, seed=4)
    wav_in, wav_out, scene = tmp_path / "in.wav", tmp_path / "out.wav", tmp_path / "fx.json"
    scipy.io.wavfile.write(wav_in, 48000, x)
    scene.write_text(json.dumps(FX))
    subprocess.run([BIN, "render", str(scene), "--profile", "strict", "--input", str(wav_in),
                    "-d", "12000samples", "-o", str(wav_out), "-q"], check=True)
    _, cli = scipy.io.wavfile.read(wav_out)
    assert cli.dtype == np.float32
    p = morphrt.Processor(scene, profile="strict")
    got = stream(p, x[None, :], [256, 999])
    b = p.latency
    assert same_bits(got[:, b:], np.ascontiguousarray(cli.T[:, :-b]))


def test_a_generator_scene_takes_a_number_of_frames():
    p = morphrt.Processor(TONE, block_size=64)
    assert p.input_channels == 0 and p.latency == 64 and p.sample_rate == 48000
    got = np.concatenate([p.process(n) for n in [10, 500, 64, 2000]], axis=1)
    offline = morphrt.render(TONE, duration="2574samples", block_size=64)
    assert same_bits(got[:, 64:], offline[:, :-64])
    assert p.frames == 2574


def test_set_param_lands_at_the_first_frame_of_the_next_call_as_a_scene_event_does():
    p = morphrt.Processor(TONE)
    a = p.process(3000)
    p.set_param("lp.cutoff", "2.5kHz")
    p.set_param("osc.freq", 220)
    b = p.process(3000)
    got = np.concatenate([a, b], axis=1)
    events = [{"time": "3000samples", "node": "lp", "param": "cutoff", "value": "2.5kHz"},
              {"time": "3000samples", "node": "osc", "param": "freq", "value": "220Hz"}]
    offline = morphrt.render(TONE, duration="6000samples", events=events)
    lat = p.latency
    assert same_bits(got[:, lat:], offline[:, :-lat])
    plain = morphrt.render(TONE, duration="6000samples")
    assert not np.array_equal(offline, plain), "the events change the sound"
    assert p.refused_events == 0


def test_a_snapshot_resumes_bit_for_bit_anywhere_in_a_block():
    x = noise(30000, seed=7)[None, :]
    for cut in [0, 200, 4096, 4100, 12345]:
        p = morphrt.Processor(FX, profile="strict", block_size=128)
        first = stream(p, x[:, :cut], [1, 50, 300], seed=cut) if cut else np.zeros((2, 0), np.float32)
        snap = p.snapshot()
        assert isinstance(snap, bytes)
        rest = stream(p, x[:, cut:], [64, 77, 900], seed=1)
        q = morphrt.Processor.resume(FX, snap)
        assert q.latency == 128 and q.frames == 0
        resumed = stream(q, x[:, cut:], [5, 1000], seed=2)
        assert same_bits(resumed, rest), cut
        # Not a coincidence: the state matters (a fresh processor differs).
        fresh = stream(morphrt.Processor(FX, profile="strict", block_size=128), x[:, cut:], [500])
        assert cut == 0 or not np.array_equal(fresh, rest)
        assert first.shape[1] == cut


def test_a_live_processor_drawing_noise_without_a_seed_resumes_and_resets_bit_for_bit():
    # Live picks the seed; the processor keeps it for its snapshots and a
    # reset (a snapshot once named a seed picked again from the clock).
    scene = {"version": "1.0", "nodes": [{"id": "n", "op": "noise", "params": {"amp": 0.1}}],
             "outputs": {"main": ["n"]}}
    p = morphrt.Processor(scene, profile="live")
    first = p.process(4800)
    snap = p.snapshot()
    then = p.process(4800)
    resumed = morphrt.Processor.resume(scene, snap)
    assert same_bits(resumed.process(4800), then)
    p.reset()
    assert same_bits(p.process(4800), first)


def test_a_snapshot_carries_params_set_before_it_and_refuses_one_in_the_block_under_way():
    p = morphrt.Processor(TONE, block_size=64)
    p.process(100)
    p.set_param("lp.cutoff", "3kHz")
    p.process(1)
    with pytest.raises(ValueError, match="process 27 more frames"):
        p.snapshot()
    p.process(27)
    snap = p.snapshot()
    rest = p.process(5000)
    q = morphrt.Processor.resume(TONE, snap)
    assert same_bits(q.process(5000), rest)


def test_a_profile_switch_mid_stream_hands_over_with_state_carried():
    p = morphrt.Processor(TONE, profile="strict", block_size=128)
    before = p.process(4800)
    p.switch_profile("repro")
    assert p.switching and p.profile == "strict"
    after = [p.process(480) for _ in range(10)]
    assert not p.switching and p.profile == "repro"
    got = np.concatenate([before] + after, axis=1)
    strict = morphrt.render(TONE, duration=0.2, profile="strict", block_size=128)
    lat = p.latency
    # Strict bits up to the switch, then repro within its bound of strict:
    # the oscillator's phase and the filters' state went on.
    assert same_bits(got[:, lat:4800], strict[:, :4800 - lat])
    late = got[:, 7200:].astype(np.float64)
    ref = strict[:, 7200 - lat:9600 - lat]
    rel = np.sqrt(np.mean((late - ref) ** 2) / np.mean(ref ** 2))
    assert rel < 1e-3, rel
    # A fresh repro stream would start from silence: the state was carried.
    assert np.abs(got[:, 4800:5000]).max() > 0.01


def test_set_param_profile_switches_too_and_reset_starts_again():
    p = morphrt.Processor(TONE, profile="strict")
    first = p.process(2000)
    p.set_param("profile", "live")
    for _ in range(20):
        p.process(256)
    assert p.profile == "live"
    p.reset()
    assert p.profile == "strict" and p.frames == 0
    assert same_bits(p.process(2000), first)


def test_notes_land_where_the_scene_events_of_the_same_notes_do():
    pad = json.loads((ROOT / "scenes/poly-pad.json").read_text())
    del pad["events"]
    p = morphrt.Processor(pad, profile="strict")
    a = p.process(4800)
    p.note_on(60, 0.5)
    p.note_on(64, 0.25)
    b = p.process(9600)
    p.note_off(60)
    c = p.process(9600)
    got = np.concatenate([a, b, c], axis=1)
    notes = [{"time": "4800samples", "module": "pad", "note": 60, "velocity": 0.5, "duration": "9600samples"},
             {"time": "4800samples", "module": "pad", "note": 64, "velocity": 0.25, "duration": "1s"}]
    offline = morphrt.render(pad, duration="24000samples", events=notes)
    lat = p.latency
    assert same_bits(got[:, lat:], offline[:, :-lat])
    assert not a.any() and np.abs(b).max() > 0.05
    assert p.refused_events == 0


def test_scene_lists_its_params_and_checks_with_locations():
    s = morphrt.Scene(TONE)
    ids = {d["id"]: d for d in s.params()}
    assert ids["profile"]["kind"] == "choice" and ids["profile"]["choices"] == ["strict", "repro", "live"]
    cut = ids["lp.cutoff"]
    assert cut["unit"] == "Hz" and cut["default"] == 900.0 and cut["display"] == "900 Hz"
    assert cut["min"] < 900 < cut["max"]
    assert s.check() == []
    assert np.array_equal(morphrt.render(s, duration=0.05), morphrt.render(TONE, duration=0.05))
    bad = json.loads(json.dumps(TONE))
    bad["nodes"][1]["params"]["cutoff"] = "3ms"
    with pytest.raises(morphrt.SceneError) as e:
        morphrt.Scene(json.dumps(bad, indent=1)).check()
    d = [d for d in e.value.diagnostics if d["severity"] == "error"][0]
    assert d["node"] == "lp" and d["line"] and d["column"] and "cutoff" in d["path"], d
    with pytest.raises(morphrt.SceneError):
        morphrt.Processor(json.dumps(bad))


@pytest.mark.parametrize("block,exc,words", [
    (np.zeros((2, 3, 4), np.float32), ValueError, "shape"),
    (np.zeros((1, 10), np.int16), ValueError, "float32 or float64"),
    (np.zeros((3, 10), np.float32), ValueError, "1 input channel"),
    (np.array([0.0, np.inf]), ValueError, "frame 1"),
    (np.array(0.5, np.float32), ValueError, "shape"),
    ([0.0, 1.0], TypeError, "numpy array"),
    (100, ValueError, "not a number of frames"),
])
def test_bad_blocks_raise_exceptions_naming_what_was_expected(block, exc, words):
    p = morphrt.Processor(FX)
    with pytest.raises(exc) as e:
        p.process(block)
    assert words in str(e.value), str(e.value)
    assert p.frames == 0, "a refused call changes nothing"


@pytest.mark.parametrize("call,exc,words", [
    (lambda p: p.set_param("lp.cutof", 1000), ValueError, "no param `lp.cutof`"),
    (lambda p: p.set_param("lp.cutoff", "3ms"), ValueError, "frequency"),
    (lambda p: p.set_param("lp.cutoff", 1e9), ValueError, "out of range"),
    (lambda p: p.set_param("lp.cutoff", None), TypeError, "number or text"),
    (lambda p: p.switch_profile("loud"), ValueError, "strict"),
    (lambda p: p.note_on(200), ValueError, "MIDI note"),
    (lambda p: p.note_on(60, 2.0), ValueError, "velocity"),
    (lambda p: morphrt.Processor.resume(TONE, b"not a snapshot"), ValueError, "not the bytes"),
    (lambda p: morphrt.Processor.resume(TONE, p.snapshot()[:-9]), ValueError, "cut short"),
    (lambda p: morphrt.Processor.resume(FX, p.snapshot()), ValueError, "channel"),
])
def test_bad_calls_raise_exceptions_naming_what_was_expected(call, exc, words):
    p = morphrt.Processor(TONE)
    with pytest.raises(exc) as e:
        call(p)
    assert words in str(e.value), str(e.value)


def test_processors_in_threads_give_the_bytes_of_one_after_another():
    x = noise(20000, seed=3)[None, :]

    def run(i):
        p = morphrt.Processor(FX, profile="strict")
        p.set_param("hp.cutoff", 80 + 40 * i)
        return stream(p, x, [128, 700], seed=i).tobytes()

    serial = [run(i) for i in range(4)]
    got = [None] * 4

    def work(i):
        got[i] = run(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == serial
    assert len(set(serial)) == 4


def test_other_python_threads_run_while_a_processor_processes(longest_pause):
    # The GIL is released in `process`: held, this thread would wait for a
    # step as long as the call.
    p = morphrt.Processor(ROOT / "scenes/bench/w1.json", profile="strict")
    ran, paused = longest_pause(lambda: p.process(96000))
    assert ran > 0.05, "a call long enough to tell"
    assert paused < ran / 4, (paused, ran)


def test_resources_come_from_a_dict_as_the_command_line_reads_them_from_a_folder(tmp_path):
    import scipy.io.wavfile
    scene = ROOT / "scenes/hall-reverb.json"
    rate, ir = scipy.io.wavfile.read(ROOT / "resources/hall.wav")
    scale = {np.dtype(np.int16): 2.0 ** 15, np.dtype(np.int32): 2.0 ** 31}.get(ir.dtype, 1.0)
    ir = (ir.astype(np.float64) / scale).T
    by_array = morphrt.render(scene, duration=0.5, profile="strict", resources={"hall.wav": (ir, rate)})
    by_path = morphrt.render(scene, duration=0.5, profile="strict",
                             resources={"hall.wav": ROOT / "resources/hall.wav"})
    assert np.array_equal(by_array, by_path)
    out = subprocess.run([BIN, "render", str(scene), "--profile", "strict", "-d", "0.5s", "--hash",
                          "-q", "-o", os.devnull, "--resources", str(ROOT / "resources")],
                         capture_output=True, text=True, check=True).stdout.strip()
    import hashlib
    assert hashlib.sha256(np.ascontiguousarray(by_path.T).tobytes()).hexdigest() == out
    with pytest.raises(morphrt.SceneError, match="has no `hall.wav`"):
        morphrt.render(scene, duration=0.1, resources={"room.wav": ir})
    p = morphrt.Processor(scene, profile="strict", resources={"hall.wav": (ir, rate)})
    got = np.concatenate([p.process(1000) for _ in range(24)], axis=1)
    assert same_bits(got[:, p.latency:], by_array[:, :24000 - p.latency])


def test_a_float64_stream_is_the_offline_render_of_the_same_float64_input_bit_for_bit():
    # Not representable in float32: rounding the input would change the bits.
    x = np.random.default_rng(5).standard_normal((1, 24000)) * 0.1
    assert not np.array_equal(x, x.astype(np.float32).astype(np.float64))
    p = morphrt.Processor(FX, profile="strict")
    got = stream(p, x, [1, 64, 333, 5000])
    assert got.dtype == np.float64 and got.shape == (2, 24000)
    offline = morphrt.render(FX, input=x, duration="24000samples")
    b = p.latency
    assert same_bits(got[:, b:], offline[:, :-b])
    assert np.abs(got).max() > 0.01


def test_a_float32_block_gives_float32_the_float64_output_rounded():
    x = noise(6000, seed=11)[None, :]
    p, q = morphrt.Processor(FX, profile="strict"), morphrt.Processor(FX, profile="strict")
    a = stream(p, x, [100, 700])
    b = stream(q, x.astype(np.float64), [100, 700])
    assert a.dtype == np.float32 and b.dtype == np.float64
    assert same_bits(a, b.astype(np.float32))
    assert not np.array_equal(a.astype(np.float64), b), "float64 keeps the engine's bits"


def test_a_number_of_frames_returns_float64_under_strict_float32_otherwise_or_the_dtype_asked():
    for profile, dtype in [("strict", np.float64), ("repro", np.float32), ("live", np.float32)]:
        p = morphrt.Processor(TONE, profile=profile, block_size=64)
        assert p.process(100).dtype == dtype, profile
        assert p.process(100, dtype=np.float32).dtype == np.float32
        assert p.process(100, dtype="float64").dtype == np.float64
    p = morphrt.Processor(TONE, profile="repro", block_size=64)
    q = morphrt.Processor(TONE, profile="repro", block_size=64)
    # The repro engine's samples are float32: float64 output holds them exactly.
    assert same_bits(p.process(1000, dtype=np.float64).astype(np.float32), q.process(1000))


def test_blocks_that_are_views_and_mixed_dtypes_stream_as_one():
    x = np.random.default_rng(12).standard_normal((1, 8000)) * 0.1
    wide = np.zeros((1, 16000))
    wide[:, ::2] = x
    p = morphrt.Processor(FX, profile="strict")
    got = np.concatenate([p.process(wide[:, :6000:2]), p.process(x[0, 3000:]),
                          p.process(np.asfortranarray(x[:, :0]))], axis=1)
    offline = morphrt.render(FX, input=x, duration="8000samples")
    assert same_bits(got[:, p.latency:], offline[:, :-p.latency])


def test_a_float64_stream_resumes_from_a_snapshot_bit_for_bit():
    x = np.random.default_rng(13).standard_normal((1, 20000)) * 0.1
    p = morphrt.Processor(FX, profile="strict", block_size=128)
    stream(p, x[:, :4100], [1, 50, 300])
    snap = p.snapshot()
    rest = stream(p, x[:, 4100:], [64, 900], seed=1)
    q = morphrt.Processor.resume(FX, snap)
    resumed = stream(q, x[:, 4100:], [5, 1000], seed=2)
    assert resumed.dtype == np.float64 and same_bits(resumed, rest)


def test_a_param_set_just_after_a_resume_lands_where_the_snapshot_block_ends():
    b = 128
    p = morphrt.Processor(TONE, block_size=b)
    p.process(1000)  # 1000 = 7 blocks + 104 frames
    snap = p.snapshot()
    q = morphrt.Processor.resume(TONE, snap)
    q.set_param("lp.cutoff", "4kHz")
    resumed = q.process(6000)
    first = p.process(b - 1000 % b)
    p.set_param("lp.cutoff", "4kHz")
    rest = np.concatenate([first, p.process(6000 - first.shape[1])], axis=1)
    assert same_bits(resumed, rest)


def test_a_snapshot_waits_for_a_switch_and_its_crossfade_then_resumes_under_the_new_profile():
    p = morphrt.Processor(TONE, profile="strict", block_size=64)
    p.process(640)
    p.switch_profile("repro")
    with pytest.raises(ValueError, match="switch is under way"):
        p.snapshot()
    while p.switching:
        p.process(64)
    with pytest.raises(ValueError, match="crossfade"):
        p.snapshot()
    p.process(48000 // 10)
    snap = p.snapshot()
    rest = p.process(5000)
    q = morphrt.Processor.resume(TONE, snap)
    assert q.profile == "repro"
    assert same_bits(q.process(5000), rest)


def test_set_param_sets_a_choice_and_a_control_as_scene_events_and_osc_would():
    p = morphrt.Processor(TONE, block_size=64)
    a = p.process(3000)
    p.set_param("lp.mode", "highpass")
    got = np.concatenate([a, p.process(3000)], axis=1)
    ev = [{"time": "3000samples", "node": "lp", "param": "mode", "value": "highpass"}]
    offline = morphrt.render(TONE, duration="6000samples", block_size=64, events=ev)
    assert same_bits(got[:, 64:], offline[:, :-64])
    assert p.refused_events == 0
    # A control moves its target through its curve: position 1 of
    # /cutoff is the top of its range, as the cutoff itself set there.
    ctl = dict(TONE, controls=[{"osc": "/cutoff", "node": "lp", "param": "cutoff",
                                "min": "100Hz", "max": "4kHz", "curve": "exp"}])
    ids = [d["id"] for d in morphrt.Scene(ctl).params()]
    assert ids.index("/cutoff") < ids.index("lp.cutoff")
    q, r = morphrt.Processor(ctl, block_size=64), morphrt.Processor(ctl, block_size=64)
    q.process(1000), r.process(1000)
    q.set_param("/cutoff", 1.0)
    r.set_param("lp.cutoff", "4kHz")
    assert same_bits(q.process(4000), r.process(4000))
    assert q.refused_events == 0


def test_one_snapshot_format_a_processor_s_resumes_under_morphrt_render_and_render_s_in_a_processor(tmp_path):
    import scipy.io.wavfile
    scene, snap_file, out = tmp_path / "tone.json", tmp_path / "p.snapshot.json", tmp_path / "out.wav"
    scene.write_text(json.dumps(TONE))
    p = morphrt.Processor(str(scene), profile="strict", block_size=128)
    p.process(1234)
    p.process(3766)
    snap = p.snapshot()
    doc = json.loads(snap)
    assert doc["format"] == "morphrt-snapshot" and doc["clock"] == 4992
    snap_file.write_bytes(snap)
    rest = p.process(6000)
    subprocess.run([BIN, "render", str(scene), "--resume", str(snap_file), "-d", "5000samples",
                    "-o", str(out), "-q"], check=True)
    _, cli = scipy.io.wavfile.read(out)
    # The processor's frame 5000 + j is engine sample 5000 + j - latency;
    # the continuation's sample k is engine sample 4992 + k. The file holds
    # the strict samples rounded to float32.
    assert p.latency == 128
    assert rest.dtype == np.float64
    assert same_bits(rest[:, 120:5120].astype(np.float32), np.ascontiguousarray(cli.T))
    assert np.abs(cli).max() > 0.01

    # The other way: a snapshot `morphrt render` writes, in a processor.
    full, cut = tmp_path / "full.wav", tmp_path / "cut.json"
    subprocess.run([BIN, "render", str(scene), "--snapshot-at", "4992samples", "--snapshot-out",
                    str(cut), "-d", "12000samples", "-o", str(full), "-q"], check=True)
    _, whole = scipy.io.wavfile.read(full)
    q = morphrt.Processor.resume(str(scene), cut.read_bytes())
    got = q.process(6000)
    assert not got[:, :128].any(), "the latency's silence first"
    assert same_bits(got[:, 128:].astype(np.float32),
                     np.ascontiguousarray(whole.T[:, 4992:4992 + 6000 - 128]))
