"""Benchmark: exact per-case ledger totals and the ledger summary on a large ledger.

A ledger row is one case x release x mechanism. 8 quarters x 20k cases x 3 mechanisms is about
500k rows; this times :func:`case_totals` and :func:`summarize_ledger` on such a ledger.

    python benchmarks/bench_ledger.py [--rows 500000] [--cases 60000]
"""

from __future__ import annotations

import argparse
import time

from fractions import Fraction

import numpy as np
import pandas as pd

from medanon.accounting import Budget, case_totals, summarize_ledger


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--cases", type=int, default=60_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = np.array(["1/3", "0.1", "0.25", "1"], dtype=object)
    pick = rng.integers(0, len(values), args.rows)
    ledger = pd.DataFrame({
        "period": rng.choice([f"{y}Q{q}" for y in range(2010, 2012) for q in range(1, 5)], args.rows),
        "case_id": rng.integers(0, args.cases, args.rows).astype(str), "mechanism": "laplace",
        "epsilon": np.array([float(Fraction(v)) for v in values])[pick], "delta": 0.0,
        "epsilon_exact": values[pick]})
    t0 = time.perf_counter()
    totals = case_totals(ledger)
    t1 = time.perf_counter()
    summary = summarize_ledger(ledger, case_budget=Budget.of(5))
    t2 = time.perf_counter()
    print(f"{args.rows} ledger rows, {len(totals)} cases: case_totals {t1 - t0:.2f} s, "
          f"summarize_ledger {t2 - t1:.2f} s; max epsilon {summary.max_epsilon}")


if __name__ == "__main__":
    main()
