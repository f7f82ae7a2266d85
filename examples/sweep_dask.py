"""A sweep of renders on Dask's distributed scheduler: every combination of
a filter cutoff and an echo feedback of scenes/pluck-delay.json, rendered
under strict by `morphrt.render` on the cluster's workers, each result
written as `NNN.npy` (the float64 samples, (channels, frames)) beside
`NNN.json` (its params). Strict renders are bit-exact on every machine, so
the files are byte for byte those of a serial run in one process
(python/tests/test_sweep_dask.py checks it).

    python3 examples/sweep_dask.py OUT_DIR                 # a LocalCluster of 2 workers
    python3 examples/sweep_dask.py OUT_DIR tcp://host:8786  # an existing cluster
    python3 examples/sweep_dask.py OUT_DIR --serial         # one process, no Dask

On a cluster, OUT_DIR must be a folder every worker writes to (a shared
file system); each worker needs `pip install ./python` of the same
checkout. The scene travels as text, so workers need no copy of it.
"""

import itertools
import json
import sys
from pathlib import Path

import numpy as np

import morphrt

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "pluck-delay.json"


def sweep():
    """The parameter sets: 6 cutoffs × 5 feedbacks, as `render(params=…)`
    and `morphrt render --set` take them."""
    cutoffs = ["300Hz", "600Hz", "1.2kHz", "2.4kHz", "4.8kHz", "9.6kHz"]
    feedbacks = [0.0, 0.2, 0.4, 0.6, 0.8]
    return [{"tone_lp.cutoff": c, "echo.feedback": f} for c, f in itertools.product(cutoffs, feedbacks)]


def render_one(scene_text, index, params, out_dir, seconds):
    """Renders one parameter set and writes `NNN.npy` and `NNN.json` into
    `out_dir`; returns the stem."""
    audio = morphrt.render(scene_text, params=params, duration=seconds, profile="strict")
    stem = Path(out_dir) / f"{index:03d}"
    np.save(f"{stem}.npy", audio)
    Path(f"{stem}.json").write_text(json.dumps(params, sort_keys=True) + "\n")
    return stem.name


def run_dask(client, out_dir, seconds=2.0, sets=None):
    """The sweep mapped over `client`'s workers; returns the stems written."""
    text = SCENE.read_text()
    sets = sweep() if sets is None else sets
    n = len(sets)
    futures = client.map(render_one, [text] * n, range(n), sets, [str(out_dir)] * n, [seconds] * n,
                         pure=False)
    return client.gather(futures)


def run_serial(out_dir, seconds=2.0, sets=None):
    """The same sweep one render after another in this process."""
    text = SCENE.read_text()
    sets = sweep() if sets is None else sets
    return [render_one(text, i, p, str(out_dir), seconds) for i, p in enumerate(sets)]


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    if argv[1:] == ["--serial"]:
        stems = run_serial(out)
    else:
        from dask.distributed import Client, LocalCluster
        if argv[1:]:
            client = Client(argv[1])
        else:
            client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
        with client:
            stems = run_dask(client, out)
    print(f"wrote {len(stems)} renders and their params to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
