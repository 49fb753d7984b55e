"""FAERS tables' text encodings and field sizes (issue 44): UTF-8 text is read as UTF-8, not
stored as mojibake; Latin-1 as Latin-1; a table mixing the two, a UTF-16 file and a field past
the limit are refused, naming the file and the line, and nothing is read."""

import random
from pathlib import Path

import pytest

from medanon.data.loaders.faers import (
    _UTF8_CHARACTER, DEFAULT_MAX_FIELD_CHARS, _first_utf8_character, read_faers)
from medanon.errors import InputFormatError, ValidationError

DEMO = ("primaryid$caseid$caseversion$init_fda_dt$fda_dt$age$age_cod$sex$wt$wt_cod$\n"
        "1$10$1$20200105$20200110$40$YR$F$60$KG$\n"
        "2$20$1$20200105$20200110$50$YR$M$70$KG$\n")
INDI = "primaryid$caseid$indi_pt$\n1$10$Pain$\n2$20$Pain$\n"


def quarter(folder: Path, *, drug: bytes, reac: bytes = b"primaryid$caseid$pt$\n1$10$Rash$\n2$20$Rash$\n",
            demo: bytes = DEMO.encode()) -> Path:
    folder.mkdir()
    (folder / "DEMO20Q1.txt").write_bytes(demo)
    (folder / "DRUG20Q1.txt").write_bytes(drug)
    (folder / "REAC20Q1.txt").write_bytes(reac)
    (folder / "INDI20Q1.txt").write_text(INDI)
    return folder


def drugs(names: list[bytes]) -> bytes:
    rows = b"".join(b"%d$%d$1$PS$" % (i + 1, (i + 1) * 10) + n + b"$\n" for i, n in enumerate(names))
    return b"primaryid$caseid$drug_seq$role_cod$drugname$\n" + rows


def drug_names(folder: Path) -> dict[str, tuple[str, ...]]:
    records = read_faers(folder).quarters[0].records.set_index("report_id")
    return records["drugs"].to_dict()


def test_utf8_text_is_read_as_utf8_not_as_mojibake(tmp_path):
    name = "JANUVIAé中"
    folder = quarter(tmp_path / "q", drug=drugs([name.encode("utf-8"), b"ASPIRIN"]))
    assert drug_names(folder)["1"] == (name,)  # not 'JANUVIAÃ©ä¸\xad'
    # and a table all of whose text is ASCII reads as before
    assert drug_names(quarter(tmp_path / "r", drug=drugs([b"ASPIRIN", b"X"]))) == {
        "1": ("ASPIRIN",), "2": ("X",)}


def test_latin1_text_is_read_as_latin1(tmp_path):
    folder = quarter(tmp_path / "q", drug=drugs(["NAUSÉE".encode("latin-1"), b"ASPIRIN"]))
    assert "É" in drug_names(folder)["1"][0]


def test_a_table_mixing_utf8_and_latin1_is_refused_naming_the_lines(tmp_path):
    mixed = drugs(["JANUVIAé".encode("utf-8"), "NAUSÉE".encode("latin-1")])
    folder = quarter(tmp_path / "q", drug=mixed)
    with pytest.raises(InputFormatError, match=r"DRUG20Q1.txt mixes text encodings: it is UTF-8 "
                                               r"at line 2 and is not UTF-8 at line 3"):
        read_faers(folder)


def test_a_utf16_file_is_refused_as_utf16(tmp_path):
    folder = quarter(tmp_path / "q", drug=drugs([b"ASPIRIN", b"ASPIRIN"]),
                     demo=DEMO.encode("utf-16"))
    with pytest.raises(InputFormatError, match="DEMO20Q1.txt is UTF-16 text"):
        read_faers(folder)
    without_bom = quarter(tmp_path / "r", drug=drugs([b"ASPIRIN", b"ASPIRIN"]),
                          demo=DEMO.encode("utf-16-le"))
    with pytest.raises(InputFormatError, match="DEMO20Q1.txt holds NUL bytes in its header"):
        read_faers(without_bom)


@pytest.mark.parametrize("size, limit", [(DEFAULT_MAX_FIELD_CHARS + 1, None), (50, 40)])
def test_a_field_past_the_limit_is_refused_naming_file_line_and_column(tmp_path, size, limit):
    reac = b"primaryid$caseid$pt$\n1$10$Rash$\n2$20$" + b"x" * size + b"$\n"
    folder = quarter(tmp_path / "q", drug=drugs([b"ASPIRIN", b"ASPIRIN"]), reac=reac)
    options = {} if limit is None else {"max_field_chars": limit}
    with pytest.raises(InputFormatError, match=rf"REAC20Q1.txt line 3: 'pt' holds {size:,} "
                                               rf"characters, more than the limit of "
                                               rf"{limit or DEFAULT_MAX_FIELD_CHARS:,}"):
        read_faers(folder, **options)
    # the steward raises the limit: the same file is read
    raised = read_faers(folder, max_field_chars=size).quarters[0].records
    assert max(len(t) for terms in raised["reactions"] for t in terms) == size


def test_a_field_glued_from_split_lines_is_checked_whole(tmp_path):
    # a stray line break splits the last field in two lines of 30 characters: 61 in all
    reac = b"primaryid$caseid$pt$\n1$10$Rash$\n2$20$" + b"y" * 30 + b"\n" + b"z" * 30 + b"$\n"
    folder = quarter(tmp_path / "q", drug=drugs([b"ASPIRIN", b"ASPIRIN"]), reac=reac)
    with pytest.raises(InputFormatError, match="REAC20Q1.txt line 3: 'pt' holds 61 characters"):
        read_faers(folder, max_field_chars=40)


def test_utf8_characters_are_counted_as_characters(tmp_path):
    name = "é" * 30  # 60 bytes, 30 characters
    folder = quarter(tmp_path / "q", drug=drugs([name.encode("utf-8"), b"ASPIRIN"]))
    records = read_faers(folder, max_field_chars=40).quarters[0].records
    assert len(records.set_index("report_id")["drugs"]["1"][0]) == 30


def test_the_limit_is_checked(tmp_path):
    with pytest.raises(ValidationError, match="'max_field_chars' parameter of open_faers"):
        read_faers(tmp_path, max_field_chars=0)


def test_the_vectorized_utf8_scan_finds_what_the_regex_finds():
    """The numpy scan that tells a Latin-1 block with UTF-8 in it apart answers as the regex
    it replaces, on byte strings built from every boundary byte (leads, continuations, ASCII)."""
    rng = random.Random(43)
    alphabet = [0x41, 0x24, 0x0A, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xEF,
                0xF0, 0xF4, 0xF5, 0xFF, 0x90, 0xA9, 0xE9]
    found = 0
    for _ in range(5000):
        body = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        match = _UTF8_CHARACTER.search(body)
        assert _first_utf8_character(body) == (match.start() if match else None), body
        found += match is not None
    assert 0 < found < 5000  # both answers were met
