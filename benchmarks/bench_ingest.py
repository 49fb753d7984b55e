"""Benchmark: ingest synthetic FAERS quarters into a fresh release store, as ``medanon ingest``
does (goal: a 460k-report quarter in under 60 s and 2 GB peak RSS on 2 cores).

Run: python benchmarks/bench_ingest.py [--cases 460000] [--periods 2] [--source FOLDER]

Generates ``--periods`` quarters of ``--cases`` cases each (or reads the FAERS folder
``--source``), then reads, checks and stores them one quarter at a time in one transaction
(``Dataset.stream_faers`` into ``ReleaseStore.ingest``). Prints, per quarter, the wall time from
the start of its reading to the end of its writing and the peak RSS of the process meanwhile
(sampled every 10 ms from /proc; Linux), then the totals (peak RSS: the kernel's ru_maxrss).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from medanon.api import Dataset
from medanon.data.loaders.faers import FaersQuarter
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore


class _PeakRss:
    """The largest resident set size seen since the last :meth:`reset`, in MB."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._page_mb = resource.getpagesize() / 2**20
        threading.Thread(target=self._watch, daemon=True).start()

    def _now(self) -> float:
        try:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * self._page_mb
        except OSError:  # no /proc: the process's peak so far
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def _watch(self) -> None:
        while True:
            self.peak = max(self.peak, self._now())
            time.sleep(0.01)

    def reset(self) -> None:
        self.peak = self._now()


def _timed(quarters, rss: _PeakRss, rows: list) -> Iterator[FaersQuarter]:
    """The quarters, each timed from the start of its reading to the end of its writing (the
    store asks for the next quarter only once it has written this one)."""
    started = time.perf_counter()
    rss.reset()
    for quarter in quarters:
        yield quarter
        rows.append((quarter.label, len(quarter.records), time.perf_counter() - started, rss.peak))
        del quarter
        started = time.perf_counter()
        rss.reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=460_000)
    parser.add_argument("--periods", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", type=Path, help="an existing FAERS folder (no generation)")
    parser.add_argument("--drop-missing", action="store_true", help="as the CLI's flag")
    args = parser.parse_args()
    rss = _PeakRss()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = args.source
        if source is None:
            source = tmp / "series"
            started = time.perf_counter()
            # in a process of its own: the peak RSS printed below is the ingest's alone
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                summary = pool.submit(write_faers_series, source, periods=args.periods,
                                      cases=args.cases, seed=args.seed).result()
            print(f"generated {args.periods} quarter(s) of {args.cases} cases "
                  f"({', '.join(str(summary.reports[p]) for p in summary.periods)} DEMO rows) "
                  f"in {time.perf_counter() - started:.1f} s")
        size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
        print(f"source {source}: {size / 1e6:.0f} MB of FAERS text")
        rows: list = []
        started = time.perf_counter()
        schema = Schema.default()
        quarters = Dataset.stream_faers(source, schema=schema, keep_missing=not args.drop_missing)
        with ReleaseStore.create_or_open(tmp / "bench.duckdb", schema) as store:
            store.ingest(_timed(quarters, rss, rows), quarters.deleted_case_ids)
        total = time.perf_counter() - started
    for label, reports, seconds, peak in rows:
        print(f"{label}: {reports} reports stored in {seconds:.1f} s (read + check + write); "
              f"peak RSS {peak:.0f} MB")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ingest total (with the commit): {total:.1f} s; peak RSS {peak_mb:.0f} MB "
          f"(goal per quarter: < 60 s, < 2048 MB)")


if __name__ == "__main__":
    main()
