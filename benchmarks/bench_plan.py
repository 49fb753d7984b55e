"""Benchmark: ``medanon plan`` on a synthetic store (issue 33's done-when: 3 quarters × 800
cases, at least 6 candidates, ≤ 3 min CPU, nothing written to the store).

Run: python benchmarks/bench_plan.py [--periods 3] [--cases 800] [--seed 1]

Prints the CPU time of the whole plan (time.process_time), the peak RSS, each candidate's own
CPU seconds and whether the store file changed. Figures on a shared machine are noisy (the load
average is printed). Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import tempfile
import time
from pathlib import Path

from medanon.cli.app import main as cli
from medanon.data.synth.faers import write_faers_series
from medanon.experiments.plan import plan_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--cases", type=int, default=800)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        write_faers_series(Path(folder) / "in", periods=args.periods, cases=args.cases,
                           seed=args.seed)
        store = Path(folder) / "s.duckdb"
        if cli(["ingest", str(Path(folder) / "in"), "--store", str(store)]) != 0:
            raise SystemExit("ingest failed")
        before = hashlib.sha256(store.read_bytes()).hexdigest()
        started = time.process_time()
        result = plan_store(store, protect={"Death": 0.3}, seed=args.seed)
        cpu = time.process_time() - started
        after = hashlib.sha256(store.read_bytes()).hexdigest()
    print(f"plan of {args.periods} x {args.cases}: {len(result.rows)} candidates in {cpu:.1f} s "
          f"CPU; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; store "
          f"{'unchanged' if before == after else 'CHANGED'}")
    for _, row in result.rows.iterrows():
        print(f"  {row['candidate']:>2} {row['status']:<9} {row['cpu_s']:>6.2f} s  {row['policy']}")
    print(result.recommendation())


if __name__ == "__main__":
    main()
