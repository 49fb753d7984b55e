"""Benchmark: ``medanon plan`` on a synthetic store (issue 33's done-when: 3 quarters × 800
cases, at least 6 candidates, ≤ 3 min CPU, nothing written to the store).

Run: python benchmarks/bench_plan.py [--periods 3] [--cases 800] [--seed 1]
     [--scheduler local|tcp://HOST:8786] [--workers N] [--compare]

Prints the wall time and the CPU time of this process (time.process_time) for the whole plan,
the sum of the candidates' own CPU seconds (with --scheduler, spent in the worker processes,
which this process's CPU time and peak RSS do not include), each candidate's CPU seconds and
whether the store file changed. ``--compare`` runs the plan in this process too and says whether
the two give the same rows (all columns but cpu_s) and the same recommendation. Figures on a
shared machine are noisy (the load average is printed). Not a test.
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
from medanon.experiments.plan import PlanResult, plan_store


def timed(store: Path, seed: int, scheduler: str | None, workers: int | None
          ) -> tuple[PlanResult, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    # raise-theta: the grid measured in docs/experiments.md (the default candidates took it
    # before issue 44 gave them release's default, refuse)
    result = plan_store(store, protect={"Death": 0.3}, seed=seed, scheduler=scheduler,
                        workers=workers, on_infeasible="raise-theta")
    return result, time.perf_counter() - wall, time.process_time() - cpu


def report(label: str, result: PlanResult, wall: float, cpu: float) -> None:
    print(f"{label} ({result.ran_on}): {len(result.rows)} candidates in {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU here, {result.rows['cpu_s'].sum():.1f} s CPU in the candidates")
    for _, row in result.rows.iterrows():
        print(f"  {row['candidate']:>2} {row['status']:<9} {row['cpu_s']:>6.2f} s  "
              f"{row['policy']}" + (f"  θ raised: {row['theta_raised_to']}"
                                    if row["theta_raised_to"] else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--periods", type=int, default=3)
    parser.add_argument("--cases", type=int, default=800)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scheduler", default=None,
                        help="run the candidates on Dask: 'local' or a scheduler's address")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers of the LocalCluster (implies --scheduler local)")
    parser.add_argument("--compare", action="store_true",
                        help="also run in this process and compare the rows")
    args = parser.parse_args()
    on_dask = args.scheduler is not None or args.workers is not None
    with tempfile.TemporaryDirectory() as folder:
        write_faers_series(Path(folder) / "in", periods=args.periods, cases=args.cases,
                           seed=args.seed)
        store = Path(folder) / "s.duckdb"
        if cli(["ingest", str(Path(folder) / "in"), "--store", str(store)]) != 0:
            raise SystemExit("ingest failed")
        before = hashlib.sha256(store.read_bytes()).hexdigest()
        alone = timed(store, args.seed, None, None) if args.compare or not on_dask else None
        dask = timed(store, args.seed, args.scheduler, args.workers) if on_dask else None
        after = hashlib.sha256(store.read_bytes()).hexdigest()
    print(f"plan of {args.periods} x {args.cases}; peak RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; store "
          f"{'unchanged' if before == after else 'CHANGED'}")
    for label, run in (("in one process", alone), ("on Dask", dask)):
        if run is not None:
            report(label, *run)
    if alone is not None and dask is not None:
        same = alone[0].rows.drop(columns="cpu_s").equals(dask[0].rows.drop(columns="cpu_s"))
        print(f"rows but cpu_s {'equal' if same else 'DIFFER'}; recommendation "
              f"{'equal' if alone[0].recommended == dask[0].recommended else 'DIFFERS'}")
    print((dask or alone)[0].recommendation())


if __name__ == "__main__":
    main()
