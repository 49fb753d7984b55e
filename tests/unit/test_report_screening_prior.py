"""The report's screening table names the scopes whose MGPS prior did not converge (issue 32:
a fit at a bound is reported, in the JSON and on the page)."""

from __future__ import annotations

from types import SimpleNamespace

from medanon.report.html import _screening_table


def _entry(scope: str, original: dict, release: dict) -> dict:
    stats = {"recall": 1.0, "precision": 1.0, "signals_release": 2, "common": 2,
             "spearman": 1.0}
    return {"kind": "quarter", "scope": scope, "reports": {"original": 10, "release": 10},
            "undecided": {"original": 0, "release": 0},
            "statistics": {"mgps": stats, "bcpnn": stats, "prr": stats},
            "spurious": {"mgps": []}, "prior": {"original": original, "release": release}}


def test_a_prior_at_a_bound_is_named_on_the_page_and_a_converged_one_is_not():
    fine = {"converged": True, "message": "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"}
    bound = {"converged": False, "message": "CONVERGENCE: REL; largest projected gradient "
                                            "1e-08; at a bound: alpha2 at param_limit 10000"}
    screening = {"scopes": [_entry("pooled", fine, fine), _entry("2020Q1", bound, fine)]}
    page = _screening_table(SimpleNamespace(evaluation={"screening": screening}))
    assert "MGPS prior not converged" in page
    assert "2020Q1 (original): at a bound: alpha2 at param_limit 10000" in page
    assert "pooled (" not in page and "2020Q1 (release)" not in page
    calm = _screening_table(SimpleNamespace(evaluation={"screening": {
        "scopes": [_entry("pooled", fine, fine)]}}))
    assert "not converged" not in calm
