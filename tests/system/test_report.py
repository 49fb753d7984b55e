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
from tests.conftest import assert_user_error, invoke_cli, run_cli, snapshot

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium and sets this, so that a missing browser fails there instead of skipping.
BROWSER_REQUIRED = os.environ.get("MEDANON_REQUIRE_BROWSER") == "1"


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
                 "PPMS(k, theta*)-bounding", "What was generalized or withheld, and why"):
        assert text in page, text
    # the terminal summary names the report and contrasts the two methods
    assert str(out / "report.html") in result.stdout
    assert "PPMS++ DIR" in result.stdout and "MS DIR" in result.stdout
    assert (out / "published" / "2020Q1" / "manifest.json").exists()


def _summary_row(page: str, name: str) -> list[str]:
    summary = page[page.index("<h2>Summary</h2>"):page.index("</section>")]
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
        releases = json.loads(result.stdout)["releases"]
        cells = _summary_row(page, name)
        assert cells[2] == str(len(releases))
        assert cells[3] == str(sum(r["cases"] for r in releases))
        assert cells[4] == f"{np.mean([r['nil'] for r in releases]):.3f}"
        assert cells[5] == f"{max(r['dir'] for r in releases):.3f}"
        assert cells[6] == f"{max(r['dsr'] for r in releases):.3f}"
        kept = sum(s["original"]["signal"] and s["release"]["signal"]
                   for r in releases for s in r["signals"])
        assert cells[9].startswith(f"{kept} kept")
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
    assert main([*common, "2020Q2"]) == 0
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


# -- a real browser ---------------------------------------------------------------------------------
def _screenshot_ink(png: bytes) -> tuple[float, float]:
    """(share of pixels that differ from the page background, pixel standard deviation)."""
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(png), format="png")[..., :3]
    background = np.median(pixels.reshape(-1, 3), axis=0)
    inked = np.abs(pixels - background).sum(axis=2) > 0.1
    return float(inked.mean()), float(pixels.std())


def test_report_renders_in_headless_chromium(demo):
    if CHROMIUM is None:
        if BROWSER_REQUIRED:
            pytest.fail("MEDANON_REQUIRE_BROWSER=1 but no chromium on PATH")
        pytest.skip("chromium is not installed (Debian package 'chromium')")
    playwright = pytest.importorskip("playwright.sync_api")
    out, _ = demo
    problems: list[str] = []
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto((out / "report.html").as_uri())
            page.wait_for_load_state("load")
            images = page.evaluate(
                "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt])")
            title = page.title()
            headings = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
            png = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert title.startswith("medanon demo")
    assert "What an attacker could do" in headings and "Series PPMS++" in headings
    assert len(images) == 6
    assert all(complete and width > 100 for complete, width, _ in images), images
    ink, spread = _screenshot_ink(png)
    assert ink > 0.05 and spread > 0.05, (ink, spread)
