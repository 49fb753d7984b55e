"""Benchmark: lowest common ancestor over integer codes on a large random tree.

Run: python benchmarks/bench_hierarchies.py
"""

from __future__ import annotations

import time

import numpy as np

from medanon.hierarchies import Taxonomy


def main() -> None:
    rng = np.random.default_rng(1)
    parents: dict[str, str | None] = {"n0": None}
    for i in range(1, 20_000):
        parents[f"n{i}"] = f"n{int(rng.integers(max(0, i - 30), i))}"
    started = time.perf_counter()
    tree = Taxonomy(parents, name="big")
    build = time.perf_counter() - started
    codes = rng.integers(0, len(tree), 10_000).astype(np.int32)
    repeats = 200
    started = time.perf_counter()
    for _ in range(repeats):
        tree.lca_codes(codes)
    per_call = (time.perf_counter() - started) / repeats
    print(f"tree of {len(tree)} nodes built in {build * 1000:.1f} ms; "
          f"lca of 10,000 codes: {per_call * 1e6:.1f} us per call")


if __name__ == "__main__":
    main()
