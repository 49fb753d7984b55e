"""Neighbour checks: what a differentially private publication may depend on (reusable).

A DP claim says: for two *neighbouring* inputs (as the method defines them: one case's perturbed
values changed, one record added or removed, ...) the distribution of everything published
changes by at most a factor e^ε. Two consequences can be tested on the real publication path:

1. **Deterministic fields.** A published field that comes out the same under several seeds is a
   deterministic function of the input. Its distribution on an input is a point mass, so DP
   forces it to be *equal* on neighbouring inputs. :func:`neighbour_leaks` publishes the input A
   under several seeds, keeps the fields that never vary (:func:`deterministic_fields`), publishes
   the neighbour A' and reports each such field whose value differs — after confirming that the
   field is deterministic on A' too (several seeds), so that a random field that happened to
   repeat on A is not mistaken for a leak.
2. **Random fields.** For the rest, the frequency of each bin of a published statistic under A
   and A' must stay within e^ε (:func:`ratio_violations`): a bin is flagged only when the
   Clopper-Pearson intervals of the two frequencies are incompatible with that bound, so with
   fixed seeds the check is deterministic and, for a correct mechanism, fails with probability at
   most ``alpha``.

A publication is flattened into *leaves* (:func:`json_leaves`, :func:`row_leaves`): every leaf of
the manifest JSON (plus each mapping's key set and each list's length, so that a field that
appears or disappears is itself a leaf), and of the release rows: the row count, the column
names, the multiset of each column, the group sizes and, when rows have a key (``case_id``), each
row's cells by key. Fields that legitimately change with the clock are excluded by an explicit
list (:data:`TIME_DEPENDENT`).

Nothing here knows a method: the EHR releases can use the same helpers with their own
``publish(input, seed) -> leaves`` function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

#: Published fields that depend on the clock, not on the input or the seed: the manifest's
#: timestamp. Nothing else is excluded.
TIME_DEPENDENT: tuple[str, ...] = ("published_at",)

#: The value of a leaf a publication does not have (so that presence is compared too).
ABSENT = "<absent>"

Leaves = dict[str, Hashable]


def json_leaves(value: object, path: str = "") -> Leaves:
    """Every leaf of a JSON value as ``{dotted path: value}``.

    A mapping also contributes its sorted key set (``path{keys}``) and a list its length
    (``path[len]``). The value goes through a JSON round trip first, so what is compared is what
    a reader of ``manifest.json`` sees (and a value JSON cannot hold fails here).
    """
    return _leaves(json.loads(json.dumps(value, sort_keys=True)), path)


def _leaves(value: object, path: str) -> Leaves:
    out: Leaves = {}
    if isinstance(value, dict):
        out[f"{path}.__keys__"] = tuple(sorted(value))
        for key, item in value.items():
            out.update(_leaves(item, f"{path}.{key}" if path else str(key)))
    elif isinstance(value, list):
        out[f"{path}.__len__"] = len(value)
        for i, item in enumerate(value):
            out.update(_leaves(item, f"{path}[{i}]"))
    else:
        out[path] = value
    return out


def row_leaves(rows: pd.DataFrame, *, key: str | None = None, group: str | None = "group",
               prefix: str = "rows") -> Leaves:
    """The leaves of published rows (strings as published): count, columns, per-column multisets,
    the multiset of whole rows, group sizes (when ``group`` is a column) and, with ``key``, every
    cell of every row by its key (``rows[<key>].<column>``)."""
    frame = rows.astype(str)
    out: Leaves = {f"{prefix}.count": len(frame), f"{prefix}.columns": tuple(frame.columns),
                   f"{prefix}.multiset": tuple(sorted(map(tuple, frame.to_numpy().tolist())))}
    for column in frame.columns:
        out[f"{prefix}.{column}.multiset"] = tuple(sorted(frame[column]))
    if group is not None and group in frame.columns:
        out[f"{prefix}.group_sizes"] = tuple(sorted(frame.groupby(group).size().tolist()))
    if key is not None:
        out[f"{prefix}.keys"] = tuple(sorted(frame[key]))
        for record in frame.to_dict(orient="records"):
            for column, cell in record.items():
                if column != key:
                    out[f"{prefix}[{record[key]}].{column}"] = cell
    return out


def deterministic_fields(runs: Sequence[Leaves], *, exclude: Collection[str] = TIME_DEPENDENT
                         ) -> Leaves:
    """The leaves with one value in every run (runs of one input under different seeds)."""
    if len(runs) < 2:
        raise ValueError("deterministic_fields needs at least two runs (two different seeds)")
    fields = set().union(*runs)
    out: Leaves = {}
    for name in sorted(fields):
        if _excluded(name, exclude):
            continue
        values = {run.get(name, ABSENT) for run in runs}
        if len(values) == 1:
            out[name] = values.pop()
    return out


def _excluded(name: str, exclude: Collection[str]) -> bool:
    return any(name == e or name.startswith(e + ".") or name.startswith(e + "[")
               or name.startswith(e + "{") for e in exclude)


@dataclass(frozen=True)
class Leak:
    """A deterministic published field that differs between two neighbouring inputs."""

    field: str
    value: Hashable       # on A (every seed)
    neighbour: Hashable   # on A' (every seed)


def neighbour_leaks(publish: Callable[[object, int], Leaves], a: object, a_prime: object, *,
                    seeds: Sequence[int], base: Leaves | None = None,
                    exclude: Collection[str] = TIME_DEPENDENT) -> list[Leak]:
    """The deterministic fields of ``publish`` that differ between neighbours ``a`` and ``a_prime``.

    Args:
        publish: ``publish(input, seed)`` -> the publication's leaves.
        a, a_prime: Two neighbouring inputs (as the method's DP claim defines neighbours).
        seeds: At least two different seeds; ``seeds[0]`` is run on both inputs.
        base: ``deterministic_fields`` of ``a`` over ``seeds`` when already computed.
        exclude: Fields left out (:data:`TIME_DEPENDENT` by default).

    Returns:
        One :class:`Leak` per field that is deterministic on both inputs (same value under every
        seed) with different values: a function of the private input that no noise covers.
    """
    if base is None:
        base = deterministic_fields([publish(a, s) for s in seeds], exclude=exclude)
    first = publish(a_prime, seeds[0])
    suspects = {f for f, v in base.items() if first.get(f, ABSENT) != v}
    if not suspects:
        return []
    # Confirm on A': a field that varies with the seed there is random, not a leak.
    others = [publish(a_prime, s) for s in seeds[1:]]
    leaks = []
    for name in sorted(suspects):
        values = {run.get(name, ABSENT) for run in [first, *others]}
        if len(values) == 1:
            leaks.append(Leak(name, base[name], values.pop()))
    return leaks


def reproducibility_differences(publish: Callable[[object, int], Leaves], a: object, seed: int,
                                *, exclude: Collection[str] = TIME_DEPENDENT) -> list[str]:
    """Fields that differ between two runs with the same seed (should be none: every random
    choice must come from the seeded source, and only :data:`TIME_DEPENDENT` fields may move)."""
    one, two = publish(a, seed), publish(a, seed)
    return sorted(f for f in set(one) | set(two)
                  if not _excluded(f, exclude) and one.get(f, ABSENT) != two.get(f, ABSENT))


@dataclass(frozen=True)
class RatioViolation:
    """A bin whose frequencies under two neighbours cannot both respect e^ε."""

    bin: Hashable
    count_a: int
    count_b: int
    ratio_lower_bound: float


def ratio_violations(a: Sequence[Hashable], b: Sequence[Hashable], epsilon: float, *,
                     alpha: float = 1e-4) -> list[RatioViolation]:
    """Bins where the frequencies of two samples of a published statistic exceed e^ε.

    ``a`` and ``b`` are binned outputs (any hashable bin labels) of independent runs on two
    neighbouring inputs. For every bin and both directions, the lower Clopper-Pearson bound of
    one frequency is compared with e^ε times the upper bound of the other; with bounds at
    ``alpha / (4 · bins)`` each, a mechanism within e^ε is flagged with probability <= ``alpha``.
    """
    counts_a, counts_b = pd.Series(list(a)).value_counts(), pd.Series(list(b)).value_counts()
    n_a, n_b = len(a), len(b)
    labels = sorted(set(counts_a.index) | set(counts_b.index), key=repr)
    level = alpha / (4 * max(len(labels), 1))
    bound = float(np.exp(epsilon))
    out = []
    for label in labels:
        ca, cb = int(counts_a.get(label, 0)), int(counts_b.get(label, 0))
        lo_a, hi_a = _clopper_pearson(ca, n_a, level)
        lo_b, hi_b = _clopper_pearson(cb, n_b, level)
        worst = max(lo_a / hi_b, lo_b / hi_a)  # an upper bound is never 0
        if worst > bound:
            out.append(RatioViolation(label, ca, cb, float(worst)))
    return out


def _clopper_pearson(count: int, n: int, level: float) -> tuple[float, float]:
    """One-sided bounds at ``level`` each: P(p < lo) <= level and P(p > hi) <= level."""
    lo = 0.0 if count == 0 else float(stats.beta.ppf(level, count, n - count + 1))
    hi = 1.0 if count == n else float(stats.beta.ppf(1 - level, count + 1, n - count))
    return lo, hi


def bin_number(value: float, edges: Sequence[float]) -> str:
    """A label for a number: its own label at an edge (point masses of clipping), else the
    half-open interval of ``edges`` it falls in."""
    if any(value == e for e in (edges[0], edges[-1])):
        return f"={value:g}"
    i = int(np.searchsorted(edges, value, side="right")) - 1
    return f"[{edges[i]:g},{edges[i + 1]:g})"
