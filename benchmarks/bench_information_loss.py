"""Benchmark: IL* / NIL (paper 000) on a large release of mixed cells.

Generalized ages, weight intervals and noisy (DP) weights, sex published as ``*``, groups of 10:
times :func:`information_loss_star` at realistic sizes (it must stay vectorized: a per-record
Python loop takes minutes at 100,000 records).

    python benchmarks/bench_information_loss.py [--records 100000 300000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from medanon.hierarchies import mesh_age_tree, sex_tree
from medanon.metrics.information_loss import information_loss_star

QIDS = [("age", "categorical"), ("weight", "numeric"), ("sex", "categorical")]


def mixed_release(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(original records, published rows) of ``n`` cases in groups of 10."""
    rng = np.random.default_rng(seed)
    tree = mesh_age_tree()
    ids = np.arange(n).astype(str)
    ages = rng.choice(tree.values, n)
    weights = rng.uniform(30, 120, n).round(1)
    original = pd.DataFrame({"case_id": ids, "age": ages, "sex": rng.choice(["F", "M"], n),
                             "weight": weights})
    low = np.floor(weights / 10) * 10
    cells = np.where(rng.random(n) < 0.5, [f"[{a:g}-{a + 10:g}]" for a in low],
                     (weights + rng.laplace(0, 5, n)).round(2).astype(str))
    rows = pd.DataFrame({"case_id": ids, "group": (np.arange(n) // 10).astype(str),
                         "age": [tree.parent(a) for a in ages], "sex": "*", "weight": cells})
    return original, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100_000])
    args = parser.parse_args()
    taxonomies = {"age": mesh_age_tree(), "sex": sex_tree()}
    for n in args.records:
        original, rows = mixed_release(n)
        start = time.perf_counter()
        result = information_loss_star(original, rows, QIDS, taxonomies)
        seconds = time.perf_counter() - start
        print(f"{n:>9,} records, {len(result.per_group):,} groups: information_loss_star "
              f"{seconds:.2f} s (NIL {result.nil:.4f})")


if __name__ == "__main__":
    main()
