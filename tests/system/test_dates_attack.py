"""Receipt dates against the L-attack (issue 29, item 1).

A case withheld in its first quarter was published in a later one as new to the series, with
its true ``init_fda_dt``: the L-adversary (the target is first reported this quarter) excluded
it, and a group of 7 kept 4 < k = 5 candidates while the gate passed. Protected releases now
publish the dates the series derives (``published.roles``), and the gate refuses a release whose
dates are reported ones.

The attacker here is written from the published rows alone, independently of the checker: it
reads *every* published column of every release (CaseIDs, dates, the generalized QIDs and
the sensitive terms) and, for each group, excludes every record that cannot be a target first
reported in this quarter and present in every later release it appears in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.pipeline.case_ids import case_id_map
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli

# the series, on the generator it was measured with (the default until issue 42)
REPRO = dict(periods=4, start="2020Q3", cases=400, followup_rate=0.4, missing_age=0.3,
             missing_weight=0.3, profile="legacy")


def _published(tmp_path: Path, seed: int, method: str) -> Path:
    source = tmp_path / f"faers-{seed}"
    write_faers_series(source, seed=seed, **REPRO)
    store = tmp_path / f"{method}-{seed}.duckdb"
    assert invoke_cli("ingest", source, "--store", store).returncode == 0
    # the settings; its withheld share is over the new 10% default, which is not what
    # this test is about
    result = invoke_cli("release", "--store", store, "--method", method, "--k", "5", "--theta",
                        "0.3", "--on-infeasible", "raise-theta", "--max-withheld", "0.5",
                        "--seed", "5", "--allow-seeded")
    assert result.returncode == 0, result.stderr
    out = tmp_path / f"{method}-{seed}-series"
    assert invoke_cli("export", "--store", store, "--out", out).returncode == 0
    return out


def _year(period: str) -> int:
    return int(period[:4])


def _broken_groups(series: dict[str, pd.DataFrame], k: int) -> list[str]:
    """Groups where fewer than k records survive an L-attacker that reads every column.

    Excluded: a CaseID seen in an earlier release (no life span was declared); a record whose
    ``init_fda_dt`` or ``fda_dt`` year is not the quarter's own (a case first reported in the
    quarter has both in its year).
    """
    broken = []
    seen: set[str] = set()
    for period in sorted(series):
        rows = series[period]
        cases = rows["case_id"].astype(str)
        old = cases.isin(seen)
        dated = pd.Series(False, index=rows.index)
        for column in ("init_fda_dt", "fda_dt"):
            years = pd.to_numeric(rows[column].astype(str).str[:4], errors="coerce")
            dated |= years.notna() & (years != _year(period))
        kept = (~(old | dated)).groupby(rows["group"].astype(str)).sum()
        broken += [f"{period} group {g}: {n} kept" for g, n in kept.items() if n < k]
        seen |= set(cases)
    return broken


def _rows(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.name: pd.read_csv(p / "release.csv", dtype=str, keep_default_na=False)
            for p in sorted(folder.iterdir()) if (p / "release.csv").exists()}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4242, 77])
@pytest.mark.parametrize("method", ["ppms", "ppms++"])
def test_no_group_breaks_for_an_attacker_reading_every_column(tmp_path, seed, method) -> None:
    folder = _published(tmp_path, seed, method)
    rows = _rows(folder)
    assert len(rows) == 4 and all(len(r) for r in rows.values())
    assert _broken_groups(rows, k=5) == []
    # the dates are the derived ones: the first release's year, and the quarter's year
    for period, frame in rows.items():
        assert set(frame["fda_dt"]) == {period[:4]}
        assert (frame["init_fda_dt"].astype(int) <= _year(period)).all()


@pytest.mark.slow
def test_reported_dates_break_groups_and_the_gate_refuses_them(tmp_path) -> None:
    """The neighbouring release with the true receipt dates put back: the same attacker breaks
    groups there (so the test above can fail), and ``medanon verify`` says so."""
    folder = _published(tmp_path, 4242, "ppms")
    source = tmp_path / "faers-4242"
    truth = {}
    for quarter in sorted(source.iterdir()):
        demo = next(quarter.rglob("DEMO*.txt"))
        frame = pd.read_csv(demo, sep="$", dtype=str, keep_default_na=False, index_col=False,
                            encoding="latin-1")
        truth.update(dict(zip(frame["caseid"], frame["init_fda_dt"].str[:4], strict=True)))
    # published CaseIDs are keyed pseudonyms (issue 41): the operator's map gives the real ones
    with ReleaseStore.open(tmp_path / "ppms-4242.duckdb", read_only=True) as db:
        mapping = case_id_map(db)
    truth = {pub: truth[real] for pub, real in zip(mapping["case_id"], mapping["real_case_id"],
                                                   strict=True)}
    for period_dir in sorted(folder.iterdir()):
        path = period_dir / "release.csv"
        if not path.exists():
            continue
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame["init_fda_dt"] = frame["case_id"].map(truth)
        frame.to_csv(path, index=False)
    assert _broken_groups(_rows(folder), k=5)
    result = invoke_cli("verify", folder, "--json")
    assert result.returncode != 0
    report = json.loads(result.stdout)
    violations = [v for r in report["releases"] for v in r["violations"]]
    assert any("'init_fda_dt'" in v and "not derived from the series" in v for v in violations)
