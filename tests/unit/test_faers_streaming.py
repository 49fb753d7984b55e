"""The FAERS reader reads tables a chunk at a time: it must give exactly what reading each file
whole gave (the reader before streaming, kept here as the reference), wherever the chunks
happen to cut the file."""

from __future__ import annotations

import functools
import io
import random
import zipfile

import numpy as np
import pandas as pd
import pytest

from medanon.data.loaders import faers
from medanon.data.loaders.faers import (_PLACEHOLDER, _TEXT_COLUMN, DRUG_ROLES, IngestReport,
                                        _drug_sets, _Member, _parse_table, _term_sets,
                                        read_faers)
from medanon.errors import CorruptInputError, InputFormatError
from tests.conftest import FAERS_FIXTURES

#: chunk sizes that cut lines, CRLF pairs and the BOM anywhere, and one that reads files whole
CHUNKS = (1, 2, 3, 7, 64, 1 << 20)


# -- the reference: the whole-file reading this reader replaced -------------------------------
def _reference_table(raw: bytes, table: str, name: str):
    """(frame, line numbers, split lines, embedded separators) as the whole-file reader gave
    them; it raises what that reader raised."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputFormatError(f"{name} is empty: a FAERS table needs a header line.")
    header = lines[0]
    if "$" not in header:
        found = next((s for s in (",", "\t", ";", "|") if s in header), None)
        hint = f" (it looks {found!r}-separated)" if found else ""
        raise InputFormatError(f"{name} is not '$'-separated{hint}: FAERS files use '$' "
                               "between fields.")
    columns = [c.strip().lower() for c in header.split("$")]
    trailing = columns[-1] == ""
    if trailing:
        columns.pop()
    expected = len(columns) - 1 + int(trailing)
    text_col = _TEXT_COLUMN.get(table)
    text_pos = columns.index(text_col) if text_col in columns else len(columns) - 1
    rows: list[str] = []
    starts: list[int] = []
    split = embedded = 0
    i, n = 1, len(lines)
    counts = [line.count("$") for line in lines]
    whole = [(c, ln) for c, ln in zip(counts[1:], lines[1:]) if c >= expected]
    ends = sum(1 for c, ln in whole if c == expected + 1 and ln.endswith("$"))
    data_trailing = not trailing and 2 * ends > len(whole)
    target = expected + int(data_trailing)
    while i < n:
        line, count, start = lines[i], counts[i], i + 1
        if not line.strip():
            i += 1
            continue
        if count == 0 and rows and (i + 1 >= n or counts[i + 1] >= target):
            rows[-1] = rows[-1] + " " + line
            split += 1
            i += 1
            continue
        while (count < target and i + 1 < n and counts[i + 1] < target
               and count + counts[i + 1] <= target):
            i += 1
            line = line + " " + lines[i]
            count += counts[i]
            split += 1
        if data_trailing and count > expected and line.endswith("$"):
            line, count = line[:-1], count - 1
        if count > expected:
            parts = line.split("$")
            surplus = count - expected
            merged = _PLACEHOLDER.join(parts[text_pos:text_pos + surplus + 1])
            line = "$".join(parts[:text_pos] + [merged] + parts[text_pos + surplus + 1:])
            embedded += 1
        elif count < expected:
            raise InputFormatError(
                f"{name} line {start}: {count + 1 - int(trailing)} field(s) where the header "
                f"has {len(columns)}, and the following line does not complete it.")
        rows.append(line)
        starts.append(start)
        i += 1
    body = "\n".join(["$".join(columns) + ("$" if trailing else "")] + rows) + "\n"
    frame = pd.read_csv(io.StringIO(body), sep="$", dtype=str, keep_default_na=False,
                        na_filter=False, quoting=3, engine="c", index_col=False)
    frame = frame.loc[:, [c for c in frame.columns if not str(c).startswith("Unnamed")]]
    frame.columns = columns[: frame.shape[1]]
    if embedded and text_col in frame.columns:
        frame[text_col] = frame[text_col].str.replace(_PLACEHOLDER, "$", regex=False)
    return frame, np.asarray(starts, dtype=np.int64), split, embedded


def _reference_value_sets(frame: pd.DataFrame, key: str, value: str) -> pd.Series:
    sub = frame.loc[frame[value] != "", [key, value]].drop_duplicates()
    sub = sub.sort_values([key, value], kind="stable")
    keys = sub[key].to_numpy()
    vals = sub[value].to_numpy()
    if len(keys) == 0:
        return pd.Series(dtype=object)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    bounds = np.r_[starts, len(keys)]
    sets = [tuple(vals[bounds[j]:bounds[j + 1]]) for j in range(len(starts))]
    return pd.Series(sets, index=keys[starts], dtype=object)


# -- inputs -------------------------------------------------------------------------------------
def _member(raw: bytes, table: str, name: str = "T.txt") -> _Member:
    return _Member(table, "", name, lambda: io.BytesIO(raw))


def _field(rng: random.Random) -> str:
    # spaces to strip, Latin-1, a quote (never special) and a native U+001F
    return "".join(rng.choice("ab Z0é\"\x1f") for _ in range(rng.randint(0, 4)))


def _random_table(rng: random.Random) -> tuple[bytes, str]:
    """A table with the defects FDA files have, at random places: stray line breaks (LF, CRLF,
    CR) inside fields, embedded '$', data rows ending in '$' under a header that does not,
    blank lines, a BOM, a missing last line end; now and then an unrepairable line."""
    table = rng.choice(["DEMO", "DRUG", "REAC", "INDI"])
    width = rng.randint(1, 5)
    names = [rng.choice(["primaryid", "caseid", "x", "y"]) for _ in range(width)]  # may repeat
    if rng.random() < 0.7:  # the free-text column, once
        names[rng.randrange(width)] = _TEXT_COLUMN[table]
    trailing = rng.random() < 0.5
    rows_trailing = rng.random() < 0.5
    lines = ["$".join(n.upper() if rng.random() < 0.3 else n for n in names)
             + ("$" if trailing else "")]
    for _ in range(rng.randint(0, 14)):
        fields = [_field(rng) for _ in range(width)]
        if rng.random() < 0.15:  # an embedded '$' in a free-text field
            at = rng.randrange(width)
            fields[at] = fields[at] + "$" * rng.randint(1, 2) + _field(rng)
        if rng.random() < 0.03:  # too few fields: unrepairable
            fields = fields[:-1] or [""]
        line = "$".join(fields)
        if trailing or (rows_trailing and rng.random() < 0.9):
            line += "$"
        for _ in range(rng.choice([0, 0, 0, 1, 2])):  # stray line breaks
            at = rng.randint(0, len(line))
            line = line[:at] + rng.choice(["\n", "\r\n", "\r"]) + line[at:]
        lines.append(line)
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "  ", "\t"]))
    endings = [rng.choice(["\n", "\r\n", "\r\n", "\r"]) for _ in lines]
    text = "".join(line + end for line, end in zip(lines, endings))
    if rng.random() < 0.3:
        text = text.rstrip("\r\n")
    raw = text.encode("latin-1")
    if rng.random() < 0.2:
        raw = b"\xef\xbb\xbf" + raw
    return raw, table


def _same_as_reference(raw: bytes, table: str, chunk: int) -> None:
    try:
        want = _reference_table(raw, table, "T.txt")
    except InputFormatError as exc:
        with pytest.raises(InputFormatError) as got:
            _parse_table(_member(raw, table), table, chunk_bytes=chunk)
        assert str(got.value) == str(exc), (raw, chunk)
        return
    got = _parse_table(_member(raw, table), table, chunk_bytes=chunk)
    frame, lines, split, embedded = want
    pd.testing.assert_frame_equal(got.frame, frame, obj=repr((raw, chunk)))
    assert got.line_numbers.tolist() == lines.tolist(), (raw, chunk)
    assert (got.split_lines, got.embedded) == (split, embedded), (raw, chunk)


# -- tables -------------------------------------------------------------------------------------
EDGES = {
    # a record split inside a field, the break being CRLF, LF and a bare CR
    "split": b"primaryid$caseid$pt$\r\n1$10$Naus\r\nea$\r\n2$20$Ra\nsh$\r\n3$3\r0$Cough$\r\n",
    # the tail of a last field on a line of its own, then blank lines, then more tails
    "tails": b"primaryid$caseid$pt\r\n1$10$Naus\r\nea\r\n\r\n  \r\nx\r\n2$20$Rash\r\n3$30$Rash",
    # embedded '$' (one and two), and a U+001F already in the file
    "embedded": (b"primaryid$drugname$prod_ai$\n1$VITAMIN B$12$CYANO$\n2$A$B$C$D$\n"
                 b"3$NATIVE\x1fUS$X$\n"),
    # rows end in '$' under a header that does not, one row does not, one is split
    "row-trailing": (b"primaryid$caseid$drug_seq$role_cod$drugname$prod_ai\r\n"
                     b"1$10$1$PS$ASPI\r\nRIN$ASA$\r\n2$20$1$PS$WARFARIN$WARFARIN$\r\n"
                     b"3$30$1$PS$HUMIRA$ADALIMUMAB\r\n"),
    # a BOM, no last line end, Latin-1 text
    "bom": b"\xef\xbb\xbfprimaryid$caseid$pt\r\n1$10$Naus\xe9e$\r\n2$20$Rash$\r\n3$30$Cough",
    "header-only": b"primaryid$caseid$pt$\r\n",
    "only-blank-rows": b"primaryid$caseid$pt$\r\n\r\n   \r\n",
    "one-column": b"pt\r\nNausea\r\n\r\nRash$\r\nCough\r\n",
    # unrepairable: too few fields, and a fragment that nothing completes
    "short": b"primaryid$caseid$pt$\r\n1$10$Nausea$\r\n2$20\r\n3$30$Rash$\r\n",
    "short-at-end": b"primaryid$caseid$pt$\r\n1$10$Nausea$\r\n2$2",
    "empty": b"",
    "comma": b"primaryid,caseid,pt\r\n1,10,Nausea\r\n",
    "bom-only": b"\xef\xbb\xbf",
    "lone-lf": b"\n",
    "cr-only-lines": b"primaryid$caseid$pt$\r1$10$Nausea$\r2$20$Rash$\r",
}


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_tables_read_as_the_whole_file_reader_read_them(name, chunk) -> None:
    table = "DRUG" if b"drugname" in EDGES[name] else "REAC"
    _same_as_reference(EDGES[name], table, chunk)


def test_random_defective_tables_read_as_the_whole_file_reader_read_them() -> None:
    rng = random.Random(20240501)
    outcomes = {"rows": 0, "errors": 0, "split": 0, "embedded": 0}
    for _ in range(200):
        raw, table = _random_table(rng)
        for chunk in (1, 8, 1 << 20):
            _same_as_reference(raw, table, chunk)
        try:
            _, _, split, embedded = _reference_table(raw, table, "T.txt")
        except InputFormatError:
            outcomes["errors"] += 1
            continue
        outcomes["rows"] += 1
        outcomes["split"] += split > 0
        outcomes["embedded"] += embedded > 0
    # the generator does reach every case it is meant to
    assert all(count >= 20 for count in outcomes.values()), outcomes


@pytest.mark.parametrize("chunk", CHUNKS)
def test_the_fixture_tables_read_as_the_whole_file_reader_read_them(chunk) -> None:
    files = [p for p in FAERS_FIXTURES.rglob("*") if p.suffix.lower() == ".txt"]
    archive = zipfile.ZipFile(FAERS_FIXTURES / "faers_2013Q1.zip")
    raws = [(p.read_bytes(), p.name) for p in files]
    raws += [(archive.read(n), n.split("/")[-1]) for n in archive.namelist() if n.endswith(".txt")]
    assert len(raws) >= 15
    for raw, name in raws:
        table = faers._FILE_NAME.match(name).group(1).upper()
        if table != "DELETE":
            _same_as_reference(raw, table, chunk)


def test_empty_header_fields_keep_their_columns_apart(tmp_path) -> None:
    # A header field without a name is no column. (The whole-file reader shifted the names
    # after it onto the wrong data: 'pt' named the caseid values. Deliberately not kept.)
    reac = tmp_path / "REAC20Q1.txt"
    reac.write_bytes(b"primaryid$$caseid$pt$\r\n1$x$10$Nausea$\r\n")
    table = faers.read_faers_table(reac)
    assert table.to_dict("records") == [{"primaryid": "1", "caseid": "10", "pt": "Nausea"}]


# -- term sets (DRUG/REAC/INDI joined to the reports) -------------------------------------------
def _random_terms_table(rng: random.Random) -> tuple[bytes, list[str]]:
    ids = [str(100 + i) for i in range(12)]
    words = ["ASPIRIN", " ASPIRIN", "ASPIRIN ", "aspirin", "Ibuprofène", "", " ", "VIT B", "Z",
             "\x1f", "A\x1f"]
    lines = ["primaryid$caseid$drugname$prod_ai$"]
    for _ in range(rng.randint(0, 40)):
        report = rng.choice(ids + [" 101", "101 ", "999"])
        name = rng.choice(words)
        if rng.random() < 0.1:
            name += "$" + rng.choice(["12", "", " "])  # an embedded '$' (maybe at the end)
        line = f"{report}$1$${name}$X$"
        lines.append(line.replace("$$", "$", 1))
    return ("\r\n".join(lines) + "\r\n").encode("latin-1"), ids


def test_term_sets_match_the_sorted_distinct_values_of_the_whole_file_reader() -> None:
    rng = random.Random(7)
    mapping = {"report_id": "primaryid", "drugname": "drugname"}
    for _ in range(100):
        raw, ids = _random_terms_table(rng)
        kept = pd.Index(rng.sample(ids, rng.randint(0, len(ids))), dtype=str)
        frame, _, split, embedded = _reference_table(raw, "DRUG", "DRUG.txt")
        frame = frame[["primaryid", "drugname"]].copy()
        frame.columns = ["report_id", "drugname"]
        for col in frame.columns:
            frame[col] = frame[col].str.strip()
        frame = frame.loc[frame["report_id"].isin(set(kept))]
        want = pd.Series(kept).map(_reference_value_sets(frame, "report_id", "drugname"))
        want = [v if isinstance(v, tuple) else () for v in want]
        for chunk in (16, 1 << 20):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(faers, "_CHUNK_BYTES", chunk)
                got = _term_sets(_member(raw, "DRUG", "DRUG.txt"), "DRUG", mapping, "drugname",
                                 kept)
            assert got == (want, split, embedded), raw


def _demo_ordered_table(rng: random.Random, demo: list[str]) -> bytes:
    """A DRUG table written report by report in DEMO's order (as FDA writes it), with now and
    then a report left out, an id with spaces, one in no DEMO row, or one out of order."""
    lines = ["primaryid$caseid$drugname$prod_ai$"]
    for report in demo:
        if rng.random() < 0.15:
            continue
        if rng.random() < 0.05:
            report = rng.choice([f" {report}", "999", rng.choice(demo)])
        for _ in range(rng.randint(1, 3)):
            lines.append(f"{report}$1${rng.choice(['ASPIRIN', ' Z', '', 'VIT B'])}$X$")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def test_term_sets_placed_in_demo_order_match_the_lookup_of_every_id() -> None:
    # _DemoOrder places a chunk whose reports are a stretch of DEMO's without hashing its ids;
    # any other chunk is looked up: the sets and the orphan count are the same either way
    rng = random.Random(23)
    mapping = {"report_id": "primaryid", "drugname": "drugname"}
    for _ in range(60):
        demo = [str(100 + i) for i in range(rng.randint(1, 30))]
        raw = (_demo_ordered_table(rng, demo) if rng.random() < 0.8
               else _random_terms_table(rng)[0])
        known_of_row, known_ids = pd.factorize(np.array(demo, dtype=object))
        known = pd.Index(known_ids)
        kept = pd.Index(rng.sample(demo, rng.randint(0, len(demo))), dtype=str)
        kept_at = kept.get_indexer(known)
        order = faers._DemoOrder(np.asarray(known_ids, dtype=object), kept_at)
        for chunk in (16, 64, 1 << 20):
            got = {}
            for given in (None, order):
                report = IngestReport("2020Q1", "faers-2014", "x")
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(faers, "_CHUNK_BYTES", chunk)
                    sets = _term_sets(_member(raw, "DRUG", "DRUG.txt"), "DRUG", mapping,
                                      "drugname", kept, report=report, known=known,
                                      demo_order=given)
                got[given is None] = (sets, report.orphan_rows)
            assert got[True] == got[False], raw
        # every row of no DEMO report is counted (rows, not runs of one id)
        ids = [line.split("$")[0].strip() for line in raw.decode("latin-1").splitlines()[1:]]
        assert got[True][1] == {"DRUG": sum(1 for i in ids if i not in set(demo))}, raw


def _random_role_table(rng: random.Random) -> tuple[bytes, list[str]]:
    ids = [str(100 + i) for i in range(12)]
    words = ["ASPIRIN", " ASPIRIN", "aspirin", "Ibuprofène", "", " ", "VIT B", "\x1f"]
    roles = ["PS", "SS", "C", "I", "ps", " c ", "", "X", "SS "]
    lines = ["primaryid$caseid$role_cod$drugname$prod_ai$"]
    for _ in range(rng.randint(0, 40)):
        report = rng.choice(ids + [" 101", "999"])
        name = rng.choice(words)
        if rng.random() < 0.1:
            name += "$" + rng.choice(["12", "", " "])  # an embedded '$' (drugname absorbs it)
        lines.append(f"{report}$1${rng.choice(roles)}${name}$X$")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1"), ids


def test_drug_sets_per_role_match_the_whole_file_reader() -> None:
    rng = random.Random(11)
    mapping = {"report_id": "primaryid", "drugname": "drugname", "role_cod": "role_cod"}
    for _ in range(100):
        raw, ids = _random_role_table(rng)
        kept = pd.Index(rng.sample(ids, rng.randint(0, len(ids))), dtype=str)
        frame, _, split, embedded = _reference_table(raw, "DRUG", "DRUG.txt")
        frame = frame[["primaryid", "role_cod", "drugname"]].copy()
        frame.columns = ["report_id", "role", "drugname"]
        for col in frame.columns:
            frame[col] = frame[col].str.strip()
        frame["role"] = frame["role"].str.upper()
        frame = frame.loc[frame["report_id"].isin(set(kept))]
        want = {"drugs": frame}
        want.update({column: frame[frame["role"] == code] for code, column in DRUG_ROLES.items()})
        want = {column: [v if isinstance(v, tuple) else () for v in pd.Series(kept).map(
                    _reference_value_sets(rows, "report_id", "drugname"))]
                for column, rows in want.items()}
        other = frame.loc[~frame["role"].isin(list(DRUG_ROLES)), "role"]
        unknown = other[other != ""].value_counts()
        for chunk in (16, 1 << 20):
            report = IngestReport("2020Q1", "faers-2014", "x")
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(faers, "_CHUNK_BYTES", chunk)
                got = _drug_sets(_member(raw, "DRUG", "DRUG.txt"), mapping, kept, report)
            assert got == (want, split, embedded), raw
            assert report.unknown_roles == {k: int(v) for k, v in sorted(unknown.items())}, raw
            assert report.drugs_without_role == int((other == "").sum()), raw


# -- whole quarters -----------------------------------------------------------------------------
def _read_all(source, **kwargs) -> list[tuple[pd.DataFrame, dict]]:
    return [(q.records, q.report_dict()) for q in read_faers(source, **kwargs).quarters]


@pytest.mark.parametrize("source", ["legacy_2011Q2", "faers_2013Q1.zip", "faers_2015Q1"])
def test_a_tiny_chunk_reads_every_quarter_alike(source, monkeypatch) -> None:
    want = _read_all(FAERS_FIXTURES / source, keep_missing=True)
    monkeypatch.setattr(faers, "_CHUNK_BYTES", 3)
    got = _read_all(FAERS_FIXTURES / source, keep_missing=True)
    assert len(got) == len(want) == 1
    pd.testing.assert_frame_equal(got[0][0], want[0][0])
    assert got[0][1] == want[0][1]


def test_zip_members_are_read_a_chunk_at_a_time(tmp_path, monkeypatch) -> None:
    archive = tmp_path / "faers_2015Q1.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in (FAERS_FIXTURES / "faers_2015Q1").rglob("*.txt"):
            zf.write(path, f"{path.parent.name}/{path.name}")
    want = _read_all(FAERS_FIXTURES / "faers_2015Q1", keep_missing=True)
    reads: list[int] = []
    real_read = faers._ZipMember.read

    def read(self, size=-1):
        reads.append(size)
        return real_read(self, size)

    monkeypatch.setattr(faers._ZipMember, "read", read)
    monkeypatch.setattr(faers, "_CHUNK_BYTES", 64)
    got = _read_all(archive, keep_missing=True)
    pd.testing.assert_frame_equal(got[0][0], want[0][0])
    assert {k: v for k, v in got[0][1].items() if k != "source"} == \
        {k: v for k, v in want[0][1].items() if k != "source"}
    assert reads and all(0 < size <= 64 for size in reads if size != -1)
    assert reads.count(-1) == 1  # only the DELETE list is read whole


def test_a_member_corrupt_past_the_first_chunk_is_named(tmp_path, monkeypatch) -> None:
    archive = tmp_path / "q.zip"
    drug = (FAERS_FIXTURES / "faers_2015Q1" / "ASCII" / "DRUG15Q1.txt").read_bytes()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("DRUG15Q1.txt", drug)
    data = bytearray(archive.read_bytes())
    at = data.index(drug[-40:])
    data[at] ^= 0xFF  # the CRC fails only once the last bytes are read
    archive.write_bytes(bytes(data))
    member = next(m for m in faers._members_of_zip(archive) if m.table == "DRUG")
    monkeypatch.setattr(faers, "_CHUNK_BYTES", 16)
    with pytest.raises(CorruptInputError, match="Member 'DRUG15Q1.txt' of .* is corrupt"):
        _parse_table(member, "DRUG")


def test_open_faers_reads_delete_lists_first_and_quarters_on_demand() -> None:
    quarters = faers.open_faers(FAERS_FIXTURES)
    assert [p.label for p in quarters.periods] == ["2011Q2", "2013Q1", "2015Q1"]
    assert quarters.deleted_case_ids >= {"9012345", "10955501"}
    assert quarters.reports == []
    first = next(iter(quarters))
    assert first.label == "2011Q2" and len(quarters.reports) == 1
    whole = read_faers(FAERS_FIXTURES)
    for got, want in zip(quarters, whole.quarters):
        pd.testing.assert_frame_equal(got.records, want.records)
        assert got.report_dict() == want.report_dict()


def test_open_faers_checks_every_quarter_has_its_tables_before_reading_any(tmp_path) -> None:
    good = tmp_path / "a"
    good.mkdir()
    for path in (FAERS_FIXTURES / "faers_2015Q1").rglob("*.txt"):
        (good / path.name).write_bytes(path.read_bytes())
    bad = tmp_path / "b"
    bad.mkdir()
    (bad / "DEMO16Q1.txt").write_bytes(b"primaryid$caseid$\r\n")
    with pytest.raises(InputFormatError, match="Quarter 2016Q1 has no DRUG, REAC, INDI file"):
        faers.open_faers(tmp_path)


def test_disk_files_are_opened_for_chunked_reading(tmp_path) -> None:
    path = tmp_path / "REAC20Q1.txt"
    path.write_bytes(b"primaryid$caseid$pt$\r\n1$10$Nausea$\r\n")
    member = _Member("REAC", "", str(path), functools.partial(path.open, "rb"))
    assert _parse_table(member, "REAC", chunk_bytes=2).frame["pt"].tolist() == ["Nausea"]


def test_open_faers_lets_go_of_a_quarter_before_it_reads_the_next(monkeypatch) -> None:
    import gc
    import weakref

    handed: list[weakref.ref] = []
    alive: list[bool] = []
    real = faers._read_quarter

    def read_quarter(*args, **kwargs):
        gc.collect()
        alive.extend(ref() is not None for ref in handed)
        return real(*args, **kwargs)

    monkeypatch.setattr(faers, "_read_quarter", read_quarter)
    for quarter in faers.open_faers(FAERS_FIXTURES):
        handed.append(weakref.ref(quarter.records))
        del quarter
    assert len(handed) == 3 and alive == [False, False, False]
