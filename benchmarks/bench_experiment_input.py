"""Benchmark: how long a Dask worker takes to read an experiment's ``--input`` (issue: grids on a
cluster with the inputs read by the workers).

Run: python benchmarks/bench_experiment_input.py [--periods 4] [--cases 25000]

Writes a synthetic FAERS-like series (``--periods`` quarters of ``--cases`` cases each, the
generator's count, before reports lacking a value are dropped), ingests it into a release store,
and starts a one-worker LocalCluster. The worker then reads the input as a grid's first task does
(``medanon.experiments.inputs.describe``), in each format ``--input`` takes:

* the release store (``medanon ingest`` output: copied to the worker's scratch folder, hashed,
  records read with DuckDB);
* the FAERS folder itself (hashed, then parsed by ``read_faers``).

For comparison it prints what the old delivery cost: the client loading the FAERS folder and the
pickled Dataset that ``client.scatter`` sent (size, pickling and unpickling time). Also the size on
disk of each format and the worker's peak RSS after both loads.
"""

from __future__ import annotations

import argparse
import logging
import pickle
import resource
import tempfile
import time
from pathlib import Path

from dask.distributed import Client, LocalCluster

from medanon.api import Dataset
from medanon.data.synth.faers import write_faers_series
from medanon.experiments import inputs
from medanon.store import ReleaseStore


def _size(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--periods", type=int, default=4)
    parser.add_argument("--cases", type=int, default=25_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_faers_series(tmp / "faers", periods=args.periods, cases=args.cases, seed=args.seed)

        started = time.perf_counter()
        dataset = Dataset.from_faers(tmp / "faers", keep_missing=False)  # as the experiments read it
        client_load = time.perf_counter() - started
        reports = sum(len(dataset.records(p)) for p in dataset.periods)
        started = time.perf_counter()
        with ReleaseStore.create_or_open(tmp / "store.duckdb", dataset.schema) as store:
            store.ingest(dataset)
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        blob = pickle.dumps(dataset, protocol=pickle.HIGHEST_PROTOCOL)
        dumps = time.perf_counter() - started
        started = time.perf_counter()
        pickle.loads(blob)
        loads = time.perf_counter() - started

        print(f"series: {args.periods} quarters x {args.cases} cases (generator count) -> {reports} "
              f"complete reports; FAERS text {_size(tmp / 'faers'):.1f} MB, release store "
              f"{_size(tmp / 'store.duckdb'):.1f} MB (ingest into the store {ingest:.1f} s)")
        print(f"old delivery (client loads, scatters): client read_faers {client_load:.1f} s; "
              f"pickled Dataset {len(blob) / 1e6:.1f} MB, pickle {dumps:.2f} s, unpickle "
              f"{loads:.2f} s on the worker (plus the transfer)")

        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
            # a first small task: the worker's imports are not the input's load time
            client.submit(inputs.cached_inputs, pure=False).result()
            for label, location in (("release store", tmp / "store.duckdb"),
                                    ("FAERS folder", tmp / "faers")):
                ref = inputs.input_ref("faers", {"input": location})
                started = time.perf_counter()
                seen = client.submit(inputs.describe, ref, pure=False).result()
                wall = time.perf_counter() - started
                print(f"worker reads the {label}: {seen['seconds']:.2f} s on the worker "
                      f"({seen['fetch_seconds']:.2f} s copying and hashing, the rest reading and "
                      f"checking), {wall:.2f} s round trip")
                client.run(inputs.clear_cache)
            worker_rss = list(client.run(_peak_rss_mb).values())[0]
        print(f"worker peak RSS after both loads: {worker_rss:.0f} MB; this process "
              f"{_peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
