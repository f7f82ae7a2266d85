"""examples/sweep_dask.py: a sweep of strict renders mapped over a Dask
LocalCluster of 2 worker processes writes files byte-identical to the same
sweep rendered one after another in this process."""

import importlib.util
import json
from pathlib import Path

import numpy as np
from dask.distributed import Client, LocalCluster

ROOT = Path(__file__).resolve().parents[2]


def example():
    spec = importlib.util.spec_from_file_location("sweep_dask", ROOT / "examples" / "sweep_dask.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_dask_sweep_writes_the_bytes_of_a_serial_run(tmp_path):
    sweep = example()
    sets = sweep.sweep()
    assert len(sets) == 30
    serial, dask = tmp_path / "serial", tmp_path / "dask"
    serial.mkdir()
    dask.mkdir()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        stems = sweep.run_dask(client, dask, seconds=0.25)
        workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert stems == sweep.run_serial(serial, seconds=0.25)
    files = sorted(p.name for p in serial.iterdir())
    assert files == sorted(p.name for p in dask.iterdir()) and len(files) == 60
    for name in files:
        assert (serial / name).read_bytes() == (dask / name).read_bytes(), name
    # Each result sits beside its params, and the params change the sound.
    first = np.load(dask / "000.npy")
    assert json.loads((dask / "000.json").read_text()) == sets[0]
    assert first.shape == (1, 12000) and first.dtype == np.float64
    assert not np.array_equal(first, np.load(dask / "029.npy"))
