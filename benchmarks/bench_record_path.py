"""Benchmark: the release's record path, each function alone on a real release's inputs.

Two steps, so that two versions of the code can be timed on the very same inputs:

* ``capture``: runs ``medanon release`` in this process (any release arguments after ``--``)
  and pickles what ``super_records_of_rows`` (the super records) and ``to_published_rows``
  were given into ``--dir`` (the store is the one named in the arguments: give a copy, a release writes).
* ``time``: loads those inputs and times each function ``--repeat`` times (CPU seconds,
  ``time.process_time``), and ``ReleaseStore.records`` on ``--store`` (opened read-only);
  prints the best and every figure, with a digest of each result (cells and dtypes) to
  compare versions.

    cp /tmp/s450/ingested.duckdb /tmp/x.duckdb
    PYTHONPATH=src python benchmarks/bench_record_path.py capture --dir /tmp/q1 -- \\
        release --store /tmp/x.duckdb --method ppms++ --k 5 --theta frequency \\
        --on-infeasible suppress-terms --seed 1 --allow-seeded --publish-despite-violations 2020Q1
    PYTHONPATH=src python benchmarks/bench_record_path.py time --dir /tmp/q1 \\
        --store /tmp/s450/ingested.duckdb --period 2020Q1 --repeat 3

Pickled inputs keep the objects the cells share, but not where they lie in memory: a gather
in a shuffled order costs more inside a release than here. Time the whole release too.
Not a test: figures on a shared machine are noisy (+-15%); alternate the versions.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import pickle
import sys
import time
from pathlib import Path


def _digest(frame) -> str:
    text = frame.to_csv(index=False, lineterminator="\n")
    dtypes = repr({c: str(frame[c].dtype) for c in frame.columns})
    return hashlib.sha256((text + dtypes).encode("utf-8")).hexdigest()[:16]


def _capture(folder: Path, argv: list[str]) -> None:
    from medanon.cli.app import main
    from medanon.pipeline import publish

    folder.mkdir(parents=True, exist_ok=True)
    combine, rows = publish.super_records_of_rows, publish.to_published_rows

    def keep_combine(records, schema, hierarchies):
        with open(folder / "combine.pkl", "wb") as handle:
            pickle.dump((records, schema, hierarchies), handle, protocol=5)
        return combine(records, schema, hierarchies)

    def keep_rows(table, schema):
        with open(folder / "rows.pkl", "wb") as handle:
            pickle.dump((table, schema), handle, protocol=5)
        return rows(table, schema)

    publish.super_records_of_rows = keep_combine
    publish.to_published_rows = keep_rows
    sys.argv = ["medanon", *argv]
    main()


def _time(folder: Path, store: str | None, period: str, repeat: int) -> None:
    from medanon.data.records import combine_super_records
    from medanon.published.format import to_published_rows

    def best_of(name: str, call, *args) -> None:
        figures = []
        for _ in range(repeat):
            gc.collect()
            started = time.process_time()
            result = call(*args)
            figures.append(time.process_time() - started)
        frame = result.frame if hasattr(result, "frame") else result
        print(f"{name:8s} best {min(figures):6.3f} s CPU  ({' '.join(f'{f:.3f}' for f in figures)})"
              f"  digest {_digest(frame)}")

    with open(folder / "combine.pkl", "rb") as handle:
        records, schema, hierarchies = pickle.load(handle)
    best_of("combine", combine_super_records, records, schema, hierarchies)
    del records
    with open(folder / "rows.pkl", "rb") as handle:
        table, schema = pickle.load(handle)
    best_of("rows", to_published_rows, table, schema)
    del table
    if store:
        from medanon.store.duckdb_store import ReleaseStore

        with ReleaseStore.open(store, read_only=True) as opened:
            best_of("records", opened.records, period)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["capture", "time"])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--store", default=None, help="time: a store to read (read-only)")
    parser.add_argument("--period", default="2020Q1")
    parser.add_argument("--repeat", type=int, default=3)
    args, rest = parser.parse_known_args()
    if args.step == "capture":
        _capture(args.dir, [a for a in rest if a != "--"])
    else:
        _time(args.dir, args.store, args.period, args.repeat)


if __name__ == "__main__":
    main()
