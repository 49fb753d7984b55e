"""The gate against a brute-force attacker that reads every published column (issue 29).

Random series (follow-ups with gaps, missing values, cases first reported before the series,
life spans) are published with PPMS, PPMS+ and PPMS++ under a schema that publishes both
receipt dates at *day* granularity. The attacker is written here from the published strings
and the private records alone, sharing no code with the checker: for every case first
reported in a release (the L-attack's target) it knows the case's true QID values, takes the
records of the target's group whose cells are consistent with them (an empty cell means
missing, ``*`` anything), and excludes every record that another release within the life span
shows as published earlier (L), or as inconsistent later (F), or whose published receipt date
ends before the quarter began. The target's group must keep k candidates and each term's share
among them must stay within its θ; and wherever the attacker breaks a group, the gate must
have said so.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from medanon.anonymize import PPMS, PPMSPlus, PPMSPlusPlus
from medanon.data.schema import Schema
from medanon.errors import InfeasibleError
from medanon.models.theta import ThetaTable
from medanon.periods import parse_period
from tests.property.test_periodic_methods import random_series
from tests.series_helpers import check, publish_series

SCHEMA = Schema.papers().model_copy(update={"dates": {"init_fda_dt": "day", "fda_dt": "day"}})
TAX = SCHEMA.load_hierarchies()


def _quarter_start(label: str) -> dt.date:
    p = parse_period(label)
    return dt.date(p.year, 3 * p.quarter - 2, 1)


def with_dates(records: dict[str, pd.DataFrame], seed: int) -> dict[str, pd.DataFrame]:
    """Receipt dates: a case's first report in its first quarter, or (one case in five) years
    before the series began; each version's ``fda_dt`` in its own quarter."""
    rng = np.random.default_rng(seed)
    first: dict[str, str] = {}
    out = {}
    for label, frame in records.items():
        start = _quarter_start(label)
        frame = frame.copy()
        init, fda = [], []
        for case in frame["case_id"].astype(str):
            day = start + dt.timedelta(days=int(rng.integers(0, 89)))
            if case not in first:
                first[case] = ("2015" + f"{int(rng.integers(1, 13)):02d}15"
                               if rng.random() < 0.2 else day.strftime("%Y%m%d"))
            init.append(first[case])
            fda.append(day.strftime("%Y%m%d"))
        out[label] = frame.assign(init_fda_dt=init, fda_dt=fda)
    return out


def consistent(cell: str, value, qid: str) -> bool:
    """Whether a published cell allows the true value (None: missing)."""
    cell = cell.strip()
    missing = value is None or (isinstance(value, float) and np.isnan(value))
    if cell == "*":
        return True
    if cell == "":
        return missing
    if missing:
        return False
    if qid == "weight":
        lo, hi = (cell[1:-1].split("-") if cell.startswith("[") else (cell, cell))
        return float(lo) - 1e-9 <= float(value) <= float(hi) + 1e-9
    return TAX[qid].covers(cell, str(value))


def date_ends_before(cell: str, start: dt.date) -> bool:
    cell = cell.strip()
    if not cell:
        return False
    year = int(cell[:4])
    month = int(cell[4:6]) if len(cell) >= 6 else 12
    day = int(cell[6:8]) if len(cell) >= 8 else 28
    return dt.date(year, month, day) < start


def broken_targets(published: dict[str, pd.DataFrame], manifests: dict[str, dict],
                   records: dict[str, pd.DataFrame], k: int, lifespan: int | None) -> list[str]:
    qids = [q.name for q in SCHEMA.qids]
    truth = {p: r.drop_duplicates("case_id").set_index(r.drop_duplicates("case_id")["case_id"]
                                                       .astype(str))
             for p, r in records.items()}
    ordinal = {p: parse_period(p).ordinal for p in published}
    found = []
    for label, rows in published.items():
        theta = ThetaTable.from_manifest(manifests[label]["details"]["theta_table"])
        start = _quarter_start(label)
        near = {p: r.set_index(r["case_id"].astype(str)) for p, r in published.items()
                if p != label and (lifespan is None or abs(ordinal[p] - ordinal[label]) <= lifespan)}
        earlier = set().union(*(set(r.index) for p, r in near.items() if ordinal[p] < ordinal[label]))
        rows = rows.set_index(rows["case_id"].astype(str), drop=False)
        for case in rows.index:
            if case in earlier:
                continue  # not first reported here: no L-target
            true = truth[label].loc[case]
            group = rows[rows["group"] == rows.at[case, "group"]]
            kept = []
            for other in group.index:
                if not all(consistent(group.at[other, q], true[q], q) for q in qids):
                    continue
                if other in earlier:  # L
                    continue
                if any(date_ends_before(group.at[other, d], start) for d in SCHEMA.dates):
                    continue  # the receipt date says it was reported before this quarter
                later = [r.loc[other] for p, r in near.items()
                         if ordinal[p] > ordinal[label] and other in r.index]
                if any(not consistent(row[q], true[q], q) for row in later for q in qids):
                    continue  # F
                kept.append(other)
            if case not in kept:
                found.append(f"{label}: the true case {case} itself excluded")
            if len(kept) < k:
                found.append(f"{label} group {rows.at[case, 'group']}: {len(kept)} < k for {case}")
            terms: dict[str, int] = {}
            for other in kept:
                cells = "|".join(str(group.at[other, c]) for c in SCHEMA.sensitive)
                for t in {t.strip() for t in cells.split("|") if t.strip() not in ("", "*")}:
                    terms[t] = terms.get(t, 0) + 1
            for t, c in terms.items():
                if c / max(len(kept), 1) > theta.get(t) + 1e-12:
                    found.append(f"{label} group {rows.at[case, 'group']}: {t} {c}/{len(kept)}")
    return found


@pytest.mark.parametrize("method_class", [PPMS, PPMSPlus, PPMSPlusPlus])
@given(seed=st.integers(0, 2**31), k=st.integers(2, 3), lifespan=st.sampled_from([None, 1, 2]),
       missing=st.sampled_from([0.0, 0.3]))
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_no_target_breaks_under_an_attacker_reading_every_column(method_class, seed, k, lifespan,
                                                                missing) -> None:
    records = with_dates(random_series(seed, missing=missing), seed)
    method = method_class(k=k, theta="frequency", lifespan=lifespan,
                          on_infeasible="suppress-terms", max_withheld=1.0)
    try:
        series = publish_series(method, records, SCHEMA, seed=seed)
    except InfeasibleError:
        assume(False)  # a period of no case is refused: nothing published to attack
    verdict = check(series)
    broken = broken_targets(dict(series.releases), dict(series.manifests), records, k, lifespan)
    assert verdict.ok, verdict.violations[:5]
    assert broken == []
    # the receipt dates are the series' own: no reported day or month reaches the rows
    for label, rows in series.releases.items():
        assert set(rows["fda_dt"]) <= {str(parse_period(label).year)}
        assert rows["init_fda_dt"].str.fullmatch(r"\d{4}").all()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_reported_dates_put_back_break_targets_and_the_gate_refuses_them(seed) -> None:
    """The neighbouring releases with each case's true receipt dates (what was published before
    issue 29): the attacker breaks targets there, so the test above can fail, and the gate
    refuses the series, naming the dates."""
    from medanon.published.series import PublishedSeries
    from medanon.verify import verify_series

    records = with_dates(random_series(seed), seed)
    method = PPMSPlusPlus(k=2, theta="frequency", on_infeasible="suppress-terms", max_withheld=1.0)
    series = publish_series(method, records, SCHEMA, seed=seed)
    assert broken_targets(dict(series.releases), dict(series.manifests), records, 2, None) == []
    releases = {}
    for label, rows in series.releases.items():
        true = records[label].drop_duplicates("case_id").set_index("case_id")
        releases[label] = rows.assign(init_fda_dt=rows["case_id"].map(true["init_fda_dt"]),
                                      fda_dt=rows["case_id"].map(true["fda_dt"]))
    assert broken_targets(releases, dict(series.manifests), records, 2, None)
    verdict = verify_series(PublishedSeries(releases, series.manifests, series.qids,
                                            series.sensitive, "reported dates"))
    assert not verdict.ok
    assert any("'init_fda_dt'" in v and "not derived from the series" in v
               for v in verdict.violations)
