"""``plan.html`` and the plan's rows as a steward reads them (issue 44): headers in words with a
glossary, a table that fits the 1,000 px page, counts as integers, scatter labels that never
overlap, a legend only for what is drawn, an n/a recall with its reason, and candidates that
are the policies ``release`` pins (its default ``on_infeasible``, the command to reproduce)."""

from __future__ import annotations

import re
import shlex
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from medanon.errors import ValidationError
from medanon.experiments.plan import (COUNT_COLUMNS, GLOSSARY, PLAN_COLUMNS, PlanResult,
                                      _frontier, _overlaps, _place_labels, _recall_notes,
                                      _why_not, default_candidates, release_command, write_plan)
from medanon.pipeline.policy import SeriesPolicy, resolve_policy


def _row(number: int, **values) -> dict:
    row = {"candidate": number, "policy": f"ppms++(k={number})", "method": "ppms++", "k": 5,
           "theta": "0.4", "on_infeasible": "refuse", "status": "published", "gate": "passed",
           "cpu_s": 1.5, "cases": 600, "withheld_share": 0.0, "suppressed_terms": 0,
           "theta_raised": 0, "theta_raised_to": "", "unbounded_terms": 43, "nil": 0.2,
           "disclosing_groups": 0, "dir_max": 0.0, "dsr_max": 0.0, "reidentified": 0,
           "mgps_recall": 0.9, "mgps_precision": 0.9, "mgps_recall_strata": 0.8,
           "prr_recall": 0.9, "recall_note": "", "meets": True, "why_not": "", "message": "",
           "release_command": f"medanon release --method ppms++ --k {number} --theta 0.4"}
    return {**row, **values}


def _result(rows: list[dict], recommended: int | None = 1, min_recall: float = 0.8
            ) -> PlanResult:
    frame = pd.DataFrame(rows).reindex(columns=PLAN_COLUMNS)
    for column in COUNT_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    return PlanResult(frame, {}, recommended, {"max_withheld": 0.1, "min_recall": min_recall},
                      "Store 's.duckdb'", ["2020Q1", "2020Q2"],
                      notes=_recall_notes(rows, min_recall))


class _Table(HTMLParser):
    """The page's table headers (text, title) and cells."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[tuple[str, str]] = []
        self.cells: list[str] = []
        self.widths: list[str] = []
        self._in: str | None = None
        self._title = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("th", "td"):
            self._in, self._title = tag, attrs.get("title") or ""
            (self.headers.append((("", self._title))) if tag == "th" else self.cells.append(""))
        if tag == "col":
            self.widths.append(attrs.get("style") or "")

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self._in = None

    def handle_data(self, data):
        if self._in == "th":
            text, title = self.headers[-1]
            self.headers[-1] = (text + data, title)
        elif self._in == "td":
            self.cells[-1] += data


def test_the_page_has_headers_in_words_a_glossary_integer_counts_and_fits_the_page(tmp_path):
    refused = _row(3, status="refused", theta_raised_to="Death=0.45",
                   message="InfeasibleError: Death cannot meet theta 0.3; smallest workable "
                           "theta 0.4391", **{c: None for c in (
                               "cases", "withheld_share", "unbounded_terms", "nil",
                               "disclosing_groups", "dir_max", "mgps_recall")})
    refused["why_not"] = _why_not(refused, max_withheld=0.1, min_recall=0.8, protect=[])
    result = _result([_row(1), _row(2, disclosing_groups=16, withheld_share=0.123456),
                      refused])
    write_plan(result, tmp_path)
    page = (tmp_path / "plan.html").read_text(encoding="utf-8")
    table = _Table()
    table.feed(page)
    # every header a word (not a raw key), with its glossary entry as its title and in the list
    assert [h for h, _ in table.headers] == [GLOSSARY[c][0] for c in GLOSSARY]
    for (header, title), column in zip(table.headers, GLOSSARY):
        assert title == GLOSSARY[column][1] and "_" not in header
        assert f"<dt>{GLOSSARY[column][0]}</dt>" in page.replace("&#x27;", "'")
    # counts as counts: 43 unbounded terms, 16 groups, never 43.00
    assert "43.00" not in page and "16.000" not in page
    first = table.cells[:len(GLOSSARY)]
    assert first[list(GLOSSARY).index("unbounded_terms")] == "43"
    assert "12.3%" in table.cells
    # the refusal: release's default named and what raise-theta would give; its message in
    # the row under it, over the table's width
    why = table.cells[2 * len(GLOSSARY) + list(GLOSSARY).index("why_not")]
    assert "raise-theta would declare Death=0.45" in why and "release's default" in why
    assert table.cells[3 * len(GLOSSARY)] == ("Candidate 3 refused: InfeasibleError: Death "
                                              "cannot meet theta 0.3; smallest workable theta "
                                              "0.4391")
    assert f"<td colspan='{len(GLOSSARY)}'>Candidate 3 refused" in page
    # the table is laid out in the page's width: fixed layout at 100%, long cells wrapped,
    # the fixed column widths leaving room for the rest
    style = re.search(r"<style>(.*)</style>", page)[1]
    assert re.search(r"table\{[^}]*table-layout:fixed[^}]*width:100%", style)
    assert re.search(r"td,th\{[^}]*overflow-wrap:anywhere", style)
    assert "max-width:1000px" in style
    assert sum(float(w[6:-1]) for w in table.widths if w) < 70
    # the csv keeps counts as integers too, with an empty cell for a refused candidate
    csv = pd.read_csv(tmp_path / "plan.csv", skiprows=1)
    assert csv["unbounded_terms"].tolist()[:2] == [43, 43]
    assert ",43," in (tmp_path / "plan.csv").read_text() and "43.0" not in \
        (tmp_path / "plan.csv").read_text()


def test_an_na_recall_says_why_and_min_recall_says_it_could_not_apply(tmp_path):
    note = "the original holds no MGPS signal (EB05 ≥ 2) to keep"
    rows = [_row(1), _row(2, mgps_recall=None, recall_note=note),
            _row(4, mgps_recall=None, recall_note=note)]
    result = _result(rows)
    assert result.notes == [f"The 'min_recall' parameter (0.8) could not apply to candidate(s) "
                            f"2, 4: {note}, so they have no signal recall and were judged "
                            f"without it."]
    assert result.to_dict()["notes"] == result.notes
    write_plan(result, tmp_path)
    page = (tmp_path / "plan.html").read_text(encoding="utf-8")
    assert f"n/a: {note}" in page and "could not apply to candidate(s) 2, 4" in page
    # the recommendation says it too
    assert f"MGPS recall n/a ({note})" in _result(rows, recommended=2).recommendation()
    # no recall constraint asked for: nothing to say
    assert _recall_notes(rows, 0.0) == []
    # a candidate with a recall is not named
    assert "1," not in result.notes[0].split("candidate(s)")[1].split(":")[0]


def test_labels_never_overlap_each_other_or_a_point_and_stay_in_the_plot():
    generator = np.random.default_rng(3)
    # a crowd: 40 points in a 60 px square, labels of 1 to 9 characters
    anchors = [(float(x), float(y)) for x, y in generator.uniform(200, 260, size=(40, 2))]
    sizes = [(6.0 * n + 2, 14.0) for n in generator.integers(1, 10, size=40)]
    bounds = (0.0, 0.0, 500.0, 400.0)
    boxes = _place_labels(anchors, sizes, bounds)
    placed = [b for b in boxes if b is not None]
    assert len(placed) >= 20
    for i, a in enumerate(placed):
        assert bounds[0] <= a[0] and a[2] <= bounds[2] and bounds[1] <= a[1] and a[3] <= bounds[3]
        assert not any(_overlaps(a, b) for b in placed[i + 1:])
        assert not any(_overlaps(a, (x - 6, y - 6, x + 6, y + 6)) for x, y in anchors)


def test_the_plot_labels_every_candidate_once_and_its_legend_names_only_what_is_drawn():
    # three candidates at one point share a label; two near it get their own
    rows = [_row(n, dir_max=0.0, nil=0.2) for n in (1, 2, 3)]
    rows += [_row(4, dir_max=0.001, nil=0.21), _row(5, dir_max=0.0, nil=0.22)]
    plot = _frontier(_result(rows))
    try:
        texts = sorted(t.get_text() for t in plot.figure.axes[0].texts)
        assert texts == ["1, 2, 3", "4", "5"] and not plot.unlabelled
        assert not any(_overlaps(a, b) for i, a in enumerate(plot.boxes)
                       for b in plot.boxes[i + 1:])
        # all meet, the frontier is one point (no line): neither "does not meet" nor a frontier
        assert plot.legend == ["meets the constraints", "recommended: candidate 1"]
    finally:
        plt.close(plot.figure)
    # two frontier points and one that does not meet: the line and the grey point are named
    rows = [_row(1, dir_max=0.0, nil=0.4), _row(2, dir_max=0.2, nil=0.1),
            _row(3, dir_max=0.3, nil=0.5, meets=False)]
    plot = _frontier(_result(rows, recommended=None))
    try:
        assert plot.legend == ["meets the constraints", "does not meet the constraints",
                               "frontier: no candidate has less risk and more utility"]
    finally:
        plt.close(plot.figure)


def _flags(command: str) -> dict:
    """``medanon release``'s flags as the CLI passes them to resolve_policy."""
    words = shlex.split(command)
    assert words[:2] == ["medanon", "release"]
    flags: dict = {}
    names = {"--domain": "domains", "--dp-label-confidence": "label_confidence",
             "--dp-label-mechanism": "label_mechanism"}
    i = 2
    while i < len(words):
        name = names.get(words[i], words[i][2:].replace("-", "_"))
        if name == "dp_aware_grouping":
            flags[name], i = True, i + 1
            continue
        if name in ("protect", "domains"):
            flags.setdefault(name, []).append(words[i + 1])
        else:
            flags[name] = words[i + 1]
        i += 2
    for name in ("k", "lifespan"):
        if name in flags:
            flags[name] = int(flags[name])
    return flags


def test_default_candidates_are_what_release_pins_from_their_command():
    """Issue 44: plan's defaults all pinned raise-theta while release refuses by default. Now
    they take release's default, and each candidate's release command pins that very policy."""
    for on_infeasible in ("refuse", "raise-theta"):
        pool = default_candidates({"Death": 0.3, "Drug ineffective": 0.123456789},
                                  on_infeasible)
        for candidate in pool:
            assert candidate.parameters.get("on_infeasible", "refuse") == on_infeasible
            policy, _ = resolve_policy(None, given=None,
                                       flags=_flags(release_command(candidate)),
                                       change_policy=False)
            assert policy == candidate, release_command(candidate)
    # release's default: the candidate pins what 'release --method ppms++ --k 3 --theta 0.4'
    # pins, with no on_infeasible flag to remember
    assert default_candidates()[3] == SeriesPolicy.ppms_plus_plus(k=3, theta=0.4)
    assert release_command(default_candidates()[3]) == \
        "medanon release --method ppms++ --k 3 --theta 0.4"
    with pytest.raises(ValidationError, match="'on_infeasible' parameter of default_candidates"):
        default_candidates(on_infeasible="raise")
