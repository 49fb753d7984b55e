"""``medanon demo`` and ``medanon report``: the HTML page, its numbers, its errors, and a real
browser rendering it (headless Chromium through Playwright)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from medanon.cli.app import main
from medanon.data.synth.faers import write_faers_series
from medanon.models.base import model_from_manifest
from medanon.store import ReleaseStore
from tests.conftest import ROOT, assert_user_error, invoke_cli, run_cli, snapshot

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium and sets this, so that a missing browser fails there instead of skipping.
BROWSER_REQUIRED = os.environ.get("MEDANON_REQUIRE_BROWSER") == "1"
# Set to a path (e.g. docs/report-summary.png) to save the browser's picture of a summary card.
SCREENSHOT = os.environ.get("MEDANON_REPORT_SCREENSHOT")
STORES = (("PPMS++", "ppms++.duckdb", "card-ppms"), ("MS-Anonymization", "ms.duckdb",
                                                      "card-ms-anonymization"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("demo") / "run"
    result = run_cli("demo", "--out", out)
    assert result.returncode == 0, result.stderr
    return out, result


def _img_count(page: str) -> int:
    return len(re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', page))


def test_demo_writes_report_and_summary(demo):
    out, result = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page
    assert _img_count(page) == 6  # volume, NIL, disclosure, signals, one profile per series
    for text in ("Series PPMS++", "Series MS-Anonymization", "AVANDIA -&gt; Myocardial infarction",
                 "PPMS(k, theta*)-bounding", "What was generalized, perturbed or withheld, and why",
                 "Ingest accounting: where the DEMO rows went", "Signals per rule: kept and lost",
                 'id="glossary"'):
        assert text in page, text
    # the terminal summary names the report and contrasts the two methods
    assert str(out / "report.html") in result.stdout
    assert "PPMS++ DIR" in result.stdout and "MS DIR" in result.stdout
    assert (out / "published" / "2020Q1" / "manifest.json").exists()


def _card(page: str, card_id: str) -> str:
    start = page.index(f'id="{card_id}"')
    return unescape(re.sub(r"<[^>]+>", " ", page[start:page.index("</article>", start)]))


def _words(text: str) -> str:
    return " ".join(text.split())


def _alert(page: str, card_id: str) -> str:
    """The card's lead alert (its text), which must come before the card's first facts."""
    start = page.index(f'id="{card_id}"')
    card = page[start:page.index("</article>", start)]
    at = card.index('<div class="alert unbounded">')
    assert at < card.index("<dl>"), "the θ = 1 line must lead the card"
    return unescape(re.sub(r"<[^>]+>", " ", card[at:card.index("</div>", at)]))


def test_summary_cards_show_the_models_own_promises_and_reconcile_verify_with_the_attacks(demo):
    out, result = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    terminal = _words(result.stdout)
    for _name, store, card_id in STORES:
        card = _words(_card(page, card_id))
        with ReleaseStore.open(out / store) as db:
            periods = db.published_periods()
            manifests = {p: db.manifest(p) for p in periods}
            accounting = [db.ingest_report(p) for p in periods]
        models = {p: model_from_manifest(m, p) for p, m in manifests.items()}
        latest = models[periods[-1]]
        # what the model does not protect and what it guarantees: the model object's own text
        assert f"Does not protect: {_words(latest.does_not_guarantee)}" in card
        assert _words(latest.guarantee) in card
        assert f"does not protect: {_words(latest.does_not_guarantee)}" in terminal
        # k, every per-term θ (the frequency rule's θ = 1 terms, Death among them), life span
        assert f"k {latest.k}" in card and f"k={latest.k}" in terminal
        terms = sorted({t for m in models.values() for t in m.theta.overrides})
        assert "Death" in terms
        assert f"{len(terms)} term(s) with their own θ" in card
        start = card.index("θ per term")
        shown = card[start:card.index(" ε ", start)]
        for term in terms:
            assert term in shown, term
            assert term in terminal, term
        assert "θ = 1 — no limit" in shown
        # ... and the card leads with them (issue 29, item 5): every θ = 1 term, by name, in the
        # alert above the card's facts; the terminal summary opens with the same line
        unbounded = sorted({t for m in models.values() for t in m.theta.unbounded_terms})
        alert = _words(_alert(page, card_id))
        assert f"θ = 1 — no limit — for {len(unbounded)} sensitive term(s)" in alert
        assert all(term in alert for term in unbounded)
        assert "Death" not in unbounded  # the demo protects it
        assert f"! theta = 1 (no limit) for {len(unbounded)} sensitive term(s)" in terminal
        assert "Death ≤ 0.3" in card and "protected (theta capped): Death <= 0.3" in terminal
        assert "not differentially private" in card and "epsilon: not DP" in terminal
        # ingest losses: DEMO rows against the cases released
        demo_rows = sum(r["demo_rows"] for r in accounting)
        released = sum(m["counts"]["cases"] for m in manifests.values())
        line = f"{demo_rows:,} DEMO rows → {released:,} released cases"
        assert line in card
        assert f"ingest: {demo_rows} DEMO rows -> {released} released cases" in terminal
        assert "reports lacking a value were kept (published as missing)" in card
        assert "reports lacking a value were kept" in terminal
        assert f"published 8: {periods[0]}–{periods[-1]} held back none" in card
    evaluation = json.loads(invoke_cli("evaluate", "--store", out / "ms.duckdb", "--json").stdout)
    worst = max(r["dir"] for r in evaluation["releases"])
    ms = _words(_card(page, "card-ms-anonymization"))
    assert "privacy model MS(k, theta*)-bounding — per release only" in ms
    assert "verify now: 8 of 8 passed" in ms
    # MS passes its own per-release model while the linking attacks break it: said in words
    assert (f"verify passes MS(k, theta*)-bounding, yet the B/F/L-attacks find DIR {worst:.2f}"
            in ms)
    assert "the model does not cover linkage across releases" in ms
    assert "the model does not cover linkage across releases" in terminal
    # and the side-by-side table does not call that an all-clear
    assert _summary_row(page, "MS-Anonymization")[-1] == ("passed its own model; the attacks "
                                                          "find more")
    ppms = _words(_card(page, "card-ppms"))
    assert "verify passes PPMS(k, theta*)-bounding and the B/F/L-attacks agree" in ppms


def _rows(page: str, heading: str) -> list[list[str]]:
    part = page[page.index(heading):]
    part = part[:part.index("</table>")]
    return [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", part) if "<td" in row]


def test_ingest_accounting_follows_every_demo_row(demo):
    out, _ = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h2>Series MS-Anonymization</h2>"):]
    rows = _rows(section, "Ingest accounting")
    with ReleaseStore.open(out / "ms.duckdb") as db:
        reports = {p: db.ingest_report(p) for p in db.published_periods()}
        released = {p: db.manifest(p)["counts"]["cases"] for p in reports}
    assert [r[0] for r in rows] == [*reports, "published"]
    for row in rows[:-1]:
        rep = reports[row[0]]
        # the demo keeps reports lacking a value (the default): none dropped, said so
        assert rep["kept_missing"] and row[5] == "none: kept"
        row = [*row[:5], "0", *row[6:]]
        number = [int(c.replace(",", "")) if c.replace(",", "").isdigit() else c for c in row]
        # period, DEMO rows, superseded, duplicate, deleted, dropped, missing by field,
        # reports in, cases in, withheld, released, lost
        assert number[1] == rep["demo_rows"] and number[2] == rep["superseded_reports"]
        assert number[4] == rep["deleted_reports"] and number[5] == rep["dropped_reports"]
        assert number[7] == rep["reports"] and number[10] == released[row[0]]
        # every DEMO row is accounted for: superseded, duplicate, deleted, dropped, or ingested
        assert number[1] == number[2] + number[3] + number[4] + number[5] + number[7]
        assert f"weight {rep['missing']['weight']:,}" in row[6]
        assert row[11] == f"{(rep['demo_rows'] - released[row[0]]) / rep['demo_rows']:.0%}"
    total = rows[-1]
    assert int(total[1].replace(",", "")) == sum(r["demo_rows"] for r in reports.values())
    assert int(total[5].replace(",", "")) == sum(r["dropped_reports"] for r in reports.values())


def _summary_row(page: str, name: str) -> list[str]:
    summary = page[page.index("<h2>Summary</h2>"):]
    summary = summary[:summary.index("</section>")]
    for row in re.findall(r"<tr>(.*?)</tr>", summary):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no summary row for {name}")


def test_report_numbers_match_evaluate(demo):
    """The page shows what ``medanon evaluate`` computes, not numbers of its own."""
    out, _ = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    for name, store in (("PPMS++", "ppms++.duckdb"), ("MS-Anonymization", "ms.duckdb")):
        result = invoke_cli("evaluate", "--store", out / store, "--rules", out / "signal-rules.toml",
                            "--json")
        assert result.returncode == 0, result.stderr
        evaluation = json.loads(result.stdout)
        releases = evaluation["releases"]
        cells = _summary_row(page, name)
        assert cells[2] == str(len(releases))
        assert cells[3] == str(sum(r["cases"] for r in releases))
        assert cells[4] == f"{np.mean([r['nil'] for r in releases]):.3f}"
        assert cells[5] == f"{max(r['dir'] for r in releases):.3f}"
        assert cells[6] == f"{max(r['dsr'] for r in releases):.3f}"
        kept = sum(s["original"]["signal"] and s["release"]["signal"]
                   for r in releases for s in r["signals"])
        assert cells[9].startswith(f"{kept} kept")
        # the card's screening line is evaluate's screening summary
        strata = evaluation["screening"]["summary"]["stratum"]["mgps"]
        dedup = evaluation["screening"]["summary"]["dedup"]["mgps"]
        card = _words(_card(page, dict((n, c) for n, _, c in STORES)[name]))
        assert (f"each case once {dedup['recall']:.2f} / {dedup['precision']:.2f}, strata "
                f"{strata['recall']:.2f} / {strata['precision']:.2f}; {strata['spurious']} "
                f"spurious stratum signal(s)") in card
    # the contrast the demo exists to show: MS leaves groups an attacker narrows below k
    assert float(_summary_row(page, "PPMS++")[5]) == 0.0
    assert float(_summary_row(page, "MS-Anonymization")[5]) > 0.3


def test_report_shows_the_epsilon_ledger_of_a_dp_store(tmp_path):
    write_faers_series(tmp_path / "in", periods=2, cases=200, seed=3)
    store = tmp_path / "dp.duckdb"
    assert main(["ingest", str(tmp_path / "in"), "--store", str(store)]) == 0
    common = ["release", "--store", str(store), "--method", "ppms-dp-num", "--k", "5",
              "--theta", "0.4", "--epsilon", "0.5", "--on-infeasible", "raise-theta",
              "--seed", "1", "--allow-seeded"]
    # the first quarter with the paper variant (not DP: its nominal epsilon is not counted)
    assert main([*common, "2020Q1", "--dp-variant", "paper"]) == 0
    # paper -> strict: said (a flag not given keeps the pinned value, issue 44)
    assert main([*common, "2020Q2", "--dp-variant", "strict", "--change-policy"]) == 0
    ledger = invoke_cli("ledger", "--store", store, "--json")
    maximum = json.loads(ledger.stdout)["max_epsilon"]
    assert maximum == "0.5"
    result = run_cli("report", "--store", store, "--out", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Privacy ledger (ε per case, summed over releases)" in page
    assert f"max {maximum}," in page
    assert "PPMS-DP(k, theta*, epsilon)" in page
    assert 'alt="epsilon ledger"' in page
    assert "also appear in release(s) without an ε-DP claim (2020Q1;" in page
    assert "No signal rules were given" in page


def test_the_card_leads_with_the_terms_left_at_theta_one(tmp_path):
    write_faers_series(tmp_path / "in", periods=2, cases=200, seed=3)
    stores = {}
    for name, extra in (("Frequency", []), ("Protected", ["--protect", "Death=0.3"])):
        stores[name] = tmp_path / f"{name}.duckdb"
        assert main(["ingest", str(tmp_path / "in"), "--store", str(stores[name])]) == 0
        assert main(["release", "--store", str(stores[name]), "--method", "ppms++", "--k", "3",
                     "--theta", "frequency", "--on-infeasible", "raise-theta", "--seed", "1",
                     "--allow-seeded", *extra]) == 0
    result = invoke_cli("report", "--store", stores["Frequency"], "--store", stores["Protected"],
                        "--name", "Frequency", "--name", "Protected", "--out", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    for name, store in stores.items():
        with ReleaseStore.open(store) as db:
            tables = {p: model_from_manifest(db.manifest(p), p).theta
                      for p in db.published_periods()}
        per_term: dict[str, int] = {}
        for table in tables.values():
            for term in table.unbounded_terms:
                per_term[term] = per_term.get(term, 0) + 1
        alert = _words(_alert(page, f"card-{name.lower()}"))
        assert f"θ = 1 — no limit — for {len(per_term)} sensitive term(s)" in alert
        for term, n in per_term.items():  # each named, with n/N when not in every release
            assert (f"{term} ({n}/2)" if n < 2 else term) in alert, term
        assert "discloses the term for every one of them" in alert
        assert f'class="card state-warn" id="card-{name.lower()}"' in page
        card = _words(_card(page, f"card-{name.lower()}"))
        if name == "Protected":
            assert "Death" not in per_term and "protected terms (θ capped) Death ≤ 0.3" in card
        else:
            assert "Death" in per_term and "protected terms (θ capped) none" in card


def test_the_report_leads_with_contents_and_what_to_publish(demo):
    """Issue 33: a table of contents whose links resolve, then one decision per series, derived
    from the data: the demo's PPMS++ passes and the attacks agree, but leaves terms at θ = 1
    (publish with care); MS passes its per-release model while the linking attacks narrow
    groups below k (do not publish as is)."""
    out, _ = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    contents = page[page.index('id="contents"'):]
    contents = contents[:contents.index("</nav>")]
    links = re.findall(r'href="#([^"]+)"', contents)
    assert [link for link in links if link not in ids] == []
    for _name, _store, card_id in STORES:
        assert card_id in links
    slugs = ("ppms", "ms-anonymization")
    for part in ("series", "releases", "signals", "screening", "ledger", "manifests"):
        for slug in slugs:
            assert f"{part}-{slug}" in links, (part, slug)
    assert {"decision", "summary", "glossary"} <= set(links)
    assert page.index('id="contents"') < page.index('id="decision"') < page.index('id="summary"')
    section = page[page.index('id="decision"'):]
    section = _words(unescape(re.sub(r"<[^>]+>", " ", section[:section.index("</section>")])))
    states = dict(re.findall(r'data-series="([^"]+)" data-decision="([^"]+)"', page))
    assert states == {"PPMS++": "care", "MS-Anonymization": "hold"}
    evaluation = json.loads(invoke_cli("evaluate", "--store", out / "ms.duckdb", "--json").stdout)
    worst = max(r["dir"] for r in evaluation["releases"])
    assert (f"MS-Anonymization — Do not publish as is: the attacks narrow up to {worst:.0%} of "
            f"the groups below k candidates (max DIR {worst:.2f}") in section
    with ReleaseStore.open(out / "ppms++.duckdb") as db:
        periods = db.published_periods()
        tables = {p: model_from_manifest(db.manifest(p), p).theta for p in periods}
    unbounded = {t for table in tables.values() for t in table.unbounded_terms}
    latest = len(tables[periods[-1]].unbounded_terms)
    assert (f"PPMS++ — Publish with care: {len(unbounded)} sensitive term(s) have no bound "
            f"(θ = 1) in some release, {latest} in the latest ({periods[-1]})") in section
    assert "every release passes its model (8 of 8 verified now)" in section
    # the two series compared: PPMS++ is the safer one
    assert "Lower risk: PPMS++ (max DIR 0.00" in section
    assert "More utility:" in section or "On utility the series are level" in section


def test_report_errors_write_nothing(demo, tmp_path):
    out, _ = demo
    target = tmp_path / "r.html"
    cases = [
        (["--store", tmp_path / "missing.duckdb"], "StoreError", "missing.duckdb"),
        (["--store", out / "ppms++.duckdb", "--name", "a", "--name", "b"], "ValidationError",
         "one --name per --store"),
        (["--store", out / "ppms++.duckdb", "--store", out / "ms.duckdb", "--name", "x",
          "--name", "x"], "ValidationError", "same name"),
        (["--store", out / "ppms++.duckdb", "--rules", tmp_path / "nope.toml"], "", "nope.toml"),
    ]
    for args, error, fragment in cases:
        result = invoke_cli("report", *args, "--out", target)
        if error:
            assert_user_error(result, error, fragment)
        else:
            assert result.returncode != 0 and fragment in result.stderr
            assert "Traceback" not in result.stderr
        assert not target.exists()
    folder = tmp_path / "folder"
    folder.mkdir()
    assert_user_error(invoke_cli("report", "--store", out / "ppms++.duckdb", "--out", folder),
                      "ValidationError", "is a folder")
    assert snapshot(folder) == {}


def test_report_of_a_store_with_nothing_published(tmp_path):
    write_faers_series(tmp_path / "in", periods=1, cases=50, seed=2)
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(tmp_path / "in"), "--store", str(store)]) == 0
    assert_user_error(invoke_cli("report", "--store", store, "--out", tmp_path / "r.html"),
                      "StoreError", "Nothing is published")
    assert not (tmp_path / "r.html").exists()


#: one progress line of a log: ``HH:MM:SS report: STEP (DONE/TOTAL, ELAPSED s[, ...])``
_STEP = re.compile(r"^\d\d:\d\d:\d\d report: (?P<step>.+) \((?P<done>\d+)/(?P<total>\d+), ")


@pytest.mark.slow  # two stores ingested, released and reported
def test_stores_of_different_data_are_not_compared_and_progress_starts_at_once(tmp_path):
    """Issue 44: two unrelated stores (2004 and 2022 quarters of different synthetic inputs)
    were ranked against each other and the cases plot joined one's last quarter to the other's
    first; the first progress line came after 21 s."""
    stores = {}
    for name, start, periods, seed in (("Old", "2004Q1", 2, 3), ("New", "2022Q4", 1, 4)):
        write_faers_series(tmp_path / name, periods=periods, cases=150, seed=seed, start=start)
        stores[name] = tmp_path / f"{name}.duckdb"
        assert main(["ingest", str(tmp_path / name), "--store", str(stores[name])]) == 0
        assert main(["release", "--store", str(stores[name]), "--method", "ppms++", "--k", "3",
                     "--theta", "frequency", "--on-infeasible", "raise-theta", "--seed", "1",
                     "--allow-seeded"]) == 0
    # no --verbose: a log stays quiet for 2 s, except the report's first step
    result = invoke_cli("report", "--store", stores["Old"], "--store", stores["New"],
                        "--name", "Old", "--name", "New", "--out", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    said = ("Not compared: series Old and series New are of different data: they publish "
            "different periods (Old 2004Q1, 2004Q2, New 2022Q4)")
    assert said in _words(result.stderr)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    decided = page[page.index('id="decision"'):]
    decided = _words(unescape(re.sub(r"<[^>]+>", " ", decided[:decided.index("</section>")])))
    assert said in decided
    assert "Lower risk" not in decided and "More utility" not in decided
    assert "On risk the series are level" not in decided
    # the cases figure: one ingested line per store, none across both
    volume = re.search(r'data-figure="volume"[^>]*data-texts="([^"]*)"', page)
    legend = [t[1] for t in json.loads(unescape(volume[1])) if t[0] == "legend"]
    assert "ingested: Old" in legend and "ingested: New" in legend
    assert "ingested (cases in the store)" not in legend
    # progress: the first line is the first store opened, told at once, counted against the
    # report's whole total; every later line counts against the same total
    steps = [m for m in map(_STEP.match, result.stderr.splitlines()) if m]
    assert steps and steps[0]["step"] == "Old: opened" and steps[0]["done"] == "1", result.stderr
    total = int(steps[0]["total"])
    # per store: opened, its releases, the dedup, quarter and 5 strata scopes, verified; then
    # the figures and each series' section
    assert total == (1 + 2 + 1 + 2 + 5 + 1) + (1 + 1 + 1 + 1 + 5 + 1) + 1 + 2
    assert all(int(m["total"]) == total for m in steps)
    assert [int(m["done"]) for m in steps] == sorted(int(m["done"]) for m in steps)


# -- a real browser ---------------------------------------------------------------------------------
def _screenshot_ink(png: bytes) -> tuple[float, float]:
    """(share of pixels that differ from the page background, pixel standard deviation)."""
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(png), format="png")[..., :3]
    background = np.median(pixels.reshape(-1, 3), axis=0)
    inked = np.abs(pixels - background).sum(axis=2) > 0.1
    return float(inked.mean()), float(pixels.std())


def _overlaps(texts: list) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes intersect (more than half a pixel each way). Written
    here, not imported, so that the test does not trust the code it checks."""
    found = []
    for i, (_, a, ax0, ay0, ax1, ay1) in enumerate(texts):
        for _, b, bx0, by0, bx1, by1 in texts[i + 1:]:
            if min(ax1, bx1) - max(ax0, bx0) > 0.5 and min(ay1, by1) - max(ay0, by0) > 0.5:
                found.append((a, b))
    return found


def _inside(box: list, frame: list) -> bool:
    x0, y0, x1, y1 = box
    return x0 >= frame[0] - 0.5 and y0 >= frame[1] - 0.5 and x1 <= frame[2] + 0.5 and \
        y1 <= frame[3] + 0.5


def _disjoint(box: list, frame: list) -> bool:
    return box[2] <= frame[0] or box[0] >= frame[2] or box[3] <= frame[1] or box[1] >= frame[3]


_FIGURES_JS = """
Array.from(document.querySelectorAll('img.plot')).map(i => {
  const section = i.closest('section');
  const style = getComputedStyle(section);
  return {figure: i.dataset.figure, alt: i.alt, complete: i.complete,
          natural: [i.naturalWidth, i.naturalHeight],
          declared: [Number(i.dataset.width), Number(i.dataset.height)],
          axes: JSON.parse(i.dataset.axes), texts: JSON.parse(i.dataset.texts),
          shown: i.getBoundingClientRect().width,
          room: section.clientWidth - parseFloat(style.paddingLeft)
                - parseFloat(style.paddingRight)};
})
"""


#: a headless chromium with nothing of its own on the network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def _playwright():
    """playwright's sync API, or the test skipped (failed under MEDANON_REQUIRE_BROWSER=1)
    when there is no chromium."""
    if CHROMIUM is None:
        if BROWSER_REQUIRED:
            pytest.fail("MEDANON_REQUIRE_BROWSER=1 but no chromium on PATH")
        pytest.skip("chromium is not installed (Debian package 'chromium')")
    return pytest.importorskip("playwright.sync_api")


def test_report_renders_in_headless_chromium(demo):
    playwright = _playwright()
    out, _ = demo
    problems: list[str] = []
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto((out / "report.html").as_uri())
            page.wait_for_load_state("load")
            figures = page.evaluate(_FIGURES_JS)
            title = page.title()
            headings = page.evaluate(
                "Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
            cards = page.evaluate("Array.from(document.querySelectorAll('article.card'))"
                                  ".map(c => [c.id, c.getBoundingClientRect().height])")
            png = page.screenshot(full_page=True)
            if SCREENSHOT:
                # the picture README shows: one card, cropped to itself, at a modest width
                page.set_viewport_size({"width": 1000, "height": 900})
                target = ROOT / SCREENSHOT
                page.locator("#card-ms-anonymization").screenshot(path=target)
                from PIL import Image  # matplotlib's own dependency

                # a 64-colour palette keeps the picture small in the repository
                Image.open(target).convert("RGB").quantize(64).save(target, optimize=True)
        finally:
            browser.close()
    assert problems == []
    assert title.startswith("medanon demo")
    assert "What an attacker could do" in headings and "Series PPMS++" in headings
    assert "Glossary" in headings
    assert [c[0] for c in cards] == ["card-ppms", "card-ms-anonymization"]
    assert all(height > 200 for _, height in cards), cards
    assert "Contents" in headings and headings.index("What to publish and why") < headings.index(
        "Summary")
    assert [f["figure"] for f in figures] == ["volume", "nil", "disclosure", "signals",
                                              "generalization", "generalization"]
    for f in figures:
        name = f["figure"]
        assert f["complete"] and f["natural"][0] > 100, f["alt"]
        # the metadata describes this very image
        assert f["natural"] == f["declared"], name
        # full width: the image fills its section's content box
        assert f["shown"] >= 0.98 * f["room"], (name, f["shown"], f["room"])
        # every axes says what its axes are
        assert f["axes"], name
        for ax in f["axes"]:
            assert ax["xlabel"].strip() and ax["ylabel"].strip(), (name, ax)
        # no two texts overprint each other, and none is cut off at the image's edge
        assert _overlaps(f["texts"]) == [], (name, _overlaps(f["texts"]))
        frame = [0, 0, *f["declared"]]
        assert all(_inside(t[2:], frame) for t in f["texts"]), name
        # legends sit outside every plotting area
        for role, text, *box in f["texts"]:
            if role == "legend":
                assert all(_disjoint(box, ax["box"]) for ax in f["axes"]), (name, text)
    signals = next(f for f in figures if f["figure"] == "signals")
    assert len(signals["axes"]) == 6 and all(ax["title"] for ax in signals["axes"])
    assert all(ax["ylabel"] == "PRR (log scale)" for ax in signals["axes"])
    titles = [t for t in signals["texts"] if t[0] == "title"]
    assert len(titles) == 6 and _overlaps(titles) == []
    ink, spread = _screenshot_ink(png)
    assert ink > 0.05 and spread > 0.05, (ink, spread)


def test_the_report_fits_a_1000_px_window(demo):
    """Issue 33: no horizontal scroll at 1,000 px: wide tables fit (or scroll in their own box),
    the page itself never does; every in-page link lands on an element."""
    playwright = _playwright()
    out, _ = demo
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.goto((out / "report.html").as_uri())
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            # the demo's tables fit without scrolling inside their box either
            clipped = page.evaluate(
                "Array.from(document.querySelectorAll('div.wide'))"
                ".filter(d => d.scrollWidth > d.clientWidth + 1).length")
            dangling = page.evaluate(
                "Array.from(document.querySelectorAll('a[href^=\"#\"]'))"
                ".filter(a => !document.getElementById(a.getAttribute('href').slice(1)))"
                ".map(a => a.getAttribute('href'))")
        finally:
            browser.close()
    assert width <= 1000, width
    assert clipped == 0
    assert dangling == []
