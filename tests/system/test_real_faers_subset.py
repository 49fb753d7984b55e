"""The real FDA FAERS 2022Q4 subset in ../shared ingests (skipped when ../shared is absent)."""

from __future__ import annotations

import json

from medanon.data.loaders.faers import read_faers
from tests.conftest import FAERS_2022Q4_SUBSET, needs_shared, run_cli


@needs_shared
def test_real_2022q4_subset_ingests_with_counts_reported(tmp_path) -> None:
    ingest = read_faers(FAERS_2022Q4_SUBSET, keep_missing=True)
    (quarter,) = ingest.quarters
    assert quarter.period.label == "2022Q4" and quarter.era == "faers-2014"
    assert quarter.report.demo_rows == 258  # the subset's DEMO file (see ../shared/README.md)
    assert quarter.records["case_id"].is_unique  # latest caseversion per case
    assert len(ingest.deleted_case_ids) > 3000  # the real DELETE22Q4 list

    store = tmp_path / "real.duckdb"
    result = run_cli("ingest", FAERS_2022Q4_SUBSET, "--store", store, "--json", "--drop-missing")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["quarters"][0]
    # Tables of the subset are heads of the real files, so many reports lack REAC/INDI rows:
    # every dropped report is accounted for by at least one missing-value reason.
    assert report["reports"] + report["dropped_reports"] == report["reports_read"] - report["deleted_reports"]
    assert 0 < report["dropped_reports"] <= sum(report["missing"].values())
    assert report["reports"] > 0 and report["cases"] == report["reports"]
    assert not report["kept_missing"]
    print(f"real 2022Q4 subset: {report['demo_rows']} DEMO rows, {report['reports']} complete cases kept, "
          f"{report['dropped_reports']} dropped (missing: {report['missing']})")
    # by default every report is kept (the same quarter, nothing dropped)
    assert len(quarter.records) == report["reports_read"] - report["deleted_reports"]
    assert quarter.report.kept_missing and quarter.report.dropped_reports == 0
