"""The verify gate on series crafted to break each condition of the declared models.

Each case starts from a series that passes and changes one thing; the verifier must catch it and
name it. The verifier (medanon.models.ppms via medanon.verify) reads published strings only.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from medanon.cli.app import main
from medanon.errors import InputFormatError
from medanon.hierarchies import sex_tree
from medanon.models.theta import ThetaTable
from medanon.published.cells import QidInfo
from medanon.published.series import PublishedSeries
from medanon.models.names import HA_MODEL, MS_MODEL, PPMS_MODEL
from medanon.verify import verify_series

QIDS = (QidInfo("sex", "categorical", sex_tree()), QidInfo("age", "numeric"))


def manifest(model, *, k=2, theta=1.0, alpha=None, ss=None, lifespan=None):
    params = {"k": k, "lifespan": lifespan}
    details = {"theta_table": ThetaTable(default=theta).to_manifest()}
    if alpha is not None:
        params["alpha"] = alpha
        details["ss_min_counts"] = ss or {"adr": 3}
    return {"method": {"name": "crafted", "privacy_model": model, "parameters": params},
            "details": details, "columns": {}}


def rows(period, records):
    return pd.DataFrame([{"period": period, "case_id": c, "group": g, "sex": s, "age": a, "adr": d}
                         for c, g, s, a, d in records])


def series(tables, manifests):
    return PublishedSeries({p: rows(p, r) for p, r in tables.items()}, manifests, QIDS, ("adr",),
                           "crafted")


Q1 = [("1", "a", "F", "[30-40]", "x"), ("2", "a", "F", "[30-40]", "y"),
      ("3", "b", "M", "[30-40]", "x"), ("4", "b", "M", "[30-40]", "y")]
Q2_NEW = [("5", "a", "*", "[30-40]", "x"), ("6", "a", "*", "[30-40]", "y"),
          ("7", "a", "*", "[30-40]", "z")]


def write_folder(folder, tables, manifests):
    """Write a crafted series in the published release format (audit mode reads it)."""
    from medanon.hierarchies import write_arx

    folder.mkdir(exist_ok=True)
    for period, records in tables.items():
        out = folder / period
        out.mkdir()
        rows(period, records).to_csv(out / "release.csv", index=False)
        m = dict(manifests[period])
        m["columns"] = {"qids": [{"name": "sex", "kind": "categorical"},
                                 {"name": "age", "kind": "numeric"}], "sensitive": ["adr"]}
        m["hierarchies"] = {"sex": {"layout": "arx", "text": write_arx(sex_tree())}}
        (out / "manifest.json").write_text(json.dumps(m))
    return folder


def verdict(tables, model=PPMS_MODEL, **kw):
    return verify_series(series(tables, {p: manifest(model, **kw) for p in tables}))


def test_a_sound_series_passes():
    out = verdict({"2020Q1": Q1, "2020Q2": Q2_NEW})
    assert out.ok and [r.verdict for r in out.releases] == ["passed", "passed"]
    assert out.releases[1].attacks == "B/F/L"


def test_size_below_k_is_caught():
    out = verdict({"2020Q1": Q1[:3] + [("4", "c", "M", "[30-40]", "y")]})
    assert not out.ok
    assert any("group c" in v and "only 1 case(s) remain" in v for v in out.releases[0].violations)


def test_theta_is_caught():
    # Term x in 2 of the 2 records of group a: confidence 1 > theta 0.6.
    bad = [("1", "a", "F", "[30-40]", "x"), ("2", "a", "F", "[30-40]", "x|y")] + Q1[2:]
    out = verdict({"2020Q1": bad}, theta=0.6)
    assert any("term 'x': confidence 1" in v for v in out.releases[0].violations)
    assert verdict({"2020Q1": Q1}, theta=0.6).ok


def test_b_and_l_attacks_are_caught():
    # Case 1 reappears in Q2's group: with 5 and 6 it would make 3, but old cases do not count.
    q2 = [("1", "a", "*", "[30-40]", "x"), ("5", "a", "*", "[30-40]", "y")]
    out = verdict({"2020Q1": Q1, "2020Q2": q2})
    assert out.releases[0].ok
    assert any("only 1 case(s) remain after B/F/L" in v for v in out.releases[1].violations)


def test_f_attack_is_caught():
    # Case 1 was F [30-40] in Q1 and is published as M [30-40] in Q2: Q1's group a loses it.
    q2 = [("1", "m", "M", "[30-40]", "x"), ("8", "m", "M", "[30-40]", "y"),
                    ("9", "m", "M", "[30-40]", "z")] + Q2_NEW
    out = verdict({"2020Q1": Q1, "2020Q2": q2})
    assert not out.releases[0].ok
    assert any(v.startswith("2020Q1 group a") for v in out.releases[0].violations)
    # The same case published with a covering value (ANY) breaks nothing.
    q2_ok = [("1", "a", "*", "[30-40]", "x")] + Q2_NEW
    assert verdict({"2020Q1": Q1, "2020Q2": q2_ok}).releases[0].ok


def test_md_attack_and_alpha_are_caught_for_002_model():
    # Q1: groups of 2; cases 1 and 2 (group a) both reappear in Q2 -> MD removes both.
    q1 = Q1
    q2 = [("1", "a", "*", "[30-40]", "x"), ("2", "a", "*", "[30-40]", "y")] + Q2_NEW
    out = verdict({"2020Q1": q1, "2020Q2": q2}, model=HA_MODEL, alpha=1.0)
    assert out.releases[0].attacks == "B/F/L/MD"
    assert any("group a" in v and "B/F/L/MD" in v for v in out.releases[0].violations)
    # The last release waits for its successor's MD check; it is not failed for that.
    assert out.releases[1].md_pending
    # alpha: ss-records hold at least 2 terms; group b has 2 of 2 -> share 1 > 0.5.
    ss_q1 = Q1[:2] + [("3", "b", "M", "[30-40]", "x|y"), ("4", "b", "M", "[30-40]", "x|z")]
    out = verdict({"2020Q1": ss_q1}, model=HA_MODEL, alpha=0.5, ss={"adr": 2})
    assert any("ss share 1" in v and "alpha 0.5" in v for v in out.releases[0].violations)


def test_ms_model_is_checked_per_release_only():
    # The F-attack case above passes the single-release MS model (its own promise).
    q2 = [("1", "m", "M", "[30-40]", "x"), ("8", "m", "M", "[30-40]", "y"),
                    ("9", "m", "M", "[30-40]", "z")] + Q2_NEW
    out = verdict({"2020Q1": Q1, "2020Q2": q2}, model=MS_MODEL)
    assert out.ok and out.releases[0].attacks == ""


def test_no_model_fails_and_an_unknown_model_is_an_input_error():
    s = series({"2020Q1": Q1}, {"2020Q1": {"method": {"name": "none", "privacy_model": None}}})
    assert verify_series(s).releases[0].verdict == "no-model" and not verify_series(s).ok
    s = series({"2020Q1": Q1}, {"2020Q1": manifest("l-diversity")})
    with pytest.raises(InputFormatError, match="unknown privacy model 'l-diversity' in "
                                               "'method.privacy_model'"):
        verify_series(s)


F_ATTACK_Q2 = [("1", "m", "M", "[30-40]", "x"), ("8", "m", "M", "[30-40]", "y"),
               ("9", "m", "M", "[30-40]", "z")] + Q2_NEW
CRAFTED = {   # name: (tables, model, parameters, a violation the verdict must name)
    "k": ({"2020Q1": Q1[:3] + [("4", "c", "M", "[30-40]", "y")]}, PPMS_MODEL, {},
          "2020Q1 group c: only 1 case(s) remain"),
    "theta": ({"2020Q1": [("1", "a", "F", "[30-40]", "x"), ("2", "a", "F", "[30-40]", "x|y")]
               + Q1[2:]}, PPMS_MODEL, {"theta": 0.6}, "2020Q1 group a: term 'x': confidence 1"),
    "b-l": ({"2020Q1": Q1, "2020Q2": [("1", "a", "*", "[30-40]", "x"),
                                      ("5", "a", "*", "[30-40]", "y")]}, PPMS_MODEL, {},
            "2020Q2 group a: only 1 case(s) remain after B/F/L"),
    "f": ({"2020Q1": Q1, "2020Q2": F_ATTACK_Q2}, PPMS_MODEL, {},
          "2020Q1 group a: only 1 case(s) remain after B/F/L"),
    "md": ({"2020Q1": Q1, "2020Q2": [("1", "a", "*", "[30-40]", "x"),
                                     ("2", "a", "*", "[30-40]", "y")] + Q2_NEW},
           HA_MODEL, {"alpha": 1.0}, "2020Q1 group a: only 0 case(s) remain after B/F/L/MD"),
    "alpha": ({"2020Q1": Q1[:2] + [("3", "b", "M", "[30-40]", "x|y"),
                                   ("4", "b", "M", "[30-40]", "x|z")]},
              HA_MODEL, {"alpha": 0.5, "ss": {"adr": 2}}, "2020Q1 group b: view GV2: ss share 1"),
    "ms-k": ({"2020Q1": Q1[:3] + [("4", "c", "M", "[30-40]", "y")]}, MS_MODEL, {},
             "2020Q1 group c: only 1 case(s) remain"),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_each_crafted_series_fails_the_right_check_in_the_library_and_the_cli(name, tmp_path,
                                                                              capsys):
    tables, model, kw, expected = CRAFTED[name]
    out = verdict(tables, model=model, **kw)
    assert not out.ok and any(v.startswith(expected) for v in out.violations), out.violations
    folder = write_folder(tmp_path / name, tables, {p: manifest(model, **kw) for p in tables})
    assert main(["verify", str(folder), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    found = [v for r in report["releases"] for v in r["violations"]]
    assert any(v.startswith(expected) for v in found), found
    assert captured.err.startswith("PrivacyViolation:") and "Traceback" not in captured.err


def test_missing_parameters_are_an_input_error():
    m = manifest(PPMS_MODEL)
    del m["details"]["theta_table"]
    with pytest.raises(InputFormatError, match="lacks the field 'details.theta_table'"):
        verify_series(series({"2020Q1": Q1}, {"2020Q1": m}))


def test_cli_verify_audits_a_folder_and_exits_non_zero(tmp_path, capsys):
    folder = write_folder(tmp_path / "series", {"2020Q1": Q1, "2020Q2": F_ATTACK_Q2},
                          {p: manifest(PPMS_MODEL) for p in ("2020Q1", "2020Q2")})
    code = main(["verify", str(folder), "--json"])
    captured = capsys.readouterr()
    assert code == 1
    report = json.loads(captured.out)
    assert report["ok"] is False and report["releases"][0]["verdict"] == "violated"
    assert captured.err.startswith("PrivacyViolation: 1 release(s)")
    assert "Traceback" not in captured.err
