"""Measurement: does the synthetic FAERS generator draw FAERS's structure? (issue 42)

Run: python benchmarks/bench_synth_structure.py [--profile faers-2004] [--seeds 1,2,3]
[--mgps-periods 8 --mgps-cases 3000] [--surge-periods 32 --surge-cases 800] [--skip-mgps]

For each seed, three measurements, each the issue's done-when:

* **MGPS prior**: ``medanon synth faers --periods 8 --cases 3000``, ``medanon ingest`` (every
  report kept), ``medanon signals --store S --side original --scope dedup,quarter``; counts the
  scopes whose prior has a finite maximum (the sidecar's ``prior.converged`` and no point-mass
  ``limit``). Goal: at least 80% of the 9 scopes.
* **hard quarters**: a ``--surge-periods`` × ``--surge-cases`` series read under the papers'
  filter (``Dataset.from_faers(keep_missing=False)``); per quarter the share of cases holding
  its most frequent term (INDI_PT and PT pooled, 001's SA); counts the quarters at >= 18%.
  Goal (32 × 800): 2 to 8 such quarters; prints the ordinary quarters' median and range.
* **CPU**: ``time.process_time`` of ``write_faers_series`` for the MGPS series.

Figures on a shared machine are noisy. Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from medanon.api import Dataset
from medanon.data.synth.faers import write_faers_series


def top_terms(folder: Path) -> list[tuple[float, str]]:
    """Per quarter, filtered: (share of cases holding the most frequent term, that term)."""
    data = Dataset.from_faers(folder, keep_missing=False)
    out = []
    for period in data.periods:
        frame = data.super_records(period).frame
        counts = Counter(t for ind, rea in zip(frame["indications"], frame["reactions"])
                         for t in set(ind) | set(rea))
        term, count = counts.most_common(1)[0]
        out.append((count / len(frame), term))
    return out


def mgps(folder: Path, work: Path) -> list[dict]:
    """Each dedup and quarter scope's prior, as ``medanon signals`` writes it."""
    store = work / "S.duckdb"
    run = [sys.executable, "-m", "medanon"]
    subprocess.run([*run, "ingest", str(folder), "--store", str(store)], check=True,
                   capture_output=True)
    table = work / "pairs.csv"
    subprocess.run([*run, "signals", "--store", str(store), "--side", "original",
                    "--scope", "dedup,quarter", "-o", str(table)], check=True,
                   capture_output=True)
    scopes = json.loads(Path(str(table) + ".json").read_text())["scopes"]
    return [{"scope": s["scope"], "period": s["period"], "pairs": s["pairs"],
             "finite": bool(s["prior"]["converged"]) and s["prior"].get("limit") is None,
             "message": s["prior"]["message"]} for s in scopes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="faers-2004")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--mgps-periods", type=int, default=8)
    parser.add_argument("--mgps-cases", type=int, default=3000)
    parser.add_argument("--surge-periods", type=int, default=32)
    parser.add_argument("--surge-cases", type=int, default=800)
    parser.add_argument("--skip-mgps", action="store_true")
    args = parser.parse_args()
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            start = time.process_time()
            write_faers_series(work / "m", periods=args.mgps_periods, cases=args.mgps_cases,
                               seed=seed, profile=args.profile)
            cpu = time.process_time() - start
            line = f"seed {seed}: write {args.mgps_periods} x {args.mgps_cases}: {cpu:.2f} s CPU"
            if not args.skip_mgps:
                scopes = mgps(work / "m", work)
                finite = sum(s["finite"] for s in scopes)
                line += f"; MGPS finite maximum in {finite} of {len(scopes)} scopes"
                for s in scopes:
                    if not s["finite"]:
                        line += f"\n    not finite: {s['scope']} {s['period']}: {s['message']}"
            write_faers_series(work / "h", periods=args.surge_periods, cases=args.surge_cases,
                               seed=seed, profile=args.profile)
            tops = top_terms(work / "h")
            hard = [(i, share, term) for i, (share, term) in enumerate(tops) if share >= 0.18]
            ordinary = [share for share, _ in tops if share < 0.18]
            line += (f"\n    {args.surge_periods} x {args.surge_cases}: {len(hard)} quarter(s) "
                     f"with a term >= 18%: "
                     + ", ".join(f"#{i} {share:.1%} {term}" for i, share, term in hard)
                     + (f"; other quarters: median {statistics.median(ordinary):.1%}, "
                        f"{min(ordinary):.1%}-{max(ordinary):.1%}" if ordinary else ""))
            print(line, flush=True)


if __name__ == "__main__":
    main()
