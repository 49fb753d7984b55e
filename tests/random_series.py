"""Small random published series with their original records, for tests that hold an indexed
or vectorized attack to its straightforward reference.

The cells mix the edge cases the indexes must get right: missing original values, empty and
'*' cells, intervals on a coarse grid (so that they touch at their endpoints), near misses a
hair outside the true value, per-record numbers (as a perturbed release publishes), follow-ups
that change a value, withheld cases (in the original records, not in the release), and
original numeric values given as a closed IntervalArray.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from medanon.attacks import BackgroundKnowledge, KnowledgeRule
from medanon.hierarchies import sex_tree
from medanon.hierarchies.builtin import mesh_age_tree
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries

SEX = QidInfo("sex", "categorical", sex_tree())
AGE = QidInfo("age", "categorical", mesh_age_tree())
WEIGHT = QidInfo("weight", "numeric")
HEIGHT = QidInfo("height", "numeric")
SCHEMAS = {"faers": (AGE, SEX, WEIGHT), "two-numeric": (SEX, WEIGHT, HEIGHT),
           "categorical": (AGE, SEX)}
PERIODS = ("2020Q1", "2020Q2", "2020Q3", "2020Q4")
TERMS = ("a", "b", "c", "d", "e")
GRID = np.arange(40.0, 85.0, 5.0)
KNOWLEDGE = BackgroundKnowledge((KnowledgeRule("a", "sex", "F"),
                                 KnowledgeRule("b", "weight", "[40-60]"),
                                 KnowledgeRule("c", "age", "Adult")))


def _terms(rng) -> str:
    return "|".join(t for t in TERMS if rng.random() < 0.3)


def _numeric_cell(rng, truth: float) -> str:
    kind = rng.integers(12)
    if kind == 0:
        return rng.choice(["", "*"])
    if kind == 1:  # a near miss: a hair outside the true value (ties at distance ~0)
        return f"{truth + rng.choice([-1, 1]) * 1e-13:.15f}"
    if kind == 2:  # a per-record number (as a perturbed release publishes)
        return f"{truth + rng.integers(-3, 4):g}"
    lo = rng.choice(GRID[GRID <= truth]) if (GRID <= truth).any() else truth
    hi = rng.choice(GRID[GRID >= truth]) if (GRID >= truth).any() else truth
    if kind == 3:  # an interval that may miss the truth, touching the grid
        lo, hi = sorted(rng.choice(GRID, 2))
    return f"[{lo:g}-{hi:g}]" if lo < hi else f"{lo:g}"


def _categorical_cell(rng, q: QidInfo, truth: str | None) -> str:
    tax = q.taxonomy
    if truth is None or rng.random() < 0.1:
        return str(rng.choice([*tax.nodes, ""]))
    ancestors = [truth, *tax.ancestors(truth)]
    return str(rng.choice(ancestors))


def random_series(seed: int, qids: tuple[QidInfo, ...], periods: int = 3,
                  manifests: dict | None = None,
                  ) -> tuple[PublishedSeries, dict[str, pd.DataFrame]]:
    """A random published series and each period's original records (a few withheld).

    ``manifests``: one manifest for every release (default: empty ones).
    """
    rng = np.random.default_rng(seed)
    pool = [f"c{i}" for i in range(int(rng.integers(8, 30)))]
    truth = {}
    for case in pool:
        truth[case] = {q.name: (float(rng.choice(GRID)) + rng.choice([0.0, 2.5])
                                if q.kind == "numeric"
                                else str(rng.choice(q.taxonomy.values))) for q in qids}
    releases, originals = {}, {}
    intervals = rng.random() < 0.5  # original numeric values as a closed IntervalArray
    for label in PERIODS[:periods]:
        cases = [c for c in pool if rng.random() < 0.6] or pool[:1]
        withheld = [c for c in pool if c not in cases and rng.random() < 0.3]
        rows, orig = [], []
        for case in cases + withheld:
            values = dict(truth[case])
            if rng.random() < 0.2:  # a follow-up that changes a value
                q = qids[int(rng.integers(len(qids)))]
                values[q.name] = (float(rng.choice(GRID)) if q.kind == "numeric"
                                  else str(rng.choice(q.taxonomy.values)))
            record = {"case_id": case}
            for q in qids:
                missing = rng.random() < 0.15
                if q.kind == "numeric":
                    record[q.name] = np.nan if missing else values[q.name]
                else:
                    record[q.name] = None if missing else values[q.name]
            orig.append(record)
            if case in withheld:
                continue
            row = {"period": label, "case_id": case, "group": str(rng.integers(4)),
                   "indications": _terms(rng), "reactions": _terms(rng)}
            for q in qids:
                row[q.name] = (_numeric_cell(rng, values[q.name]) if q.kind == "numeric"
                               else _categorical_cell(rng, q, values[q.name]))
            rows.append(row)
        frame = pd.DataFrame(orig)
        if intervals:
            for q in qids:
                if q.kind == "numeric":
                    lo = frame[q.name].to_numpy(float)
                    hi = lo + rng.choice([0.0, 0.0, 0.0, 5.0], len(lo))
                    frame[q.name] = pd.arrays.IntervalArray.from_arrays(lo, hi, closed="both")
        releases[label] = pd.DataFrame(rows)
        originals[label] = frame
    series = PublishedSeries(releases, {p: dict(manifests or {}) for p in releases}, qids,
                             ("indications", "reactions"), "random series")
    return series, originals
