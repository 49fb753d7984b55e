"""Neighbour checks for the EHR releases (ClinSimRR, UMAXRR: local DP per released element).

The LDP neighbour of an input A is A' where *one released patient's diagnosis codes* change (the
same admissions, the same number of codes; only their values). The patient split is part of the
input: the guarantee is per released element given Y_P, which the auxiliary split determines, so
the split is fixed (``SPLIT_SEED``) and "the seed" below is everything else that is random (the
mechanism's noise). The pseudonym key is fresh in every release, seeded or not (issue 29), so the
identifiers and the row order never count as deterministic.

1. Deterministic fields: every published value — each JSON leaf of ``manifest.json`` and a few
   properties of ``release.csv`` — that comes out the same under two different seeds on A is a
   deterministic function of the input. With one fixed seed it must then be the same on A and A':
   nothing deterministic may depend on a released patient's codes. :data:`TIME_DEPENDENT` lists
   the only exclusions.
2. The statistical check (:func:`epsilon_violations`) compares binned output frequencies of one
   element under A and A' against e^ε.

This is the EHR twin of the neighbour helper for the central-DP releases (written separately;
the two are to be merged).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medanon.pipeline import clinsim as ehr_pipeline
from medanon.data.ehr import EhrData
from medanon.random import randomness
from medanon.pipeline.ehr import Pseudonyms, write_ehr_release
from tests.neighbours import json_leaves as shared_json_leaves

SPLIT_SEED = 20231021
AUX_FRACTION = 0.8

#: Published fields that legitimately change from one run to the next whatever the input (each
#: with the reason). Nothing else is excluded.
TIME_DEPENDENT = {
    "manifest.published_at": "the wall-clock time of publication",
}

_MISSING = "<absent>"


# -- what is published --------------------------------------------------------------------------

def json_leaves(value: Any, prefix: str = "manifest") -> dict[str, Any]:
    """Every leaf of a JSON value by path (``manifest.a.b[2].c``), as :mod:`tests.neighbours`
    flattens it (lists and objects also give their length and keys)."""
    return shared_json_leaves(value, prefix)


def release_properties(table: pd.DataFrame) -> dict[str, Any]:
    """Properties of ``release.csv`` (read as text): its shape, each column in row order and
    sorted, and the per-patient structure."""
    out: dict[str, Any] = {"release.rows": len(table), "release.columns": tuple(table.columns)}
    for column in table.columns:
        values = tuple(table[column].tolist())
        out[f"release.{column}.in_row_order"] = values
        out[f"release.{column}.sorted"] = tuple(sorted(values))
    if {"patient", "admission_rank", "time", "position"} <= set(table.columns):
        per_patient = table.groupby("patient", sort=False)
        out["release.elements_per_patient.sorted"] = tuple(sorted(per_patient.size().tolist()))
        out["release.structure.sorted"] = tuple(sorted(
            zip(table["admission_rank"], table["time"], table["position"])))
    return out


def published(folder: Path) -> dict[str, Any]:
    """Every published field of a release folder."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    table = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "release.csv"]
    return {**json_leaves(manifest), **release_properties(table)}


def deterministic_keys(*runs: dict[str, Any]) -> set[str]:
    """The fields present with the same value in every run (different seeds, same input), minus
    :data:`TIME_DEPENDENT`."""
    first, *rest = runs
    keys = {k for k, v in first.items() if all(k in r and r[k] == v for r in rest)}
    return keys - set(TIME_DEPENDENT)


def changed(base: dict[str, Any], neighbour: dict[str, Any], keys: set[str]) -> dict[str, tuple]:
    """The deterministic fields whose value differs (or that are missing) on the neighbour."""
    return {k: (base[k], neighbour.get(k, _MISSING)) for k in sorted(keys)
            if neighbour.get(k, _MISSING) != base[k]}


# -- making releases -----------------------------------------------------------------------------

def release(data: EhrData, folder: Path, *, seed: int, method: str, epsilon: Any = 1,
            **options: Any) -> dict[str, Any]:
    """Publish ``data`` the way ``medanon clinsim --seed SEED`` does (split fixed at
    :data:`SPLIT_SEED`) into the new ``folder``; return its published fields.

    The pipeline's functions are looked up on :mod:`medanon.pipeline.clinsim` at call time, so a test
    can monkeypatch them (to show that the check catches a leak)."""
    run = ehr_pipeline.run_clinsim(data, method=method, epsilon=epsilon, aux_fraction=AUX_FRACTION,
                                  rng=randomness(seed), split_rng=randomness(SPLIT_SEED),
                                  **options)
    table, manifest = ehr_pipeline.build_release(run, identifiers=Pseudonyms.fresh())
    write_ehr_release(folder, table, manifest)
    return published(folder)


def released_patients(data: EhrData) -> list[str]:
    """The patients the fixed split releases (the evaluation part)."""
    _, evaluation = data.split(AUX_FRACTION, rng=randomness(SPLIT_SEED))
    return [str(p) for p in evaluation.patients]


def with_codes(data: EhrData, patient: str, codes: list[str]) -> EhrData:
    """A' = A with the codes of ``patient``'s rows (in events order) replaced by ``codes``."""
    events = data.events.copy()
    rows = np.flatnonzero(events["patient"].to_numpy(dtype=object) == patient)
    if len(rows) != len(codes):
        raise ValueError(f"patient {patient!r} has {len(rows)} elements; got {len(codes)} codes")
    events.loc[rows, "code"] = pd.Series(list(codes), index=rows, dtype=object)
    admissions = events.loc[rows, "admission"].to_numpy(dtype=object)
    pairs = set(zip(admissions, codes))
    if len(pairs) != len(rows):
        raise ValueError("a code repeats within an admission")
    return EhrData(events=events, code_level=data.code_level, dates_reliable=data.dates_reliable,
                   source=dict(data.source))


def admissions_of(data: EhrData, patient: str) -> list[int]:
    """The number of elements of each of ``patient``'s admissions, in events order."""
    events = data.events
    rows = events.loc[events["patient"] == patient, "admission"]
    return rows.groupby(rows, sort=False).size().tolist()


# -- the statistical check ---------------------------------------------------------------------

def epsilon_violations(sample_a: np.ndarray, sample_b: np.ndarray, outputs: list[str],
                       epsilon: float, *, z: float = 4.5, min_count: int = 30) -> dict[str, float]:
    """Outputs y in ``outputs`` whose estimated |log Pr[y | A] − log Pr[y | A']| exceeds ε by more
    than ``z`` standard errors (delta method on the two binomial counts). Bins with fewer than
    ``min_count`` hits on either side are skipped; when one side has none and the other at least
    ``min_count``, the ratio is infinite and reported. Returns ``{y: log ratio}``."""
    n_a, n_b = len(sample_a), len(sample_b)
    count_a = pd.Series(sample_a).value_counts()
    count_b = pd.Series(sample_b).value_counts()
    out: dict[str, float] = {}
    for y in outputs:
        a, b = int(count_a.get(y, 0)), int(count_b.get(y, 0))
        if (a == 0 and b >= min_count) or (b == 0 and a >= min_count):
            out[y] = math.inf
            continue
        if a < min_count or b < min_count:
            continue
        log_ratio = math.log((a / n_a) / (b / n_b))
        se = math.sqrt(1 / a - 1 / n_a + 1 / b - 1 / n_b)
        if abs(log_ratio) > epsilon + z * se:
            out[y] = log_ratio
    return out


def max_log_ratio(sample_a: np.ndarray, sample_b: np.ndarray, outputs: list[str],
                  min_count: int = 30) -> float:
    """The largest |log ratio| of the binned frequencies over ``outputs`` (bins with enough hits)."""
    count_a = pd.Series(sample_a).value_counts()
    count_b = pd.Series(sample_b).value_counts()
    ratios = [abs(math.log((count_a[y] / len(sample_a)) / (count_b[y] / len(sample_b))))
              for y in outputs
              if count_a.get(y, 0) >= min_count and count_b.get(y, 0) >= min_count]
    return max(ratios)

