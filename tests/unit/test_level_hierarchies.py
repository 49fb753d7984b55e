"""Level hierarchies (full-domain generalization) and the tabular schema / loader of IPA (paper 004)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from medanon.data.synth import synth_patient_schema_toml, synth_patient_table
from medanon.data.synth.table import diagnosis_codes
from medanon.data.tabular import TableSchema, load_table
from medanon.errors import HierarchyError, InputFormatError, SchemaError
from medanon.hierarchies.levels import ROOT, categorical_levels, numeric_levels

AGE_LEVELS = [list(range(0, 100, 10)), [0, 30, 60]]
LOS_LEVELS = [[1, 2, 5, 10, 30], [1, 2]]
REGION_ROWS = [["11", "Capital", "Capital"],
               ["21", "Metro", "Non-capital"],
               ["22", "Metro", "Non-capital"],
               ["31", "Provinces", "Non-capital"]]


@pytest.fixture(scope="module")
def age():
    return numeric_levels("age", 0, 99, AGE_LEVELS)


@pytest.fixture(scope="module")
def los():
    return numeric_levels("los", 1, 400, LOS_LEVELS)


@pytest.fixture(scope="module")
def region():
    return categorical_levels("region", REGION_ROWS)


def all_hierarchies():
    return [numeric_levels("age", 0, 99, AGE_LEVELS), numeric_levels("los", 1, 400, LOS_LEVELS),
            numeric_levels("x", -5, 5, [[-5, 0], [-5]]), categorical_levels("region", REGION_ROWS),
            categorical_levels("sex", [["F"], ["M"]]),
            categorical_levels("t", [["a", "X", "P", "*"], ["b", "X", "P", "*"],
                                     ["c", "Y", "P", "*"], ["d", "Z", "Q", "*"]])]


# -- numeric_levels ----------------------------------------------------------------------------

def test_numeric_labels_and_shape(age):
    assert age.kind == "numeric" and (age.lo, age.hi) == (0, 99)
    assert age.levels == 4 and age.top == 3 and age.n_leaves == 100
    assert age.labels[0][:3] == ("0", "1", "2") and age.labels[0][-1] == "99"
    assert age.labels[1][1] == "[10-19]" and age.labels[1][-1] == "[90-99]"
    assert age.size(1) == 10
    assert age.labels[2] == ("[0-29]", "[30-59]", "[60-99]")
    assert age.labels[3] == (ROOT,) == ("*",)
    assert age.maps[0].tolist() == list(range(100))
    assert age.maps[1].tolist() == [v // 10 for v in range(100)]
    assert age.maps[2].tolist() == [0 if v < 30 else 1 if v < 60 else 2 for v in range(100)]
    assert age.maps[3].tolist() == [0] * 100


def test_numeric_single_value_bins_are_labelled_by_the_value(los):
    assert los.labels[1] == ("1", "[2-4]", "[5-9]", "[10-29]", "[30-400]")
    assert los.labels[2] == ("1", "[2-400]")
    assert los.maps[1][[0, 1, 3, 4, 8, 9, 28, 29, 399]].tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_numeric_ncp_is_width_over_domain(age, los):
    assert age.ncp[1][1] == pytest.approx(9 / 99)
    assert age.ncp[2].tolist() == pytest.approx([29 / 99, 29 / 99, 39 / 99])
    assert los.ncp[1].tolist() == pytest.approx([0.0, 2 / 399, 4 / 399, 19 / 399, 370 / 399])
    for h in (age, los):
        assert np.all(h.ncp[0] == 0.0)
        assert h.ncp[h.top].tolist() == [1.0]
        for level in range(h.levels):
            first, last = h.first[level], h.last[level]
            assert h.ncp[level] == pytest.approx((last - first) / (h.hi - h.lo))
            for code, label in enumerate(h.labels[level]):
                if level == h.top:
                    assert label == "*"
                elif first[code] == last[code]:
                    assert label == str(first[code])
                else:
                    assert label == f"[{first[code]}-{last[code]}]"
                # first/last are the extreme leaves the code covers
                covered = h.covered_leaves(level, code) + h.lo
                assert (covered.min(), covered.max()) == (first[code], last[code])


@pytest.mark.parametrize("lo, hi, levels, fragment", [
    (0, 99, [[0, 10, 20], [0, 15]], "does not nest"),           # 15 splits [10-19]
    (0, 99, [[0, 50], [0, 25, 50]], "does not nest"),            # finer than the level below
    (0, 99, [[1, 10]], "beginning at the domain's low end 0"),  # bad first cut
    (0, 99, [[0, 20, 10]], "increasing bin starts"),
    (0, 99, [[0, 10, 10]], "increasing bin starts"),
    (0, 99, [[]], "increasing bin starts"),
    (0, 99, [[0, 150]], "above the domain's high end 99"),
    (5, 5, [], "lo < hi"),
    (9, 2, [], "lo < hi"),
    (0.5, 9, [], "two integers"),
])
def test_numeric_levels_errors(lo, hi, levels, fragment):
    with pytest.raises(HierarchyError, match=fragment.replace("[", r"\[")):
        numeric_levels("age", lo, hi, levels)


def test_numeric_levels_without_levels_is_flat():
    h = numeric_levels("x", 3, 6, [])
    assert h.labels == (("3", "4", "5", "6"), ("*",))
    assert h.ncp[1].tolist() == [1.0]


# -- categorical_levels ------------------------------------------------------------------------

def test_categorical_levels_from_arx_rows(region):
    assert region.kind == "categorical"
    assert region.levels == 4 and region.top == 3          # root appended
    assert region.labels[0] == ("11", "21", "22", "31")
    assert region.labels[1] == ("Capital", "Metro", "Provinces")
    assert region.labels[2] == ("Capital", "Non-capital")
    assert region.labels[3] == ("*",)
    assert region.maps[1].tolist() == [0, 1, 1, 2]
    assert region.maps[2].tolist() == [0, 1, 1, 1]
    assert region.ncp[0].tolist() == [0.0] * 4
    assert region.ncp[1].tolist() == pytest.approx([0.0, 2 / 4, 0.0])   # single-leaf labels cost 0
    assert region.ncp[2].tolist() == pytest.approx([0.0, 3 / 4])
    assert region.ncp[3].tolist() == [1.0]


def test_categorical_root_not_duplicated_and_flat():
    h = categorical_levels("t", [["a", "X", "*"], ["b", "X", "*"], ["c", "c", "*"]])
    assert h.levels == 3 and h.labels[-1] == ("*",)
    assert h.ncp[1].tolist() == pytest.approx([2 / 3, 0.0])
    flat = categorical_levels("sex", [["F"], ["M"]])
    assert flat.labels == (("F", "M"), ("*",)) and flat.top == 1
    assert flat.ncp[1].tolist() == [1.0]
    # cells are stripped
    assert categorical_levels("s", [[" F ", " All"], ["M", "All "]]).labels[:2] == (("F", "M"), ("All",))


@pytest.mark.parametrize("rows, fragment", [
    ([["a", "X", "P"], ["b", "X", "Q"]], "two parents"),
    ([["a", "X"], ["a", "Y"]], "lists the leaf 'a' twice"),
    ([["a", "X"], ["b", "X"], ["a", "X"]], "twice"),
    ([], "has no rows"),
    ([["a", "X"], ["b"]], "row 2 has 1 cells"),
    ([["a", "X"], ["b", " "]], "empty cell"),
])
def test_categorical_levels_errors(rows, fragment):
    with pytest.raises(HierarchyError, match=fragment):
        categorical_levels("region", rows)


# -- up / encode / locate / to_arx_rows --------------------------------------------------------

@pytest.mark.parametrize("h", all_hierarchies(), ids=lambda h: h.name)
def test_up_is_consistent_with_maps(h):
    for a, b in itertools.combinations_with_replacement(range(h.levels), 2):
        up = h.up(a, b)
        assert up.shape == (h.size(a),)
        assert np.array_equal(up[h.maps[a]], h.maps[b])
        assert up.min() >= 0 and up.max() < h.size(b)
    assert np.array_equal(h.up(0, h.top), np.zeros(h.n_leaves))
    assert np.array_equal(h.up(0, 0), np.arange(h.n_leaves))


def test_encode_numeric_flags_bad_values(age):
    codes, bad = age.encode([0, 5, 99, 42.0, -1, 100, 5.5, np.nan, np.inf])
    assert bad.tolist() == [False] * 4 + [True] * 5
    assert codes[:4].tolist() == [0, 5, 99, 42]
    assert codes.dtype == np.int32
    shifted = numeric_levels("los", 1, 400, LOS_LEVELS)
    codes, bad = shifted.encode([1, 400, 0])
    assert codes[:2].tolist() == [0, 399] and bad.tolist() == [False, False, True]


def test_encode_categorical_flags_bad_values(region):
    codes, bad = region.encode(["11", "31", 21, "99", "Capital", "*"])
    assert bad.tolist() == [False, False, False, True, True, True]
    assert codes[:3].tolist() == [0, 3, 1]


def test_locate_numeric(age, los):
    assert age.locate("5") == (0, 5)
    assert age.locate("05") == (0, 5)            # read as a number
    assert age.locate("[10-19]") == (1, 1)
    assert age.locate("[60-99]") == (2, 2)
    assert age.locate("*") == (3, 0)
    assert los.locate("1") == (0, 0)             # also a level-1/2 label: the lowest level wins
    assert los.locate("[2-400]") == (2, 1)
    assert los.locate("400") == (0, 399)
    for unknown in ("[10-18]", "[0-9", "abc", "100", "-1", "7.5", ""):
        with pytest.raises(HierarchyError, match="is not a label"):
            age.locate(unknown)


@pytest.mark.parametrize("label", ["nan", "inf", "-inf", "1e999"])
def test_locate_non_finite_numeric_text_is_a_hierarchy_error(age, label):
    with pytest.raises(HierarchyError):
        age.locate(label)


def test_locate_categorical(region):
    assert region.locate("22") == (0, 2)
    assert region.locate("Metro") == (1, 1)
    assert region.locate("Non-capital") == (2, 1)
    assert region.locate("Capital") == (1, 0)    # repeated (ARX padding): lowest level
    assert region.locate("*") == (3, 0)
    with pytest.raises(HierarchyError, match="'Atlantis' is not a label of the hierarchy of 'region'"):
        region.locate("Atlantis")


@pytest.mark.parametrize("h", all_hierarchies(), ids=lambda h: h.name)
def test_to_arx_rows_shape_and_round_trip(h):
    rows = h.to_arx_rows()
    assert len(rows) == h.n_leaves
    assert all(len(row) == h.levels for row in rows)
    assert [row[0] for row in rows] == list(h.labels[0])
    assert all(row[-1] == "*" for row in rows)
    again = categorical_levels(h.name, rows)
    assert again.labels == h.labels
    for level in range(h.levels):
        assert np.array_equal(again.maps[level], h.maps[level])


def test_to_arx_rows_numeric_row(age):
    assert age.to_arx_rows()[15] == ["15", "[10-19]", "[0-29]", "*"]


# -- TableSchema -------------------------------------------------------------------------------

SMALL_TOML = """
[table]
name = "small"
informative = "dx"
informative_domain = ["A", "B", "C"]

[[table.dimension]]
name = "age"
kind = "numeric"
domain = [0, 19]
levels = [{ width = 5 }, { cuts = [0, 10] }]

[[table.dimension]]
name = "sex"
kind = "categorical"
values = ["F", "M"]
"""


def small_schema(**replace: str) -> TableSchema:
    text = SMALL_TOML
    for old, new in replace.items():
        text = text.replace(old, new)
    return TableSchema.from_toml_text(text)


def test_synthetic_schema_parses():
    schema = TableSchema.from_toml_text(synth_patient_schema_toml())
    assert schema.name == "synthetic-patients"
    assert schema.informative == "diagnosis"
    assert schema.dimension_names == ("age", "sex", "los", "surgery", "region")
    assert schema.informative_domain == diagnosis_codes()
    assert [q.name for q in schema.queries] == ["Q1", "Q2", "Q3", "Q4"]
    assert [q.aggregate for q in schema.queries] == ["count", "count", "mean", "mean"]
    assert schema.queries[2].of == "los" and schema.queries[0].where == {"sex": "M", "surgery": "N"}
    hierarchies = [d.build(None) for d in schema.dimensions]
    assert [h.top for h in hierarchies] == [3, 1, 3, 1, 3]
    assert hierarchies[0].labels[1][2] == "[20-29]"
    assert hierarchies[2].labels[2] == ("1", "[2-400]")
    assert hierarchies[4].n_leaves == 16 and hierarchies[4].labels[2] == ("Capital", "Non-capital")


def test_small_schema_parses():
    schema = small_schema()
    assert schema.informative_domain == ("A", "B", "C")
    h = schema.dimensions[0].build(None)
    assert h.labels[1] == ("[0-4]", "[5-9]", "[10-14]", "[15-19]")
    assert h.labels[2] == ("[0-9]", "[10-19]")


def test_schema_hierarchy_file_resolves_against_base(tmp_path):
    (tmp_path / "region.csv").write_text("11;Capital;*\n21;Metro;*\n22;Metro;*\n", encoding="utf-8")
    schema = TableSchema.from_mapping({"informative": "dx", "dimension": [
        {"name": "region", "kind": "categorical", "hierarchy": "region.csv"}]})
    h = schema.dimensions[0].build(tmp_path)
    assert h.labels[1] == ("Capital", "Metro") and h.top == 2
    with pytest.raises(HierarchyError, match="does not exist"):
        schema.dimensions[0].build(tmp_path / "elsewhere")


@pytest.mark.parametrize("old, new, fragment", [
    ('name = "sex"', 'name = "age"', "more than one role: age"),
    ('name = "sex"', 'name = "dx"', "more than one role: dx"),
    ('values = ["F", "M"]', 'values = ["F", "M"]\nhierarchy = [["F", "*"], ["M", "*"]]',
     "exactly one of 'values'"),
    ('values = ["F", "M"]', '', "exactly one of 'values'"),
    ('domain = [0, 19]', '', "needs domain"),
    ('informative_domain = ["A", "B", "C"]', 'informative_domain = []', "must not be empty"),
    ('kind = "categorical"', 'kind = "ordinal"', "dimension.1.kind"),
    ('values = ["F", "M"]', 'values = ["F", "M"]\n\n[[table.query]]\nname = "Q"\naggregate = "count"\n'
     'group_by = "sex"\nbin = 5', "'sex' is not a numeric dimension"),
    ('values = ["F", "M"]', 'values = ["F", "M"]\n\n[[table.query]]\nname = "Q"\naggregate = "mean"\n'
     'of = "sex"\ngroup_by = "age"\nbin = 5', "'sex' is not a numeric dimension"),
    ('values = ["F", "M"]', 'values = ["F", "M"]\n\n[[table.query]]\nname = "Q"\naggregate = "count"\n'
     'group_by = "age"\nbin = 5\nwhere = { age = "3" }', "'where' column 'age' is not a categorical"),
    ('values = ["F", "M"]', 'values = ["F", "M"]\n\n[[table.query]]\nname = "Q"\naggregate = "mean"\n'
     'group_by = "age"\nbin = 5', "'of' is required for mean"),
    ('levels = [{ width = 5 }', 'levels = [{ width = 5, cuts = [0] }', "either { width = W }"),
    ('name = "small"', 'name = "small"\ncolour = "red"', "colour"),
])
def test_schema_errors(old, new, fragment):
    assert old in SMALL_TOML
    with pytest.raises(SchemaError, match="Invalid table schema") as info:
        small_schema(**{old: new})
    assert fragment in str(info.value)


def test_schema_without_table_section():
    with pytest.raises(SchemaError, match=r"has no \[table\] section"):
        TableSchema.from_toml_text('[tables]\ninformative = "dx"\n')
    with pytest.raises(SchemaError, match="not valid TOML"):
        TableSchema.from_toml_text("[table\n")


def test_schema_from_missing_file(tmp_path):
    with pytest.raises(SchemaError, match="does not exist"):
        TableSchema.from_toml(tmp_path / "nope.toml")
    path = tmp_path / "s.toml"
    path.write_text(SMALL_TOML, encoding="utf-8")
    assert TableSchema.from_toml(path).dimension_names == ("age", "sex")


# -- load_table --------------------------------------------------------------------------------

def small_frame() -> pd.DataFrame:
    return pd.DataFrame({"age": [3, 17, 9, 12], "sex": ["F", "M", "M", "F"],
                         "dx": ["A", "C", "A", "B"], "extra": [1, 2, 3, 4]})


def test_load_table_encodes():
    data = load_table(small_frame(), small_schema())
    assert len(data) == 4
    assert data.codes.tolist() == [[3, 0], [17, 1], [9, 1], [12, 0]]
    assert data.informative.tolist() == [0, 2, 0, 1]
    assert data.informative_domain == ("A", "B", "C") and data.domain_public is True
    assert list(data.frame.columns) == ["age", "sex", "dx"]
    assert data.top_node == (3, 1)
    assert len(data.digest) == 64
    assert load_table(small_frame(), small_schema()).digest == data.digest
    other = small_frame()
    other.loc[0, "dx"] = "B"
    assert load_table(other, small_schema()).digest != data.digest


def test_domain_from_the_data_is_not_public():
    schema = small_schema(**{'informative_domain = ["A", "B", "C"]': ""})
    assert schema.informative_domain is None
    data = load_table(small_frame(), schema)
    assert data.domain_public is False
    assert data.informative_domain == ("A", "B", "C")
    frame = small_frame()
    frame["dx"] = ["Z", "Y", "Z", "Y"]
    data = load_table(frame, schema)
    assert data.informative_domain == ("Y", "Z") and data.informative.tolist() == [1, 0, 1, 0]


def test_load_table_from_csv(tmp_path):
    path = tmp_path / "t.csv"
    small_frame().to_csv(path, index=False)
    data = load_table(path, small_schema())
    assert data.codes.tolist() == [[3, 0], [17, 1], [9, 1], [12, 0]]
    with pytest.raises(InputFormatError, match="does not exist"):
        load_table(tmp_path / "missing.csv", small_schema())
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(InputFormatError, match="unknown table format"):
        load_table(tmp_path / "t.xlsx", small_schema())


@pytest.mark.parametrize("column, row, value, fragment", [
    ("age", 1, None, "'age' has 1 value(s) missing"),
    ("sex", 2, None, "'sex' has 1 value(s) missing"),
    ("dx", 0, np.nan, "'dx' has 1 value(s) missing"),
    ("age", 2, 20, "'age' has 1 value(s) that are not whole numbers in [0, 19] (row 4: 20)"),
    ("age", 0, -1, "not whole numbers in [0, 19] (row 2: -1)"),
    ("age", 3, 4.5, "not whole numbers in [0, 19] (row 5: 4.5)"),
    ("age", 3, "ten", "not whole numbers in [0, 19] (row 5: 'ten')"),
    ("sex", 1, "X", "'sex' has 1 value(s) that are not leaves of its hierarchy (row 3: 'X')"),
    ("sex", 1, "*", "not leaves of its hierarchy"),
    ("dx", 2, "Q99", "'dx' has 1 value(s) outside the schema's informative_domain (row 4: 'Q99')"),
])
def test_load_table_bad_values(column, row, value, fragment):
    frame = small_frame().astype(object)
    frame.loc[row, column] = value
    with pytest.raises(InputFormatError) as info:
        load_table(frame, small_schema())
    assert fragment in str(info.value)


def test_load_table_reports_how_many_bad_values():
    frame = pd.DataFrame({"age": [str(a) for a in range(20, 28)], "sex": ["F"] * 8, "dx": ["A"] * 8})
    with pytest.raises(InputFormatError, match=r"has 8 value\(s\).*row 6: '24' and 3 more\)"):
        load_table(frame, small_schema())


def test_load_table_missing_column_and_empty_table():
    with pytest.raises(SchemaError, match="names column\\(s\\) the data does not have: 'sex'"):
        load_table(small_frame().drop(columns="sex"), small_schema())
    with pytest.raises(InputFormatError, match="no rows"):
        load_table(small_frame().iloc[:0], small_schema())


def test_load_table_invalid_hierarchy_is_a_hierarchy_error():
    schema = small_schema(**{"{ cuts = [0, 10] }": "{ cuts = [0, 7] }"})   # 7 splits [5-9]
    with pytest.raises(HierarchyError, match="does not nest"):
        load_table(small_frame(), schema)


def test_load_synthetic_table():
    schema = TableSchema.from_toml_text(synth_patient_schema_toml())
    frame = synth_patient_table(300, seed=5)
    data = load_table(frame, schema)
    assert data.codes.shape == (300, 5) and data.domain_public
    # decoding the leaf codes gives the input back
    for j, h in enumerate(data.hierarchies):
        decoded = np.asarray(h.labels[0], dtype=object)[data.codes[:, j]]
        assert decoded.tolist() == frame[h.name].astype(str).tolist()
    assert np.asarray(data.informative_domain)[data.informative].tolist() == frame["diagnosis"].tolist()
