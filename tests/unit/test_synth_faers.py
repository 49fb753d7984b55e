"""Tests of the synthetic FAERS series generator (medanon.data.synth.faers)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.data.loaders.faers import read_faers
from medanon.data.synth import terms
from medanon.data.synth.faers import (PLANTED_SIGNALS, SignalRule, SynthSummary,
                                      write_faers_series)
from medanon.errors import ValidationError

TABLES = ("DEMO", "DRUG", "REAC", "INDI", "OUTC")
HEADERS = {
    "DEMO": "primaryid$caseid$caseversion$i_f_code$event_dt$mfr_dt$init_fda_dt$fda_dt$rept_cod$"
            "auth_num$mfr_num$mfr_sndr$lit_ref$age$age_cod$age_grp$sex$e_sub$wt$wt_cod$rept_dt$"
            "to_mfr$occp_cod$reporter_country$occr_country$",
    "DRUG": "primaryid$caseid$drug_seq$role_cod$drugname$prod_ai$val_vbm$route$dose_vbm$"
            "cum_dose_chr$cum_dose_unit$dechal$rechal$lot_num$exp_dt$nda_num$dose_amt$dose_unit$"
            "dose_form$dose_freq$",
    "REAC": "primaryid$caseid$pt$drug_rec_act$",
    "INDI": "primaryid$caseid$indi_drug_seq$indi_pt$",
    "OUTC": "primaryid$caseid$outc_cod$",
}
AGE_YEARS = {"YR": 1.0, "DEC": 10.0, "MON": 1 / 12, "WK": 7 / 365.2425, "DY": 1 / 365.2425}
PERIODS = 6
CASES = 2000


def _tag(label: str) -> str:
    return label[2:]


def _read(folder: Path, table: str) -> pd.DataFrame:
    frame = pd.read_csv(folder / f"{table}{_tag(folder.name)}.txt", sep="$", encoding="latin-1",
                        dtype=str, keep_default_na=False, index_col=False)
    # the trailing '$' of every line yields one empty unnamed column
    assert list(frame.columns[-1:]) == [f"Unnamed: {frame.shape[1] - 1}"]
    assert (frame.iloc[:, -1] == "").all()
    return frame.iloc[:, :-1]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "series"
    calls = []
    # the legacy generator (the default before issue 42): these tests pin its own rates and
    # shapes; the FAERS-like profiles (default among them) are tested from `structured` on
    summary = write_faers_series(out, periods=PERIODS, cases=CASES, seed=20240601,
                                 profile="legacy",
                                 progress=lambda done, total: calls.append((done, total)))
    tables = {}
    for label in summary.periods:
        tables[label] = {t: _read(out / label, t) for t in TABLES}
    return summary, tables, calls


@pytest.fixture(scope="module")
def ingest(series):
    return read_faers(series[0].out)


def test_summary_and_progress(series):
    summary, tables, calls = series
    assert isinstance(summary, SynthSummary)
    assert summary.periods == ("2020Q1", "2020Q2", "2020Q3", "2020Q4", "2021Q1", "2021Q2")
    assert summary.seed == 20240601 and summary.seeded
    assert calls == [(i + 1, PERIODS) for i in range(PERIODS)]
    assert summary.signals == PLANTED_SIGNALS
    for label, frames in tables.items():
        demo = frames["DEMO"]
        assert summary.reports[label] == len(demo)
        assert summary.cases[label] == demo["caseid"].nunique() == CASES
        assert summary.reports[label] > summary.cases[label]  # in-quarter second versions


def test_layout_names_headers_crlf_latin1(series):
    summary, _, _ = series
    assert sorted(p.name for p in summary.out.iterdir()) == list(summary.periods)
    all_bytes = b""
    for label in summary.periods:
        folder = summary.out / label
        names = {p.name for p in folder.iterdir()}
        expected = {f"{t}{_tag(label)}.txt" for t in TABLES}
        assert expected <= names
        assert names - expected <= {f"DELETE{_tag(label)}.txt"}
        assert (f"DELETE{_tag(label)}.txt" in names) == (summary.deleted[label] > 0)
        for table in TABLES:
            raw = (folder / f"{table}{_tag(label)}.txt").read_bytes()
            all_bytes += raw
            assert raw.endswith(b"$\r\n")
            assert raw.count(b"\n") == raw.count(b"\r\n") and raw.count(b"\r") == raw.count(b"\r\n")
            lines = raw.decode("latin-1").split("\r\n")[:-1]
            assert lines[0] == HEADERS[table]
            fields = HEADERS[table].count("$")
            assert all(line.endswith("$") and line.count("$") == fields for line in lines)
    # Latin-1, not UTF-8: é (0xE9) is a single byte.
    assert b"\xe9" in all_bytes
    with pytest.raises(UnicodeDecodeError):
        all_bytes.decode("utf-8")
    text = all_bytes.decode("latin-1")
    assert "PARACÉTAMOL" in text and "Laboratoires Génévrier" in text


def test_delete_files(series):
    summary, tables, _ = series
    seen: set[str] = set()
    total = 0
    for label in summary.periods:
        seen |= set(tables[label]["DEMO"]["caseid"])
        path = summary.out / label / f"DELETE{_tag(label)}.txt"
        if path.exists():
            raw = path.read_bytes().decode("latin-1")
            ids = re.findall(r"^(\d{8})\$\r$", raw, flags=re.M)
            assert len(ids) == summary.deleted[label] == raw.count("\r\n")
            assert set(ids) <= seen  # withdrawn cases were published earlier or now
            total += len(ids)
    assert 0 < total < 0.01 * PERIODS * CASES


def test_reader_ingests_series(series, ingest):
    summary, _, _ = series
    assert [q.period.label for q in ingest.quarters] == list(summary.periods)
    assert len(ingest.deleted_case_ids) == sum(summary.deleted.values())
    for quarter in ingest.quarters:
        report = quarter.report
        assert quarter.era == "faers-2014"
        assert sum(report.repaired_split_lines.values()) == 0
        assert sum(report.repaired_embedded_separators.values()) == 0
        assert report.implausible == {"age": 0, "weight": 0}
        assert report.superseded_reports > 0
        assert report.reports > 0.6 * report.reports_read  # most reports complete
        assert report.missing["reactions"] == 0


def test_same_seed_identical_different_seed_differs(tmp_path):
    def files(out):
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.txt"))}
    a = write_faers_series(tmp_path / "a", periods=3, cases=300, seed=7)
    b = write_faers_series(tmp_path / "b", periods=3, cases=300, seed=7)
    c = write_faers_series(tmp_path / "c", periods=3, cases=300, seed=8)
    assert files(a.out) == files(b.out)
    assert a.reports == b.reports and a.followups == b.followups
    fa, fc = files(a.out), files(c.out)
    assert fa["2020Q1/DEMO20Q1.txt"] != fc["2020Q1/DEMO20Q1.txt"]
    assert fa["2020Q3/REAC20Q3.txt"] != fc["2020Q3/REAC20Q3.txt"]


def test_unseeded_run_reports_its_seed(tmp_path):
    summary = write_faers_series(tmp_path / "x", periods=1, cases=50, start="2019Q4")
    assert not summary.seeded and 0 <= summary.seed < 2**63
    assert summary.periods == ("2019Q4",)
    again = write_faers_series(tmp_path / "y", periods=1, cases=50, start="2019Q4", seed=summary.seed)
    assert (again.out / "2019Q4" / "DEMO19Q4.txt").read_bytes() == \
        (summary.out / "2019Q4" / "DEMO19Q4.txt").read_bytes()


def test_followup_share_gaps_and_versions(series):
    summary, tables, _ = series
    seen: dict[str, int] = {}            # caseid -> last version seen in an earlier period
    appearances: dict[str, list[int]] = {}
    for p, label in enumerate(summary.periods):
        demo = tables[label]["DEMO"]
        ids = set(demo["caseid"])
        share = len(ids & seen.keys()) / len(ids)
        if p == 0:
            assert share == 0
        else:
            assert 0.15 <= share <= 0.20, (label, share)
            assert summary.followups[label] == len(ids & seen.keys())
        version = demo["caseversion"].astype(int)
        for cid, v in zip(demo["caseid"], version):
            if cid in seen and p > 0 and appearances[cid][-1] != p:
                assert v > seen[cid]  # a follow-up raises caseversion
        latest = demo.assign(v=version).groupby("caseid")["v"].max()
        for cid, v in latest.items():
            seen[cid] = v
            appearances.setdefault(cid, [])
            if not appearances[cid] or appearances[cid][-1] != p:
                appearances[cid].append(p)
    gaps = [a for a in appearances.values() if len(a) > 1 and np.any(np.diff(a) > 1)]
    assert len(gaps) > 20  # cases that skip a quarter and come back
    lifespan = 4
    assert all(a[-1] - a[0] <= lifespan for a in appearances.values())


def test_demo_fields(series):
    summary, tables, _ = series
    for label in summary.periods:
        demo = tables[label]["DEMO"]
        assert demo["caseid"].str.fullmatch(r"[1-9]\d{7}").all()
        assert (demo["primaryid"] == demo["caseid"] + demo["caseversion"]).all()
        first = demo["caseversion"] == "1"
        assert (demo.loc[first, "i_f_code"] == "I").all()
        assert (demo.loc[~first, "i_f_code"] == "F").all()
        year, quarter = int(label[:4]), int(label[-1])
        low, high = f"{year}{3 * quarter - 2:02d}01", f"{year}{3 * quarter:02d}31"
        for col in ("fda_dt", "rept_dt"):
            assert demo[col].between(low, high).all()
        mfr = demo["mfr_dt"][demo["mfr_dt"] != ""]
        assert mfr.between(low, high).all()
        assert (demo["event_dt"][demo["event_dt"] != ""] <= demo["fda_dt"][demo["event_dt"] != ""]).all()
        assert set(demo["sex"]) <= {"F", "M", "UNK", ""}
        assert 0.005 < demo["sex"].isin(["UNK", ""]).mean() < 0.05
        # age: empty together with its code, consistent units, 0-100 years
        assert ((demo["age"] == "") == (demo["age_cod"] == "")).all()
        assert 0.04 < (demo["age"] == "").mean() < 0.12
        shown = demo[demo["age"] != ""]
        years = shown["age"].astype(float) * shown["age_cod"].map(AGE_YEARS)
        assert years.between(0, 100).all()
        assert (shown["age_cod"] == "YR").mean() > 0.85
        assert (shown.loc[shown["age_cod"] == "MON", "age"].astype(int) < 24).all()
        # weight: empty together with its code, ~10% pounds, 0.5-200 kg
        assert ((demo["wt"] == "") == (demo["wt_cod"] == "")).all()
        assert 0.14 < (demo["wt"] == "").mean() < 0.26
        wt = demo[demo["wt"] != ""]
        kg = wt["wt"].astype(float) * wt["wt_cod"].map({"KG": 1.0, "LBS": 0.45359237})
        assert kg.between(0.5, 200).all()
        assert 0.05 < (wt["wt_cod"] == "LBS").mean() < 0.16
    # weights follow age: adults weigh more than infants
    demo = tables[summary.periods[0]]["DEMO"]
    both = demo[(demo["wt"] != "") & (demo["age"] != "")]
    years = both["age"].astype(float) * both["age_cod"].map(AGE_YEARS)
    kg = both["wt"].astype(float) * both["wt_cod"].map({"KG": 1.0, "LBS": 0.45359237})
    assert kg[years < 2].mean() < 15 < 50 < kg[years >= 18].mean()


def test_same_quarter_second_versions(series):
    summary, tables, _ = series
    for label in summary.periods:
        frames = tables[label]
        demo = frames["DEMO"]
        counts = demo["caseid"].value_counts()
        twice = counts[counts == 2].index
        assert counts.max() == 2
        assert 0.01 < len(twice) / CASES < 0.035
        pairs = demo[demo["caseid"].isin(twice)].assign(v=lambda d: d["caseversion"].astype(int))
        spread = pairs.groupby("caseid")["v"].agg(lambda v: v.max() - v.min())
        assert (spread == 1).all()
        # each version has its own DRUG and REAC rows
        assert set(pairs["primaryid"]) <= set(frames["DRUG"]["primaryid"])
        assert set(pairs["primaryid"]) <= set(frames["REAC"]["primaryid"])


def test_row_counts_and_heavy_tail(series):
    summary, tables, _ = series
    demo = pd.concat([f["DEMO"] for f in tables.values()])
    reac = pd.concat([f["REAC"] for f in tables.values()])
    drug = pd.concat([f["DRUG"] for f in tables.values()])
    indi = pd.concat([f["INDI"] for f in tables.values()])
    n = len(demo)
    assert 3.0 < len(reac) / n < 3.8
    assert 4.0 < len(drug) / n < 4.8
    assert 2.6 < len(indi) / n < 3.4
    per = reac.groupby("primaryid").size()
    assert per.isin([1, 2, 3]).mean() > 0.6
    assert per.between(10, 20).sum() > 0.02 * n and per.max() <= 25
    assert 0.015 < 1 - demo["primaryid"].isin(indi["primaryid"]).mean() < 0.05
    assert demo["primaryid"].isin(reac["primaryid"]).all()
    assert demo["primaryid"].isin(drug["primaryid"]).all()


def test_drug_and_indication_rows_consistent(series):
    summary, tables, _ = series
    for label in summary.periods:
        drug, indi = tables[label]["DRUG"], tables[label]["INDI"]
        seq = drug.groupby("primaryid")["drug_seq"].apply(lambda s: list(s.astype(int)))
        assert all(v == list(range(1, len(v) + 1)) for v in seq)
        assert (drug.groupby("primaryid")["role_cod"].first() == "PS").all()
        keys = set(zip(drug["primaryid"], drug["drug_seq"]))
        assert all(k in keys for k in zip(indi["primaryid"], indi["indi_drug_seq"]))
        assert not drug.duplicated(["primaryid", "drugname"]).any()
        assert set(drug["dechal"]) <= {"", "Y", "N", "U", "D"}


def test_stopped_cases_never_return(series):
    summary, tables, _ = series
    stopped: set[str] = set()
    with_y = 0
    for label in summary.periods:
        frames = tables[label]
        ids = set(frames["DEMO"]["caseid"])
        assert not ids & stopped
        y = set(frames["DRUG"].loc[frames["DRUG"]["dechal"] == "Y", "caseid"])
        with_y += len(y)
        stopped |= y
    assert with_y > 0.3 * CASES * PERIODS * 0.8  # many cases stop treatment


def test_zipf_terms_and_rare_events(series):
    summary, tables, _ = series
    assert len(terms.REACTIONS) >= 150 and len(terms.INDICATIONS) >= 60
    assert len(terms.DRUGS) >= 100
    names = [d[0] for d in terms.DRUGS]
    assert {"AVANDIA", "ZELNORM", "WARFARIN"} <= set(names) and len(set(names)) == len(names)
    indications = {t for t, _ in terms.INDICATIONS}
    assert all(d[2] in indications for d in terms.DRUGS)
    reac = pd.concat([f["REAC"] for f in tables.values()])
    counts = reac["pt"].value_counts()
    assert counts.index[0] == "Drug ineffective"
    assert counts.iloc[0] > 10 * counts.median()
    drugs = pd.concat([f["DRUG"] for f in tables.values()])["drugname"].value_counts()
    assert drugs.iloc[0] > 5 * drugs.median()
    for term in terms.RARE_REACTIONS:
        cases = reac.loc[reac["pt"] == term, "caseid"].nunique()
        assert 1 <= cases <= 6, (term, cases)


def test_sex_and_age_restricted_terms(series):
    summary, tables, _ = series
    restriction = dict(terms.REACTIONS)
    male = {t for t, r in restriction.items() if r == "M"}
    pregnancy = {t for t, r in restriction.items() if r == "FP"}
    rows = []
    for frames in tables.values():
        rows.append(frames["REAC"].merge(frames["DEMO"][["primaryid", "sex", "age", "age_cod"]],
                                         on="primaryid"))
    reac = pd.concat(rows)
    prostate = reac[reac["pt"].isin(male)]
    preg = reac[reac["pt"].isin(pregnancy)]
    assert len(prostate) > 0 and len(preg) > 0
    assert (prostate["sex"] != "F").all()
    assert (preg["sex"] != "M").all()
    shown = preg[preg["age"] != ""]
    years = shown["age"].astype(float) * shown["age_cod"].map(AGE_YEARS)
    assert years.between(15, 45).all()


def _prr(records: pd.DataFrame, drug: str, reaction: str) -> tuple[float, int]:
    has_drug = records["drugs"].map(lambda d: drug in d)
    has_reac = records["reactions"].map(lambda r: reaction in r)
    a = int((has_drug & has_reac).sum())
    rate_drug = a / max(1, int(has_drug.sum()))
    rate_other = int((~has_drug & has_reac).sum()) / max(1, int((~has_drug).sum()))
    return (rate_drug / rate_other if rate_other else float("inf")), a


def _meets(rule: SignalRule, records: pd.DataFrame) -> pd.Series:
    if rule.attribute == "age":
        return records["age_years"] > float(rule.value)
    return records["sex"] == rule.value


def test_planted_signals(ingest):
    assert {(r.drug, r.condition, r.reaction) for r in PLANTED_SIGNALS} >= {
        ("AVANDIA", "age > 18", "Myocardial infarction"),
        ("ZELNORM", "sex = F", "Cerebrovascular accident"),
        ("WARFARIN", "age > 60", "Myocardial infarction")}
    assert len(PLANTED_SIGNALS) >= 5
    records = pd.concat([q.records for q in ingest.quarters], ignore_index=True)
    for rule in PLANTED_SIGNALS:
        meets = _meets(rule, records)
        prr, a = _prr(records[meets], rule.drug, rule.reaction)
        assert prr >= 2 and a >= 3 * len(ingest.quarters), (rule, prr, a)
        for quarter in ingest.quarters:
            q = quarter.records
            assert _prr(q[_meets(rule, q)], rule.drug, rule.reaction)[1] >= 3, (rule, quarter.period)
    # Outside the condition the drug gives the reaction only at the background rate.
    zelnorm = next(r for r in PLANTED_SIGNALS if r.drug == "ZELNORM")
    men = records[records["sex"] == "M"]
    has_drug = men["drugs"].map(lambda d: "ZELNORM" in d)
    rate = men.loc[has_drug, "reactions"].map(lambda r: zelnorm.reaction in r).mean()
    women = records[records["sex"] == "F"]
    has_drug_f = women["drugs"].map(lambda d: "ZELNORM" in d)
    rate_f = women.loc[has_drug_f, "reactions"].map(lambda r: zelnorm.reaction in r).mean()
    assert rate < 0.06 < 0.2 < rate_f


@pytest.mark.parametrize("kwargs, message", [
    ({"periods": 0}, "The 'periods' parameter of write_faers_series must be an integer >= 1; got 0."),
    ({"periods": 2.5}, "The 'periods' parameter of write_faers_series must be an integer >= 1; got 2.5."),
    ({"cases": 0}, "The 'cases' parameter of write_faers_series must be an integer >= 1; got 0."),
    ({"lifespan": 0}, "The 'lifespan' parameter of write_faers_series must be an integer >= 1; got 0."),
    ({"seed": -1}, "The 'seed' parameter of write_faers_series must be an integer >= 0; got -1."),
    ({"seed": "abc"}, "The 'seed' parameter of write_faers_series must be an integer >= 0; got 'abc'."),
    ({"followup_rate": 1.5},
     "The 'followup_rate' parameter of write_faers_series must be a number in [0, 0.9]; got 1.5."),
    ({"missing_weight": -0.1},
     "The 'missing_weight' parameter of write_faers_series must be a number in [0, 1]; got -0.1."),
    ({"signal_probability": True},
     "The 'signal_probability' parameter of write_faers_series must be a number in [0, 1]"),
    ({"start": "2020Q5"}, "Period label '2020Q5' does not parse"),
])
def test_validation_errors(tmp_path, kwargs, message):
    with pytest.raises(ValidationError) as err:
        write_faers_series(tmp_path / "out", **kwargs)
    assert str(err.value).startswith(message)
    assert not (tmp_path / "out").exists()


def test_refuses_to_overwrite_or_mix(tmp_path):
    out = tmp_path / "series"
    out.mkdir()  # an existing empty folder is fine
    write_faers_series(out, periods=2, cases=40, seed=1)
    before = {p: p.read_bytes() for p in out.rglob("*.txt")}
    with pytest.raises(ValidationError, match=r"The 'out' parameter of write_faers_series .*2020Q2"):
        write_faers_series(out, periods=2, cases=40, seed=2, start="2020Q2")
    assert {p: p.read_bytes() for p in out.rglob("*.txt")} == before
    assert not (out / "2020Q3").exists()
    # later quarters in the same folder do not clash
    write_faers_series(out, periods=1, cases=40, seed=3, start="2020Q3")
    assert (out / "2020Q3" / "DEMO20Q3.txt").exists()
    file = tmp_path / "file.txt"
    file.write_text("x")
    with pytest.raises(ValidationError, match="must be a directory"):
        write_faers_series(file, periods=1, cases=10, seed=1)


def test_generator_knobs_change_what_they_name(tmp_path):
    """--follow-up-rate and the missingness and signal knobs move their own figures only."""
    low = write_faers_series(tmp_path / "low", periods=4, cases=1500, seed=7, followup_rate=0.05,
                             missing_weight=0.0, missing_age=0.5, signal_probability=0.0)
    high = write_faers_series(tmp_path / "high", periods=4, cases=1500, seed=7, followup_rate=0.4)
    assert low.knobs.followup_rate == 0.05 and high.knobs.as_dict()["followup_rate"] == 0.4
    for later in low.periods[1:]:
        assert abs(low.followups[later] - 75) <= 1
        assert high.followups[later] > 4 * low.followups[later]
    records = pd.concat([q.records for q in read_faers(low.out, keep_missing=True).quarters])
    assert records["weight"].notna().all()
    assert 0.4 < records["age_years"].isna().mean() < 0.6
    default = pd.concat([q.records for q in read_faers(high.out, keep_missing=True).quarters])
    assert 0.05 < default["weight"].isna().mean() < 0.35
    # the same series with no planted signal: each rule's drug-reaction count falls to the
    # background (the signal adds 0.4 of the condition's users on top of it)
    quiet = write_faers_series(tmp_path / "quiet", periods=4, cases=1500, seed=7,
                               followup_rate=0.4, signal_probability=0.0)
    plain = pd.concat([q.records for q in read_faers(quiet.out, keep_missing=True).quarters])
    for rule in PLANTED_SIGNALS:
        _, with_signal = _prr(default[_meets(rule, default)], rule.drug, rule.reaction)
        _, without = _prr(plain[_meets(rule, plain)], rule.drug, rule.reaction)
        assert without < with_signal / 2, (rule, without, with_signal)


# -- faers-2004: FAERS's structure (issue 42) -------------------------------------------------
@pytest.fixture(scope="module")
def structured(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "faers-2004"
    summary = write_faers_series(out, periods=4, cases=2000, seed=5, profile="faers-2004")
    records = pd.concat([q.records for q in read_faers(summary.out, keep_missing=True).quarters],
                        ignore_index=True)
    return summary, records


def _contrast_any(records: pd.DataFrame, exposed: pd.Series, reactions) -> tuple[float, float]:
    """(ratio, z) of the share of reports with any of ``reactions`` among exposed vs other
    reports (two-proportion z)."""
    has = records["reactions"].map(lambda r: any(x in r for x in reactions))
    n1, n0 = int(exposed.sum()), int((~exposed).sum())
    p1, p0 = has[exposed].mean(), has[~exposed].mean()
    pooled = has.mean()
    return p1 / p0, (p1 - p0) / np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))


@pytest.mark.parametrize("name", ["anticoagulant", "statin", "TNF inhibitor", "antipsychotic"])
def test_faers_2004_class_effects_beyond_sampling_error(structured, name):
    """A class's effects are in a larger share of the reports listing one of its drugs than of
    the other reports, by far more than sampling error (z > 4: independent draws, as the default
    profile makes, exceed it once in 30,000 tests)."""
    _, records = structured
    drugs, effects = next((d, e) for c, d, e in terms.DRUG_CLASSES if c == name)
    exposed = records["drugs"].map(lambda d: any(x in d for x in drugs))
    ratio, z = _contrast_any(records, exposed, effects)
    assert ratio > 1.5 and z > 4, (ratio, z)


@pytest.mark.parametrize("indication", ["Type 2 diabetes mellitus", "Rheumatoid arthritis",
                                        "Depression", "Multiple sclerosis"])
def test_faers_2004_confounding_by_indication(structured, indication):
    """The disease's own events are reported more often by the patients treated for it,
    beyond sampling error, whatever their drugs."""
    _, records = structured
    events = next(e for group, e in terms.INDICATION_EVENTS if indication in group)
    exposed = records["indications"].map(lambda i: indication in i)
    ratio, z = _contrast_any(records, exposed, events)
    assert ratio > 1.5 and z > 4, (ratio, z)


@pytest.mark.slow
def test_faers_2004_relative_reporting_ratios_are_heterogeneous(structured, tmp_path):
    """Over pairs with E >= 5 (drug × reaction, reports of the series), (n - E)/√E has variance
    about 1 when every non-planted pair has λ = 1 (Poisson noise only: the legacy profile) and
    far more when reporting ratios vary (what gives the MGPS prior a finite maximum)."""
    from medanon.metrics.disproportionality import pair_counts

    def dispersion(records: pd.DataFrame) -> float:
        rows = pd.DataFrame({"drugs": records["drugs"].map("|".join),
                             "reactions": records["reactions"].map("|".join)})
        table = pair_counts(rows)
        planted = {(r.drug, r.reaction) for r in PLANTED_SIGNALS}
        keep = (table["e"] >= 5) & ~pd.Series(list(zip(table["drug"], table["reaction"]))).isin(planted)
        n, e = table.loc[keep, "n"].to_numpy(float), table.loc[keep, "e"].to_numpy(float)
        return float(np.var((n - e) / np.sqrt(e)))

    _, records = structured
    plain = write_faers_series(tmp_path / "plain", periods=4, cases=2000, seed=5,
                               profile="legacy")
    independent = pd.concat([q.records for q in read_faers(plain.out, keep_missing=True).quarters],
                            ignore_index=True)
    assert dispersion(independent) < 2 < 5 < dispersion(records)


def test_faers_2004_planted_signals_still_stand_out(structured):
    """Each rule's drug-reaction PRR among the reports meeting its condition stays >= 2 over
    the classes and indications that now shape every drug's reactions."""
    summary, records = structured
    for rule in PLANTED_SIGNALS:
        prr, a = _prr(records[_meets(rule, records)], rule.drug, rule.reaction)
        assert prr >= 2 and a >= 3 * len(summary.periods), (rule, prr, a)


def test_faers_2004_same_seed_same_files(tmp_path):
    for name in ("a", "b"):
        write_faers_series(tmp_path / name, periods=3, cases=300, seed=9, profile="faers-2004")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.txt"))
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
                         for f in files)
    write_faers_series(tmp_path / "c", periods=3, cases=300, seed=10, profile="faers-2004")
    assert any((tmp_path / "a" / f).read_bytes() != (tmp_path / "c" / f).read_bytes() for f in files)


def test_the_default_profile_is_faers_like():
    """Issue 42: the default is FAERS as a user knows it (faers-2004's calibrated shape and
    rates, drug-dependent reactions, surge quarters), not the legacy 40% top term."""
    from medanon.data.synth.profiles import PROFILES

    default, calibrated, legacy = PROFILES["default"], PROFILES["faers-2004"], PROFILES["legacy"]
    assert default.shape == calibrated.shape and default.shape.dependent
    assert default.shape.surge_rate > 0
    assert default.knobs == calibrated.knobs and default.knobs.followup_rate == 0.10
    assert default.start == legacy.start == "2020Q1"
    assert not legacy.shape.dependent and legacy.knobs.followup_rate == 0.18
