"""The report's progress starts at once (issue 44: the first line came after 21 s): a log tells
the first step as soon as it is done, and the report counts its steps before the first one.
The whole command is checked in ``tests/system/test_report.py``."""

from __future__ import annotations

import re

from medanon.cli import console
from medanon.report.collect import report_steps


def test_a_log_tells_the_first_step_at_once_when_asked(capsys):
    console.set_verbosity()  # the default: no --verbose, so a log waits 2 s before a line
    try:
        with console.progress_bar("report", 5, first_at_once=True) as step:
            step("S: opened")
    finally:
        console.set_verbosity()
    err = capsys.readouterr().err
    assert re.search(r"^\d\d:\d\d:\d\d report: S: opened \(1/5, 0 s, about \d+ s left\)$", err,
                     re.M), err


def test_the_total_counts_each_store_it_can_read_and_the_page(tmp_path):
    # a store that cannot be read adds no step of its own (its error comes when it is read):
    # what is left is the figures and one section per series
    assert report_steps([tmp_path / "missing.duckdb"]) == 1 + 1
    assert report_steps([tmp_path / "a.duckdb", tmp_path / "b.duckdb"]) == 1 + 2
    assert list(tmp_path.iterdir()) == []  # counting creates no store
