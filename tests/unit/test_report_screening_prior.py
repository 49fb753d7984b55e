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
    held = {"converged": False, "message": "CONVERGENCE: REL; at a bound: alpha2 at param_limit "
                                           "100; no finite maximum: component 2 tends to a point "
                                           "mass at λ=1.007 (...); held at param_limit 100; E "
                                           "binned for the fit (...)"}
    screening = {"scopes": [_entry("pooled", fine, fine), _entry("2020Q1", bound, fine),
                            _entry("2020Q2", held, held), _entry("2020Q3", fine, held)]}
    page = _screening_table(SimpleNamespace(evaluation={"screening": screening}))
    assert "MGPS prior not converged" in page
    assert "at a bound: alpha2 at param_limit 10000: 2020Q1 (original)" in page
    # the fits held for want of a maximum are listed once, grouped
    assert page.count("no finite maximum") == 1
    assert ("point mass), held at openEBGM&#x27;s bound 100: 2020Q2 (original), 2020Q2 (release), "
            "2020Q3 (release)") in page
    assert "pooled (" not in page and "2020Q1 (release)" not in page
    calm = _screening_table(SimpleNamespace(evaluation={"screening": {
        "scopes": [_entry("pooled", fine, fine)]}}))
    assert "not converged" not in calm
