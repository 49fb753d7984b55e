"""Safe by default (issue 19, item 1): each path that used to publish what the user did not intend
is refused with a message naming the cause and the override, and leaves the store as it was.

Error paths run in-process (:func:`invoke_cli`); each asserts the message, the exit code and that
the store (``inspect --json``, which lists every period's publication state) did not change.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli

PPMS = ("--method", "ppms++", "--k", "3", "--theta", "0.6", "--on-infeasible", "raise-theta",
        "--seed", "5", "--allow-seeded")
NONE = ("--method", "none", "--allow-unprotected")


@pytest.fixture(scope="module")
def series(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("safe") / "faers"
    # the legacy generator (the default until issue 42): its common terms (in 40% of cases)
    # make the tight settings below refuse or withhold
    write_faers_series(folder, periods=4, cases=150, seed=3, profile="legacy")
    return folder


def _ingest(source: Path, store: Path, *extra: str) -> None:
    result = invoke_cli("ingest", source, "--store", store, *extra)
    assert result.returncode == 0, result.stderr


def _state(store: Path) -> str:
    return invoke_cli("inspect", "--store", store, "--json").stdout


def _refused(store: Path, args: tuple, error: str, fragment: str, code: int = 1) -> str:
    before = _state(store)
    result = invoke_cli("release", *args, "--store", store)
    assert_user_error(result, error, fragment)
    assert result.returncode == code
    assert _state(store) == before
    return result.stderr


def test_method_is_required_and_none_needs_consent(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    _refused(store, (), "ValidationError", "--method is required")
    _refused(store, ("--method", "none"), "ValidationError",
             "--allow-unprotected must be given to publish with method 'none'")
    assert invoke_cli("release", "2020Q1", *NONE, "--store", store).returncode == 0


def test_none_is_refused_after_a_protected_release(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    assert invoke_cli("release", "2020Q1", *PPMS, "--store", store).returncode == 0
    # a forgotten --method used to publish 2020Q2 raw and break 2020Q1 through its CaseIDs: now
    # the pinned series policy refuses it first, and even a policy change cannot make it raw
    _refused(store, ("2020Q2", *NONE), "ValidationError", "method: ppms++ -> none")
    stderr = _refused(store, ("2020Q2", *NONE, "--change-policy"), "StoreError",
                      "after the protected release(s) 2020Q1 (ppms++)")
    assert "undo them" in stderr


def _theta_file(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["term", "theta"])
        writer.writerows(rows)
    return path


def test_theta_terms_not_in_the_data_are_refused_with_close_matches(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    with ReleaseStore.open(store) as db:
        vocabulary = sorted(db.sensitive_vocabulary())
    real = next(t for t in vocabulary if len(t) > 8 and " " not in t)
    cased = next(t for t in vocabulary if t != t.lower() and t.lower() not in vocabulary)
    typo = real[:-2] + real[-1] + real[-2]  # two letters swapped, like 'Deaht'
    assert typo not in vocabulary
    theta = _theta_file(tmp_path / "theta.csv", [("*", "0.6"), (typo, "0.1"), (cased.lower(), "0.1"),
                                                 (real, "0.5")])
    args = ("--method", "ppms++", "--k", "3", "--theta", theta, "--on-infeasible", "raise-theta",
            "--seed", "5", "--allow-seeded")
    stderr = _refused(store, args, "ValidationError", "names 2 term(s) that no ingested period holds")
    assert f"{typo!r} (did you mean {real!r}" in stderr
    assert f"{cased.lower()!r} (did you mean {cased!r}" in stderr
    assert "--allow-unknown-terms" in stderr
    assert invoke_cli("release", "2020Q1", *args, "--allow-unknown-terms",
                      "--store", store).returncode == 0
    with ReleaseStore.open(store) as db:
        assert db.manifest("2020Q1")["method"]["acknowledged"] == ["allow_unknown_terms"]


def _store_without_2020q2(series: Path, tmp_path: Path) -> Path:
    source = tmp_path / "gap"
    for quarter in ("2020Q1", "2020Q3"):
        shutil.copytree(series / quarter, source / quarter)
    store = tmp_path / "s.duckdb"
    _ingest(source, store)
    return store


def test_a_missing_quarter_is_not_passed_over(series, tmp_path) -> None:
    store = _store_without_2020q2(series, tmp_path)
    stderr = _refused(store, PPMS, "ValidationError", "would pass over 2020Q2 (not ingested)")
    assert "--allow-gap" in stderr
    assert invoke_cli("release", *PPMS, "--allow-gap", "--store", store).returncode == 0
    with ReleaseStore.open(store) as db:
        assert db.published_periods() == ["2020Q1", "2020Q3"]
        assert db.manifest("2020Q3")["method"]["acknowledged"] == ["allow_gap"]


def test_a_header_only_quarter_is_refused_at_ingest(series, tmp_path) -> None:
    source = tmp_path / "empty" / "2020Q1"
    shutil.copytree(series / "2020Q1", source)
    for table in source.iterdir():  # keep the header line only
        table.write_text(table.read_text(encoding="latin-1").splitlines()[0] + "\n",
                         encoding="latin-1")
    store = tmp_path / "s.duckdb"
    result = invoke_cli("ingest", source.parent, "--store", store)
    assert_user_error(result, "StoreError", "2020Q1")
    assert "hold no reports" in result.stderr and "--allow-empty" in result.stderr
    assert not store.exists()
    _ingest(source.parent, store, "--allow-empty")
    with ReleaseStore.open(store) as db:
        assert db.ingested_periods() == ["2020Q1"]


def test_a_lifespan_shorter_than_the_data_is_refused(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    with ReleaseStore.open(store) as db:
        span = db.longest_case_span()
    assert span >= 2  # the generator's follow-ups come back up to 4 quarters later
    stderr = _refused(store, (*PPMS, "--lifespan", "1"), "ValidationError",
                      "--lifespan (1) is shorter than the data's own follow-up span")
    assert f"{span} periods after an earlier report" in stderr
    _refused(store, (*PPMS, "--lifespan", str(span - 1)), "ValidationError", "--allow-short-lifespan")
    assert invoke_cli("release", "2020Q1", *PPMS, "--lifespan", str(span),
                      "--store", store).returncode == 0
    # another life span is another series policy: --change-policy, acknowledged beside it
    assert invoke_cli("release", "2020Q2", *PPMS, "--lifespan", "1", "--allow-short-lifespan",
                      "--change-policy", "--store", store).returncode == 0
    with ReleaseStore.open(store) as db:
        assert "acknowledged" not in db.manifest("2020Q1")["method"]
        assert db.manifest("2020Q2")["method"]["acknowledged"] == ["allow_short_lifespan",
                                                                   "change_policy"]


def test_ha_says_which_period_waits(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    result = invoke_cli("release", "--method", "ha", "--k", "2", "--theta", "1", "--alpha", "1",
                        "--seed", "1", "--allow-seeded", "--store", store)
    assert result.returncode == 0, result.stderr
    assert "2020Q4 wait(s)" in result.stderr and "Ingest 2021Q1" in result.stderr


def _fail_at_second_period(monkeypatch, error: BaseException) -> None:
    from medanon.pipeline import publish

    real, calls = publish.prepare_release, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(publish, "prepare_release", failing)


@pytest.mark.parametrize("error, code", [(OSError(28, "No space left on device"), 74),
                                          (KeyboardInterrupt(), 130)])
def test_a_multi_period_release_lands_whole_or_not_at_all(series, tmp_path, monkeypatch,
                                                          error, code) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    before = _state(store)
    _fail_at_second_period(monkeypatch, error)
    result = invoke_cli("release", *PPMS, "--store", store)
    assert result.returncode == code
    assert "nothing was committed: the store is as it was." in result.stderr
    assert _state(store) == before


def test_per_period_commit_says_exactly_what_committed(series, tmp_path, monkeypatch) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    _fail_at_second_period(monkeypatch, KeyboardInterrupt())
    result = invoke_cli("release", *PPMS, "--per-period-commit", "--store", store)
    assert result.returncode == 130
    assert "committed before the failure: 2020Q1" in result.stderr
    with ReleaseStore.open(store) as db:
        assert db.published_periods() == ["2020Q1"]


def test_verify_reports_the_observed_span_beyond_the_lifespan(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    assert invoke_cli("release", *PPMS, "--lifespan", "1", "--allow-short-lifespan",
                      "--store", store).returncode == 0
    result = invoke_cli("verify", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    with ReleaseStore.open(store) as db:
        published = {p: set(db.release_rows(p)["case_id"]) for p in db.published_periods()}
    periods = sorted(published)
    expected = max(j - i for i in range(len(periods)) for j in range(i, len(periods))
                   if published[periods[i]] & published[periods[j]])
    assert verdict["observed_case_span"] == expected >= 2
    assert len(verdict["notes"]) == 1 and "beyond the life span of 1" in verdict["notes"][0]
    shown = invoke_cli("verify", "--store", store)
    assert f"recur up to {expected} period(s) apart" in " ".join(shown.stdout.split())
    assert "does not cover links between releases more than 1 period(s) apart" in \
        " ".join(shown.stderr.split())  # rich wraps long lines


def test_verify_accepts_a_gap_the_publisher_declared(series, tmp_path) -> None:
    store = _store_without_2020q2(series, tmp_path)
    assert invoke_cli("release", *PPMS, "--allow-gap", "--store", store).returncode == 0
    result = invoke_cli("verify", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["missing_periods"] == [] and shown["declared_missing_periods"] == ["2020Q2"]
    # the same series without the declaration (a lost release) is refused
    out = tmp_path / "out"
    assert invoke_cli("export", "--store", store, "--out", out).returncode == 0
    manifest = out / "2020Q3" / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["method"]["acknowledged"]
    manifest.write_text(json.dumps(data))
    assert_user_error(invoke_cli("verify", out), "InputFormatError", "lacks period(s) 2020Q2")


def test_the_report_card_shows_the_overrides_given(series, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    assert invoke_cli("release", *PPMS, "--lifespan", "1", "--allow-short-lifespan",
                      "--store", store).returncode == 0
    out = tmp_path / "report.html"
    result = invoke_cli("report", "--store", store, "--out", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    assert "overrides given" in page
    assert "--allow-short-lifespan: the life span is shorter than the data" in page


# -- no empty success (issue 29, item 3) -----------------------------------------------------------
def test_a_theta_below_one_over_k_for_common_terms_is_refused_before_grouping(series, tmp_path) -> None:
    """k 3 / θ 0.3: a group of 3 anchors can hold no term at all (floor(0.3·3) = 0) and every
    case has a reaction, so no group forms; raising θ to each term's share cannot help. It used
    to publish nothing, spend the periods and pass."""
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    stderr = _refused(store, ("--method", "ppms++", "--k", "3", "--theta", "0.3", "--on-infeasible",
                              "raise-theta", "--seed", "5", "--allow-seeded"),
                      "InfeasibleError", "have theta below 1/k = 0.3333")
    assert "no group can form" in stderr and "workable with theta >= 0.3334 or k >= 4" in stderr
    assert "nothing was published" in stderr


def test_withholding_more_than_max_withheld_is_refused_and_the_bound_is_recorded(series,
                                                                                tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(series, store)
    tight = ("--method", "ppms", "--k", "5", "--theta", "0.35", "--on-infeasible", "raise-theta",
             "--seed", "5", "--allow-seeded")
    stderr = _refused(store, (*tight, "--max-withheld", "0"), "InfeasibleError",
                      "more than max_withheld 0%")
    assert "their most common terms" in stderr
    result = invoke_cli("release", *tight, "--max-withheld", "1", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    with ReleaseStore.open(store, read_only=True) as opened:
        manifests = list(opened.operator_manifests().values())   # operator-only (issue 41)
    assert any(m["details"]["withheld_cases"] > 0 for m in manifests)
    assert all(m["method"]["parameters"]["max_withheld"] == 1.0 for m in manifests)
    _refused(store, ("--method", "ppms", "--k", "5", "--theta", "0.35", "--max-withheld", "1.5"),
             "ValidationError", "--max-withheld")
