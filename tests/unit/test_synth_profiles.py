"""Synthetic FAERS profiles (medanon.data.synth.profiles): ``legacy`` is the generator as it
was (the default until issue 42), the calibrated ones (the default among them) have the shape
docs/data.md cites, and the CLI takes ``--profile``."""

from __future__ import annotations

import hashlib
import io
import json
import statistics
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from medanon.api import Dataset
from medanon.data.synth.faers import PROFILES, SynthKnobs, SynthProfile, write_faers_series
from medanon.data.synth.profiles import SynthShape
from medanon.errors import ValidationError
from tests.conftest import FAERS_2022Q4_SUBSET, assert_user_error, invoke_cli, needs_shared

UNKNOWN = "Product used for unknown indication"
#: write_faers_series(periods=3, cases=200, seed=11) as main wrote it before profiles existed
#: (commit 0b11a82): the legacy profile must keep writing exactly these bytes.
LEGACY_DIGEST = "5b8c7bfe278911ae85ffa5a6d5ef1853a01229e46a47aa04bce013f6523700fa"


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for file in sorted(folder.rglob("*.txt")):
        h.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes())
    return h.hexdigest()


def _shape(folder: Path) -> list[dict]:
    """Per quarter, under the papers' filter: cases, the share of follow-ups (cases seen in an
    earlier quarter) and the top term's share of cases (INDI_PT and PT pooled, as 001's SA)."""
    data = Dataset.from_faers(folder, keep_missing=False)
    seen: set[str] = set()
    rows = []
    for period in data.periods:
        frame = data.super_records(period).frame
        ids = set(frame["case_id"].astype(str))
        counts = Counter(t for ind, rea in zip(frame["indications"], frame["reactions"])
                         for t in set(ind) | set(rea))
        rows.append({"cases": len(frame), "followups": len(ids & seen) / len(frame),
                     "top": max(counts.values()) / len(frame)})
        seen |= ids
    return rows


def test_legacy_profile_is_the_generator_as_it_was(tmp_path):
    legacy = write_faers_series(tmp_path / "legacy", periods=3, cases=200, seed=11,
                                profile="legacy")
    assert _digest(tmp_path / "legacy") == LEGACY_DIGEST
    assert legacy.profile == "legacy"
    assert legacy.knobs == SynthKnobs() == PROFILES["legacy"].knobs
    assert legacy.periods[0] == "2020Q1"


def test_the_default_profile_writes_faers_2004s_shape_from_2020q1(tmp_path):
    """The default (issue 42) is faers-2004's calibration under another first quarter: the same
    seed writes the same records, only the quarters' labels differ."""
    plain = write_faers_series(tmp_path / "plain", periods=3, cases=200, seed=11)
    write_faers_series(tmp_path / "named", periods=3, cases=200, seed=11, start="2004Q1",
                       profile="faers-2004")
    assert plain.profile == "default" and plain.periods[0] == "2020Q1"
    assert plain.knobs == PROFILES["default"].knobs == PROFILES["faers-2004"].knobs
    assert _digest(tmp_path / "plain") != LEGACY_DIGEST
    first = Dataset.from_faers(tmp_path / "plain", keep_missing=True)
    second = Dataset.from_faers(tmp_path / "named", keep_missing=True)
    for a, b in zip(first.periods, second.periods):
        x, y = first.records(a), second.records(b)
        assert len(x) == len(y)
        for column in ("case_id", "age", "sex", "weight", "reactions", "indications"):
            assert x[column].astype(str).tolist() == y[column].astype(str).tolist(), column


#: sampling error of a term share near 21% over about 1,050 filtered cases: 2 × √(p(1-p)/n)
SHARE_MARGIN = 0.025


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_faers_2004_has_the_term_shares_of_001(tmp_path, seed):
    """001: its lowest largest term shares are 8.1% (2006Q4) and 9.1% (2010Q1), the surge
    quarters 18.9-22.5% (2007Q1, 2010Q3); about 10% of a filtered quarter's cases are
    follow-ups."""
    write_faers_series(tmp_path / "s", periods=8, cases=1500, seed=seed, profile="faers-2004")
    rows = _shape(tmp_path / "s")
    tops = [r["top"] for r in rows]
    assert max(tops) <= 0.225 + SHARE_MARGIN
    ordinary = [t for t in tops if t < 0.18]
    assert len(ordinary) >= 5, tops  # a surge episode lasts at most 2 quarters
    assert 0.075 <= statistics.median(ordinary) <= 0.12, tops
    followups = [r["followups"] for r in rows[1:]]
    assert 0.07 <= statistics.mean(followups) <= 0.13, followups
    assert rows[0]["followups"] == 0
    assert all(900 <= r["cases"] <= 1200 for r in rows)  # the filter keeps about 70%


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_faers_2004_has_001s_surge_quarters(tmp_path, seed):
    """001's 32 quarters hold 4 where one term is in 19-22.5% of cases (2006Q1, 2006Q2, 2007Q1
    and 2010Q3); a 32 x 800 series has 2-8 quarters with a term in >= 18% of its cases, none
    above 22.5% plus the sampling error of 560 filtered cases (2 × 1.7 points)."""
    write_faers_series(tmp_path / "s", periods=32, cases=800, seed=seed, profile="faers-2004")
    tops = [r["top"] for r in _shape(tmp_path / "s")]
    surges = [t for t in tops if t >= 0.18]
    assert 2 <= len(surges) <= 8, tops
    assert max(tops) <= 0.225 + 0.035, tops
    assert statistics.median(tops) <= 0.12, tops


def test_surge_share_is_bounded():
    with pytest.raises(ValidationError, match=r"The 'shape.surge_share' parameter of SynthProfile "
                       r"'x' must be a number in \[0, 0.5\]"):
        SynthProfile(name="x", summary="", shape=SynthShape(surge_share=0.6))


def test_legacy_profile_is_far_more_concentrated_than_the_default(tmp_path):
    """Why the profiles exist, and why the default changed (issue 42): the legacy generator's
    top term is in about 40% of cases, the default's in 7-12% of an ordinary quarter's."""
    write_faers_series(tmp_path / "s", periods=3, cases=1500, seed=1, profile="legacy")
    assert min(r["top"] for r in _shape(tmp_path / "s")) > 0.3
    write_faers_series(tmp_path / "d", periods=3, cases=1500, seed=1)
    assert statistics.median(r["top"] for r in _shape(tmp_path / "d")) <= 0.12


def test_profile_sets_start_and_rates_and_explicit_rates_win(tmp_path):
    summary = write_faers_series(tmp_path / "a", periods=2, cases=60, seed=1, profile="faers-2014")
    assert summary.periods == ("2014Q3", "2014Q4") and summary.profile == "faers-2014"
    assert summary.knobs == PROFILES["faers-2014"].knobs
    mine = write_faers_series(tmp_path / "b", periods=2, cases=60, seed=1, profile="faers-2004",
                              start="2010Q1", followup_rate=0.3)
    assert mine.periods == ("2010Q1", "2010Q2")
    assert mine.knobs == replace(PROFILES["faers-2004"].knobs, followup_rate=0.3)
    assert mine.followups["2010Q2"] == 18
    own = SynthProfile(name="mine", summary="flat", shape=SynthShape(reaction_zipf=0.0))
    assert write_faers_series(tmp_path / "c", periods=1, cases=20, seed=1,
                              profile=own).profile == "mine"


def test_dataset_synthetic_faers_takes_a_profile(tmp_path):
    data = Dataset.synthetic_faers(tmp_path / "f", periods=1, cases=50, seed=1,
                                   profile="faers-2014")
    assert data.periods == ["2014Q3"]


def test_every_profile_number_has_a_source():
    for profile in PROFILES.values():
        if profile.name == "legacy":
            continue
        changed = {name for name, value in vars(profile.knobs).items()
                   if value != getattr(SynthKnobs(), name)}
        changed |= {name for name, value in vars(profile.shape).items()
                    if value != getattr(SynthShape(), name)}
        assert changed - set(profile.sources) == set(), profile.name
        assert "start" in profile.sources
    doc = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text()
    assert all(f"`{name}`" in doc for name in PROFILES)


@pytest.mark.parametrize("make, message", [
    (lambda: SynthProfile(name="x", summary="", knobs=SynthKnobs(followup_rate=0.95)),
     "The 'followup_rate' parameter of SynthProfile 'x' must be a number in [0, 0.9]"),
    (lambda: SynthProfile(name="x", summary="", shape=SynthShape(reaction_zipf=-1)),
     "The 'shape.reaction_zipf' parameter of SynthProfile 'x' must be a number in [0, 5]"),
    (lambda: SynthProfile(name="x", summary="", shape=SynthShape(unknown_indication=2)),
     "The 'shape.unknown_indication' parameter of SynthProfile 'x' must be a number in [0, 1]"),
    (lambda: SynthProfile(name="x", summary="", sources={"colour": "?"}),
     "The 'sources' parameter of SynthProfile 'x' names no knob: colour"),
    (lambda: SynthProfile(name="x", summary="", start="2004Q9"), "Period label '2004Q9'"),
])
def test_profiles_are_validated(make, message):
    with pytest.raises(ValidationError) as err:
        make()
    assert str(err.value).startswith(message)


def test_unknown_profile_is_refused_and_writes_nothing(tmp_path):
    with pytest.raises(ValidationError, match=r"^The 'profile' parameter of write_faers_series "
                       r"must be one of default, legacy, faers-2004, faers-2014, faers-current; "
                       r"got 'faers-2040'\.$"):
        write_faers_series(tmp_path / "out", profile="faers-2040")
    assert not (tmp_path / "out").exists()


def test_cli_profile_option(tmp_path):
    result = invoke_cli("synth", "faers", tmp_path / "s", "--profile", "faers-2004", "--periods",
                        "2", "--cases", "50", "--seed", "4", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["profile"] == "faers-2004" and summary["periods"] == ["2004Q1", "2004Q2"]
    assert summary["settings"]["followup_rate"] == 0.1
    # an option still overrides the profile's rate
    result = invoke_cli("synth", "faers", tmp_path / "t", "--profile", "faers-2004", "--periods",
                        "1", "--cases", "20", "--seed", "4", "--missing-age", "0.5", "--json")
    assert json.loads(result.stdout)["settings"]["missing_age"] == 0.5
    refused = invoke_cli("synth", "faers", tmp_path / "u", "--profile", "faers2004", "--seed", "1")
    assert_user_error(refused, "ValidationError", "--profile must be one of default, legacy, faers-2004")
    assert not (tmp_path / "u").exists()


def test_cli_without_profile_writes_the_default(tmp_path):
    invoke_cli("synth", "faers", tmp_path / "a", "--periods", "3", "--cases", "200", "--seed", "11")
    invoke_cli("synth", "faers", tmp_path / "b", "--periods", "3", "--cases", "200", "--seed", "11",
               "--profile", "default")
    write_faers_series(tmp_path / "c", periods=3, cases=200, seed=11)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b") == _digest(tmp_path / "c")
    invoke_cli("synth", "faers", tmp_path / "d", "--periods", "3", "--cases", "200", "--seed", "11",
               "--profile", "legacy")
    assert _digest(tmp_path / "d") == LEGACY_DIGEST


def _subset_table(name: str) -> pd.DataFrame:
    with zipfile.ZipFile(FAERS_2022Q4_SUBSET) as z:
        text = z.read(f"ASCII/{name}22Q4.txt").decode("latin-1")
    return pd.read_csv(io.StringIO(text), sep="$", dtype=str, keep_default_na=False,
                       index_col=False)


@needs_shared
def test_faers_current_is_calibrated_on_the_2022Q4_subset(tmp_path):
    """The figures docs/data.md cites, measured again on the subset, and the profile's series."""
    demo, indi = _subset_table("DEMO"), _subset_table("INDI")
    missing_age, missing_weight = (demo["age"] == "").mean(), (demo["wt"] == "").mean()
    unknown = indi.loc[indi["indi_pt"] == UNKNOWN, "primaryid"].nunique()
    assert (len(demo), (demo["age"] == "").sum(), (demo["wt"] == "").sum()) == (258, 57, 162)
    assert (indi["primaryid"].nunique(), unknown) == (97, 38)  # reports with an INDI row
    profile = PROFILES["faers-current"]
    assert missing_age == pytest.approx(profile.knobs.missing_age, abs=0.01)
    assert missing_weight == pytest.approx(profile.knobs.missing_weight, abs=0.01)
    summary = write_faers_series(tmp_path / "s", periods=2, cases=1500, seed=3,
                                 profile="faers-current")
    folder = tmp_path / "s" / summary.periods[0]
    written = pd.read_csv(folder / "INDI22Q4.txt", sep="$", dtype=str, keep_default_na=False,
                          index_col=False, encoding="latin-1")
    share = written.loc[written["indi_pt"] == UNKNOWN, "primaryid"].nunique() \
        / written["primaryid"].nunique()
    assert share == pytest.approx(unknown / 97, abs=0.04)
    written = pd.read_csv(folder / "DEMO22Q4.txt", sep="$", dtype=str, keep_default_na=False,
                          index_col=False, encoding="latin-1")
    assert (written["wt"] == "").mean() == pytest.approx(missing_weight, abs=0.04)
    assert (written["age"] == "").mean() == pytest.approx(missing_age, abs=0.04)
