"""Bad input gets ``ErrorType: message`` on stderr, a non-zero exit, no traceback, and writes nothing.

Run in-process (``invoke_cli``): the same entry point and output as the console script, without
an interpreter start-up per call; the real end-to-end paths are in test_cli_flow.py.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FAERS_FIXTURES, assert_user_error, invoke_cli, snapshot

MODERN = FAERS_FIXTURES / "faers_2015Q1"


def _modern_copy(tmp_path: Path) -> Path:
    target = tmp_path / "q"
    shutil.copytree(MODERN, target)
    return target


def _edit_demo(folder: Path, edit) -> None:
    demo = folder / "ASCII" / "DEMO15Q1.txt"
    lines = demo.read_bytes().decode("latin-1").split("\r\n")
    demo.write_bytes("\r\n".join(edit(lines)).encode("latin-1"))


def _set_demo_field(column: str, value: str):
    def edit(lines: list[str]) -> list[str]:
        header = lines[0].split("$")
        fields = lines[1].split("$")
        fields[header.index(column)] = value
        return [lines[0], "$".join(fields), *lines[2:]]
    return edit


def _ingest_fails(tmp_path: Path, source: Path, error: str, fragment: str) -> None:
    store = tmp_path / "store.duckdb"
    result = invoke_cli("ingest", source, "--store", store)
    assert_user_error(result, error, fragment)
    assert not store.exists(), "a refused ingest must not create the store"


def test_missing_source(tmp_path) -> None:
    _ingest_fails(tmp_path, tmp_path / "nope.zip", "InputFormatError", "does not exist")


def test_not_a_zip(tmp_path) -> None:
    fake = tmp_path / "faers.zip"
    fake.write_text("hello")
    _ingest_fails(tmp_path, fake, "InputFormatError", "is not a zip file")


def test_zip_without_demo(tmp_path) -> None:
    archive = tmp_path / "nodemo.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in ("DRUG15Q1.txt", "REAC15Q1.txt", "INDI15Q1.txt"):
            zf.write(MODERN / "ASCII" / name, f"ASCII/{name}")
    _ingest_fails(tmp_path, archive, "InputFormatError", "no DEMO file")


def test_demo_without_required_columns(tmp_path) -> None:
    folder = _modern_copy(tmp_path)
    _edit_demo(folder, lambda lines: [lines[0].replace("$age_cod$", "$age_unit$"), *lines[1:]])
    _ingest_fails(tmp_path, folder, "InputFormatError", "lacks required column(s): age_cod")


def test_wrong_separator(tmp_path) -> None:
    folder = _modern_copy(tmp_path)
    _edit_demo(folder, lambda lines: [ln.replace("$", ",") for ln in lines])
    _ingest_fails(tmp_path, folder, "InputFormatError", "is not '$'-separated (it looks ','-separated)")


@pytest.mark.parametrize("column, value, fragment", [
    ("age", "forty", "age 'forty' is not a number"),
    ("wt", "heavy", "weight 'heavy' is not a number"),
    ("age_cod", "CENTURY", "unknown age_cod 'CENTURY'"),
    ("wt_cod", "STONE", "unknown wt_cod 'STONE'"),
])
def test_bad_demo_values(tmp_path, column, value, fragment) -> None:
    folder = _modern_copy(tmp_path)
    _edit_demo(folder, _set_demo_field(column, value))
    _ingest_fails(tmp_path, folder, "InputFormatError", fragment)


def test_schema_naming_a_missing_column(tmp_path) -> None:
    schema = tmp_path / "schema.toml"
    schema.write_text('[schema]\nsensitive = ["reactions"]\n[[schema.qid]]\nname = "bmi"\nkind = "numeric"\n')
    store = tmp_path / "store.duckdb"
    result = invoke_cli("ingest", MODERN, "--store", store, "--schema", schema)
    assert_user_error(result, "SchemaError", "'bmi'")
    assert not store.exists()


@pytest.mark.parametrize("arx, fragment", [
    ("F;*\n", "missing from hierarchy"),              # M is in the data but not in the hierarchy
    ("F;*\nM;ANY\n", "roots"),                        # two roots
    ("F;A;F;*\nM;M;M;*\n", "cycle"),                  # F -> A -> F
    ("F;A;*\nF;B;*\nM;M;*\n", "F"),                     # a leaf listed twice with different parents
])
def test_invalid_hierarchy(tmp_path, arx, fragment) -> None:
    (tmp_path / "sex.csv").write_text(arx)
    schema = tmp_path / "schema.toml"
    schema.write_text('[schema]\nname = "s"\nsensitive = ["reactions", "indications"]\nmulti = ["drugs"]\n'
                      'identifiers = ["report_id"]\n'
                      '[[schema.qid]]\nname = "sex"\nkind = "categorical"\nhierarchy = "sex.csv"\n')
    store = tmp_path / "store.duckdb"
    result = invoke_cli("ingest", MODERN, "--store", store, "--schema", schema)
    assert_user_error(result, "HierarchyError", fragment)
    assert not store.exists()


def test_store_that_is_not_duckdb(tmp_path) -> None:
    store = tmp_path / "notes.duckdb"
    store.write_text("my notes, not a database\n")
    for args in (("inspect",), ("release", "--method", "ms", "--k", "2", "--theta", "0.5"),
                 ("export", "--out", tmp_path / "out")):
        result = invoke_cli(*args, "--store", store)
        assert_user_error(result, "StoreError", "is not a medanon store")
    result = invoke_cli("ingest", MODERN, "--store", store)
    assert_user_error(result, "StoreError", "is not a medanon store")
    assert store.read_text() == "my notes, not a database\n"
    assert not (tmp_path / "out").exists()


@pytest.fixture
def ingested_store(tmp_path) -> Path:
    store = tmp_path / "store.duckdb"
    result = invoke_cli("ingest", FAERS_FIXTURES, "--store", store)
    assert result.returncode == 0, result.stderr
    return store


def _store_state(store: Path) -> str:
    return invoke_cli("inspect", "--store", store, "--json").stdout


def test_release_refusals_leave_the_store_as_it_was(ingested_store, tmp_path) -> None:
    store = ingested_store
    none = ("--method", "none", "--allow-unprotected")
    assert invoke_cli("release", "2011Q2", *none, "--store", store).returncode == 0
    before = _store_state(store)
    assert '"published": true' in before
    cases = [
        # no flags: the series policy pinned by the first release (none), which still needs
        # its acknowledgement on every release
        ((), "ValidationError", "--allow-unprotected must be given"),
        (("--method", "none"), "ValidationError", "--allow-unprotected must be given"),
        (("2011Q2", *none), "StoreError", "already published"),
        (("2020Q5", *none), "ValidationError", "does not parse"),
        (("2015Q1", *none), "StoreError", "cannot be published before 2013Q1"),
        (("--method", "ppms", "--k", "1", "--theta", "0.2"), "ValidationError",
         "--k must be an integer >= 2; got 1."),
        (("--method", "ppms", "--k", "2", "--theta", "0"), "ValidationError",
         "must be a number in (0, 1]; got 0.0."),
        (("--method", "ppms", "--k", "2", "--theta", "1.5"), "ValidationError",
         "must be a number in (0, 1]; got 1.5."),
        (("--method", "ppms", "--k", "2", "--theta", "nonsense"), "ValidationError",
         "'frequency', or a .csv/.toml file"),
        (("--method", "ppms++"), "ValidationError", "--k is required by method 'ppms++'"),
        (("--method", "ppms-dp"), "ValidationError", "--method must be one of"),
        (("--method", "ppms", "--k", "2", "--theta", "0.5", "--on-infeasible", "skip"),
         "ValidationError", "--on-infeasible"),
        (("--method", "ppms", "--k", "2", "--theta", "0.5", "--alpha", "0.2"), "ValidationError",
         "--alpha applies to method 'ha' only"),
        (("--method", "ha", "--k", "2", "--theta", "0.5"), "ValidationError",
         "--alpha is required by method 'ha'"),
        (("2013Q1", "--method", "ha", "--k", "2", "--theta", "0.5", "--alpha", "0.5"),
         "ValidationError", "series policy is none(); the release asks for ha("),
        (("2013Q1", "--method", "ha", "--k", "2", "--theta", "0.5", "--alpha", "0.5",
          "--change-policy"), "StoreError", "only when period 2013Q2 is ingested"),
        (("--method", "none", "--k", "5"), "ValidationError", "--k does not apply to method 'none'"),
        (("--seed", "3", *none), "ValidationError", "--allow-seeded"),
    ]
    for args, error, fragment in cases:
        assert_user_error(invoke_cli("release", *args, "--store", store), error, fragment)
    assert _store_state(store) == before


def test_missing_store_is_not_created(tmp_path) -> None:
    store = tmp_path / "absent.duckdb"
    for args in (("inspect",), ("release", "--method", "ms", "--k", "2", "--theta", "0.5"),
                 ("export", "--out", tmp_path / "o")):
        assert_user_error(invoke_cli(*args, "--store", store), "StoreError", "No store")
    assert not store.exists()


def test_export_never_overwrites(ingested_store, tmp_path) -> None:
    assert invoke_cli("release", "--method", "none", "--allow-unprotected", "--allow-gap",
                      "--store", ingested_store).returncode == 0
    out = tmp_path / "series"
    assert invoke_cli("export", "--store", ingested_store, "--out", out).returncode == 0
    before = snapshot(out)
    assert_user_error(invoke_cli("export", "--store", ingested_store, "--out", out), "StoreError",
                      "never overwrite")
    assert_user_error(invoke_cli("export", "--store", ingested_store, "--out", tmp_path / "x",
                                 "--format", "xml"),
                      "ValidationError", "--format must be one of")
    assert snapshot(out) == before
    assert not (tmp_path / "x").exists()


def test_library_messages_are_told_in_flags_but_field_names_stay() -> None:
    from medanon.cli.console import as_flags

    told = as_flags("The 'b_max' parameter of ehr_method does not apply to method 'rr'; "
                    "needs dp_variant 'strict'; the manifest's privacy_model and case_id column")
    assert told == ("--b-max does not apply to method 'rr'; needs --dp-variant 'strict'; the "
                    "manifest's privacy_model and case_id column")
