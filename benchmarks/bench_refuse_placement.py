"""Benchmark: is a refusal under ``--on-infeasible refuse`` a coin toss? (issue 41, item 8)

``medanon release --method ppms++ --k 5 --theta 0.2`` (default ``--on-infeasible refuse``) on
``medanon synth faers --profile faers-2004 --periods 8 --cases 1500 --seed 11`` refused 2004Q2 in
1 of 6 unseeded runs on main (a case the greedy left unplaced), and published every case at the
requested θ in the others. Since then the refuse path searches further before it refuses
(``medanon.anonymize.placement``). This script measures the verdict over many unseeded runs:

* synth, ingest  once (the store above; ``--cases``, ``--periods``, ``--data-seed`` change it);
* release        ``--runs`` times, each on a fresh copy of the ingested store, unseeded (the
                 release's randomness from the OS, as a steward runs it), every step the real
                 command (``python -m medanon ...``) in its own child process.

It prints, per run, the exit status, the refused period and message (if any), and how many of
the periods needed the further search (the store's operator-only ``placement_search``: how many
groupings ran, how many cases the repair placed). ``--without-search`` runs the same releases
in this process with the search switched off, which is what main did, for the contrast.

Not a test: on a shared machine a run takes seconds to a minute, and an unseeded verdict is a
random variable.

    python benchmarks/bench_refuse_placement.py --runs 20
    python benchmarks/bench_refuse_placement.py --runs 20 --without-search
    python benchmarks/bench_refuse_placement.py --cases 300 --periods 3 --data-seed 0 --runs 40
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

RELEASE = ("--method", "ppms++", "--k", "5", "--theta", "0.2")


def _medanon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "medanon", "-q", *args], capture_output=True,
                          text=True, env={**os.environ})


def _searches(store: Path) -> list[dict]:
    """The operator-only record of each period that needed the further search."""
    from medanon.store import ReleaseStore

    with ReleaseStore.open(store, read_only=True) as db:
        return [{"period": p, **db.operator_record(p)["private_details"]["placement_search"]}
                for p in db.published_periods()
                if "placement_search" in db.operator_record(p)["private_details"]]


def _run_cli(base: Path, work: Path, i: int) -> dict:
    store = work / f"run{i}.duckdb"
    shutil.copy(base, store)
    started = time.perf_counter()
    done = _medanon("release", "-s", str(store), *RELEASE, "--json")
    out = {"run": i, "exit": done.returncode, "seconds": round(time.perf_counter() - started, 1)}
    if done.returncode == 0:
        out["searches"] = _searches(store)
    else:
        out["error"] = done.stderr.strip().splitlines()[-1][:400] if done.stderr else ""
    store.unlink()
    return out


def _run_without_search(base: Path, work: Path, i: int) -> dict:
    """The same release in this process with the further search switched off (main)."""
    from medanon.anonymize import common
    from medanon.anonymize.placement import PlacementSearch
    from medanon.cli.commands import make_method
    from medanon.errors import InfeasibleError
    from medanon.pipeline.publish import publish_periods
    from medanon.random import randomness
    from medanon.store import ReleaseStore

    store = work / f"run{i}.duckdb"
    shutil.copy(base, store)
    class NoSearch(PlacementSearch):
        def describe(self) -> str:
            return ""   # main's refusal named no search

    saved = common.search_placement
    common.search_placement = lambda data, first, generator: (data, first, NoSearch(1, 0, False))
    started = time.perf_counter()
    try:
        with ReleaseStore.open(store) as db:
            publish_periods(db, make_method("ppms++", k=5, theta="0.2"), [], randomness())
        out = {"run": i, "exit": 0}
    except InfeasibleError as exc:
        out = {"run": i, "exit": 1, "error": f"InfeasibleError: {str(exc)[:400]}"}
    finally:
        common.search_placement = saved
    out["seconds"] = round(time.perf_counter() - started, 1)
    store.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", type=int, default=1500)
    parser.add_argument("--periods", type=int, default=8)
    parser.add_argument("--data-seed", type=int, default=11)
    parser.add_argument("--without-search", action="store_true",
                        help="switch the refuse path's further search off (main's behaviour)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for step in (("synth", "faers", str(work / "in"), "--profile", "faers-2004",
                      "--periods", str(args.periods), "--cases", str(args.cases),
                      "--seed", str(args.data_seed)),
                     ("ingest", str(work / "in"), "-s", str(work / "base.duckdb"))):
            done = _medanon(*step)
            if done.returncode:
                sys.exit(f"{step[0]} failed: {done.stderr.strip()}")
        run = _run_without_search if args.without_search else _run_cli
        runs = []
        for i in range(args.runs):
            runs.append(run(work / "base.duckdb", work, i))
            if not args.json:
                r = runs[-1]
                note = r.get("error") or ", ".join(
                    f"{s['period']}: {s['groupings']} grouping(s), {s['cases_placed_by_repair']} "
                    f"placed by the repair" for s in r.get("searches", [])) or "no search needed"
                print(f"run {i + 1:2d}: exit {r['exit']} in {r['seconds']:5.1f} s; {note}",
                      flush=True)
    published = sum(r["exit"] == 0 for r in runs)
    searched = Counter(len(r.get("searches", ())) for r in runs if r["exit"] == 0)
    summary = {"store": f"synth faers --profile faers-2004 --periods {args.periods} --cases "
                        f"{args.cases} --seed {args.data_seed}",
               "release": " ".join(RELEASE) + " (--on-infeasible refuse, unseeded)",
               "search": "off (main)" if args.without_search else "on",
               "runs": len(runs), "published": published, "refused": len(runs) - published,
               "published_runs_by_periods_searched": dict(sorted(searched.items())),
               "load_average": os.getloadavg()[0], "runs_detail": runs}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['store']}; release {summary['release']}; further search "
              f"{summary['search']}: {published} of {len(runs)} runs published, "
              f"{len(runs) - published} refused; published runs by number of periods that "
              f"needed the search: {summary['published_runs_by_periods_searched']} "
              f"(load average {summary['load_average']:.1f})")


if __name__ == "__main__":
    main()
