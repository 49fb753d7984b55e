"""``medanon evaluate --workers``/``--scheduler``: the evaluation on a Dask LocalCluster gives
the result of the one-process evaluation, number for number (issue 30)."""

from __future__ import annotations

import json

from medanon.data.synth.faers import write_faers_series
from tests.conftest import ingest_and_release, invoke_cli


def test_evaluate_on_a_local_cluster_equals_the_evaluation_in_one_process(tmp_path):
    write_faers_series(tmp_path / "in", periods=3, cases=400, seed=7)
    store = ingest_and_release(tmp_path / "in", tmp_path / "s.duckdb")
    rules = tmp_path / "rules.csv"
    rules.write_text("drug,condition,reaction\nAVANDIA,age > 18,Myocardial infarction\n"
                     "ZELNORM,,Cerebrovascular accident\n")
    background = tmp_path / "bk.csv"
    background.write_text("term,attribute,value\nBreast cancer,sex,F\n")
    common = ("evaluate", "--store", store, "--json", "--rules", rules, "--background",
              background, "--stratum", "age >= 65", "--stratum", "sex = M")
    alone = invoke_cli(*common)
    assert alone.returncode == 0, alone.stderr
    on_dask = invoke_cli(*common, "--workers", "2")
    assert on_dask.returncode == 0, on_dask.stderr
    expected, got = json.loads(alone.stdout), json.loads(on_dask.stdout)
    assert [e["period"] for e in got["releases"]] == [e["period"] for e in expected["releases"]]
    assert "screening" in got and "planted" in got["screening"]
    assert got == expected
