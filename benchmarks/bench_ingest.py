"""Benchmark: ingest one synthetic 200k-case FAERS quarter (goal: under 30 s on 2 cores).

Run: python benchmarks/bench_ingest.py [--cases 200000]
Prints the generation time, the reading time (parse + repair + join + conversions), the time to
write the quarter into a fresh release store, and peak memory of the process.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from medanon.data.loaders.faers import read_faers
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        summary = write_faers_series(tmp / "series", periods=1, cases=args.cases, seed=args.seed)
        generated = time.perf_counter() - started
        size = sum(p.stat().st_size for p in (tmp / "series").rglob("*") if p.is_file())

        started = time.perf_counter()
        ingest = read_faers(tmp / "series")
        read = time.perf_counter() - started

        started = time.perf_counter()
        with ReleaseStore.create_or_open(tmp / "bench.duckdb", Schema.default()) as store:
            store.ingest(ingest)
        stored = time.perf_counter() - started

    quarter = ingest.quarters[0]
    period = summary.periods[0]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"synthetic quarter {period}: {summary.cases[period]} cases, {summary.reports[period]} DEMO rows, "
          f"{size / 1e6:.1f} MB of FAERS text (generated in {generated:.1f} s)")
    print(f"read_faers: {read:.1f} s -> {quarter.report.reports} complete reports, "
          f"{quarter.report.cases} cases ({quarter.report.dropped_reports} dropped for missing values)")
    print(f"store ingest: {stored:.1f} s; ingestion total (read + store): {read + stored:.1f} s "
          f"(goal < 30 s); peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
