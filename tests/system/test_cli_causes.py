"""Errors that name their real cause (issue 19, item 2), and the smaller items of its "Why".

Each path goes through the command line and asserts the message, the exit code and that the
store and folders are as they were. Run in-process (``invoke_cli``) wherever the cause can be
produced for real in this process: a lock held by another process (a child process holds it), a
file the operating system refuses to write (``chmod``, or ``chattr +i`` for root, who ignores
modes), a damaged zip. A full disk is simulated in-process at the one place DuckDB reports it
(the COMMIT), with the message DuckDB gives, and produced for real on a small tmpfs in a private
mount namespace where the machine allows it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from unittest import mock

import duckdb
import pytest

from medanon.anonymize import DropIdentifiers, PPMSPlusPlus
from medanon.data.loaders.faers import read_faers
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.errors import DiskFullError, StoreError, StoreLockedError, StorePermissionError
from medanon.pipeline.case_ids import case_id_map
from medanon.pipeline.publish import publish_periods
from medanon.pipeline.checks import Acknowledgements
from medanon.random import randomness
from medanon.store import ReleaseStore
from tests.conftest import FAERS_FIXTURES, assert_user_error, invoke_cli, snapshot

MODERN = FAERS_FIXTURES / "faers_2015Q1"
READ_ONLY_COMMANDS = (("inspect",), ("ledger",), ("verify",), ("attack",), ("evaluate",))


def _ingest(store: Path, source: Path) -> None:
    with ReleaseStore.create_or_open(store, Schema.default()) as db:
        db.ingest(read_faers(source))


@pytest.fixture(scope="module")
def protected(tmp_path_factory) -> Path:
    """A store with three PPMS++ releases that pass verify (built through the library, so
    that it does not depend on the release command's flags)."""
    folder = tmp_path_factory.mktemp("causes")
    write_faers_series(folder / "in", periods=3, cases=150, seed=8)
    store = folder / "s.duckdb"
    _ingest(store, folder / "in")
    with ReleaseStore.open(store) as db:
        publish_periods(db, PPMSPlusPlus(k=3, theta=0.5, on_infeasible="raise-theta"), [],
                        randomness())
    return store


@pytest.fixture
def store(protected, tmp_path) -> Path:
    copy = tmp_path / "store" / "s.duckdb"
    copy.parent.mkdir()
    shutil.copy(protected, copy)
    return copy


def _state(store: Path) -> str:
    """What the store holds, read as the operator sees it."""
    result = invoke_cli("inspect", "--store", store, "--json")
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextlib.contextmanager
def _held(store: Path, *, read_only: bool):
    """Another process that holds the store open (DuckDB's lock) until the block ends."""
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == '1'); "
            "print('ready', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code, str(store), "1" if read_only else "0"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        yield child.pid
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close()


# -- a lock held by another process ---------------------------------------------------------------
def test_a_writer_elsewhere_is_named_with_its_pid_and_exit_75(store, tmp_path) -> None:
    before = _state(store)
    files = snapshot(store.parent)
    with _held(store, read_only=False) as pid:
        for args in (("release", "--method", "ppms++", "--k", "3", "--theta", "0.5"),
                     ("ingest", MODERN), ("inspect",), ("export", "--out", tmp_path / "out")):
            result = invoke_cli(*args, "--store", store)
            assert_user_error(result, "StoreLockedError", f"(PID {pid})")
            assert result.returncode == 75
            assert repr(str(store)) in result.stderr and "Try again" in result.stderr
            assert "not a medanon store" not in result.stderr
    assert snapshot(store.parent) == files and _state(store) == before
    assert not (tmp_path / "out").exists()


def test_read_only_commands_run_beside_a_reader_and_writers_wait(store, tmp_path) -> None:
    with _held(store, read_only=True) as pid:
        for args in (("inspect", "--json"), ("ledger",), ("verify", "--store", store),
                     ("attack", "--store", store, "--json"),
                     ("evaluate", "--json"), ("export", "--out", tmp_path / "out")):
            with_store = args if "--store" in args else (*args, "--store", store)
            result = invoke_cli(*with_store)
            assert result.returncode == 0, (args, result.stderr)
        result = invoke_cli("ingest", MODERN, "--store", store)
        assert_user_error(result, "StoreLockedError", f"PID {pid}), which is reading it")
        assert result.returncode == 75
    assert (tmp_path / "out" / "2020Q3" / "release.csv").is_file()


# -- a store the operating system refuses to write ------------------------------------------------
@contextlib.contextmanager
def _unwritable(path: Path):
    """``path`` as a file this process may read but not write, for real."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    # root ignores file modes, but not the immutable attribute
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("cannot make a file unwritable here (no chmod effect for root, no chattr)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_store_that_cannot_be_written_says_so_and_exits_77(store, tmp_path) -> None:
    before = _state(store)
    with _unwritable(store):
        files = snapshot(store.parent)
        for args in (("release", "--method", "ppms++", "--k", "3", "--theta", "0.5"),
                     ("ingest", MODERN)):
            result = invoke_cli(*args, "--store", store)
            assert_user_error(result, "StorePermissionError", f"Cannot write store {str(store)!r}")
            assert result.returncode == 77
            assert "work on a store they may not write" in result.stderr
        # the commands that only read work on it
        assert invoke_cli("inspect", "--store", store, "--json").stdout == before
        assert invoke_cli("verify", "--store", store).returncode == 0
        assert invoke_cli("export", "--store", store, "--out", tmp_path / "out").returncode == 0
        assert snapshot(store.parent) == files
    assert _state(store) == before


def _make_old_format(store: Path) -> None:
    """The store as an older medanon wrote it: no release_private table, the input hash inside
    the published manifests."""
    con = duckdb.connect(str(store))
    for period, text in con.execute("SELECT period, manifest FROM releases").fetchall():
        manifest = json.loads(text)
        manifest["input_sha256"] = f"hash-{period}"
        con.execute("UPDATE releases SET manifest = ? WHERE period = ?",
                    [json.dumps(manifest), period])
    con.execute("DROP TABLE release_private")
    con.close()


def test_an_old_store_is_upgraded_before_a_read_only_command_reads_it(store) -> None:
    _make_old_format(store)
    with _unwritable(store):
        files = snapshot(store.parent)
        result = invoke_cli("inspect", "--store", store)
        assert_user_error(result, "StorePermissionError", "needs a one-time upgrade")
        assert result.returncode == 77 and "needs write access" in result.stderr
        assert snapshot(store.parent) == files
    # writable: the read-only command upgrades it once, and the hash leaves the manifests
    assert invoke_cli("inspect", "--store", store).returncode == 0
    with ReleaseStore.open(store, read_only=True) as db:
        assert all("input_sha256" not in db.manifest(p) for p in db.published_periods())
        assert db.operator_record("2020Q1")["input_sha256"] == "hash-2020Q1"


def test_a_read_only_store_refuses_writes_by_name(tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, FAERS_FIXTURES / "legacy_2011Q2")
    found = read_faers(MODERN)
    with ReleaseStore.open(store, read_only=True) as db:
        with pytest.raises(StoreError, match="is open read-only; open it with read_only=False"):
            db.ingest(found)


def test_one_process_cannot_hold_a_store_in_both_modes(store) -> None:
    with ReleaseStore.open(store):
        with pytest.raises(StoreError, match="already open in this process in the other mode"):
            ReleaseStore.open(store, read_only=True)
    with ReleaseStore.open(store, read_only=True), ReleaseStore.open(store, read_only=True):
        pass  # readers share


# -- a full disk ----------------------------------------------------------------------------------
def _full_disk(store: Path, at: str = "COMMIT"):
    """DuckDB's own report of a full disk, raised where DuckDB raises it: at COMMIT (the WAL
    is written), or at a statement that writes."""
    from medanon.store import duckdb_store

    real = duckdb_store._run

    def run(con, sql, params=None):
        if sql.startswith(at):
            if at == "COMMIT":
                raise duckdb.TransactionException(
                    f'TransactionContext Error: Failed to commit: Could not write file '
                    f'"{store}.wal": No space left on device')
            raise duckdb.IOException(f'IO Error: Could not write file "{store}": No space left '
                                     f'on device')
        return real(con, sql, params)

    return mock.patch.object(duckdb_store, "_run", run)


@pytest.mark.parametrize("at", ["COMMIT", "INSERT INTO records"])
def test_a_full_disk_while_writing_the_store_exits_74_and_rolls_back(tmp_path, at) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, FAERS_FIXTURES / "legacy_2011Q2")
    before = _state(store)
    with _full_disk(store, at):
        result = invoke_cli("ingest", MODERN, "--store", store)
    assert_user_error(result, "DiskFullError", f"The disk holding store {str(store)!r} is full")
    assert result.returncode == 74 and "free some space" in result.stderr
    assert "InternalError" not in result.stderr
    assert _state(store) == before


def test_a_full_disk_leaves_no_new_store_behind(tmp_path) -> None:
    fresh = tmp_path / "new.duckdb"
    with _full_disk(fresh):
        result = invoke_cli("ingest", MODERN, "--store", fresh)
    assert_user_error(result, "DiskFullError", "is full")
    assert result.returncode == 74
    assert snapshot(tmp_path) == {}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_full_disk_while_exporting_removes_the_partial_output(store, tmp_path, fmt) -> None:
    from medanon.pipeline import export as exporting
    from medanon.published import format as published_format

    def write_manifest(folder, manifest):  # Python's own write: an OSError
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "manifest.json"))

    def write_parquet(rows, target):  # DuckDB's COPY: a DuckDB error, outside the store
        raise duckdb.IOException(f'IO Error: Could not write file "{target}": No space left '
                                 f'on device')

    out = tmp_path / "exported"
    with mock.patch.object(published_format, "write_manifest", write_manifest), \
            mock.patch.object(exporting, "_write_parquet", write_parquet):
        result = invoke_cli("export", "--store", store, "--out", out, "--format", fmt)
    assert_user_error(result, "DiskFullError", "no space left on the device while writing")
    assert result.returncode == 74 and "InternalError" not in result.stderr
    assert ("release.parquet" if fmt == "parquet" else "manifest.json") in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # no output, no staging


def test_a_really_full_disk(tmp_path) -> None:
    """The same, for real: the store on a 2 MB tmpfs, mounted in a private namespace."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    mount = tmp_path / "small"
    mount.mkdir()
    medanon = f"{sys.executable} -m medanon"
    script = textwrap.dedent(f"""\
        set -u
        mount -t tmpfs -o size=2m tmpfs {mount} || exit 99
        {medanon} ingest {FAERS_FIXTURES / 'legacy_2011Q2'} --store {mount}/s.duckdb > /dev/null || exit 98
        {medanon} inspect --json --store {mount}/s.duckdb > {tmp_path}/before.json
        dd if=/dev/zero of={mount}/filler bs=4k 2> /dev/null
        {medanon} ingest {MODERN} --store {mount}/s.duckdb > /dev/null 2> {tmp_path}/stderr
        echo $? > {tmp_path}/code
        rm {mount}/filler
        {medanon} inspect --json --store {mount}/s.duckdb > {tmp_path}/after.json
        """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("MEDANON_DEBUG", None)
    run = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                         env=env, timeout=600)
    if run.returncode == 99 or "unshare failed" in run.stderr or "Operation not permitted" in run.stderr:
        pytest.skip(f"cannot mount a small disk here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0, run.stderr
    stderr = (tmp_path / "stderr").read_text()
    assert (tmp_path / "code").read_text().strip() == "74", stderr
    # progress lines may come first (stderr is a file here, a log); the error is the last line
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("DiskFullError: The disk holding store") and "Traceback" not in stderr
    assert (tmp_path / "before.json").read_text() == (tmp_path / "after.json").read_text()


def test_a_file_size_limit_is_told_as_a_full_disk(tmp_path) -> None:
    """`ulimit -f` (EFBIG: the file reached the largest size the process may write) is a full
    disk for the steward, not a bug, and nothing is left behind (issue 44)."""
    if shutil.which("bash") is None:
        pytest.skip("no bash for ulimit")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("MEDANON_DEBUG", None)
    run = subprocess.run(
        ["bash", "-c", f"ulimit -f 4; exec {sys.executable} -m medanon ingest {MODERN} "
                       f"--store {work / 's.duckdb'}"],
        capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 74, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("DiskFullError: ") and "EFBIG" in last, run.stderr
    assert "InternalError" not in run.stderr and "Traceback" not in run.stderr
    assert snapshot(work) == {}


def test_a_file_size_limit_while_exporting_is_told_as_a_full_disk(store, tmp_path) -> None:
    from medanon.published import format as published_format

    def write_manifest(folder, manifest):
        raise OSError(errno.EFBIG, "File too large", str(folder / "manifest.json"))

    out = tmp_path / "exported"
    with mock.patch.object(published_format, "write_manifest", write_manifest):
        result = invoke_cli("export", "--store", store, "--out", out)
    assert_user_error(result, "DiskFullError", "EFBIG")
    assert result.returncode == 74 and "manifest.json" in result.stderr
    assert not out.exists()


# -- a damaged download ---------------------------------------------------------------------------
def _zip_of(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, str(path.relative_to(folder)))
    return target


def test_a_corrupt_zip_member_is_named_and_exits_65(tmp_path) -> None:
    good = _zip_of(MODERN, tmp_path / "faers_ascii_2015q1.zip")
    with zipfile.ZipFile(good) as archive:
        info = archive.getinfo("ASCII/DRUG15Q1.txt")
    data = bytearray(good.read_bytes())
    data[info.header_offset + 30 + len(info.filename) + info.compress_size // 2] ^= 0xFF
    broken = tmp_path / "broken.zip"
    broken.write_bytes(bytes(data))
    store = tmp_path / "s.duckdb"
    result = invoke_cli("ingest", broken, "--store", store)
    assert_user_error(result, "CorruptInputError",
                      f"Member 'ASCII/DRUG15Q1.txt' of {str(broken)!r} is corrupt")
    assert result.returncode == 65 and "Download the quarter again" in result.stderr
    assert not store.exists()


def test_a_truncated_zip_is_named_and_exits_65(tmp_path) -> None:
    good = _zip_of(MODERN, tmp_path / "faers.zip").read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(good[: len(good) // 2])
    store = tmp_path / "s.duckdb"
    result = invoke_cli("ingest", cut, "--store", store)
    assert_user_error(result, "CorruptInputError", "is a truncated zip archive")
    assert result.returncode == 65
    assert not store.exists()
    # a file that is no zip at all is still told apart
    other = tmp_path / "notes.zip"
    other.write_text("hello")
    result = invoke_cli("ingest", other, "--store", store)
    assert_user_error(result, "InputFormatError", "is not a zip file")
    assert result.returncode == 1


# -- a closed output pipe -------------------------------------------------------------------------
class _ClosedPipe(io.TextIOBase):
    """stdout whose reader went away: every write and flush fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_a_closed_pipe_ends_quietly_with_141(store) -> None:
    from medanon.cli.app import main

    for args in (("inspect", "--json"), ("inspect",), ("verify", "--store", store, "--json")):
        err = io.StringIO()
        with contextlib.redirect_stdout(_ClosedPipe()), contextlib.redirect_stderr(err):
            code = main([*map(str, args), *(() if "--store" in args else ("--store", str(store)))])
        assert code == 141, (args, err.getvalue())
        assert err.getvalue() == "", err.getvalue()
    # the shared console still prints for the next command run in this process
    assert "2020Q1" in invoke_cli("inspect", "--store", store).stdout


def test_a_closed_pipe_for_real(store) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    child = subprocess.Popen([sys.executable, "-m", "medanon", "inspect", "--json", "--store",
                              str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    child.stdout.close()  # the reader goes away before the first byte (``| head -c0``)
    with child.stderr:
        stderr = child.stderr.read().decode()
    assert child.wait(timeout=300) == 141
    assert stderr == ""


# -- attack --target: a number for a banded QID ---------------------------------------------------
def test_a_numeric_age_in_target_is_its_mesh_band(store) -> None:
    base = ("attack", "--store", store, "--period", "2020Q2", "--json")
    by_number = invoke_cli(*base, "--target", "sex=F,age=32")
    assert by_number.returncode == 0, by_number.stderr
    by_label = invoke_cli(*base, "--target", "sex=F,age=Adult (25-44)")
    assert json.loads(by_number.stdout) == json.loads(by_label.stdout)
    assert json.loads(by_number.stdout)["target"] == {"sex": "F", "age": "Adult (25-44)"}
    assert json.loads(invoke_cli(*base, "--target", "age=80").stdout)["target"] == {
        "age": "Aged, 80 and over"}
    result = invoke_cli(*base, "--target", "sex=F,age=200")
    assert_user_error(result, "ValidationError", "an age must lie between 0 and 150 years")
    result = invoke_cli(*base, "--target", "sex=F,age=thirty")
    assert_user_error(result, "ValidationError", "'Young Adult', 'Adult (25-44)', 'Middle Aged'")
    assert "or an age in years" in result.stderr
    result = invoke_cli(*base, "--target", "sex=3")
    assert_user_error(result, "ValidationError", "Give one of the 'sex' hierarchy's values: 'F', 'M'")


# -- --domain for a QID that is not numeric -------------------------------------------------------
@pytest.mark.parametrize("domain, fragment", [
    ("age=0:120", "--domain gives bounds for 'age', a categorical QID (hierarchy 'mesh-age')"),
    ("bmi=10:60", "--domain names 'bmi', which is not a QID of schema 'faers'"),
])
def test_a_domain_must_bound_a_numeric_qid(tmp_path, domain, fragment) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, FAERS_FIXTURES)
    before = snapshot(tmp_path)
    result = invoke_cli("release", "--store", store, "--method", "ppms-dp-num", "--k", "2",
                        "--theta", "0.9", "--epsilon", "1", "--domain", "weight=0:300",
                        "--domain", domain)
    assert_user_error(result, "ValidationError", fragment)
    assert "umeric QIDs" in result.stderr and "weight" in result.stderr
    assert result.returncode == 1
    assert snapshot(tmp_path) == before


# -- a domain that clips most values; the real number withheld ------------------------------------
@pytest.fixture(scope="module")
def dp_source(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("dp-causes")
    write_faers_series(folder / "in", periods=2, cases=300, seed=4)
    return folder / "in"


DP = ("--method", "ppms-dp-num", "--k", "5", "--theta", "0.4", "--on-infeasible", "raise-theta",
      "--epsilon", "1", "--seed", "5", "--allow-seeded")


def test_a_domain_that_clips_most_values_warns_the_operator_only(dp_source, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, dp_source)
    result = invoke_cli("release", "2020Q1", "--store", store, *DP, "--domain", "weight=70:71")
    assert result.returncode == 0, result.stderr
    with ReleaseStore.open(store, read_only=True) as db:
        private = db.operator_record("2020Q1")["private_details"]
        manifest_text = json.dumps(db.manifest("2020Q1"))
    clipped = private["clipped_to_domain"]["weight"]
    checked = private["domain_checked_values"]["weight"]
    assert clipped > 0.5 * checked
    warning = (f"warning: in 2020Q1, the public domain [70, 71] of 'weight' clipped {clipped} "
               f"of {checked} true values ({clipped / checked:.0%})")
    assert warning in result.stderr and "Operator-only" in result.stderr
    assert warning not in result.stdout
    # never published: not in the manifest, nor in any export
    for secret in ("clipped_to_domain", "domain_checked_values"):
        assert secret not in manifest_text
    for fmt in ("csv", "parquet", "faers"):
        out = tmp_path / fmt
        assert invoke_cli("export", "--store", store, "--out", out, "--format", fmt).returncode == 0
        for f in out.rglob("*"):
            if f.is_file():
                assert b"clipped" not in f.read_bytes() and b"checked_values" not in f.read_bytes()
    # a domain that covers the data draws no warning
    other = tmp_path / "wide.duckdb"
    _ingest(other, dp_source)
    result = invoke_cli("release", "2020Q1", "--store", other, *DP, "--domain", "weight=0:400")
    assert result.returncode == 0 and "clipped" not in result.stderr


def test_withheld_shows_the_cases_a_case_budget_withholds(dp_source, tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, dp_source)
    dp = (*DP, "--domain", "weight=0:400")
    assert invoke_cli("release", "2020Q1", "--store", store, *dp).returncode == 0
    # a case budget from 2020Q2 on is a change of the series policy
    result = invoke_cli("release", "2020Q2", "--store", store, *dp, "--case-budget", "1.5",
                        "--on-case-budget", "suppress", "--json", "--change-policy")
    assert result.returncode == 0, result.stderr
    (summary,) = json.loads(result.stdout)
    with ReleaseStore.open(store, read_only=True) as db:   # operator-only facts (issue 41)
        manifest = db.operator_manifests()["2020Q2"]
    withheld = manifest["privacy_spent"]["case_budget"]["withheld_cases"]
    assert withheld > 0
    assert summary["suppressed"] == manifest["counts"]["suppressed"] >= withheld
    # and the table says the same (it said "withheld 0" for 63 withheld cases)
    other = tmp_path / "t.duckdb"
    _ingest(other, dp_source)
    assert invoke_cli("release", "2020Q1", "--store", other, *dp).returncode == 0
    table = invoke_cli("release", "2020Q2", "--store", other, *dp, "--case-budget", "1.5",
                       "--on-case-budget", "suppress", "--change-policy")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if "2020Q2" in line)
    cells = [c.strip() for c in row.strip().strip("│").split("│")]
    with ReleaseStore.open(other, read_only=True) as db:
        counts = db.operator_manifests()["2020Q2"]["counts"]
        withheld_here = db.operator_manifests()["2020Q2"]["privacy_spent"]["case_budget"][
            "withheld_cases"]
    assert cells[4] == str(counts["suppressed"]), row
    assert int(cells[4]) >= withheld_here > 0


def _suppressed(store: Path, period: str) -> int:
    with ReleaseStore.open(store, read_only=True) as db:
        return db.operator_manifests()[period]["counts"]["suppressed"]


# -- the demo's folder ----------------------------------------------------------------------------
def _old_demo_folder(out: Path) -> None:
    """A folder as an earlier demo left it, with the marker listing the files it wrote."""
    (out / "published" / "2020Q1").mkdir(parents=True)
    (out / "published" / "2020Q1" / "release.csv").write_text("demo's\n")
    (out / "report.html").write_text("demo's report\n")
    (out / ".medanon-demo").write_text(json.dumps(
        {"made_by": "medanon demo",
         "files": ["published/2020Q1/release.csv", "report.html", "../outside.txt"]}))


def _stop_after_preparing(*args, **kwargs):
    from medanon.errors import ValidationError

    raise ValidationError("stopped by the test after the folder was prepared")


def test_the_demo_replaces_only_its_own_files(tmp_path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    _old_demo_folder(out)
    (out / "my-notes.txt").write_text("mine")
    (tmp_path / "outside.txt").write_text("mine too")  # listed in the marker, never the demo's
    with mock.patch("medanon.data.synth.faers.write_faers_series", _stop_after_preparing):
        result = invoke_cli("demo", "--out", out)
    assert_user_error(result, "ValidationError", "stopped by the test")
    assert (out / "my-notes.txt").read_text() == "mine"
    assert (tmp_path / "outside.txt").read_text() == "mine too"
    assert not (out / "report.html").exists() and not (out / "published").exists()
    assert json.loads((out / ".medanon-demo").read_text())["files"] == []


def test_the_demo_refuses_foreign_files_where_it_writes(tmp_path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    _old_demo_folder(out)
    (out / "published" / "thesis.tex").write_text("precious")
    before = snapshot(out)
    result = invoke_cli("demo", "--out", out)
    assert_user_error(result, "ValidationError", "published/thesis.tex")
    assert "deletes only its own files" in result.stderr
    assert snapshot(out) == before
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    assert_user_error(invoke_cli("demo", "--out", foreign), "ValidationError",
                      "was not made by 'medanon demo'")
    assert snapshot(foreign) == {"thesis.tex": b"precious"}


# -- report --out ---------------------------------------------------------------------------------
def test_report_does_not_create_folders(store, tmp_path) -> None:
    out = tmp_path / "no" / "such" / "folder" / "report.html"
    before = snapshot(tmp_path)
    result = invoke_cli("report", "--store", store, "--out", out)
    assert_user_error(result, "ValidationError", f"folder {str(out.parent)!r} does not exist")
    assert not (tmp_path / "no").exists() and snapshot(tmp_path) == before


# -- verify: a missing middle period; parquet and FAERS-layout exports ----------------------------
def test_verify_refuses_a_series_missing_a_middle_period(store, tmp_path) -> None:
    series = tmp_path / "series"
    assert invoke_cli("export", "--store", store, "--out", series).returncode == 0
    assert invoke_cli("verify", series).returncode == 0
    shutil.rmtree(series / "2020Q2")
    before = snapshot(series)
    result = invoke_cli("verify", series)
    assert_user_error(result, "InputFormatError", "lacks period(s) 2020Q2 between its first and "
                                                  "last release")
    assert "--allow-gap" in result.stderr and result.returncode == 1
    result = invoke_cli("verify", series, "--json")
    assert result.returncode == 1 and json.loads(result.stdout)["missing_periods"] == ["2020Q2"]
    result = invoke_cli("verify", series, "--allow-gap")
    assert result.returncode == 0, result.stderr
    assert "missing period(s) accepted (--allow-gap): 2020Q2" in result.stdout
    assert snapshot(series) == before


def test_verify_reads_parquet_exports_and_refuses_the_faers_layout_alone(store, tmp_path) -> None:
    verdicts = {}
    for fmt in ("csv", "parquet"):
        out = tmp_path / fmt
        assert invoke_cli("export", "--store", store, "--out", out, "--format", fmt).returncode == 0
        result = invoke_cli("verify", out, "--json")
        assert result.returncode == 0, result.stderr
        verdicts[fmt] = json.loads(result.stdout)
    assert verdicts["parquet"] == verdicts["csv"]
    assert not list((tmp_path / "parquet").rglob("release.csv"))  # it really read the Parquet
    out = tmp_path / "faers"
    assert invoke_cli("export", "--store", store, "--out", out, "--format", "faers").returncode == 0
    result = invoke_cli("verify", out, "--json")  # the release.csv written beside the FAERS files
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == verdicts["csv"]
    for written in out.rglob("release.csv"):  # the FAERS files alone cannot be verified
        written.unlink()
    result = invoke_cli("verify", out)
    assert_user_error(result, "InputFormatError", "holds a release in the FAERS ASCII layout, "
                                                  "which cannot be verified")
    assert "no QID-group column" in result.stderr and "--format parquet" in result.stderr


# -- ingest: the missing-value drop follows the schema; DELETE names the cases --------------------
def test_a_schema_without_weight_keeps_reports_missing_a_weight(tmp_path) -> None:
    schema = tmp_path / "no-weight.toml"
    schema.write_text('[schema]\nname = "no-weight"\nsensitive = ["indications", "reactions"]\n'
                      'multi = ["drugs"]\nidentifiers = ["report_id"]\nprivate = ["age_years"]\n'
                      '[[schema.qid]]\nname = "age"\nkind = "categorical"\nhierarchy = "mesh-age"\n'
                      '[[schema.qid]]\nname = "sex"\nkind = "categorical"\nhierarchy = "sex"\n')
    reports = {}
    for name, extra in (("default", ()), ("no-weight", ("--schema", schema))):
        result = invoke_cli("ingest", FAERS_FIXTURES / "legacy_2011Q2", "--store",
                            tmp_path / f"{name}.duckdb", "--json", "--drop-missing", *extra)
        assert result.returncode == 0, result.stderr
        (reports[name],) = json.loads(result.stdout)["quarters"]
    default, no_weight = reports["default"], reports["no-weight"]
    assert default["missing"]["weight"] > 0
    assert "weight" not in no_weight["missing"]
    assert set(no_weight["missing"]) == {"age", "sex", "indications", "reactions"}
    # exactly the reports that lacked only a weight come back
    only_weight = read_faers(FAERS_FIXTURES / "legacy_2011Q2", keep_missing=True).quarters[0].records
    lacking = only_weight[only_weight["weight"].isna() & only_weight["age"].notna()
                          & only_weight["sex"].notna()
                          & only_weight["reactions"].map(len).gt(0)
                          & only_weight["indications"].map(len).gt(0)]
    assert no_weight["reports"] == default["reports"] + len(lacking) > default["reports"]


def test_the_delete_list_warning_names_the_published_cases(tmp_path) -> None:
    store = tmp_path / "s.duckdb"
    _ingest(store, FAERS_FIXTURES / "legacy_2011Q2")
    with ReleaseStore.open(store) as db:
        publish_periods(db, DropIdentifiers(), ["2011Q2"], randomness(),
                        acknowledged=Acknowledgements(unprotected=True))
        # FDA's DELETE list names real CaseIDs; the release published pseudonyms of them
        published = sorted(set(case_id_map(db, ["2011Q2"])["real_case_id"]))
    later = tmp_path / "q"
    shutil.copytree(MODERN, later)
    (later / "Deleted" / "DELETE15Q1.txt").write_text(f"{published[0]}$\r\n{published[-1]}$\r\n")
    result = invoke_cli("ingest", later, "--store", store)
    assert result.returncode == 0, result.stderr
    warning = " ".join(result.stderr.split())
    assert f"already published: 2011Q2: {published[0]}, {published[-1]}." in warning, warning
    result = invoke_cli("ingest", later, "--store", store, "--json")
    assert json.loads(result.stdout)["deleted_but_published_cases"] == {
        "2011Q2": [published[0], published[-1]]}


# -- the library raises the same classes ----------------------------------------------------------
def test_error_classes_keep_their_parents_and_codes() -> None:
    from medanon.errors import CorruptInputError, InputFormatError

    assert issubclass(StoreLockedError, StoreError) and StoreLockedError.exit_code == 75
    assert issubclass(StorePermissionError, StoreError) and StorePermissionError.exit_code == 77
    assert issubclass(DiskFullError, StoreError) and DiskFullError.exit_code == 74
    assert issubclass(CorruptInputError, InputFormatError) and CorruptInputError.exit_code == 65
    assert StoreError.exit_code == 1 and InputFormatError.exit_code == 1
