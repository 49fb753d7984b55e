"""The CaseID-order attack of issue 41, written from the published files alone.

FAERS numbers cases in order of receipt. An L-adversary knows the target is first reported in
period P, so the target's CaseID exceeds every CaseID published before P: a case first published
in P whose CaseID is below one published earlier is excluded. The attacker reads an exported
series (``<period>/release.csv`` and ``manifest.json``), links CaseIDs (a CaseID seen in an
earlier release is old: B- and L-attacks), reads the receipt years (issue 29: a date whose year
is not the quarter's excludes the case), applies the CaseID-order rule, and reports each group
with its candidates. It imports nothing of medanon's checker: only the manifest's θ table
reader (a reader of the published format).

Whether a group is *broken* needs the truth, which only the test has (:func:`broken_groups`):
the attacker's exclusions in the group are all correct (no case it excluded by order was in
fact first reported in P), the true target is among the candidates, and the candidates are
fewer than k or hold a term above its θ.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from medanon.models.theta import theta_table_of

_DATES = ("init_fda_dt", "fda_dt")


@dataclass(frozen=True)
class GroupView:
    """What the attacker makes of one group."""

    period: str
    group: str
    cases: tuple[str, ...]
    #: excluded by the CaseID-order rule alone (new to the series, CaseID below an earlier one)
    by_order: tuple[str, ...]
    candidates: tuple[str, ...]
    k: int
    #: the largest share of a term among the candidates, above its θ (term, share, θ), if any
    over_theta: tuple[str, float, float] | None


def read_series(folder: Path) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Every period folder's rows (text) and manifest, in period order."""
    out = {}
    for path in sorted(p for p in Path(folder).iterdir() if (p / "release.csv").exists()):
        rows = pd.read_csv(path / "release.csv", dtype=str, keep_default_na=False)
        out[path.name] = (rows, json.loads((path / "manifest.json").read_text()))
    return out


def _terms(rows: pd.DataFrame, manifest: Mapping) -> list[set[str]]:
    columns = manifest["columns"]["sensitive"]
    return [set().union(*({t.strip() for t in str(row[c]).split("|") if t.strip()}
                          for c in columns)) for _, row in rows.iterrows()]


def _number(case: str) -> int | None:
    return int(case) if case.isdigit() else None


def attack(folder: Path, *, order_rule: bool = True) -> list[GroupView]:
    """Every group of every release, as the attacker sees it."""
    out: list[GroupView] = []
    seen: set[str] = set()
    highest: int | None = None
    for period, (rows, manifest) in read_series(folder).items():
        k = int(manifest["method"]["parameters"]["k"])
        table = theta_table_of(manifest)
        cases = rows["case_id"].astype(str).tolist()
        terms = _terms(rows, manifest)
        old = [c in seen for c in cases]
        dated = [False] * len(cases)
        for column in _DATES:
            if column in rows.columns:
                for i, text in enumerate(rows[column].astype(str).tolist()):
                    dated[i] |= bool(text[:4].isdigit() and text[:4] != period[:4])
        order = [bool(order_rule and not o and highest is not None and _number(c) is not None
                      and _number(c) < highest) for c, o in zip(cases, old)]
        for group, index in rows.groupby(rows["group"].astype(str)).indices.items():
            members = index.tolist()
            kept = [i for i in members if not (old[i] or dated[i] or order[i])]
            over = None
            for term in set().union(*(terms[i] for i in kept)) if kept else ():
                share = sum(term in terms[i] for i in kept) / len(kept)
                theta = table.get(term) if table is not None else 1.0
                if share > theta + 1e-12 and (over is None or share > over[1]):
                    over = (term, share, theta)
            out.append(GroupView(period, group, tuple(cases[i] for i in members),
                                 tuple(cases[i] for i in members if order[i]),
                                 tuple(cases[i] for i in kept), k, over))
        seen |= set(cases)
        numbers = [n for n in map(_number, cases) if n is not None]
        if numbers:
            highest = max(numbers if highest is None else [highest, *numbers])
    return out


def broken_groups(views: list[GroupView], first_period: Mapping[str, str]) -> list[GroupView]:
    """The groups the attack breaks, judged with the truth: ``first_period`` maps a published
    CaseID to the period its case was first reported in (withheld or not, or before the series).

    A group is broken when the CaseID-order rule excluded only cases that were in fact reported
    before the period (the attacker's knowledge was right), a case truly first reported in the
    period is still a candidate (the target), and the candidates are fewer than k or hold a
    term above its θ.
    """
    out = []
    for view in views:
        sound = all(first_period.get(c) != view.period for c in view.by_order)
        target = any(first_period.get(c) == view.period for c in view.candidates)
        if sound and target and (len(view.candidates) < view.k or view.over_theta is not None):
            out.append(view)
    return out


def first_periods(source: Path, published_to_real: Mapping[str, str]) -> dict[str, str]:
    """Published CaseID -> the period its case was first reported in, from a synthetic FAERS
    source (one folder per quarter, ``DEMO*.txt``): the quarter of its ``init_fda_dt``."""
    first: dict[str, str] = {}
    for quarter in sorted(Path(source).iterdir()):
        demo = next(quarter.rglob("DEMO*.txt"), None)
        if demo is None:
            continue
        frame = pd.read_csv(demo, sep="$", dtype=str, keep_default_na=False, index_col=False,
                            encoding="latin-1")
        for case, date in zip(frame["caseid"], frame["init_fda_dt"], strict=True):
            label = f"{date[:4]}Q{(int(date[4:6]) - 1) // 3 + 1}"
            first[case] = min(first.get(case, label), label)
    return {pub: first[real] for pub, real in published_to_real.items() if real in first}
