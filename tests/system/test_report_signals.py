"""A LEVAQUIN / tendon-rupture-like rule with c = 0 through ``medanon evaluate --json`` and the
report, and a release with no case in the report (issue 19, items 3 and 4)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from medanon.cli.app import main
from medanon.data.loaders.faers import read_faers
from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli

DRUG, REACTION = "LEVAQUIN", "Tendon rupture"


def _strict_json(text: str) -> object:
    """JSON as a strict reader sees it: Infinity and NaN are not JSON."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"invalid JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


def _lines(path: Path) -> list[list[str]]:
    return [line.split("$") for line in path.read_text(encoding="latin-1").splitlines()]


def _write(path: Path, rows: list[list[str]]) -> None:
    path.write_text("\r\n".join("$".join(r) for r in rows) + "\r\n", encoding="latin-1")


def _plant_levaquin(quarter: Path, reports: dict[str, str]) -> None:
    """Make the drug and the reaction meet exactly as LEVAQUIN/tendon rupture did: the first 8
    of ``reports`` (report id -> case id) have both, the 9th the drug only, and nobody else has
    either (c = 0)."""
    ids = list(reports)
    both, drug_only = ids[:8], ids[8]
    [drug_file] = quarter.glob("DRUG*.txt")
    rows = _lines(drug_file)
    header, body = rows[0], [r for r in rows[1:] if len(r) > 4 and r[4] != DRUG]
    for rid in [*both, drug_only]:
        # drug_seq 99, a secondary suspect drug; the other columns empty
        body.append([rid, reports[rid], "99", "SS", DRUG] + [""] * (len(header) - 5))
    _write(drug_file, [header, *body])
    [reac_file] = quarter.glob("REAC*.txt")
    rows = _lines(reac_file)
    header, body = rows[0], [r for r in rows[1:] if len(r) > 2 and r[2] != REACTION]
    for rid in both:
        body.append([rid, reports[rid], REACTION, "", ""][:len(header)])
    _write(reac_file, [header, *body])


@pytest.fixture(scope="module")
def levaquin(tmp_path_factory) -> tuple[Path, Path, int]:
    """A one-quarter store whose original data has a = 8, b = 1, c = 0 for LEVAQUIN -> Tendon
    rupture, published with PPMS++; returns (store, rules file, d)."""
    root = tmp_path_factory.mktemp("levaquin")
    write_faers_series(root / "in", periods=1, cases=150, seed=11)
    # the reports that survive ingest (complete ones, latest versions) carry the planted pattern
    [quarter] = read_faers(root / "in").quarters
    kept = dict(zip(quarter.records["report_id"].astype(str),
                    quarter.records["case_id"].astype(str)))
    _plant_levaquin(root / "in" / quarter.period.label, kept)
    store = root / "s.duckdb"
    assert main(["ingest", str(root / "in"), "--store", str(store)]) == 0
    with ReleaseStore.open(store) as db:
        n = int(db.periods()["n_reports"].iloc[0])
    assert main(["release", "--store", str(store), "--method", "ppms++", "--k", "3",
                 "--theta", "0.6", "--on-infeasible", "raise-theta"]) == 0
    rules = root / "rules.csv"
    rules.write_text(f"drug,reaction\n{DRUG},{REACTION}\n", encoding="utf-8")
    return store, rules, n - 9


def test_c_zero_is_an_infinite_signal_in_evaluate_json(levaquin):
    store, rules, d = levaquin
    result = invoke_cli("evaluate", "--store", store, "--rules", rules, "--json")
    assert result.returncode == 0, result.stderr
    [release] = _strict_json(result.stdout)["releases"]
    [signal] = release["signals"]
    original = signal["original"]
    assert (original["a"], original["b"], original["c"], original["d"]) == (8, 1, 0, d)
    # ∞ as the string "inf", the Haldane-Anscombe value beside it, and a signal
    assert original["prr"] == "inf" and original["ror"] == "inf"
    assert original["prr_corrected"] == pytest.approx((8.5 / 10) / (0.5 / (d + 1)))
    assert original["ror_corrected"] == pytest.approx(8.5 * (d + 0.5) / (1.5 * 0.5))
    assert original["signal"] is True
    # terms are published as they are: the release keeps the table, hence the infinite PRR;
    # ∞ − ∞ is undefined, written null
    assert signal["release"]["prr"] == "inf" and signal["release"]["signal"] is True
    assert signal["prr_bias"] is None and signal["count_bias"] == 0
    # the terminal table prints ∞ with the corrected value, never 0.00
    table = invoke_cli("evaluate", "--store", store, "--rules", rules)
    assert table.returncode == 0, table.stderr
    assert f"∞ (HA {original['prr_corrected']:.2f})" in table.stdout


def test_c_zero_shows_as_infinity_in_the_report(levaquin, tmp_path):
    store, rules, d = levaquin
    out = tmp_path / "r.html"
    result = invoke_cli("report", "--store", store, "--rules", rules, "--out", out)
    assert result.returncode == 0, result.stderr
    page = out.read_text(encoding="utf-8")
    corrected = (8.5 / 10) / (0.5 / (d + 1))
    table = page[page.index("<h3>Signals, original versus release</h3>"):]
    table = table[:table.index("</table>")]
    cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", table)]
    # period, rule, count orig, count rel, PRR orig, PRR rel, ROR orig, ROR rel, χ² orig, χ² rel
    assert cells[1] == f"{DRUG} -> {REACTION}"
    assert cells[4] == f"∞ (HA {corrected:.2f})"
    assert cells[5].startswith("∞ (HA ")
    assert "0.00" not in cells[4:8]
    assert cells[-1] == "yes"
    # the per-rule summary counts the release where the original PRR is infinite, as kept
    tally = page[page.index("<h3>Signals per rule: kept and lost</h3>"):]
    row = re.search(r"<tr><td[^>]*>LEVAQUIN -&gt; Tendon rupture</td>(.*?)</tr>", tally).group(1)
    assert [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row)] == [
        "1", "1", "0", "0", "1"]
    # the PRR figure draws the infinite PRR in the ∞ band and says so in its legend
    meta = re.search(r'data-figure="signals"[^>]*data-texts="([^"]*)"', page)
    texts = [t[1] for t in json.loads(unescape(meta.group(1)))]
    assert "∞" in texts
    assert any(t.startswith("∞ (grey band at the top)") for t in texts)


# -- a release without a single case ----------------------------------------------------------
def test_an_empty_release_is_not_nil_zero_all_passed(tmp_path):
    write_faers_series(tmp_path / "in", periods=2, cases=60, seed=2)
    for table in (tmp_path / "in" / "2020Q2").glob("*.txt"):  # a header-only quarter
        table.write_text(table.read_text(encoding="latin-1").splitlines()[0] + "\r\n",
                         encoding="latin-1")
    # an empty quarter is refused unless the operator insists (issue 19, item 1); the report
    # must still tell the truth about a store that holds one
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(tmp_path / "in"), "--store", str(store), "--allow-empty"]) == 0
    assert main(["release", "--store", str(store), "--method", "ppms++", "--k", "3", "--theta",
                 "0.6", "--on-infeasible", "raise-theta", "--allow-gap"]) == 0
    evaluation = json.loads(invoke_cli("evaluate", "--store", store, "--json").stdout)
    first, empty = evaluation["releases"]
    assert empty["cases"] == 0 and first["cases"] > 0
    # verify reads the store a release at a time: the empty release is read as such
    assert invoke_cli("verify", "--store", store).returncode == 0
    out = tmp_path / "r.html"
    assert invoke_cli("report", "--store", store, "--name", "S", "--out", out).returncode == 0
    page = out.read_text(encoding="utf-8")
    summary = page[page.index("<h3>The series side by side</h3>"):]
    row = [unescape(re.sub(r"<[^>]+>", "", c))
           for c in re.findall(r"<td[^>]*>(.*?)</td>", summary[:summary.index("</table>")])]
    # mean NIL is the one non-empty release's, not halved by a 0; the gate is not "all passed"
    assert row[4] == f"{first['nil']:.3f}"
    assert row[-1] == "1 passed, 1 empty"
    assert "all passed" not in page
    per_release = page[page.index("<h3>Per release</h3>"):]
    line = re.search(r"<tr><td class=\"l\">2020Q2</td>(.*?)</tr>", per_release).group(1)
    cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", line)]
    # after the period: method, cases in → out, groups, NIL, NIL*, ... (reports in is the
    # accounting's column now, issue 33)
    assert cells[3] == "empty" and cells[4] == "empty"         # NIL, NIL*
    assert cells[-1] == "empty: nothing checked"
    card = page[page.index('id="card-s"'):page.index("</article>")]
    assert "2020Q2 — published with 0 cases: no metric, nothing checked" in unescape(card)
    assert "1 empty (nothing checked)" in card
