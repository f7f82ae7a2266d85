"""`import morphrt`: renders equal `morphrt render` bit for bit under
strict, bad input raises located exceptions, threads render the same bytes.

Runs against the module built from this folder (`pip install ./python`)
and the `morphrt` binary of the same checkout (`target/debug/morphrt`, or
`$MORPHRT_BIN`)."""

import hashlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import morphrt

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("MORPHRT_BIN", str(ROOT / "target" / "debug" / "morphrt"))

TONE = {
    "version": "1.0",
    "sample_rate": 48000,
    "nodes": [
        {"id": "osc", "op": "saw", "params": {"freq": "110Hz", "amp": 0.3}},
        {"id": "lp", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "900Hz", "q": 0.7}},
    ],
    "edges": [{"from": "osc", "to": "lp"}],
    "outputs": {"main": ["lp", "lp"]},
}


def cli_hash(scene, seconds, profile, *extra):
    """The SHA-256 `morphrt render --hash` prints: of the interleaved
    little-endian samples at the engine's precision."""
    out = subprocess.run(
        [BIN, "render", str(scene), "--profile", profile, "-d", f"{seconds}s",
         "--hash", "-q", "-o", os.devnull, *extra],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def array_hash(a):
    return hashlib.sha256(np.ascontiguousarray(a.T).tobytes()).hexdigest()


@pytest.mark.parametrize("scene,seconds", [("scenes/pluck-delay.json", 2), ("scenes/poly-pad.json", 1.5)])
def test_a_strict_render_equals_morphrt_render_bit_for_bit(scene, seconds):
    a = morphrt.render(ROOT / scene, duration=seconds, profile="strict")
    assert a.dtype == np.float64 and a.shape[1] == int(seconds * 48000)
    assert np.abs(a).max() > 0.01
    assert array_hash(a) == cli_hash(ROOT / scene, seconds, "strict")


def test_repro_renders_float32_equal_to_the_cli_and_within_its_bound_of_strict():
    scene = ROOT / "scenes/pluck-delay.json"
    r = morphrt.render(scene, duration=1, profile="repro")
    assert r.dtype == np.float32
    assert array_hash(r) == cli_hash(scene, 1, "repro")
    s = morphrt.render(scene, duration=1, profile="strict")
    rel = np.sqrt(np.mean((r - s) ** 2) / np.mean(s ** 2))
    assert rel < 1e-3, rel


def test_a_scene_as_a_dict_a_string_and_a_file_render_the_same(tmp_path):
    path = tmp_path / "tone.json"
    path.write_text(json.dumps(TONE))
    a = morphrt.render(TONE, duration="0.25s")
    b = morphrt.render(json.dumps(TONE), duration=0.25)
    c = morphrt.render(str(path), duration="12000samples")
    assert a.shape == (2, 12000)
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert array_hash(a) == cli_hash(path, 0.25, "strict")


def test_params_override_the_scene_as_an_edited_file_would(tmp_path):
    edited = json.loads(json.dumps(TONE))
    edited["nodes"][1]["params"]["cutoff"] = "2kHz"
    a = morphrt.render(TONE, duration=0.1, params={"lp.cutoff": "2kHz"})
    b = morphrt.render(edited, duration=0.1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, morphrt.render(TONE, duration=0.1))


def test_events_are_added_to_the_scene():
    ev = [{"time": "50ms", "node": "osc", "param": "freq", "value": "220Hz"}]
    with_events = dict(TONE, events=ev)
    assert np.array_equal(morphrt.render(TONE, duration=0.1, events=ev),
                          morphrt.render(with_events, duration=0.1))


def test_an_input_array_plays_through_the_scene_as_a_wav_input_does(tmp_path):
    scene = {
        "version": "1.0", "sample_rate": 48000,
        "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}},
                  {"id": "g", "op": "gain", "params": {"gain": 0.5}}],
        "edges": [{"from": "mic", "to": "g"}],
        "outputs": {"main": ["g"]},
    }
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4800) * 0.1).astype(np.float32)
    out = morphrt.render(scene, input=x)
    assert out.shape == (1, 4800)
    assert np.array_equal(out[0], x.astype(np.float64) * 0.5)
    # The same samples as a float WAV through `morphrt render --input`.
    import scipy.io.wavfile
    wav = tmp_path / "in.wav"
    scipy.io.wavfile.write(wav, 48000, x)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scene))
    assert array_hash(out) == cli_hash(path, 0.1, "strict", "--input", str(wav))


def test_a_scene_with_errors_raises_scene_error_with_its_locations():
    bad = json.loads(json.dumps(TONE))
    bad["nodes"][1]["params"]["cutof"] = "1kHz"
    bad["nodes"][0]["op"] = "sawtooth"
    with pytest.raises(morphrt.SceneError) as e:
        morphrt.render(json.dumps(bad, indent=1), duration=0.1)
    errors = [d for d in e.value.diagnostics if d["severity"] == "error"]
    assert any("sawtooth" in d["message"] and d["node"] == "osc" and d["line"] for d in errors), errors
    assert "saw" in str(e.value)
    with pytest.raises(morphrt.SceneError) as e:
        morphrt.render('{"version": "1.0", ', duration=0.1)
    d = e.value.diagnostics[0]
    assert (d["file"], d["line"]) == ("<string>", 1) and d["column"] is not None


@pytest.mark.parametrize("kwargs,exc,words", [
    ({"duration": -1}, ValueError, "seconds"),
    ({"duration": "2 parsecs"}, ValueError, "duration"),
    ({"profile": "loud"}, ValueError, "strict"),
    ({"params": {"nosuch.gain": 1}}, ValueError, "no node `nosuch`"),
    ({"params": {"lp.cutoff": "3ms"}}, morphrt.SceneError, "frequency"),
    ({"input": np.zeros((2, 3, 4), np.float32)}, ValueError, "shape"),
    ({"input": np.zeros(10, np.int16)}, ValueError, "float32 or float64"),
    ({"input": np.array([0.0, np.nan])}, ValueError, "frame 1"),
    ({"input": [0.0, 1.0]}, TypeError, "numpy array"),
    ({"threads": 0}, ValueError, "threads: 0 is not in 1..=1024"),
    ({"threads": 1025}, ValueError, "threads: 1025 is not in 1..=1024"),
])
def test_bad_arguments_raise_exceptions_naming_what_was_expected(kwargs, exc, words):
    args = {"duration": 0.1, **kwargs}
    with pytest.raises(exc) as e:
        morphrt.render(TONE, **args)
    assert words in str(e.value), str(e.value)


def test_a_scene_without_a_duration_asks_for_one():
    with pytest.raises(ValueError, match="duration="):
        morphrt.render(TONE)


def test_a_resource_without_a_resolver_is_a_located_scene_error():
    with pytest.raises(morphrt.SceneError, match="supplies no resources"):
        morphrt.render(ROOT / "scenes/hall-reverb.json", duration=0.1)


def test_check_returns_warnings_and_raises_on_errors():
    warned = dict(TONE, colour="blue")
    ws = morphrt.check(warned)
    assert any("colour" in w["message"] for w in ws), ws
    with pytest.raises(morphrt.SceneError):
        morphrt.check(dict(TONE, outputs={}))


def test_threads_render_in_parallel_the_same_bytes_as_one_after_another():
    scene = ROOT / "scenes/poly-pad.json"
    serial = [array_hash(morphrt.render(scene, duration=0.5, seed=s)) for s in range(4)]
    got = [None] * 4

    def work(i):
        got[i] = array_hash(morphrt.render(scene, duration=0.5, seed=i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == serial
    assert len(set(serial)) > 1, "the seed changes the noise"


def test_other_python_threads_run_while_a_render_is_in_rust(longest_pause):
    # The GIL is released while the audio renders: held, this thread would
    # wait for a step as long as the render.
    ran, paused = longest_pause(
        lambda: morphrt.render(ROOT / "scenes/bench/w1.json", duration=2, profile="strict"))
    assert ran > 0.05, "a render long enough to tell"
    assert paused < ran / 4, (paused, ran)


@pytest.mark.parametrize("scene,seconds,profile", [
    ("scenes/bench/w4.json", 0.5, "live"),
    ("scenes/bench/w4.json", 0.5, "strict"),
    ("scenes/poly-pad.json", 1, "repro"),
])
def test_a_render_on_more_threads_gives_the_bytes_of_one_and_of_the_cli(scene, seconds, profile):
    one = array_hash(morphrt.render(ROOT / scene, duration=seconds, profile=profile))
    for n in (2, 3, 8):
        got = morphrt.render(ROOT / scene, duration=seconds, profile=profile, threads=n)
        assert array_hash(got) == one, f"threads={n}"
    assert cli_hash(ROOT / scene, seconds, profile, "--threads", "2") == one


def new_threads(scene, **kwargs):
    """Renders `scene` and gives each thread the render started: its name
    and its time on a CPU in ns, read from /proc while the render runs by
    a watcher thread, dearest first."""
    before = set(os.listdir("/proc/self/task"))
    cpu, names, stop = {}, {}, threading.Event()

    def watch():
        own = str(threading.get_native_id())
        while not stop.is_set():
            for tid in os.listdir("/proc/self/task"):
                if tid in before or tid == own:
                    continue
                try:
                    with open(f"/proc/self/task/{tid}/schedstat") as f:
                        ns = int(f.read().split()[0])
                    with open(f"/proc/self/task/{tid}/comm") as f:
                        names[tid] = f.read().strip()
                except (OSError, ValueError, IndexError):
                    continue
                cpu[tid] = max(cpu.get(tid, 0), ns)
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out = morphrt.render(scene, **kwargs)
    finally:
        stop.set()
        watcher.join()
    return out, sorted(((names.get(t, "?"), ns) for t, ns in cpu.items()),
                       key=lambda x: -x[1])


needs_proc = pytest.mark.skipif(not Path("/proc/thread-self/schedstat").exists(),
                                reason="reads the threads' CPU time in /proc")


@needs_proc
def test_threads_renders_on_its_workers_and_one_starts_none():
    """`threads=N` renders on the calling thread and N - 1 others: the
    pool's workers, and the thread that renders half of a wide sum ahead
    (below). Each one's time on a CPU is that of a share of the work (an
    idle worker spins for microseconds before it sleeps). At block 512,
    W4's bandpasses are worth spreading (at 64 they are not: waking a
    worker costs more). (A thread something else in the process starts
    meanwhile does no share of the render: only the threads are held to
    one.)"""
    w4 = ROOT / "scenes/bench/w4.json"
    _, started = new_threads(w4, duration=2, profile="live", block_size=512, threads=4)
    assert len(started) >= 3 and started[2][1] > 500_000, \
        f"three threads each ran a share of W4 (ns on a CPU: {started})"
    for kwargs in ({"threads": 1}, {}):
        _, alone = new_threads(w4, duration=2, profile="live", block_size=512, **kwargs)
        assert all(ns < 500_000 for _, ns in alone), f"no thread ran a share: {alone}"


def chains(n, extra=None):
    """`n` noise -> bandpass chains summed by a gain of 0.5."""
    nodes, edges = [], []
    for k in range(n):
        nodes += [{"id": f"src{k}", "op": "noise", "params": {"amp": 0.25}},
                  {"id": f"bp{k}", "op": "biquad",
                   "params": {"mode": "bandpass", "cutoff": f"{200 + 150 * k}Hz", "q": 10}}]
        edges += [{"from": f"src{k}", "to": f"bp{k}"}, {"from": f"bp{k}", "to": "sum"}]
    nodes.append({"id": "sum", "op": "gain", "params": {"gain": 0.5}})
    scene = {"version": "1.0", "seed": 7, "sample_rate": 48000, "nodes": nodes,
             "edges": edges, "outputs": {"main": ["sum"]}}
    scene.update(extra or {})
    return scene


@needs_proc
@pytest.mark.parametrize("profile", ["strict", "repro", "live"])
def test_half_of_a_wide_sum_renders_ahead_on_a_thread_of_its_own_with_the_bytes_of_one(profile):
    """As `morphrt render` into a file does: the first half of the sum's
    inputs, with what feeds them, renders ahead on a thread named
    `morphrt-ahead`, and the rest adds its half onto theirs, in order."""
    scene = chains(16)
    # Four seconds: the part's work under live (a few ms a second) is then
    # well over the 1 ms asked, whenever the watcher last reads its time
    # (it shares two cores with both threads of the render).
    one = morphrt.render(scene, duration=4, profile=profile)
    two, started = new_threads(scene, duration=4, profile=profile, threads=2)
    assert array_hash(two) == array_hash(one)
    ahead = [ns for name, ns in started if name == "morphrt-ahead"]
    assert len(ahead) == 1 and ahead[0] > 1_000_000, f"the part ahead ran: {started}"
    # Events (what the part plays would not be a function of time alone):
    # no part ahead, the same bytes.
    moved = chains(16, {"events": [{"time": "0.5s", "node": "bp3", "param": "cutoff",
                                    "value": "900Hz"}]})
    one = morphrt.render(moved, duration=1, profile=profile)
    two, started = new_threads(moved, duration=1, profile=profile, threads=2)
    assert array_hash(two) == array_hash(one)
    assert not any(name == "morphrt-ahead" for name, _ in started), started


@needs_proc
@pytest.mark.parametrize("profile", ["strict", "repro", "live"])
def test_the_head_of_a_chain_reading_an_input_array_renders_ahead_with_the_bytes_of_one(
        profile, tmp_path):
    """A recording through highpass -> compressor -> reverb: the input and
    the first two render ahead on a thread of their own, the reverb on
    the calling thread; the bytes of one thread and of the command line's
    `--input` render. An input file is read once: it is not cut."""
    scene = {
        "version": "1.0", "sample_rate": 48000,
        "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}},
                  {"id": "hp", "op": "biquad",
                   "params": {"mode": "highpass", "cutoff": "80Hz", "q": 0.707}},
                  {"id": "comp", "op": "compressor",
                   "params": {"threshold": "-20dB", "ratio": 4}},
                  {"id": "verb", "op": "reverb", "params": {"mix": 0.3}}],
        "edges": [{"from": "mic", "to": "hp"}, {"from": "hp", "to": "comp"},
                  {"from": "comp", "to": "verb"}],
        "outputs": {"main": ["verb"]},
    }
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(5 * 48000) * 0.2).astype(np.float32)
    one = array_hash(morphrt.render(scene, input=x, profile=profile))
    two, started = new_threads(scene, input=x, profile=profile, threads=2)
    assert array_hash(two) == one
    # (Seen while it runs: the watcher may miss its last moments.)
    assert any(name == "morphrt-ahead" and ns > 0 for name, ns in started), started
    import scipy.io.wavfile
    wav = tmp_path / "in.wav"
    scipy.io.wavfile.write(wav, 48000, x)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scene))
    assert cli_hash(path, 5, profile, "--input", str(wav), "--threads", "2") == one
    from_file, started = new_threads(scene, input=str(wav), profile=profile, threads=2)
    assert array_hash(from_file) == one
    assert not any(name == "morphrt-ahead" for name, _ in started), started


@pytest.mark.parametrize("profile", ["strict", "repro"])
def test_a_partial_sum_that_overflows_renders_the_whole_scene_again(profile, tmp_path):
    """Two members of 2e38 each: their partial sum ahead overflows f32
    where the whole scene's sum need not; the render keeps nothing of that
    pass and plays the whole scene again: the bytes of one thread, and of
    the command line's render into a file."""
    scene = chains(16)
    scene["nodes"] += [{"id": "d", "op": "dc", "params": {"value": 1e6}}] + [
        {"id": f"g{k}", "op": "gain", "params": {"gain": 1e6}} for k in range(1, 6)]
    scene["edges"] = [e for e in scene["edges"] if e["to"] not in ("bp0", "bp1")] + [
        {"from": a, "to": b} for a, b in zip(["d", "g1", "g2", "g3", "g4"],
                                             ["g1", "g2", "g3", "g4", "g5"])] + [
        {"from": "g5", "to": "bp0"}, {"from": "g5", "to": "bp1"}]
    for bp in ("bp0", "bp1"):
        node = next(n for n in scene["nodes"] if n["id"] == bp)
        node["op"], node["params"] = "gain", {"gain": 200}
    one = array_hash(morphrt.render(scene, duration=0.2, profile=profile))
    # (Kept, the pass ahead would give other bytes: its part stops at the
    # overflow, too soon for a watcher of the threads to see it run.)
    assert array_hash(morphrt.render(scene, duration=0.2, profile=profile, threads=2)) == one
    path = tmp_path / "over.json"
    path.write_text(json.dumps(scene))
    assert cli_hash(path, 0.2, profile, "--threads", "2") == one


@pytest.mark.parametrize("profile", ["repro", "live"])
def test_a_partial_sum_that_overflows_on_an_input_array_plays_the_whole_scene_on_the_array_again(
        profile):
    """The same overflow, its two members fed by an input array: quiet
    for 0.1 s (their partial sum stays finite), then 1.0 (it overflows).
    The whole scene plays again and reads the array from its start once
    more: the bytes of one thread, whose first 0.1 s carry the array (not
    silence)."""
    scene = chains(16)
    scene["nodes"] += [{"id": "mic", "op": "input", "params": {"channel": 0}}] + [
        {"id": f"g{k}", "op": "gain", "params": {"gain": 1e6}} for k in range(1, 7)]
    scene["edges"] = [e for e in scene["edges"] if e["to"] not in ("bp0", "bp1")] + [
        {"from": a, "to": b} for a, b in zip(["mic", "g1", "g2", "g3", "g4", "g5"],
                                             ["g1", "g2", "g3", "g4", "g5", "g6"])] + [
        {"from": "g6", "to": "bp0"}, {"from": "g6", "to": "bp1"}]
    for bp in ("bp0", "bp1"):
        node = next(n for n in scene["nodes"] if n["id"] == bp)
        node["op"], node["params"] = "gain", {"gain": 200}
    quiet = int(0.1 * 48000)
    x = np.ones(48000 // 5, dtype=np.float32)
    x[:quiet] = np.random.default_rng(3).uniform(-0.4, 0.4, quiet).astype(np.float32)
    one = morphrt.render(scene, input=x, profile=profile)
    two = morphrt.render(scene, input=x, profile=profile, threads=2)
    assert array_hash(two) == array_hash(one)
    # What the array gives the first 0.1 s: a pass reading silence there
    # would give other samples.
    silent = morphrt.render(scene, input=np.zeros_like(x), profile=profile)
    assert not np.array_equal(one[..., :quiet], silent[..., :quiet])


def test_an_isa_cap_plays_the_cli_bits_under_the_same_cap_and_an_unknown_one_fails_the_import():
    env = dict(os.environ, MORPHRT_ISA="base")
    code = ("import hashlib, sys, numpy as np, morphrt\n"
            "a = morphrt.render(sys.argv[1], duration=1, profile='repro')\n"
            "print(hashlib.sha256(np.ascontiguousarray(a.T).tobytes()).hexdigest())\n")
    scene = str(ROOT / "scenes/dub-chain.json")
    py = subprocess.run([os.sys.executable, "-c", code, scene], env=env,
                        capture_output=True, text=True, check=True).stdout.strip()
    cli = subprocess.run([BIN, "render", scene, "--profile", "repro", "-d", "1s", "--hash", "-q",
                          "-o", os.devnull], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert py == cli
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" in flags and " fma" in flags:
        # Not a cap both ignore: without it the reverb fuses.
        free = subprocess.run([os.sys.executable, "-c", code, scene],
                              env={k: v for k, v in env.items() if k != "MORPHRT_ISA"},
                              capture_output=True, text=True, check=True).stdout.strip()
        assert free != py
    bad = subprocess.run([os.sys.executable, "-c", "import morphrt"],
                         env=dict(os.environ, MORPHRT_ISA="sse4"), capture_output=True, text=True)
    assert bad.returncode != 0
    assert "MORPHRT_ISA" in bad.stderr and "base, avx2 or avx512" in bad.stderr
