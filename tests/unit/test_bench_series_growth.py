"""The series-growth benchmark's own logic: which stages run, the order of the per-quarter
ingests and releases, the release's options, the last / second ratios and the table. Its
figures are printed by benchmarks/bench_series_growth.py itself, never asserted here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_DIR = Path(__file__).resolve().parents[2] / "benchmarks"
if str(_DIR) not in sys.path:  # the script imports bench_faers_scale beside it
    sys.path.insert(0, str(_DIR))
_SPEC = importlib.util.spec_from_file_location("bench_series_growth", _DIR / "bench_series_growth.py")
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench
_SPEC.loader.exec_module(bench)
Measure = bench.Measure


def test_plan_adds_prerequisites_in_order():
    assert bench.plan(["evaluate"]) == ["synth", "ingest", "release", "evaluate"]
    assert bench.plan(["verify", "synth"]) == ["synth", "ingest", "release", "verify"]
    assert bench.plan(["ingest"]) == ["synth", "ingest"]


def test_schedule_releases_each_quarter_before_the_next_arrives():
    periods = ["2020Q1", "2020Q2", "2020Q3"]
    assert bench.schedule(periods, ingest_first=False, lag=0) == [
        ("ingest", "2020Q1"), ("release", "2020Q1"), ("ingest", "2020Q2"),
        ("release", "2020Q2"), ("ingest", "2020Q3"), ("release", "2020Q3")]
    # HA releases a quarter once the next is ingested, and never the last
    assert bench.schedule(periods, ingest_first=False, lag=1) == [
        ("ingest", "2020Q1"), ("ingest", "2020Q2"), ("release", "2020Q1"),
        ("ingest", "2020Q3"), ("release", "2020Q2")]
    assert bench.schedule(periods, ingest_first=True, lag=1) == [
        ("ingest", "2020Q1"), ("ingest", "2020Q2"), ("ingest", "2020Q3"),
        ("release", "2020Q1"), ("release", "2020Q2")]


def test_arguments_become_release_options():
    args = bench.parse_args(["--lifespan", "4", "--method", "ha", "--theta", "0.5",
                             "--max-withheld", "1"])
    flags = bench.release_flags(args)
    assert flags[:6] == ["--method", "ha", "--k", "5", "--theta", "0.5"]
    for pair in (["--lifespan", "4"], ["--max-withheld", "1.0"], ["--alpha", "0.5"],
                 ["--on-infeasible", "suppress-terms"], ["--seed", "1"]):
        assert pair[0] in flags and flags[flags.index(pair[0]) + 1] == pair[1]
    assert "--publish-despite-violations" not in flags and "--epsilon" not in flags
    args = bench.parse_args([])
    assert args.lifespan is None and args.method == "ppms++" and args.k == 5
    assert "--lifespan" not in bench.release_flags(args)


@pytest.mark.parametrize("argv", [["--lifespan", "x"], ["--lifespan", "0"], ["--quarters", "0"],
                                  ["--stages", "synth,foo"], ["--method", "nope"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        bench.parse_args(argv)
    assert stopped.value.code == 2


def test_ratio_is_last_over_second():
    assert bench.ratio([9.0, 2.0, 3.0, 5.0]) == 2.5
    assert bench.ratio([1.0]) is None and bench.ratio([1.0, 0.0]) is None


def test_release_note_says_suppressions_and_violations():
    row = ('[{"groups": 1200, "suppressed": 3, "suppressed_terms": 2, "caps_raised": {},'
           ' "verdict": "violated"}]')
    assert bench.release_note(row) == ("1,200 groups, 3 cases / 2 terms suppressed; "
                                       "gate found violations (published despite)")
    assert bench.release_note('[{"groups": 7, "verdict": "passed"}]') == "7 groups"


def test_table_gives_each_quarter_the_ratios_and_the_series():
    rows = [{"period": "2020Q1", "ingest": Measure("i1", 1.0, 2.0, 100.0),
             "release": Measure("r1", 9.0, 9.0, 900.0, "10 groups"), "store": "1.0 MB"},
            {"period": "2020Q2", "ingest": Measure("i2", 1.0, 2.0, 100.0),
             "release": Measure("r2", 2.0, 4.0, 200.0)},
            {"period": "2020Q3", "ingest": Measure("i3", 1.5, 3.0, 150.0)}]
    series = [Measure("verify", 3.0, 4.0, 300.0, "all hold")]
    lines = bench.format_table(rows, series).splitlines()
    assert lines[2].split() == ["2020Q1", "2.00", "1.00", "100", "9.00", "9.00", "900", "1.0",
                                "MB", "10", "groups"]
    assert lines[4].split() == ["2020Q3", "3.00", "1.50", "150", "-", "-", "-"]
    # the last quarter released is 2020Q2: its release is its own second
    assert lines[5].split() == ["last", "/", "second", "1.50", "1.50", "1.50", "1.00", "1.00",
                                "1.00"]
    assert lines[-1].split() == ["verify", "4.00", "3.00", "300", "2.00", "all", "hold"]
