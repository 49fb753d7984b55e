"""issue 22, item 3: ``medanon export --format faers`` of every periodic method writes FAERS files
that ``medanon ingest`` reads back, carrying what the FAERS columns can carry of the release.

Each method publishes a small synthetic series; its FAERS export is ingested into a new store
the way ``medanon ingest`` does it (``Dataset.stream_faers`` + ``ReleaseStore.ingest``, missing
values kept: most generalized ages and weights have no FAERS number and come back missing, and
the papers' drop would empty the quarters). The checks that need the loader to read DRUG
``role_cod`` and OUTC (branch ``pvfields``) skip while the ingested records lack those columns.

issue 29, item 4: a QID the manifest declares perturbed (PPMS-DP) leaves FDA's measured columns
empty, so ingest reads it back missing; its published cells are in the perturbed columns, and
the notes name them with the mechanism and epsilon each manifest declares. Which QIDs are
perturbed, and how, is read here by the privacy model (``medanon.models``), not by the writer.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from medanon.accounting import format_epsilon
from medanon.api import Dataset
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.models import model_from_manifest
from medanon.published.faers_layout import PERTURBED_COLUMNS, perturbed_qids
from medanon.published.format import read_manifest, read_series
from medanon.store import ReleaseStore
from tests.conftest import invoke_cli

COMMON = ["--k", "5", "--theta", "frequency", "--on-infeasible", "raise-theta", "--seed", "7",
          "--allow-seeded"]
METHODS = {
    "none": ["--seed", "7", "--allow-seeded", "--allow-unprotected"],
    "ms": COMMON, "ppms": COMMON, "ppms+": COMMON, "ppms++": COMMON,
    "ha": [*COMMON, "--alpha", "0.5", "--ss-rule", "reactions=6"],
    "ppms-dp-num": [*COMMON, "--epsilon", "1", "--domain", "weight=0:300"],
    "ppms-dp-all": [*COMMON, "--epsilon", "1", "--domain", "weight=0:300"],
}
ROLES = {"drugs_primary_suspect": "PS", "drugs_secondary_suspect": "SS",
         "drugs_concomitant": "C", "drugs_interacting": "I"}
FAERS_DEMO = ("primaryid caseid caseversion i_f_code event_dt mfr_dt init_fda_dt fda_dt rept_cod "
              "auth_num mfr_num mfr_sndr lit_ref age age_cod age_grp sex e_sub wt wt_cod rept_dt "
              "to_mfr occp_cod reporter_country occr_country").split()
# The MeSH age labels a FAERS age_grp gives back exactly: N, I and T stand for one leaf each.
ONE_LEAF_GROUPS = {"Newborn", "Infant (1-23 months)", "Adolescent"}
# FDA's measured DEMO columns of each QID, which stay empty when the QID is perturbed
MEASURED = {"age": ("age", "age_cod", "age_grp"), "sex": ("sex",), "weight": ("wt", "wt_cod")}
PERTURBED = {"age": ("age_perturbed", "age_grp_perturbed"), "sex": ("sex_perturbed",),
             "weight": ("wt_perturbed_kg",)}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faers-export")
    write_faers_series(folder / "in", periods=3, cases=200, seed=5)
    return folder


def _ingest(source, store):
    schema = Schema.default()
    with ReleaseStore.create_or_open(store, schema) as db:
        db.ingest(Dataset.stream_faers(source, schema=schema, keep_missing=True))


@pytest.fixture(scope="module", params=list(METHODS))
def exported(request, source):
    """(method, published series as read from the export, ingested records per period, folder)."""
    method = request.param
    folder = source / method.replace("+", "p")
    folder.mkdir()
    store, back = folder / "s.duckdb", folder / "back.duckdb"
    _ingest(source / "in", store)
    released = invoke_cli("release", "--store", store, "--method", method, *METHODS[method])
    assert released.returncode == 0, released.stderr
    out = folder / "faers"
    result = invoke_cli("export", "--store", store, "--out", out, "--format", "faers")
    assert result.returncode == 0, result.stderr
    _ingest(out, back)  # what `medanon ingest OUT` does: the export is accepted
    with ReleaseStore.open(store, read_only=True) as db:
        published = {p: db.release_rows(p) for p in db.published_periods()}
    with ReleaseStore.open(back, read_only=True) as db:
        assert db.ingested_periods() == list(published)
        ingested = {p: db.records(p).set_index("case_id") for p in published}
    return method, published, ingested, out


def _perturbations(out, period: str) -> dict:
    """QID -> (mechanism, epsilon) of each QID the exported manifest's model declares perturbed."""
    model = model_from_manifest(read_manifest(out / period), period)
    return {p.qid: (p.mechanism, p.epsilon) for p in getattr(model, "perturbations", ())}


def _terms(cell: str) -> set[str]:
    return {t.strip() for t in str(cell).split("|") if t.strip()}


def _faers_table(path) -> pd.DataFrame:
    # pandas' default encoding (UTF-8, issue 44): the synthetic names are not all ASCII
    frame = pd.read_csv(path, sep="$", dtype=str, keep_default_na=False)
    # FDA's layout (issue 32): no '$' after the last field, so no extra, unnamed column
    assert not any(str(c).startswith("Unnamed") for c in frame.columns), list(frame.columns)
    return frame


def test_the_export_holds_faers_files_and_the_release_itself(exported) -> None:
    method, published, _, out = exported
    series = {r.period: r.rows for r in read_series(out)}  # release.csv beside the FAERS files
    seen: dict[str, int] = {}
    for period, rows in published.items():
        pd.testing.assert_frame_equal(series[period].reset_index(drop=True),
                                      rows.astype(str).reset_index(drop=True))
        tag = period[2:4] + period[4:]
        demo = _faers_table(out / period / f"DEMO{tag}.txt")
        perturbed = _perturbations(out, period)
        assert bool(perturbed) == method.startswith("ppms-dp"), (method, perturbed)
        assert list(demo.columns) == [*FAERS_DEMO,
                                      *(c for q in PERTURBED if q in perturbed for c in PERTURBED[q])]
        side = _faers_table(out / period / f"MEDANON{tag}.txt")  # the weight band (issue 44)
        assert side[["primaryid", "caseid"]].equals(demo[["primaryid", "caseid"]])
        assert PERTURBED_COLUMNS == PERTURBED  # the documented names
        # the writer's reading of the manifest is the model's
        assert {q: (p.mechanism, float(Fraction(p.epsilon))) for q, p in
                perturbed_qids(read_manifest(out / period), period).items()} == {
            q: (m, float(e)) for q, (m, e) in perturbed.items()}
        for qid in perturbed:  # never in FDA's measured columns; as published in their own
            for column in MEASURED[qid]:
                assert set(demo[column]) == {""}, (method, column)
            if qid == "weight":
                assert set(side["wt_bin"]) == {""}
            assert list(demo[PERTURBED[qid][0]]) == [c.strip() for c in rows[qid]], (method, qid)
        assert list(demo["caseid"]) == list(rows["case_id"])
        # caseversion: the case's releases so far, from the published series only
        expected = [seen.get(c, 0) + 1 for c in rows["case_id"]]
        seen.update(zip(rows["case_id"], expected))
        assert list(demo["caseversion"]) == [str(v) for v in expected]
        assert list(demo["i_f_code"]) == ["I" if v == 1 else "F" for v in expected]
        assert (demo["primaryid"] == demo["caseid"] + demo["caseversion"]).all()
        assert demo["primaryid"].is_unique
        assert set(demo["age_grp"]) <= {"", "N", "I", "C", "T", "A", "E"}
        assert set(demo["age_cod"]) <= {""}  # the FAERS schema's ages are MeSH labels, no number
        assert set(demo["sex"]) <= {"", "F", "M"}
        numbers = demo["wt"] != ""
        assert (demo.loc[numbers, "wt_cod"] == "KG").all() and (demo.loc[~numbers, "wt_cod"] == "").all()
        assert not (numbers & (side["wt_bin"] != "")).any()
        if "weight" not in perturbed:  # a weight is a number in wt or a band in wt_bin
            assert list(numbers | (side["wt_bin"] != "")) == list(rows["weight"].str.strip() != "")
        assert all(math.isfinite(float(w)) for w in demo.loc[numbers, "wt"])
        outc = _faers_table(out / period / f"OUTC{tag}.txt")
        assert list(outc.columns) == ["primaryid", "caseid", "outc_cod"]
        drug = _faers_table(out / period / f"DRUG{tag}.txt")
        assert set(drug["role_cod"]) <= {"", "PS", "SS", "C", "I"}
        for _, seqs in drug.groupby("primaryid", sort=False)["drug_seq"]:
            assert list(seqs) == [str(i) for i in range(1, len(seqs) + 1)]
        notes = (out / period / "FAERS_NOTES.txt").read_text(encoding="utf-8")
        assert "caseversion" in notes and "never per case" in notes
        assert "the rule silently returns its older published version" in notes
        manifest = read_manifest(out / period)
        # the withheld count is operator-only (issue 41): no manifest and no note gives it
        assert "suppressed" not in manifest["counts"]
        assert "This release's manifest publishes no count of withheld cases." in notes
        assert ("RANDOMIZED VALUES" in notes) == bool(perturbed)
        for qid, (mechanism, epsilon) in perturbed.items():
            named = {"laplace": "Laplace mechanism", "exponential": "exponential mechanism"}
            line = next(x for x in notes.splitlines() if x.startswith(f"  - {PERTURBED[qid][0]} "))
            assert f": {named[mechanism]}, epsilon = {format_epsilon(epsilon)}" in line, line
        if method == "none":  # exact weights: every published one is a FAERS number
            assert list(numbers) == list(rows["weight"] != "")


def test_ingest_reads_back_terms_ages_sexes_weights_and_versions(exported) -> None:
    method, published, ingested, out = exported
    perturbed = {p: _perturbations(out, p) for p in published}
    seen: dict[str, int] = {}
    exact_ages = 0
    for period, rows in published.items():
        back = ingested[period]
        assert sorted(back.index) == sorted(rows["case_id"]), period  # one report per case
        for row in rows.itertuples(index=False):
            got = back.loc[row.case_id]
            version = seen.get(row.case_id, 0) + 1
            seen[row.case_id] = version
            assert int(got["version"]) == version
            for column in ("reactions", "indications", "drugs"):
                assert set(got[column]) == _terms(getattr(row, column)), (method, period, column)
            if "sex" in perturbed[period]:  # FDA's column empty: unknown, not randomized
                assert pd.isna(got["sex"]), (method, row.sex, got["sex"])
            elif row.sex in ("F", "M"):
                assert got["sex"] == row.sex
            else:
                assert pd.isna(got["sex"]), (method, row.sex, got["sex"])
            if "age" in perturbed[period]:
                assert pd.isna(got["age"]), (method, row.age, got["age"])
            elif row.age in ONE_LEAF_GROUPS:
                assert got["age"] == row.age
                exact_ages += 1
            else:  # no FAERS field holds it: C, A, E and the wider labels come back missing
                assert pd.isna(got["age"]), (method, row.age, got["age"])
            try:
                weight = float(row.weight)
            except ValueError:
                weight = math.nan  # an interval, '*' or empty: no FAERS number
            if not 0.2 <= weight <= 650 or "weight" in perturbed[period]:
                weight = math.nan  # implausible for the loader, or not in FDA's wt
            assert (math.isnan(got["weight"]) if math.isnan(weight)
                    else got["weight"] == pytest.approx(round(weight, 2)))
    if method == "none":  # ungeneralized leaves: the one-leaf groups do come back
        assert exact_ages > 0


def test_ingest_reads_back_drug_roles_and_outcomes(exported) -> None:
    """Needs the loader of branch pvfields (DRUG role_cod, OUTC): skipped before it."""
    method, published, ingested, out = exported
    some = next(iter(ingested.values()))
    if not set(ROLES) | {"outcomes"} <= set(some.columns):
        pytest.skip("the ingested records have no role or outcome columns (loader without "
                    "role_cod/OUTC)")
    for period, rows in published.items():
        back = ingested[period]
        for row in rows.to_dict(orient="records"):
            got = back.loc[row["case_id"]]
            for column in [*ROLES, "outcomes"]:
                assert set(got[column]) == _terms(row.get(column, "")), (method, period, column)


def test_drug_rows_carry_each_role_column_of_the_release(exported) -> None:
    """The DRUG file itself, read with pandas: one row per (drug, role) of the release."""
    _, published, _, out = exported
    for period, rows in published.items():
        tag = period[2:4] + period[4:]
        drug = _faers_table(out / period / f"DRUG{tag}.txt")
        outc = _faers_table(out / period / f"OUTC{tag}.txt")
        for row in rows.to_dict(orient="records"):
            mine = drug[drug["caseid"] == row["case_id"]]
            expected = {(name, code) for column, code in ROLES.items()
                        for name in _terms(row.get(column, ""))}
            roled = {name for name, _ in expected}
            expected |= {(name, "") for name in _terms(row["drugs"]) - roled}
            assert set(zip(mine["drugname"], mine["role_cod"])) == expected
            assert len(mine) == len(expected)
            codes = outc.loc[outc["caseid"] == row["case_id"], "outc_cod"]
            assert set(codes) == _terms(row.get("outcomes", "")) and codes.is_unique


def test_the_age_mapping_loses_no_one_leaf_group(exported) -> None:
    """Some published ages are generalized; each FAERS row's age_grp is the label's group (in
    age_grp_perturbed when age is perturbed, age_grp then empty)."""
    _, published, _, out = exported
    from medanon.hierarchies.builtin import faers_age_group

    for period, rows in published.items():
        demo = _faers_table(out / period / f"DEMO{period[2:4]}{period[4:]}.txt")
        expected = [(faers_age_group(a) or "") if a not in ("", "*") else "" for a in rows["age"]]
        if "age" in _perturbations(out, period):
            assert list(demo["age_grp_perturbed"]) == expected
            assert set(demo["age_grp"]) == {""}
        else:
            assert list(demo["age_grp"]) == expected
        assert np.all(demo["age"] == "")


# -- the column contract (issue 29) ----------------------------------------------------------------
def test_every_exported_column_has_a_role_in_the_model(exported) -> None:
    """Every column of every export (csv, parquet, FAERS files) of every method has a role in
    the manifest's ``columns.roles`` (covered, adversary-knowledge, derived, clear); a FAERS
    column carries the roles of the release columns it is computed from, or is empty."""
    import duckdb

    from medanon.published.faers_layout import FAERS_SOURCES
    from medanon.published.roles import ROLES

    method, published, _, out = exported
    parquet = out.parent / "parquet"
    done = invoke_cli("export", "--store", out.parent / "s.duckdb", "--out", parquet, "--format",
                      "parquet")
    assert done.returncode == 0, done.stderr
    for period in published:
        roles = read_manifest(out / period)["columns"]["roles"]
        assert {entry["role"] for entry in roles.values()} <= set(ROLES)
        csv_header = list(pd.read_csv(out / period / "release.csv", nrows=0).columns)
        parquet_file = parquet / period / "release.parquet"
        parquet_header = duckdb.sql(f"SELECT * FROM read_parquet('{parquet_file}') LIMIT 0").columns
        for header in (csv_header, parquet_header):
            assert [c for c in header if c not in roles] == []
        if method == "none":
            assert {roles[c]["role"] for c in csv_header} <= {"clear", "derived",
                                                              "adversary-knowledge"}
        else:  # a protected release publishes its dates derived, and covers QIDs and terms
            assert roles["init_fda_dt"]["role"] == roles["fda_dt"]["role"] == "derived"
            assert roles["age"]["role"] == roles["reactions"]["role"] == "covered"
            # every clear column is named where the model says what it does not protect
            manifest = read_manifest(out / period)
            clear = [c for c, entry in roles.items() if entry["role"] == "clear"]
            assert clear and all(c in manifest["method"]["does_not_guarantee"] for c in clear)
        for path in sorted((out / period).glob("*.txt")):
            if path.name.startswith("FAERS_NOTES"):
                continue
            table = _faers_table(path)
            for column in table.columns:
                sources = FAERS_SOURCES.get(column)
                if sources is None:
                    assert (table[column] == "").all(), f"{path.name}: {column} has no source"
                else:
                    assert any(s in roles for s in sources), f"{path.name}: {column}"
