"""The scale benchmark's own logic: which stages and methods run, the table, and that each
stage's figures are its own child's (not a running total). Its speed figures are printed by
benchmarks/bench_faers_scale.py itself, never asserted here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_faers_scale.py"
_SPEC = importlib.util.spec_from_file_location("bench_faers_scale", _PATH)
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # dataclasses look their module up there
_SPEC.loader.exec_module(bench)


def test_plan_adds_prerequisites_and_the_downstream_release():
    stages, released, downstream = bench.plan(["verify"], ["ms"], ["ppms++"])
    assert stages == ["synth", "ingest", "release", "verify"]
    # --methods applies only when release itself is asked for; verify needs ppms++'s store
    assert released == ["ppms++"] and downstream == ["ppms++"]
    stages, released, _ = bench.plan(["report", "release"], ["ppms-dp-all", "ms"], ["ha"])
    assert stages == ["synth", "ingest", "release", "report"]
    assert released == ["ms", "ha", "ppms-dp-all"]  # pipeline order, downstream added


def test_plan_without_later_stages_releases_nothing_extra():
    assert bench.plan(["release"], ["ms"], ["ppms++"]) == (["synth", "ingest", "release"],
                                                           ["ms"], [])
    assert bench.plan(["ingest"], ["ms"], ["ppms++"]) == (["synth", "ingest"], [], [])


def test_split_list_names_the_option():
    assert bench.split_list("ppms++, ms,ppms++", bench.METHODS, "--methods") == ["ppms++", "ms"]
    with pytest.raises(ValueError, match="--stages: unknown 'foo'"):
        bench.split_list("synth,foo", bench.STAGES, "--stages")
    with pytest.raises(ValueError, match="--methods: no name"):
        bench.split_list(" , ", bench.METHODS, "--methods")


def test_peak_rss_units():
    assert bench.peak_rss_mb(2048, "linux") == 2.0  # KiB
    assert bench.peak_rss_mb(2 * 1024 * 1024, "darwin") == 2.0  # bytes


def test_table_totals_times_and_takes_the_largest_peak():
    rows = [bench.Measure("synth", 1.5, 1.25, 100.0, "note a"),
            bench.Measure("release ppms++", 2.0, 3.5, 300.4)]
    lines = bench.format_table(rows).splitlines()
    assert lines[0].split() == ["stage", "wall", "s", "CPU", "s", "peak", "RSS", "MB", "note"]
    assert lines[1].split() == ["synth", "1.50", "1.25", "100", "note", "a"]
    assert lines[2].split() == ["release", "ppms++", "2.00", "3.50", "300"]
    assert lines[3].split()[:4] == ["total", "3.50", "4.75", "300"]


def test_each_stage_measures_its_own_child(tmp_path):
    # run from a small fresh process: a child's peak RSS starts at its parent's high-water
    # mark, which in a long pytest session may exceed the big child's
    script = f"""
import importlib.util, json, pathlib, sys
spec = importlib.util.spec_from_file_location("b", {str(_PATH)!r})
bench = importlib.util.module_from_spec(spec); sys.modules["b"] = bench
spec.loader.exec_module(bench)
big = "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])"
first, _ = bench.run_stage("big", [sys.executable, "-c", big], pathlib.Path(sys.argv[1]))
second, out = bench.run_stage("small", [sys.executable, "-c", "print('hi')"], pathlib.Path(sys.argv[1]))
print(json.dumps([first.peak_rss_mb, second.peak_rss_mb, first.cpu_s, first.wall_s, out]))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    first_peak, second_peak, cpu, wall, out = json.loads(done.stdout)
    assert first_peak > 300
    assert second_peak < 100 and out == "hi\n"  # not the earlier child's peak
    assert cpu > 0 and wall > 0


def test_a_failed_stage_gives_its_stderr_tail(tmp_path):
    code = "import sys; print('\\n'.join(map(str, range(100))), file=sys.stderr); sys.exit(3)"
    with pytest.raises(bench.StageFailed) as failed:
        bench.run_stage("bad", [sys.executable, "-c", code], tmp_path)
    assert failed.value.code == 3
    assert failed.value.stderr_tail.splitlines() == [str(i) for i in range(60, 100)]
    measure, _ = bench.run_stage("ok", [sys.executable, "-c", code], tmp_path, accept=(3,))
    assert measure.stage == "ok"


def test_table_gives_each_stage_as_a_multiple_of_the_floor():
    rows = [bench.Measure("release ppms++ 2020Q1", 2.0, 3.0, 300.4)]
    lines = bench.format_table(rows, 0.5).splitlines()
    assert lines[0].split()[:7] == ["stage", "wall", "s", "CPU", "s", "x", "floor"]
    assert lines[1].split() == ["release", "ppms++", "2020Q1", "2.00", "3.00", "6", "300"]
    assert lines[2].split()[:4] == ["total", "2.00", "3.00", "300"]
