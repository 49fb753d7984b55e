"""``medanon experiment``: every grid on a small input (smoke), on a ``dask.distributed``
LocalCluster reached by its scheduler address, reproducibly, and its errors."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from medanon.errors import InfeasibleError, StoreError
from medanon.experiments import ExperimentConfig, grid, run_experiment
from medanon.experiments.outputs import METRICS
from medanon.experiments.runner import task_seed
from tests.conftest import assert_user_error, invoke_cli, run_cli, snapshot

SMALL = {"jmir2021": ["--periods", "3", "--cases", "150"],
         "plos2021": ["--periods", "3", "--cases", "300"],
         "ppms-dp": ["--periods", "2", "--cases", "150"],
         "ipa": ["--rows", "2000"],
         "clinsimrr": ["--patients", "800"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SMALL))
def test_each_experiment_runs_its_smoke_grid(tmp_path, name):
    out = tmp_path / name
    result = run_cli("experiment", name, "--quick", "--runs", "2", "--workers", "2", "--seed",
                     "3", *SMALL[name], "--out", out)
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "experiment.json").read_text())
    rows = pd.read_csv(out / "results.csv")
    settings = grid(name, quick=True)
    periods = meta["data"].get("published_periods", ["-"])
    # one measured row per (setting, period, run), none missing, none twice
    assert len(rows) == len(settings) * len(periods) * 2
    assert set(rows["setting"]) == {s.label for s in settings}
    assert not rows.duplicated(["setting", "period", "run"]).any()
    assert meta["tasks"] == len(rows) + (len(rows) if periods != ["-"] else 0)
    assert meta["base_seed"] == 3 and meta["seed_given"]
    assert meta["workers_used"] and all(w.startswith("tcp://") for w in meta["workers_used"])
    metrics = [m for m, _ in METRICS[name] if m in rows.columns]
    assert rows[metrics[0]].notna().all()
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == len(settings)
    assert "| method |" in (out / "summary.md").read_text()
    if name in ("jmir2021", "plos2021", "ppms-dp"):  # what each release changed (issue 31)
        for column in ("raised_terms", "theta_raised", "theta_effective_max", "dsr_requested",
                       "nil_cases", "nil_all", "nil_star_all", "cases_all", "withheld_cases",
                       "gate"):
            assert column in rows.columns, column
        assert (rows["cases"] + rows["withheld_cases"] == rows["cases_all"]).all()
        assert {"theta_raised_tasks", "withheld_tasks"} <= set(summary.columns)
        assert "| changes |" in (out / "summary.md").read_text()
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures and all(f.endswith(".png") for f in figures)
    assert all((out / "figures" / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in figures)
    assert "mean over periods and runs" in result.stdout


@pytest.mark.slow
def test_periodic_results_show_the_papers_directions(tmp_path):
    """001: MS releases fall to the B/F/L-attacks, PPMS++ releases do not; 002: under the
    MD-attack PPMS+ (002's PPMS_EAR) leaves groups below k and HA does not."""
    jmir = run_experiment(ExperimentConfig("jmir2021", quick=True, runs=1, periods=3, cases=200,
                                           seed=5, workers=2)).rows
    by_method = jmir.groupby("method")["dir"].mean()
    assert by_method["ppms++"] == 0.0 and by_method["ms"] > 0.2
    plos = run_experiment(ExperimentConfig("plos2021", quick=True, runs=1, periods=3, cases=800,
                                           seed=5, workers=2)).rows
    by_method = plos.groupby("method")[["dir", "ssgr"]].max()
    assert by_method.loc["ha", "dir"] == 0.0 and by_method.loc["ha", "ssgr"] == 0.0
    assert by_method.loc["ppms+", "dir"] > 0.0


@pytest.mark.slow
def test_same_seed_same_results(tmp_path):
    config = ExperimentConfig("ppms-dp", quick=True, runs=2, periods=2, cases=120, seed=11,
                              workers=2)
    first, second = run_experiment(config).rows, run_experiment(config).rows
    drop = ["seconds", "worker"]
    pd.testing.assert_frame_equal(first.drop(columns=drop), second.drop(columns=drop))
    other = run_experiment(ExperimentConfig("ppms-dp", quick=True, runs=2, periods=2, cases=120,
                                            seed=12, workers=2)).rows
    assert not first.drop(columns=drop).equals(other.drop(columns=drop))


def test_task_seeds_are_stable_and_distinct():
    assert task_seed(1, "a") == task_seed(1, "a")
    assert len({task_seed(1, f"t{i}") for i in range(1000)} | {task_seed(2, "t0")}) == 1001


@pytest.mark.slow
def test_runs_on_an_existing_dask_cluster(tmp_path):
    """A real dask.distributed LocalCluster, reached by its scheduler address as a remote one."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster:
        workers = set(cluster.scheduler_info["workers"])
        out = tmp_path / "ipa"
        result = run_cli("experiment", "ipa", "--quick", "--runs", "3", "--rows", "1500",
                         "--seed", "2", "--scheduler", cluster.scheduler_address, "--out", out)
        assert result.returncode == 0, result.stderr
        meta = json.loads((out / "experiment.json").read_text())
        assert meta["cluster"] == f"Dask cluster at {cluster.scheduler_address}"
        assert meta["workers_used"] and set(meta["workers_used"]) <= workers
        rows = pd.read_csv(out / "results.csv")
        assert set(rows["worker"]) <= workers
        assert len(rows) == len(grid("ipa", quick=True)) * 3
        # the library entry point on the same cluster
        config = ExperimentConfig("clinsimrr", quick=True, runs=1, patients=600, seed=4,
                                  scheduler=cluster.scheduler_address)
        lib = run_experiment(config)
        assert set(lib.rows["worker"]) <= workers
        assert set(lib.rows["method"]) == {"clinsimrr", "umaxrr-yp", "umaxrr", "rr", "suppression"}


def test_experiment_errors_write_nothing(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    before = snapshot(busy)
    assert_user_error(invoke_cli("experiment", "nope", "--out", tmp_path / "x"), "ValidationError",
                      "Unknown experiment")
    assert_user_error(invoke_cli("experiment", "ipa", "--quick", "--out", busy), "StoreError",
                      "not an empty folder")
    assert snapshot(busy) == before
    assert_user_error(invoke_cli("experiment", "jmir2021", "--admissions", tmp_path / "a.csv",
                                 "--out", tmp_path / "y"), "ValidationError", "--admissions")
    assert_user_error(invoke_cli("experiment", "ipa", "--runs", "0", "--out", tmp_path / "z"),
                      "ValidationError", "--runs")
    assert_user_error(invoke_cli("experiment", "ipa", "--quick", "--scheduler", "tcp://127.0.0.1:9",
                                 "--out", tmp_path / "w"), "ValidationError", "Cannot reach")
    assert not any((tmp_path / n).exists() for n in ("x", "y", "z", "w"))


def test_task_errors_name_the_task(tmp_path):
    """A user error inside a worker comes back as the same error type, naming its task."""
    with pytest.raises(InfeasibleError, match=r"task plos2021-release-\S+-2020Q1-r0: .*fewer than k"):
        run_experiment(ExperimentConfig("plos2021", quick=True, runs=1, periods=2, cases=3,
                                        seed=1, workers=1))


def test_out_must_be_new(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f").write_text("x")
    with pytest.raises(StoreError):
        run_experiment(ExperimentConfig("ipa", quick=True, rows=500), out=tmp_path / "out")


def test_clinsim_grid_shows_umaxrr_on_the_same_protected_set(tmp_path):
    """Beside UMAXRR on the sensitive set, the clinsimrr grid runs UMAXRR on the very protected set
    ClinSimRR chooses (same ε, γ and, per run, the same evaluation patients); an undefined MAP is
    NaN in results.csv and "n/a" in summary.md."""
    out = tmp_path / "clinsim"
    rows = run_experiment(ExperimentConfig("clinsimrr", quick=True, runs=2, patients=300, seed=5,
                                           workers=1), out=out).rows
    key = ["epsilon", "gamma", "run"]
    clin = rows[rows["method"] == "clinsimrr"].set_index(key)
    same = rows[rows["method"] == "umaxrr-yp"].set_index(key)
    assert len(clin) == len(same) == 2
    assert (same["protected_size"] == clin["protected_size"]).all()
    assert (same["block_size"] == 1).all()
    preset = rows[rows["method"] == "umaxrr"]
    assert (preset["protected_size"] == 8).all()
    assert "map_undefined_reason" in rows.columns
    # 60 released patients: with seed 5 both runs' evaluation patients hold 4 and 5 sensitive
    # elements, so rr and suppression attack fewer than 10 elements and their MAP is undefined
    # (NaN, with the reason), never 0.
    undefined = rows["map"].isna()
    assert set(rows.loc[undefined, "method"]) == {"rr", "suppression"}
    reasons = rows.loc[undefined, "map_undefined_reason"]
    assert (reasons.str.contains("at least 10 times")
            | reasons.str.contains("no released element is in the attacked output set")).all()
    assert rows.loc[~undefined, "map_undefined_reason"].isna().all()
    assert pd.read_csv(out / "results.csv")["map"].isna().sum() == undefined.sum()
    table = {line.split("|")[1].strip(): line for line in
             (out / "summary.md").read_text().splitlines()[2:]}
    header = [c.strip() for c in (out / "summary.md").read_text().splitlines()[0].split("|")]
    column = header.index("map")
    cells = {m: table[m].split("|")[column].strip() for m in table}
    summary = pd.read_csv(out / "summary.csv").set_index("method")
    for method, cell in cells.items():
        defined = int(summary.loc[method, "map_defined"])
        assert defined == (~undefined[rows["method"] == method]).sum()
        if defined == 0:
            assert cell == "n/a"
        elif defined < 2:
            assert cell.endswith(f"({defined} of 2 defined)")
        else:
            assert float(cell.split()[0]) == pytest.approx(summary.loc[method, "map_mean"], abs=1e-4)
    assert cells["clinsimrr"] != "n/a" and "n/a" in cells.values()


def test_only_runs_the_named_settings_and_refuses_unknown_ones(tmp_path):
    """``--only``: a long series runs the few settings it is for (the 32-quarter 001 run)."""
    config = ExperimentConfig("ipa", quick=True, runs=1, rows=800, seed=2, workers=1,
                              only=("kanon k=10", "dphist epsilon=1.0"))
    result = run_experiment(config)
    assert set(result.rows["setting"]) == {"kanon k=10", "dphist epsilon=1.0"}
    assert result.meta["settings"] == ["kanon k=10", "dphist epsilon=1.0"]  # the grid's order
    assert_user_error(invoke_cli("experiment", "ipa", "--quick", "--only", "kanon k=5",
                                 "--out", tmp_path / "o"),
                      "ValidationError", "--only names setting(s) not in this grid: 'kanon k=5'")
    assert_user_error(invoke_cli("experiment", "all", "--only", "kanon k=10",
                                 "--out", tmp_path / "o"), "ValidationError", "--only")
    assert not (tmp_path / "o").exists()
