"""The FAERS layout writer (published/faers_layout.py), its age table, and the loader's age_grp;
perturbed QIDs in their own columns and the notes' caveats (issue 29, item 4)."""

from __future__ import annotations

import re
import zipfile
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from medanon.data.loaders.faers import read_faers
from medanon.errors import HierarchyError, InputFormatError, StoreError
from medanon.hierarchies import format_number
from medanon.hierarchies.builtin import (FAERS_AGE_GROUP_LEAVES, faers_age_group, mesh_age_band,
                                         mesh_age_tree, mesh_leaf_of_faers_age_group)
from medanon.published.cells import term_pairs
from medanon.published.faers_layout import (DEMO_COLUMNS, MEASURED_COLUMNS, NOTES_FILE, SIDE_COLUMNS,
                                            case_versions, perturbed_qids, write_faers_release)
from tests.conftest import FAERS_2022Q4_SUBSET, needs_shared

# The documented table (docs/faers-export.md): every node of the MeSH age tree.
AGE_GROUP_OF_NODE = {
    "*": None, "Nonadult": None, "Infant": None, "Newborn": "N", "Infant (1-23 months)": "I",
    "Child": "C", "Preschool": "C", "In-school": "C", "Adolescent": "T", "Adult": None,
    "Young Adult": "A", "Adult (25-44)": "A", "Middle Aged": "A", "Aged": "E",
    "Aged (65-79)": "E", "Aged, 80 and over": "E",
}


def _table(path) -> pd.DataFrame:
    # pandas' default encoding (UTF-8): the export's own (issue 44)
    frame = pd.read_csv(path, sep="$", dtype=str, keep_default_na=False)
    # FDA's layout (issue 32): no '$' after the last field, so no extra, unnamed column
    assert not any(str(c).startswith("Unnamed") for c in frame.columns), list(frame.columns)
    return frame


def _rows(**extra) -> pd.DataFrame:
    base = {
        "period": ["2021Q3"] * 4,
        "case_id": ["1001", "1002", "1003", "1004"],
        "group": ["1", "1", "2", "2"],
        "age": ["Adolescent", "Adult", "*", ""],
        "sex": ["F", "*", "M", ""],
        "weight": ["72.5", "[60-80]", "*", ""],
        "indications": ["Diabetes", "", "Pain|Fever", ""],
        "reactions": ["Nausea|Rash", "Headache", "", "Death"],
        "drugs": ["ASPIRIN|METFORMIN|ZOCOR", "HUMIRA", "", "X"],
    }
    base.update(extra)
    return pd.DataFrame(base)


def test_every_mesh_node_has_its_documented_faers_age_group() -> None:
    tree = mesh_age_tree()
    assert set(AGE_GROUP_OF_NODE) == set(tree.nodes)
    assert {n: faers_age_group(n) for n in tree.nodes} == AGE_GROUP_OF_NODE
    # each group is a contiguous age range, and the groups follow one another
    previous_end = 0.0
    for code, leaves in FAERS_AGE_GROUP_LEAVES.items():
        bands = sorted(mesh_age_band(leaf) for leaf in leaves)
        assert bands[0][0] == previous_end, code
        assert all(a[1] == b[0] for a, b in zip(bands, bands[1:])), code
        previous_end = bands[-1][1]
    assert previous_end == 150.0
    # back from FAERS: only the groups of one leaf
    assert {c: mesh_leaf_of_faers_age_group(c) for c in "NICTAE"} == {
        "N": "Newborn", "I": "Infant (1-23 months)", "C": None, "T": "Adolescent", "A": None,
        "E": None}
    assert mesh_leaf_of_faers_age_group(" t ") == "Adolescent"
    assert mesh_leaf_of_faers_age_group("X") is None and mesh_leaf_of_faers_age_group(None) is None
    with pytest.raises(HierarchyError, match="'Teen' is not a node"):
        faers_age_group("Teen")


def test_case_versions_count_each_case_s_releases_in_time_order() -> None:
    got = case_versions({"2020Q2": ["b", "c"], "2020Q1": ["a", "b"], "2020Q3": ["b", "a", "d"]})
    assert {p: v.tolist() for p, v in got.items()} == {
        "2020Q1": [1, 1], "2020Q2": [2, 1], "2020Q3": [3, 2, 1]}


def test_the_writer_carries_each_cell_as_the_conventions_say(tmp_path) -> None:
    rows = _rows(
        drugs_primary_suspect=["ASPIRIN", "HUMIRA", "", ""],
        drugs_secondary_suspect=["", "", "", ""],
        drugs_concomitant=["ASPIRIN|ZOCOR", "", "", ""],
        drugs_interacting=["", "", "", "X"],
        outcomes=["HO|LT", "", "DE", ""],
        init_fda_dt=["2021", "2020", "2021", ""],
        fda_dt=["202108", "2021", "2021", "2021"],
    )
    replaced = write_faers_release(tmp_path, rows, "2021Q3", versions=[1, 2, 1, 12])
    assert replaced == 0
    demo = _table(tmp_path / "DEMO21Q3.txt")
    assert list(demo["primaryid"]) == ["10011", "10022", "10031", "100412"]
    assert list(demo["caseversion"]) == ["1", "2", "1", "12"]
    assert list(demo["i_f_code"]) == ["I", "F", "I", "F"]
    assert list(demo["age"]) == ["", "", "", ""] and list(demo["age_cod"]) == ["", "", "", ""]
    assert list(demo["age_grp"]) == ["T", "", "", ""]  # Adult = A + E: no one group
    assert list(demo["sex"]) == ["F", "", "M", ""]
    assert list(demo["wt"]) == ["72.5", "", "", ""]
    assert list(demo["wt_cod"]) == ["KG", "", "", ""]
    # FDA's 25 DEMO columns only; the band is in the side file, row for row (issue 44)
    assert list(demo.columns) == DEMO_COLUMNS and len(DEMO_COLUMNS) == 25
    side = _table(tmp_path / "MEDANON21Q3.txt")
    assert list(side.columns) == SIDE_COLUMNS == ["primaryid", "caseid", "wt_bin"]
    assert side[["primaryid", "caseid"]].equals(demo[["primaryid", "caseid"]])
    assert list(side["wt_bin"]) == ["", "[60-80]", "*", ""]
    assert list(demo["init_fda_dt"]) == ["2021", "2020", "2021", ""]
    assert list(demo["fda_dt"]) == ["202108", "2021", "2021", "2021"]

    drug = _table(tmp_path / "DRUG21Q3.txt")
    assert drug[["primaryid", "drug_seq", "role_cod", "drugname"]].values.tolist() == [
        ["10011", "1", "PS", "ASPIRIN"], ["10011", "2", "C", "ASPIRIN"],
        ["10011", "3", "C", "ZOCOR"], ["10011", "4", "", "METFORMIN"],  # in no role column
        ["10022", "1", "PS", "HUMIRA"], ["100412", "1", "I", "X"]]
    reac = _table(tmp_path / "REAC21Q3.txt")
    assert reac[["caseid", "pt"]].values.tolist() == [
        ["1001", "Nausea"], ["1001", "Rash"], ["1002", "Headache"], ["1004", "Death"]]
    indi = _table(tmp_path / "INDI21Q3.txt")
    assert indi[["caseid", "indi_pt", "indi_drug_seq"]].values.tolist() == [
        ["1001", "Diabetes", ""], ["1003", "Pain", ""], ["1003", "Fever", ""]]
    outc = _table(tmp_path / "OUTC21Q3.txt")
    assert list(outc.columns) == ["primaryid", "caseid", "outc_cod"]
    assert outc.values.tolist() == [["10011", "1001", "HO"], ["10011", "1001", "LT"],
                                    ["10031", "1003", "DE"]]
    raw = (tmp_path / "DEMO21Q3.txt").read_bytes()
    assert b"\r" not in raw and raw.count(b"\n") == 5 and raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    columns = lines[0].split(b"$")
    assert not lines[0].endswith(b"$") and all(c for c in columns)
    assert all(line.count(b"$") == len(columns) - 1 for line in lines)


def _line_layout(raw: bytes) -> dict:
    """How a FAERS ASCII file ends its lines and separates its fields."""
    lines = raw.split(b"\n")
    if lines[-1] == b"":
        lines = lines[:-1]
    header = lines[0].split(b"$")
    return {"cr": b"\r" in raw, "bom": raw.startswith(b"\xef\xbb\xbf"),
            "header_ends_in_separator": lines[0].endswith(b"$"),
            "empty_header_names": sum(not c for c in header),
            # separators on a row minus the header's: 0 means n − 1 separators for n fields
            "extra_separators": sorted({line.count(b"$") - (len(header) - 1)
                                        for line in lines[1:]})}


@needs_shared
def test_the_export_ends_lines_and_separates_fields_as_fda_s_files_do(tmp_path) -> None:
    """Measured on FDA's 2022Q4 files (issue 32): LF lines, no CR, no BOM, no '$' after the
    last field of the header or of any row (a row ends in '$' only when its last field is
    empty), the header's fields on every row. The export's five tables have the same layout,
    with FDA's own headers (DEMO with wt_bin appended)."""
    rows = _rows(drugs_primary_suspect=["ASPIRIN", "HUMIRA", "", ""], outcomes=["HO", "", "", "DE"])
    write_faers_release(tmp_path, rows, "2021Q3")
    with zipfile.ZipFile(FAERS_2022Q4_SUBSET) as archive:
        real = {name.split("/")[-1][:4]: archive.read(name) for name in archive.namelist()
                if name.startswith("ASCII/") and name.endswith(".txt")}
    assert {"DEMO", "DRUG", "REAC", "INDI", "OUTC"} <= set(real)
    fda = {"cr": False, "bom": False, "header_ends_in_separator": False,
           "empty_header_names": 0, "extra_separators": [0]}
    for table, raw in real.items():
        assert _line_layout(raw) == fda, table
    for table in ("DEMO", "DRUG", "REAC", "INDI", "OUTC"):
        ours = (tmp_path / f"{table}21Q3.txt").read_bytes()
        assert _line_layout(ours) == fda, table
        assert ours.endswith(b"\n")
        header = real[table].split(b"\n", 1)[0]
        assert ours.split(b"\n", 1)[0] == header, table  # FDA's header, DEMO's too (issue 44)
        # pandas reads exactly the header's columns, as it reads FDA's file
        frame = pd.read_csv(tmp_path / f"{table}21Q3.txt", sep="$", dtype=str,
                            keep_default_na=False)
        assert list(frame.columns) == header.decode().split("$")
    assert _line_layout((tmp_path / "MEDANON21Q3.txt").read_bytes()) == fda  # the side file too
    # a REAC row whose last field (drug_rec_act) is empty ends in '$', as FDA's do
    assert (tmp_path / "REAC21Q3.txt").read_bytes().split(b"\n")[1].endswith(b"$Nausea$")


def test_the_loader_reads_the_export_and_its_old_crlf_trailing_separator_form_alike(
        tmp_path) -> None:
    """Exports before issue 32 ended every line with '$' and CRLF: the loader reads those
    files and today's LF files into the same records."""
    rows = _rows(drugs_primary_suspect=["ASPIRIN", "HUMIRA", "", ""], outcomes=["HO", "", "", "DE"])
    new, old = tmp_path / "new", tmp_path / "old"
    write_faers_release(new, rows, "2021Q3")
    old.mkdir()
    for path in new.glob("*21Q3.txt"):
        lines = path.read_bytes().split(b"\n")[:-1]
        assert not any(line.endswith(b"\r") for line in lines)
        (old / path.name).write_bytes(b"".join(line + b"$\r\n" for line in lines))
    (got,), (was,) = read_faers(new, keep_missing=True).quarters, read_faers(
        old, keep_missing=True).quarters
    pd.testing.assert_frame_equal(got.records, was.records)
    assert len(got.records) == 4 and set(got.records["case_id"]) == {"1001", "1002", "1003", "1004"}


def test_a_release_without_the_pv_columns_still_exports(tmp_path) -> None:
    write_faers_release(tmp_path, _rows(), "2021Q3")
    drug = _table(tmp_path / "DRUG21Q3.txt")
    assert set(drug["role_cod"]) == {""} and len(drug) == 5
    assert list(drug.loc[drug["caseid"] == "1001", "drug_seq"]) == ["1", "2", "3"]
    assert (tmp_path / "OUTC21Q3.txt").read_bytes() == b"primaryid$caseid$outc_cod\n"
    demo = _table(tmp_path / "DEMO21Q3.txt")
    assert list(demo["caseversion"]) == ["1"] * 4 and list(demo["init_fda_dt"]) == [""] * 4
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "no drug-role columns" in notes and "only its header" in notes


def test_numeric_ages_get_a_number_and_a_group(tmp_path) -> None:
    """A schema with a numeric age: an exact age is written with age_cod YR."""
    rows = _rows(age=["34", "[13-18]", "[12-13]", "[70-70]"])
    manifest = {"columns": {"qids": [{"name": "age", "kind": "numeric", "hierarchy": None}]}}
    write_faers_release(tmp_path, rows, "2021Q3", manifest=manifest)
    demo = _table(tmp_path / "DEMO21Q3.txt")
    assert list(demo["age"]) == ["34", "", "", "70"]
    assert list(demo["age_cod"]) == ["YR", "", "", "YR"]
    assert list(demo["age_grp"]) == ["A", "T", "", "E"]


def test_labels_of_another_age_hierarchy_get_no_group(tmp_path) -> None:
    manifest = {"columns": {"qids": [{"name": "age", "kind": "categorical",
                                      "hierarchy": "my-ages.csv"}]}}
    write_faers_release(tmp_path, _rows(age=["Child"] * 4), "2021Q3", manifest=manifest)
    assert set(_table(tmp_path / "DEMO21Q3.txt")["age_grp"]) == {""}


def test_values_the_layout_cannot_carry_are_replaced_and_counted(tmp_path) -> None:
    rows = _rows(drugs=["VITAMIN B$12", "A\nB", "", "X"], reactions=["Rash", "", "", "Zoé"])
    assert write_faers_release(tmp_path, rows, "2021Q3") == 2
    drug = _table(tmp_path / "DRUG21Q3.txt")
    assert list(drug["drugname"]) == ["VITAMIN B 12", "A B", "X"]
    assert list(_table(tmp_path / "REAC21Q3.txt")["pt"]) == ["Rash", "Zoé"]
    assert "2 value(s) held '$' or a line break" in (tmp_path / NOTES_FILE).read_text("utf-8")


@pytest.mark.parametrize("case_ids, message", [
    (["1001", "C002", "1003", "1004"], "'C002'"),
    (["1001", "0102", "1003", "1004"], "'0102'"),
    (["1001", "1001", "1003", "1004"], "case 1001 version 1"),
])
def test_case_ids_that_are_not_faers_caseids_are_refused(tmp_path, case_ids, message) -> None:
    with pytest.raises(StoreError, match=message) as caught:
        write_faers_release(tmp_path / "out", _rows(case_id=case_ids), "2021Q3")
    assert "--format csv or parquet" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_primaryids_that_would_collide_are_refused(tmp_path) -> None:
    # caseid 12 version 11 and caseid 121 version 1 are both primaryid 1211
    with pytest.raises(StoreError, match="not unique"):
        write_faers_release(tmp_path, _rows(case_id=["12", "121", "3", "4"]), "2021Q3",
                            versions=[11, 1, 1, 1])


def test_suppressed_terms_are_named_for_the_release_never_marked_in_a_case(tmp_path) -> None:
    manifest = {"method": {"name": "ha"},
                "counts": {"suppressed_terms": 9},
                "details": {"suppressed_terms": {"Rare event": {"count": 2, "theta": 0.1},
                                                 "Alopecia": {"count": 3, "theta": 0.1}},
                            "cases_with_suppressed_terms": 4}}
    write_faers_release(tmp_path, _rows(), "2021Q3", manifest=manifest)
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "removed from every case of this release (their theta could not be met): Alopecia, " \
           "Rare event" in notes
    assert "4 case(s) were published with some of their terms removed" in notes
    assert "9 (case, term) pair(s)" in notes and "none reported, or every term suppressed" in notes
    for table in ("REAC", "INDI"):
        assert "*" not in set(_table(tmp_path / f"{table}21Q3.txt").iloc[:, -1])


def test_a_multi_valued_star_is_no_published_term() -> None:
    rows, codes, names = term_pairs(np.array(["a|b", "*", " * |c", "", "a"], dtype=object))
    assert [(int(r), str(names[c])) for r, c in zip(rows, codes)] == [
        (0, "a"), (0, "b"), (2, "c"), (4, "a")]


def test_the_loader_reads_age_grp_when_age_is_missing(tmp_path) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    header = ("primaryid$caseid$caseversion$age$age_cod$age_grp$sex$wt$wt_cod$fda_dt$\n")
    demo = [("11", "1", "1", "", "", "N"), ("21", "2", "1", "", "", "I"), ("31", "3", "1", "", "", "t"),
            ("41", "4", "1", "", "", "C"), ("51", "5", "1", "", "", "A"), ("61", "6", "1", "", "", "E"),
            ("71", "7", "1", "", "", "Z"), ("81", "8", "1", "40", "YR", "T"),
            ("91", "9", "1", "200", "YR", "T")]  # 200 years: implausible, so age_grp is used
    (folder / "DEMO21Q3.txt").write_text(header + "".join(
        f"{p}${c}${v}${a}${ac}${g}$F$70$KG$20210801$\n" for p, c, v, a, ac, g in demo))
    for table, columns in (("DRUG", "primaryid$drugname$"), ("REAC", "primaryid$pt$"),
                           ("INDI", "primaryid$indi_pt$")):
        (folder / f"{table}21Q3.txt").write_text(columns + "\n")
    (quarter,) = read_faers(folder, keep_missing=True).quarters
    ages = {c: None if pd.isna(a) else a
            for c, a in zip(quarter.records["case_id"], quarter.records["age"])}
    assert ages == {"1": "Newborn", "2": "Infant (1-23 months)", "3": "Adolescent", "4": None,
                    "5": None, "6": None, "7": None, "8": "Adult (25-44)", "9": "Adolescent"}
    assert quarter.report.missing["age"] == 4 and quarter.report.implausible["age"] == 1


# -- perturbed QIDs and the notes' caveats (issue 29, item 4) ------------------------------------
def _dp_manifest(epsilon: str = "1/2", domain=(0.0, 250.0), **details) -> dict:
    """A PPMS-DP_all manifest as pipeline/publish.py writes it (the fields the export reads)."""
    mechanisms = [{"target": "age", "mechanism": "exponential", "epsilon": float(Fraction(epsilon)),
                   "epsilon_exact": epsilon, "scope": "case"},
                  {"target": "sex", "mechanism": "exponential", "epsilon": float(Fraction(epsilon)),
                   "epsilon_exact": epsilon, "scope": "case"},
                  {"target": "weight", "mechanism": "laplace", "epsilon": float(Fraction(epsilon)),
                   "epsilon_exact": epsilon, "scope": "case"}]
    return {"method": {"name": "ppms-dp-all"},
            "counts": {"cases": 4, "suppressed": 0},
            "details": {"perturbed_qids": ["age", "sex", "weight"], "dp_variant": "strict",
                        "domains": {"weight": list(domain)}, **details},
            "privacy_spent": {"variant": "strict", "epsilon_per_case": "3/2",
                              "perturbed_qids": ["age", "sex", "weight"],
                              "mechanisms": mechanisms}}


def _dp_rows() -> pd.DataFrame:
    return _rows(age=["Adolescent", "Adult", "*", "Aged (65-79)"], sex=["F", "*", "M", "M"],
                 weight=["72.5", "0", "250", "133.07"])


def test_perturbed_values_never_go_into_fda_measured_columns(tmp_path) -> None:
    rows = _dp_rows()
    write_faers_release(tmp_path, rows, "2021Q3", manifest=_dp_manifest())
    demo = _table(tmp_path / "DEMO21Q3.txt")
    assert list(demo.columns) == [*DEMO_COLUMNS, "age_perturbed", "age_grp_perturbed",
                                  "sex_perturbed", "wt_perturbed_kg"]
    for qid, columns in MEASURED_COLUMNS.items():
        for column in columns:
            assert set(demo[column]) == {""}, (qid, column)
    assert set(_table(tmp_path / "MEDANON21Q3.txt")["wt_bin"]) == {""}
    # the perturbed cells as published (release.csv keeps them as they are)
    assert list(demo["age_perturbed"]) == list(rows["age"])
    assert list(demo["age_grp_perturbed"]) == ["T", "", "", "E"]
    assert list(demo["sex_perturbed"]) == list(rows["sex"])
    assert list(demo["wt_perturbed_kg"]) == list(rows["weight"])


def test_the_loader_ignores_the_perturbed_columns(tmp_path) -> None:
    write_faers_release(tmp_path, _dp_rows(), "2021Q3", manifest=_dp_manifest())
    (quarter,) = read_faers(tmp_path, keep_missing=True).quarters
    records = quarter.records.set_index("case_id")
    assert sorted(records.index) == ["1001", "1002", "1003", "1004"]
    assert records[["age", "sex", "weight"]].isna().all().all()  # unknown, not randomized
    assert sorted(records.loc["1001", "reactions"]) == ["Nausea", "Rash"]


@pytest.mark.parametrize("epsilon, domain, scale", [("1/2", (0.0, 250.0), "500"),
                                                    ("2", (10.0, 310.0), "150")])
def test_the_notes_name_each_perturbed_column_its_mechanism_and_epsilon(tmp_path, epsilon, domain,
                                                                         scale) -> None:
    """Every number in the notes is the manifest's: change the manifest, the notes follow."""
    manifest = _dp_manifest(epsilon, domain)
    manifest["privacy_spent"]["epsilon_per_case"] = "7/3"  # deliberately not 3 x epsilon
    write_faers_release(tmp_path, _dp_rows(), "2021Q3", manifest=manifest)
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "RANDOMIZED VALUES" in notes
    assert "age, age_cod, age_grp, sex, wt, wt_cod are therefore EMPTY on every row" in notes
    lo, hi = (format_number(b) for b in domain)
    assert (f"age_perturbed (the published age label, or number of years) and age_grp_perturbed "
            f"(its FAERS group, see below): exponential mechanism, epsilon = {epsilon}.") in notes
    assert (f"sex_perturbed (F, M, or * where the mechanism drew the root: no sex): exponential "
            f"mechanism, epsilon = {epsilon}.") in notes
    assert (f"wt_perturbed_kg (kg): Laplace mechanism, epsilon = {epsilon} (noise scale ({hi} - "
            f"{lo}) / epsilon = {scale}, values kept within the public domain [{lo}, {hi}]") in notes
    assert "Each case spends epsilon 7/3 in this release" in notes
    assert "finds signals the data does not have" in notes
    assert "- age, age_cod, age_grp: EMPTY on every row" in notes
    assert "- wt, wt_cod: EMPTY on every row" in notes and "wt_bin of MEDANON21Q3.txt" in notes
    assert "- sex: EMPTY on every row" in notes


def test_the_notes_give_label_levels_and_the_paper_variant_as_declared(tmp_path) -> None:
    manifest = _dp_manifest("1", label_levels={"age": 1}, label_consistency={"age": 0.61},
                            exact_groups={"weight": ["3"]})
    manifest["privacy_spent"]["variant"] = "paper"
    write_faers_release(tmp_path, _dp_rows(), "2021Q3", manifest=manifest)
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "cut to its ancestor at level 1 of the hierarchy" in notes
    assert "consistent with the case's own with probability at least 0.61" in notes
    assert "Paper variant" in notes and "details.exact_groups carry no noise" in notes


def test_a_release_perturbing_weight_only_keeps_age_and_sex_in_fda_columns(tmp_path) -> None:
    manifest = _dp_manifest()
    manifest["details"]["perturbed_qids"] = ["weight"]
    manifest["privacy_spent"]["perturbed_qids"] = ["weight"]
    manifest["privacy_spent"]["mechanisms"] = manifest["privacy_spent"]["mechanisms"][2:]
    write_faers_release(tmp_path, _dp_rows(), "2021Q3", manifest=manifest)
    demo = _table(tmp_path / "DEMO21Q3.txt")
    assert list(demo.columns) == [*DEMO_COLUMNS, "wt_perturbed_kg"]
    assert list(demo["sex"]) == ["F", "", "M", "M"] and list(demo["age_grp"]) == ["T", "", "", "E"]
    assert set(demo["wt"]) == {""} and list(demo["wt_perturbed_kg"]) == ["72.5", "0", "250", "133.07"]
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "read this before any analysis by weight." in notes
    assert "sex_perturbed" not in notes and "- sex: F or M" in notes


def test_a_perturbed_qid_without_its_mechanism_is_refused(tmp_path) -> None:
    manifest = _dp_manifest()
    del manifest["privacy_spent"]["mechanisms"][1]
    with pytest.raises(InputFormatError, match="perturbed QID 'sex' without its mechanism"):
        write_faers_release(tmp_path / "out", _dp_rows(), "2021Q3", manifest=manifest)
    # a QID named perturbed in either list counts (never written as measured)
    manifest = _dp_manifest()
    manifest["details"]["perturbed_qids"] = ["weight"]
    assert list(perturbed_qids(manifest)) == ["weight", "age", "sex"]


@pytest.mark.parametrize("counts, expected", [
    ({"suppressed": 13}, "This release withheld 13 case(s) (manifest counts.suppressed)"),
    ({"suppressed": 0}, "This release withheld no case (manifest counts.suppressed = 0)."),
    ({}, "This release's manifest publishes no count of withheld cases."),
])
def test_every_release_states_the_dedup_caveat(tmp_path, counts, expected) -> None:
    manifest = {"method": {"name": "ppms++"}, "counts": counts}
    write_faers_release(tmp_path, _rows(), "2021Q3", manifest=manifest)
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "rule silently returns its older published version" in notes
    assert expected in notes


def test_a_release_without_perturbed_qids_keeps_its_fda_columns(tmp_path) -> None:
    """Non-DP: the DEMO header and the age, weight and sex notes as before this change."""
    write_faers_release(tmp_path, _rows(), "2021Q3", manifest={"method": {"name": "ms"},
                                                               "counts": {"suppressed": 2}})
    assert list(_table(tmp_path / "DEMO21Q3.txt").columns) == DEMO_COLUMNS
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert "RANDOMIZED" not in notes and "perturbed" not in notes
    assert ("- wt, wt_cod: only a published number (KG). A published weight band ([lo-hi]) or * "
            "leaves them empty") in notes
    assert "- sex: F or M; empty for * (generalized) as well as for an unreported sex." in notes


# -- what an analyst's FDA-format script meets (issue 44) ---------------------------------------
def test_pandas_defaults_read_every_file_and_ingest_reads_it_back(tmp_path) -> None:
    """UTF-8: pandas' default encoding reads non-ASCII names (Latin-1 ones and beyond), and the
    loader, which tells UTF-8 from Latin-1, reads the same names back."""
    names = ["JANUVIAé中", "NAUSÉE", "ASPIRIN", "Ωmega"]
    rows = _rows(drugs=names, reactions=["Rash", "Zoé", "Übelkeit", "Death"])
    write_faers_release(tmp_path, rows, "2021Q3")
    for path in sorted(tmp_path.glob("*.txt")):
        raw = path.read_bytes()
        assert not raw.startswith(b"\xef\xbb\xbf"), path.name  # no byte-order mark, as FDA's
        raw.decode("utf-8")  # the whole file, notes included
        if path.name != NOTES_FILE:
            pd.read_csv(path, sep="$")  # pandas' defaults, no encoding= (raised before)
    assert list(_table(tmp_path / "DRUG21Q3.txt")["drugname"]) == names
    assert list(_table(tmp_path / "REAC21Q3.txt")["pt"]) == ["Rash", "Zoé", "Übelkeit", "Death"]
    (quarter,) = read_faers(tmp_path, keep_missing=True).quarters
    records = quarter.records.set_index("case_id")
    assert [list(records.loc[c, "drugs"]) for c in rows["case_id"]] == [[n] for n in names]
    assert sorted(records.loc["1003", "reactions"]) == ["Übelkeit"]


@pytest.mark.parametrize("manifest", [{"method": {"name": "ms"}}, _dp_manifest()],
                         ids=["generalized", "perturbed"])
def test_the_notes_name_the_encoding_then_the_columns_that_changed_meaning(tmp_path,
                                                                           manifest) -> None:
    rows = _rows(init_fda_dt=["2021", "2020", "2021", ""], fda_dt=["2021"] * 4)
    write_faers_release(tmp_path, rows if "details" not in manifest else
                        _dp_rows().assign(init_fda_dt="2021", fda_dt="2021"), "2021Q3",
                        manifest=manifest)
    lines = (tmp_path / NOTES_FILE).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("Encoding: UTF-8 (no byte-order mark)")
    changed = lines.index("FDA columns that do not mean what FDA's do (read this before running "
                          "an FDA-format script on these files):")
    others = [i for i, line in enumerate(lines) if line.startswith(
        ("RANDOMIZED VALUES", "Other conventions", "Deduplication", "Suppressed terms"))]
    assert others and changed < min(others)  # first, after the encoding and the title only
    assert all(line.startswith(("medanon release", "The exact published")) or not line
               for line in lines[1:changed])
    section = lines[changed + 1:lines.index("", changed)]
    assert section[0].startswith("- init_fda_dt, fda_dt: the year only (YYYY), not FDA's date")
    # every FDA column an FDA script finds empty on every row is named in that section
    text = "\n".join(section)
    for name, header in (("DEMO", DEMO_COLUMNS), ("DRUG", None), ("REAC", None), ("INDI", None)):
        table = _table(tmp_path / f"{name}21Q3.txt")
        for column in header or table.columns:
            if (table[column] == "").all():
                assert re.search(rf"\b{column}\b", text), (name, column)


@pytest.mark.parametrize("dates, told", [
    (["20210704"] * 4, None),
    (["202107", "2021", "202107", "2021"], "4 digits = the year only (YYYY); 6 digits = year and "
                                           "month only (YYYYMM)"),
])
def test_the_notes_tell_the_granularity_of_the_dates_as_published(tmp_path, dates, told) -> None:
    write_faers_release(tmp_path, _rows(init_fda_dt=dates, fda_dt=dates), "2021Q3")
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    assert ("- init_fda_dt, fda_dt:" in notes) == (told is not None)
    if told:
        assert told in notes
