"""Write a published release in the FAERS 2014Q3+ ASCII layout (``medanon export --format faers``).

Each period folder gets ``DEMOyyQq.txt``, ``DRUGyyQq.txt``, ``REACyyQq.txt``, ``INDIyyQq.txt`` and
``OUTCyyQq.txt`` (``$``-separated, UTF-8, LF line ends, no ``$`` after the last field: FDA's
layout as measured on its 2022Q4 files, "Lines" below), which FAERS tools and ``medanon ingest``
read, holding FDA's columns only (and, for a perturbed QID, its columns named perturbed);
``MEDANONyyQq.txt`` (:data:`SIDE_PREFIX`: the release's cells that no FAERS column can carry,
keyed by ``primaryid``, in the same layout); the export writes them beside the release itself
(``release.csv`` + ``manifest.json``: the exact published cells) and :data:`NOTES_FILE`, which
names the encoding in its first line, then lists the FDA columns whose meaning differs from
FDA's, then the conventions below for that release.

The conventions (``docs/faers-export.md``), each a function of the published series only:

* **One report per case.** A release holds one super record per case and period, written as one
  DEMO row. ``caseversion`` is how many releases of the exported series, up to and including
  this one, publish the case (1 the first time; a follow-up published in a later quarter gets 2,
  ...), so FAERS's own rule (keep the highest caseversion of a case) keeps the latest release's
  row; ``i_f_code`` is ``I`` for version 1 and ``F`` after. ``primaryid`` is the ``caseid``
  followed by the caseversion digits, as FDA forms it. A case id must therefore be a FAERS
  caseid, a positive integer written without leading zeros; a release of other data (case ids
  such as ``C001``) is refused, not renumbered: a renumbering would have to be published to be
  of use, and the release format (csv, parquet) carries those ids as they are. The ``caseid``
  is the release's ``case_id``: by default a keyed pseudonym of FDA's caseid (issue 41,
  :mod:`medanon.published.case_ids`), so none of the four columns tells when a case was
  received; each is a function of the published linkage.
* **Age.** A MeSH age label goes to ``age_grp`` when all the ages it stands for fall in one FAERS
  group (:data:`~medanon.hierarchies.builtin.FAERS_AGE_GROUP_LEAVES`: ``Child`` -> C, ``Aged``
  -> E, ``Young Adult`` -> A); a node spanning several groups (``*``, ``Nonadult``, ``Infant``,
  ``Adult``) leaves it empty. ``age`` with ``age_cod`` ``YR`` is written only for a cell that is
  one exact age (a numeric age QID); a generalized age leaves them empty, since FAERS has no
  column for a band and its ``age`` must be a number.
* **Weight.** A number goes to ``wt`` with ``wt_cod`` ``KG``. An interval ``[lo-hi]`` (or the
  suppressed ``*``) leaves ``wt``/``wt_cod`` empty and is written as it is in ``wt_bin`` of
  ``MEDANONyyQq.txt``, not of DEMO: an FDA-format script then finds in DEMO FDA's 25 columns
  with FDA's meaning (``wt`` a number in ``wt_cod`` units, or unknown), and a column it does not
  know can only be read on purpose. ``wt``/``wt_cod`` cannot carry the band: a midpoint would
  invent a precision the release lacks, and a band or a new code there is read as a number or a
  unit by scripts that coerce (``pd.to_numeric(errors="coerce")`` makes it missing without a
  word, as it would an unknown ``wt_cod``).
* **Sex.** ``F`` and ``M`` as they are; ``*`` (generalized) and missing are written empty.
* **Perturbed QIDs.** A value a mechanism randomized never goes into a column FDA defines as a
  measured value (``design.md``). When the manifest declares a QID perturbed
  (``details.perturbed_qids``, PPMS-DP; the csv keeps such values as published), its FDA columns
  (:data:`MEASURED_COLUMNS`: ``age``/``age_cod``/``age_grp``, ``sex``, ``wt``/``wt_cod``; and
  ``wt_bin`` for weight) are left empty on every row, and the published cell goes, as it is,
  into the columns of :data:`PERTURBED_COLUMNS`, appended after FDA's DEMO columns for that QID
  only:
  ``age_perturbed`` (the label, or the number of years) with ``age_grp_perturbed`` (its FAERS
  group, by the rule of ``age_grp``), ``sex_perturbed`` (``F``, ``M``, or ``*`` when the
  mechanism drew the root), ``wt_perturbed_kg``. A FAERS tool that stratifies by ``age_grp`` or
  ``sex`` then finds these reports unknown instead of randomized (at ε = 1 a large share of the
  labels is not the case's own, and a signal of adults shows up "in children").
  :data:`NOTES_FILE` names the columns with each one's mechanism and ε, read from the manifest
  (``privacy_spent.mechanisms``), never typed here.
* **Deduplication.** ``caseversion`` counts only published releases, so a case whose report of a
  quarter was withheld leaves no gap: FAERS's latest-caseversion rule silently returns the
  case's older published version. :data:`NOTES_FILE` says so for every release and gives the
  number of withheld cases where the manifest publishes it (``counts.suppressed``); the export
  reads published rows and manifests only and derives no count of its own.
* **Drugs.** One DRUG row per drug and role: ``role_cod`` PS, SS, C, I from the release's
  ``drugs_primary_suspect``, ``drugs_secondary_suspect``, ``drugs_concomitant`` and
  ``drugs_interacting`` columns, then the drugs of ``drugs`` found in no role column with
  ``role_cod`` empty (no role is invented); ``drug_seq`` counts 1, 2, ... per case. A release
  without role columns (an older store) gets every drug with an empty role.
* **Outcomes and dates.** One OUTC row per code of ``outcomes`` (the file holds only its header
  when the release has no such column); ``init_fda_dt`` and ``fda_dt`` are written as published
  (a date at month or year granularity is the partial date FAERS allows: ``YYYYMM``, ``YYYY``).
* **Text.** A ``$`` or a line break inside a value cannot be carried (FAERS has drug names such as
  ``VITAMIN B$12``) and is written as a space. INDI rows have no ``indi_drug_seq``: the release
  does not say which drug an indication was given for.
* **Encoding.** UTF-8 without a byte-order mark (:data:`ENCODING`), so ``pandas.read_csv(path,
  sep="$")`` reads every file with its defaults and every published character is carried (the
  Latin-1 of exports before issue 44 made pandas' default fail with ``UnicodeDecodeError`` on a
  non-ASCII drug name, and wrote characters outside Latin-1 as ``?``). FDA's 2022Q4 files are
  ASCII, which is UTF-8: an export of ASCII cells is byte for byte what a Latin-1 one was.
  ``medanon ingest`` tells UTF-8 from Latin-1 (``data/loaders/faers.py``), so it reads both.

**Lines.** As measured on FDA's 2022Q4 quarterly ASCII files (DEMO, DRUG, REAC, INDI, OUTC,
RPSR, THER and DELETE of ``faers_ascii_2022Q4_subset.zip``): every line ends in LF, with no CR
anywhere; the header and every row hold the same number of fields, n − 1 ``$`` for n columns,
with no ``$`` after the last field (a row whose last field is empty ends in ``$`` only because
that field is empty: 974 of 974 REAC rows, whose ``drug_rec_act`` is empty); no byte-order mark;
plain ASCII (the export: UTF-8, "Encoding" above). pandas' ``read_csv(sep="$")`` then reads
exactly the header's columns. The export writes the same, and ends its last line with LF too
(of the subset's eight files, INDI and DELETE do; the other six end without it, which no reader
distinguishes). Exports before issue
32 wrote CRLF and a ``$`` after every line's last field (one more, empty column in pandas);
``medanon ingest`` reads both forms. The notes file (:data:`NOTES_FILE`) is UTF-8 text with LF
line ends.

**Suppressed terms are marked per release, never per case.** The methods remove sensitive terms
in two ways (``anonymize/common.py``, ``TermSuppression``): ``--on-infeasible suppress-terms``
removes a term whose θ no group can meet from every case of the period, and the manifest names
those terms (``details.suppressed_terms``, with their counts); HA removes, from the few cases that
fit no group with all their terms, the terms that block them, and the manifest counts them
(``counts.suppressed_terms``, ``details.cases_with_suppressed_terms``) while which cases and which
terms stay operator-only. A per-case marker (``*`` in the cell, or ``*`` for a cell all of whose
terms were removed) would disclose what the suppression exists to hide: with one release-wide
suppressed term t, the cases carrying the marker are exactly the cases that had t, which the
privacy model could not protect (that is why t was removed); with HA, a marker names the case
whose terms broke θ or α in its group, and the group's published counts often leave one
candidate term (the one at its cap). Publishing an empty cell as ``*`` only when all its terms
were removed leaks the same way whenever an empty cell can also mean "none reported", which it
can for indications and, since missing values are kept, for reactions too. So the release rows
keep no marker; :data:`NOTES_FILE` names the release-wide suppressed terms and counts the
per-case ones from the manifest, and says that an empty reactions or indications cell means "no
published term" (none reported, or every term suppressed). The readers of published cells treat
a multi-valued ``*``, should another tool publish one, as a cell with no published term
(:func:`medanon.published.cells.term_pairs`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import HierarchyError, InputFormatError, StoreError, ValidationError
from ..hierarchies import Interval, format_number
from ..hierarchies.builtin import FAERS_AGE_GROUP_LEAVES, age_to_mesh, faers_age_group
from ..periods import parse_period
from .case_ids import case_id_mode
from .cells import SUPPRESSED, cell_strings

__all__ = ["DEMO_COLUMNS", "DRUG_COLUMNS", "ENCODING", "FAERS_SOURCES", "INDI_COLUMNS",
           "MEASURED_COLUMNS", "NOTES_FILE", "OUTC_COLUMNS", "PERTURBED_COLUMNS", "REAC_COLUMNS",
           "ROLE_CODES", "SIDE_COLUMNS", "SIDE_PREFIX", "WEIGHT_BIN_COLUMN",
           "PerturbedQid", "case_versions", "demo_columns", "faers_notes", "perturbed_qids",
           "write_faers_release"]

#: the text encoding of every file the export writes (module docstring, "Encoding").
ENCODING = "utf-8"
#: FAERS 2014Q3+ DEMO columns, FDA's only (the weight bin is in the side file).
DEMO_COLUMNS = ("primaryid caseid caseversion i_f_code event_dt mfr_dt init_fda_dt fda_dt rept_cod "
                "auth_num mfr_num mfr_sndr lit_ref age age_cod age_grp sex e_sub wt wt_cod rept_dt "
                "to_mfr occp_cod reporter_country occr_country").split()
#: the published weight band, which FAERS's ``wt`` (a number) cannot carry.
WEIGHT_BIN_COLUMN = "wt_bin"
#: the side file ``MEDANONyyQq.txt``: one row per DEMO row, keyed as DEMO, with the published
#: cells no FAERS column carries. Its name matches no FAERS table (FAERS readers skip it).
SIDE_PREFIX = "MEDANON"
SIDE_COLUMNS = ["primaryid", "caseid", WEIGHT_BIN_COLUMN]
DRUG_COLUMNS = ("primaryid caseid drug_seq role_cod drugname prod_ai val_vbm route dose_vbm "
                "cum_dose_chr cum_dose_unit dechal rechal lot_num exp_dt nda_num dose_amt dose_unit "
                "dose_form dose_freq").split()
REAC_COLUMNS = ["primaryid", "caseid", "pt", "drug_rec_act"]
INDI_COLUMNS = ["primaryid", "caseid", "indi_drug_seq", "indi_pt"]
OUTC_COLUMNS = ["primaryid", "caseid", "outc_cod"]
#: perturbed QID -> the DEMO columns its published cells go to instead of FDA's (appended after
#: FDA's DEMO columns in this order, only for the QIDs a release perturbs; module docstring).
PERTURBED_COLUMNS = {"age": ("age_perturbed", "age_grp_perturbed"), "sex": ("sex_perturbed",),
                     "weight": ("wt_perturbed_kg",)}
#: perturbed QID -> FDA's measured DEMO columns left empty on every row when it is perturbed
#: (and ``wt_bin`` of the side file, for weight).
MEASURED_COLUMNS = {"age": ("age", "age_cod", "age_grp"), "sex": ("sex",), "weight": ("wt", "wt_cod")}
#: release column -> FAERS DRUG ``role_cod``, in the order a case's DRUG rows are written.
ROLE_CODES = {"drugs_primary_suspect": "PS", "drugs_secondary_suspect": "SS",
              "drugs_concomitant": "C", "drugs_interacting": "I"}
#: FAERS column -> the release columns its cells are computed from (the column contract of
#: issue 29: a FAERS column carries the roles of its sources, ``published.roles``); every FAERS
#: column not named here is written empty. ``caseversion`` and ``i_f_code`` count the case's
#: releases in the series (:func:`case_versions`): derived from CaseIDs and periods.
FAERS_SOURCES = {
    "primaryid": ("case_id", "period"), "caseid": ("case_id",),
    "caseversion": ("case_id", "period"), "i_f_code": ("case_id", "period"),
    "init_fda_dt": ("init_fda_dt",), "fda_dt": ("fda_dt",),
    "age": ("age",), "age_cod": ("age",), "age_grp": ("age",), "sex": ("sex",),
    "wt": ("weight",), "wt_cod": ("weight",), "wt_bin": ("weight",),
    "age_perturbed": ("age",), "age_grp_perturbed": ("age",), "sex_perturbed": ("sex",),
    "wt_perturbed_kg": ("weight",),
    "drug_seq": ("drugs", *ROLE_CODES), "role_cod": tuple(ROLE_CODES),
    "drugname": ("drugs", *ROLE_CODES),
    "pt": ("reactions",), "indi_pt": ("indications",), "outc_cod": ("outcomes",),
}
OUTCOME_COLUMN = "outcomes"
DATE_COLUMNS = ("init_fda_dt", "fda_dt")
#: the notes written beside the FAERS files of each period.
NOTES_FILE = "FAERS_NOTES.txt"
_NEEDED = {"qids": ("age", "sex", "weight"), "multi": ("reactions", "indications", "drugs")}
_CASEID = re.compile(r"[1-9][0-9]*")
_SEX = {"F": "F", "M": "M"}
_UNCARRIED = re.compile(r"[$\r\n]")


def _check_schema(columns: pd.Index) -> None:
    missing = [c for group in _NEEDED.values() for c in group if c not in columns]
    if missing:
        raise StoreError("The FAERS layout needs the FAERS schema's columns; this release lacks "
                         f"{', '.join(missing)}. Export it with --format csv or parquet.")


def case_versions(case_ids: Mapping[str, Sequence[str] | np.ndarray]) -> dict[str, np.ndarray]:
    """The ``caseversion`` of every row of a series: per period (``period -> the release's case
    ids``), how many releases up to and including that period publish the row's case.

    Periods are counted in time order whatever the mapping's order; only the published case ids
    are read.

    Raises:
        ValidationError: a period label that is not one.
    """
    seen: dict[str, int] = {}
    out: dict[str, np.ndarray] = {}
    for period in sorted(case_ids, key=parse_period):
        ids = [c.strip() if type(c) is str else str(c).strip() for c in case_ids[period]]
        # (one C-level probe per CaseID: a generator expression around dict.get cost a fifth
        # more over an 8 x 450k series, issue 43)
        earlier = np.fromiter(map(seen.get, ids, itertools.repeat(0)), dtype=np.int64,
                              count=len(ids))
        versions = earlier + 1
        seen.update(zip(ids, versions.tolist()))
        out[period] = versions
    return out


# -- perturbed QIDs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PerturbedQid:
    """How a release's manifest declares one QID perturbed: what the notes say of its columns.

    Attributes:
        qid: The QID's name.
        mechanism: The mechanism as the manifest names it (``laplace``, ``exponential``,
            ``randomized-response``).
        epsilon: ε of the mechanism for one case in one release, as the manifest writes it
            (its exact text where it gives one).
        domain: The public bounds a Laplace-perturbed value was clipped to
            (``details.domains``), or None.
        level: The hierarchy level labels are published at (``details.label_levels``), or None.
        consistency: The worst-case probability that a published label is consistent with the
            case's own (``details.label_consistency``), or None.
    """

    qid: str
    mechanism: str
    epsilon: str
    domain: tuple[float, float] | None = None
    level: int | None = None
    consistency: float | None = None


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _declared_names(value: object, path: str, period: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(
            isinstance(v, str) and v for v in value):
        raise InputFormatError(f"The manifest of {period} must give {path!r} as a list of QID "
                               f"names; got {value!r}.")
    return list(value)


def _epsilon_text(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value):
        return format_number(value)
    return None


def _bounds(value: object) -> tuple[float, float] | None:
    if not isinstance(value, Iterable):
        return None
    try:
        lo, hi = (float(b) for b in value)
    except (TypeError, ValueError):
        return None
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) and lo < hi else None


def perturbed_qids(manifest: Mapping | None, period: str = "this release") -> dict[str, PerturbedQid]:
    """The QIDs a release's manifest declares perturbed, with their mechanism and ε, in the
    manifest's order (empty for a release that perturbs none).

    A QID named in ``details.perturbed_qids`` or ``privacy_spent.perturbed_qids`` (the union: a
    QID either one names is never written as measured) takes its mechanism and ε from its entry
    of ``privacy_spent.mechanisms`` (the fields ``medanon.models.PPMSDPModel`` reads).

    Raises:
        InputFormatError: a perturbed QID without a mechanism entry naming its mechanism and ε,
            or a malformed list of perturbed QIDs: the notes could not say how it was randomized.
    """
    manifest = _mapping(manifest)
    details, spent = _mapping(manifest.get("details")), _mapping(manifest.get("privacy_spent"))
    names: list[str] = []
    for path, value in (("details.perturbed_qids", details.get("perturbed_qids")),
                        ("privacy_spent.perturbed_qids", spent.get("perturbed_qids"))):
        names += [n for n in _declared_names(value, path, period) if n not in names]
    mechanisms = spent.get("mechanisms")
    entries = mechanisms if isinstance(mechanisms, list) else []
    by_target = {str(m.get("target")): m for m in entries if isinstance(m, Mapping)}
    domains = _mapping(details.get("domains"))
    levels = _mapping(details.get("label_levels"))
    consistency = _mapping(details.get("label_consistency"))
    out: dict[str, PerturbedQid] = {}
    for name in names:
        entry = _mapping(by_target.get(name))
        mechanism = entry.get("mechanism")
        epsilon = _epsilon_text(entry.get("epsilon_exact", entry.get("epsilon")))
        if not isinstance(mechanism, str) or not mechanism or epsilon is None:
            raise InputFormatError(
                f"The manifest of {period} declares the perturbed QID {name!r} without its "
                f"mechanism parameters: 'privacy_spent.mechanisms' needs an entry with target "
                f"{name!r}, 'mechanism' and 'epsilon', which the FAERS notes state.")
        level = levels.get(name)
        share = consistency.get(name)
        out[name] = PerturbedQid(
            name, mechanism, epsilon,
            _bounds(domains.get(name)) if mechanism == "laplace" else None,
            level if isinstance(level, int) and not isinstance(level, bool) else None,
            float(share) if isinstance(share, (int, float)) and not isinstance(share, bool)
            else None)
    return out


def demo_columns(perturbed: Mapping[str, object] | Sequence[str] = ()) -> list[str]:
    """The DEMO header of a release whose perturbed QIDs are ``perturbed``: FAERS's columns,
    then the :data:`PERTURBED_COLUMNS` of each perturbed QID."""
    return [*DEMO_COLUMNS, *(c for qid, columns in PERTURBED_COLUMNS.items() if qid in perturbed
                             for c in columns)]


# -- cells --------------------------------------------------------------------------------------
def _exact(text: str) -> float | None:
    """The value of a numeric cell that is one number (``58`` or ``[58-58]``), else None."""
    try:
        iv = Interval.parse(text)
    except ValidationError:
        return None
    return iv.lo if iv.lo == iv.hi else None


def _age_group_of_years(lo: float, hi: float) -> str:
    """The FAERS group holding every age from ``lo`` to ``hi`` years, or ''."""
    try:
        ends = age_to_mesh([lo, hi])
    except ValidationError:  # outside 0-150 years: no group
        return ""
    groups = {faers_age_group(str(e)) for e in ends}
    return (groups.pop() or "") if len(groups) == 1 else ""


def _age_fields(cell: str, mesh: bool) -> tuple[str, str, str]:
    """``(age, age_cod, age_grp)`` of one published age cell (``mesh``: labels are MeSH nodes)."""
    cell = cell.strip()
    if cell in ("", SUPPRESSED):
        return "", "", ""
    value = _exact(cell)
    if value is not None:
        return format_number(value), "YR", _age_group_of_years(value, value)
    try:
        iv = Interval.parse(cell)
    except ValidationError:
        iv = None
    if iv is not None:
        return "", "", _age_group_of_years(iv.lo, iv.hi)
    if not mesh:
        return "", "", ""
    try:
        return "", "", faers_age_group(cell) or ""
    except HierarchyError:  # a label of another hierarchy: no FAERS group to give
        return "", "", ""


def _weight_fields(cell: str) -> tuple[str, str, str]:
    """``(wt, wt_cod, wt_bin)`` of one published weight cell."""
    cell = cell.strip()
    if cell == "":
        return "", "", ""
    value = _exact(cell)
    if value is not None:
        return format_number(value), "KG", ""
    return "", "", cell  # an interval, or the suppressed '*': the bin as published


def _per_distinct(cells: np.ndarray, convert, width: int) -> list[np.ndarray]:
    """The ``width`` output columns of ``convert`` applied once per distinct cell."""
    codes, uniques = pd.factorize(cells)
    if not len(uniques):
        return [np.zeros(len(cells), dtype=object) for _ in range(width)]
    table = np.array([convert(str(u)) for u in uniques], dtype=object).reshape(len(uniques), width)
    return [table[codes, i] for i in range(width)]


def _terms(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, term)`` of every distinct published term of multi-valued cells, rows in order and
    each row's terms in cell order. ``*`` is no term (a suppressed cell)."""
    # each distinct cell split, stripped and its repeats dropped once (cells repeat: a 450k
    # quarter's drug and reaction cells were split row by row, 5.5 s of its 16 s export,
    # issue 43); then every row takes its cell's terms
    codes, distinct = pd.factorize(np.asarray(cells, dtype=object), use_na_sentinel=False)
    listed: list[list[str]] = []
    for cell in distinct.tolist():
        if not isinstance(cell, str):   # (a missing cell holds no term)
            listed.append([])
            continue
        kept = dict.fromkeys(term.strip() for term in cell.split("|"))
        kept.pop("", None)
        kept.pop(SUPPRESSED, None)
        listed.append(list(kept))
    counts = np.fromiter(map(len, listed), dtype=np.int64, count=len(listed))
    flat = np.asarray([t for terms in listed for t in terms], dtype=object)
    per_row = counts[codes]
    rows = np.repeat(np.arange(len(codes), dtype=np.int64), per_row)
    # the k-th term of a row is its cell's first term's position in ``flat`` plus k
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    ends = np.cumsum(per_row)
    within = np.arange(len(rows), dtype=np.int64) - np.repeat(ends - per_row, per_row)
    return rows, flat[np.repeat(first[codes], per_row) + within]


def _drug_rows(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row, role_cod, drugname)`` of the DRUG table, in the order written."""
    parts = []
    for rank, (column, code) in enumerate(ROLE_CODES.items()):
        if column in rows.columns:
            r, t = _terms(cell_strings(rows[column]))
            parts.append(pd.DataFrame({"row": r, "rank": rank, "role": code, "name": t}))
    roled = (pd.concat(parts, ignore_index=True) if parts
             else pd.DataFrame({"row": np.zeros(0, np.int64), "rank": 0, "role": "", "name": ""}))
    r, t = _terms(cell_strings(rows["drugs"]))
    every = pd.DataFrame({"row": r, "name": t})
    known = every.merge(roled[["row", "name"]].drop_duplicates(), how="left", indicator=True)
    unroled = known.loc[known["_merge"] == "left_only", ["row", "name"]].assign(
        rank=len(ROLE_CODES), role="")
    drugs = pd.concat([roled, unroled], ignore_index=True).sort_values(["row", "rank"],
                                                                        kind="stable")
    return (drugs["row"].to_numpy(dtype=np.int64), drugs["role"].to_numpy(dtype=object),
            drugs["name"].to_numpy(dtype=object))


# -- files --------------------------------------------------------------------------------------
def _write(path: Path, columns: Sequence[str], data: Mapping[str, np.ndarray], n: int) -> int:
    """Write one table (``data``: the columns that are not empty); return how many cells had a
    ``$`` or a line break replaced by a space."""
    replaced = 0
    fields: list[Iterable[str]] = []
    for name in columns:
        if name not in data:
            fields.append(itertools.repeat("", n))
            continue
        # checked and repaired once per distinct value (terms repeat across rows)
        codes, uniques = pd.factorize(np.asarray(data[name], dtype=object))
        uniques = np.asarray(uniques, dtype=object)
        bad = np.fromiter((_UNCARRIED.search(u) is not None for u in uniques), dtype=bool,
                          count=len(uniques))
        if bad.any():
            replaced += int(bad[codes].sum())
            uniques[bad] = [_UNCARRIED.sub(" ", u) for u in uniques[bad]]
        fields.append(uniques[codes].tolist())
    # as FDA's 2014Q3+ files: n − 1 separators per line (an empty last field leaves the line
    # ending in '$', as it does there), each line ended by LF (the module docstring, "Lines");
    # one join per line (adding each column to every line's text made every line again per
    # column: 6.7 s of a 450k quarter's export, issue 43)
    lines = ["$".join(columns), *(map("$".join, zip(*fields, strict=True)) if n else ())]
    # every str but a lone surrogate has a UTF-8 form ('?' then, as the codec replaces it)
    path.write_bytes(("\n".join(lines) + "\n").encode(ENCODING, errors="replace"))
    return replaced


def _primary_ids(case_id: np.ndarray, versions: np.ndarray, period: str) -> np.ndarray:
    bad = [c for c in pd.unique(case_id) if not _CASEID.fullmatch(c)]
    if bad:
        shown = ", ".join(repr(b) for b in bad[:5])
        raise StoreError(f"Release {period}: the FAERS layout needs case ids that are FAERS caseids "
                         f"(positive integers without leading zeros), but {len(bad)} are not: "
                         f"{shown}. Export it with --format csv or parquet.")
    primary = case_id + versions.astype(str).astype(object)
    twice = pd.Series(primary).duplicated(keep=False).to_numpy()
    if twice.any():
        clash = ", ".join(f"case {c} version {v}" for c, v in
                          zip(case_id[twice][:4].tolist(), versions[twice][:4].tolist()))
        raise StoreError(f"Release {period}: FAERS primaryid (caseid followed by caseversion) is "
                         f"not unique: {clash} give the same primaryid. Export it with --format "
                         "csv or parquet.")
    return primary


def _age_is_mesh(manifest: Mapping | None) -> bool:
    """Whether the release's age labels are nodes of the MeSH age tree (the FAERS schema's)."""
    for qid in ((manifest or {}).get("columns") or {}).get("qids") or ():
        if isinstance(qid, Mapping) and qid.get("name") == "age":
            return qid.get("kind") != "categorical" or qid.get("hierarchy") == "mesh-age"
    return True


def write_faers_release(folder: Path, rows: pd.DataFrame, period: str, *,
                        versions: Sequence[int] | np.ndarray | None = None,
                        manifest: Mapping | None = None) -> int:
    """Write one release's rows (release-format strings) as FAERS ASCII files into ``folder``,
    with the side file (:data:`SIDE_PREFIX`) and :data:`NOTES_FILE` (the conventions of the
    module docstring, for this release), all in :data:`ENCODING`.

    Args:
        folder: The period folder (created if missing).
        rows: The release's rows, as :meth:`~medanon.store.ReleaseStore.release_rows` gives them.
        period: The release's period (a quarter).
        versions: Each row's ``caseversion`` (:func:`case_versions`); default 1 for every row.
        manifest: The release's manifest: its perturbed QIDs (:func:`perturbed_qids`) go to
            the :data:`PERTURBED_COLUMNS`, never to FDA's; its suppressed terms, mechanisms and
            withheld count go into the notes; its age QID's hierarchy decides whether ages are
            MeSH labels (default: they are).

    Returns:
        The number of cells whose ``$`` or line break had to be replaced by a space.

    Raises:
        StoreError: the release lacks a column of the FAERS schema, a case id is not a FAERS
            caseid, or two rows would share a primaryid.
        InputFormatError: the manifest declares a perturbed QID without its mechanism and ε.
    """
    _check_schema(rows.columns)
    tag = parse_period(period).faers_tag
    n = len(rows)
    versions = (np.ones(n, dtype=np.int64) if versions is None
                else np.asarray(versions, dtype=np.int64))
    if versions.shape != (n,) or (versions < 1).any():
        raise ValidationError(f"The 'versions' parameter of write_faers_release must hold one "
                              f"integer >= 1 per row ({n}); got shape {versions.shape}.")
    case = np.array([c.strip() for c in cell_strings(rows["case_id"])], dtype=object)
    primary = _primary_ids(case, versions, period)
    ids = {"primaryid": primary, "caseid": case}

    demo = dict(ids, caseversion=versions.astype(str).astype(object),
                i_f_code=np.where(versions == 1, "I", "F").astype(object))
    mesh = _age_is_mesh(manifest)
    perturbed = perturbed_qids(manifest, period)
    ages = cell_strings(rows["age"])
    weights = cell_strings(rows["weight"])
    sexes = cell_strings(rows["sex"])
    # A perturbed value in FDA's measured columns would be read as the case's own (a FAERS tool
    # stratifying by age_grp finds adults' signals "in children"): those columns stay empty
    # (absent from ``demo``) and the cell goes, as published, to a column named perturbed.
    if "age" in perturbed:
        age_label, age_group = PERTURBED_COLUMNS["age"]
        demo[age_label] = np.array([a.strip() for a in ages], dtype=object)
        (demo[age_group],) = _per_distinct(ages, lambda c: (_age_fields(c, mesh)[2],), 1)
    else:
        demo["age"], demo["age_cod"], demo["age_grp"] = _per_distinct(
            ages, lambda c: _age_fields(c, mesh), 3)
    side = dict(ids)
    if "weight" in perturbed:
        (weight,) = PERTURBED_COLUMNS["weight"]
        demo[weight] = np.array([w.strip() for w in weights], dtype=object)
    else:
        demo["wt"], demo["wt_cod"], side[WEIGHT_BIN_COLUMN] = _per_distinct(
            weights, _weight_fields, 3)
    if "sex" in perturbed:
        (sex,) = PERTURBED_COLUMNS["sex"]
        demo[sex] = np.array([s.strip() for s in sexes], dtype=object)
    else:
        demo["sex"] = np.array([_SEX.get(s.strip(), "") for s in sexes], dtype=object)
    dates: dict[str, set[int]] = {}
    for column in DATE_COLUMNS:
        if column in rows.columns:
            demo[column] = np.array([d.strip() for d in cell_strings(rows[column])], dtype=object)
            # the granularity the release publishes, for the notes (read from published cells)
            dates[column] = {len(d) for d in pd.unique(demo[column]) if d}

    folder.mkdir(parents=True, exist_ok=True)
    replaced = _write(folder / f"DEMO{tag}.txt", demo_columns(perturbed), demo, n)
    replaced += _write(folder / f"{SIDE_PREFIX}{tag}.txt", SIDE_COLUMNS, side, n)
    at, role, name = _drug_rows(rows)
    seq = pd.Series(at).groupby(at).cumcount().to_numpy() + 1
    replaced += _write(folder / f"DRUG{tag}.txt", DRUG_COLUMNS,
                       {"primaryid": primary[at], "caseid": case[at], "role_cod": role,
                        "drugname": name, "drug_seq": seq.astype(str).astype(object)}, len(at))
    for column, target, columns, file in (("reactions", "pt", REAC_COLUMNS, "REAC"),
                                          ("indications", "indi_pt", INDI_COLUMNS, "INDI"),
                                          (OUTCOME_COLUMN, "outc_cod", OUTC_COLUMNS, "OUTC")):
        at, terms = (_terms(cell_strings(rows[column])) if column in rows.columns
                     else (np.zeros(0, np.int64), np.zeros(0, dtype=object)))
        replaced += _write(folder / f"{file}{tag}.txt", columns,
                           {"primaryid": primary[at], "caseid": case[at], target: terms}, len(at))
    (folder / NOTES_FILE).write_text(faers_notes(period, manifest, rows.columns, replaced,
                                                 date_digits=dates), encoding=ENCODING)
    return replaced


_MECHANISM_TEXT = {"laplace": "Laplace mechanism", "exponential": "exponential mechanism",
                   "randomized-response": "randomized response"}
#: what each perturbed QID's columns hold, for the notes.
_PERTURBED_TEXT = {
    "age": "age_perturbed (the published age label, or number of years) and age_grp_perturbed "
           "(its FAERS group, see below)",
    "sex": "sex_perturbed (F, M, or * where the mechanism drew the root: no sex)",
    "weight": "wt_perturbed_kg (kg)",
}


def _mechanism_text(p: PerturbedQid) -> str:
    """One perturbed QID's mechanism and ε in words, every number from the manifest."""
    text = f"{_MECHANISM_TEXT.get(p.mechanism, p.mechanism)}, epsilon = {p.epsilon}"
    if p.mechanism == "laplace" and p.domain is not None:
        lo, hi = p.domain
        try:
            scale = f"noise scale ({format_number(hi)} - {format_number(lo)}) / epsilon = " \
                    f"{format_number(round((hi - lo) / float(Fraction(p.epsilon)), 4))}, "
        except (ValueError, ZeroDivisionError):
            scale = ""
        # worded without "clipped": the operator-only clip counts must not be confused with it
        text += (f" ({scale}values kept within the public domain [{format_number(lo)}, "
                 f"{format_number(hi)}]: a value at either bound is mostly noise)")
    elif p.mechanism == "randomized-response" and p.level is not None:
        text += f" (over the root and the labels of level {p.level} of the hierarchy)"
    elif p.level is not None:
        text += f" (the drawn label cut to its ancestor at level {p.level} of the hierarchy, 0 = root)"
    if p.consistency is not None:
        text += (f"; a published label is consistent with the case's own with probability at "
                 f"least {p.consistency:g} (details.label_consistency)")
    return text


def _perturbed_lines(perturbed: Mapping[str, PerturbedQid], manifest: Mapping) -> list[str]:
    """The notes' warning on the perturbed columns (empty when the release perturbs none)."""
    written = [q for q in PERTURBED_COLUMNS if q in perturbed]
    if not written:
        return []
    spent = _mapping(manifest.get("privacy_spent"))
    details = _mapping(manifest.get("details"))
    emptied = ", ".join(c for q in written for c in MEASURED_COLUMNS[q])
    lines = [
        f"RANDOMIZED VALUES: read this before any analysis by {' or '.join(written)}.",
        f"- This release perturbs {', '.join(written)} (manifest details.perturbed_qids): each "
        "case's value was randomized by the mechanism named below (manifest "
        "privacy_spent.mechanisms). FDA's measured columns "
        f"{emptied} are therefore EMPTY on every row (a FAERS tool reads these cases as "
        "unknown there, not as measured), and the randomized values are in columns appended "
        "after the FAERS DEMO columns:",
    ]
    lines += [f"  - {_PERTURBED_TEXT[q]}: {_mechanism_text(perturbed[q])}." for q in written]
    per_case = spent.get("epsilon_per_case")
    if per_case not in (None, ""):
        lines.append(f"- Each case spends epsilon {per_case} in this release over its perturbed "
                     "values (manifest privacy_spent.epsilon_per_case).")
    if (spent.get("variant") or details.get("dp_variant")) == "paper":
        exact = any(_mapping(details.get("exact_groups")).values())
        lines.append("- Paper variant: epsilon only sets the noise scale (calibrated to each "
                     "group's own spread), so these values are not epsilon-DP"
                     + ("; the groups listed in details.exact_groups carry no noise." if exact
                        else "."))
    lines += [
        "- Many of these values are not the case's own, and a case whose value was not reported "
        "is given one too (from the middle of the domain, or from the hierarchy's root). "
        "Stratifying by these columns (a disproportionality analysis per age group or sex, for "
        "instance) finds signals the data does not have, such as an adults' signal 'in "
        "children', and blurs those it has: use them only with a method that accounts for the "
        "mechanism above, never as measured values.",
        "",
    ]
    return lines


def _caseid_line(manifest: Mapping) -> str:
    """The notes' line on what ``caseid`` is (``case_ids`` of the manifest, issue 41)."""
    if case_id_mode(manifest) == "pseudonym":
        return ("- caseid: a keyed pseudonym of FDA's caseid, the same in every release of this "
                "series (it links a case's releases and carries no order or receipt time); not "
                "FDA's caseid.")
    return ("- caseid: FDA's caseid as received (the holder publishes its real CaseIDs; their "
            "order tells receipt order, which the verify gate reads as adversary knowledge).")


def _dedup_lines(manifest: Mapping) -> list[str]:
    """The notes' caveat on FDA's deduplication rule, with the withheld count only where the
    manifest publishes one (no count is derived here: the export reads published data only)."""
    counts = _mapping(manifest.get("counts"))
    ingest = _mapping(manifest.get("ingest"))
    lines = [
        "Deduplication (FDA's rule: keep each caseid's row with the highest caseversion):",
        "- caseversion counts the releases of this series that publish the case, so a case's "
        "report withheld from a release leaves no gap and nothing marks it. A case published in "
        "an earlier quarter whose later report was withheld from this release is absent from "
        "this DEMO file: over the quarters read together, the rule silently returns its older "
        "published version, not the case's latest report.",
    ]
    withheld = counts.get("suppressed")
    if isinstance(withheld, int) and not isinstance(withheld, bool) and withheld >= 0:
        lines.append(
            f"- This release withheld {withheld} case(s) (manifest counts.suppressed); which "
            "ones, and how many of them an earlier release published, is not published."
            if withheld else "- This release withheld no case (manifest counts.suppressed = 0).")
    else:
        lines.append("- This release's manifest publishes no count of withheld cases.")
    dropped = ingest.get("dropped_reports")
    if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0:
        lines.append(f"- {dropped} report(s) of this quarter were dropped at ingest for a missing "
                     "value (manifest ingest.dropped_reports): a case all of whose reports were "
                     "dropped falls back the same way.")
    return [*lines, ""]


#: digits of a FAERS date -> what a date of that length tells (FDA's full form: 8 digits).
_DATE_FORMS = {4: "the year only (YYYY)", 6: "year and month only (YYYYMM)",
               8: "the full date (YYYYMMDD)"}


def _date_line(date_digits: Mapping[str, Collection[int]]) -> str | None:
    """The notes' line on ``init_fda_dt``/``fda_dt`` when they are not FDA's full dates (None
    when every published date is one): the forms are read from the published cells."""
    forms = sorted({d for c in DATE_COLUMNS for d in date_digits.get(c, ())})
    if not [c for c in DATE_COLUMNS if c in date_digits] or forms in ([], [8]):
        return None  # no date published (listed with the empty columns), or FDA's own form
    told = "; ".join(f"{d} digits = {_DATE_FORMS.get(d, 'not a FAERS date')}" for d in forms)
    one = len(forms) == 1
    return (f"- init_fda_dt, fda_dt: {_DATE_FORMS.get(forms[0], 'not a FAERS date') if one else told}"
            f", not FDA's date of receipt (YYYYMMDD): the release publishes dates at "
            f"{'that' if one else 'these'} granularit{'y' if one else 'ies'}. A script that "
            "parses them as YYYYMMDD fails or reads another day; one that takes a year as a date "
            "puts every report on 1 January.")


def _changed_lines(period: str, manifest: Mapping, columns: Collection[str],
                   perturbed: Mapping[str, PerturbedQid],
                   date_digits: Mapping[str, Collection[int]]) -> list[str]:
    """The notes' first section: each FDA column of these files that does not mean what FDA's
    does, and the FDA columns left empty on every row."""
    tag = parse_period(period).faers_tag
    groups = "; ".join(f"{code} = {', '.join(leaves)}" for code, leaves in FAERS_AGE_GROUP_LEAVES.items())
    spans = (f"FAERS group ({groups}); empty for a label spanning several (*, Nonadult, Infant, "
             "Adult).")
    roles = [c for c in ROLE_CODES if c in columns]
    lines = ["FDA columns that do not mean what FDA's do (read this before running an FDA-format "
             "script on these files):"]
    dates = _date_line(date_digits)
    if dates:
        lines.append(dates)
    if case_id_mode(manifest) == "pseudonym":
        lines.append(_caseid_line(manifest))
    lines.append(
        "- caseversion, i_f_code, primaryid: one DEMO row per published case; caseversion = how "
        "many releases of this series, up to and including this one, publish the case (1 = "
        "first), not FDA's version of the report; i_f_code I for 1, F after; primaryid = caseid "
        "followed by caseversion.")
    if "age" in perturbed:
        lines.append("- age, age_cod, age_grp: EMPTY on every row (age is perturbed in this "
                     "release, see RANDOMIZED VALUES). age_grp_perturbed is the group of the "
                     f"perturbed label when every age it stands for falls in one {spans}")
    else:
        lines.append("- age, age_cod: only for a cell that is one exact age (YR); a published age "
                     "band leaves them empty. age_grp: from the published MeSH age label, when "
                     f"every age it stands for falls in one {spans} FDA's own coders put "
                     "12-year-olds in T and 18-year-olds in A.")
    if "weight" in perturbed:
        lines.append(f"- wt, wt_cod: EMPTY on every row (weight is perturbed in this release, see "
                     f"RANDOMIZED VALUES); {WEIGHT_BIN_COLUMN} of {SIDE_PREFIX}{tag}.txt is empty "
                     "too.")
    else:
        lines.append(f"- wt, wt_cod: only a published number (KG). A published weight band "
                     f"([lo-hi]) or * leaves them empty: a script reading wt alone sees those "
                     f"weights as unknown. The band is in {WEIGHT_BIN_COLUMN} of "
                     f"{SIDE_PREFIX}{tag}.txt (not a FAERS file: one row per DEMO row, by "
                     "primaryid).")
    lines.append("- sex: EMPTY on every row (sex is perturbed in this release, see RANDOMIZED "
                 "VALUES)." if "sex" in perturbed
                 else "- sex: F or M; empty for * (generalized) as well as for an unreported sex.")
    lines.append("- DRUG role_cod: " + (", ".join(f"{ROLE_CODES[c]} from {c}" for c in roles)
                                        + "; EMPTY for a drug in no role column" if roles else
                                        "EMPTY on every row (this release has no drug-role "
                                        "columns)") + " (FDA gives every drug a role).")
    lines.append("- INDI indi_drug_seq: EMPTY (the release does not link indications to drugs).")
    empty = {name: [c for c in header if c not in FAERS_SOURCES
                    or (c in DATE_COLUMNS and c not in date_digits)]
             for name, header in (("DEMO", DEMO_COLUMNS), ("DRUG", DRUG_COLUMNS),
                                  ("REAC", REAC_COLUMNS), ("INDI", INDI_COLUMNS))}
    empty["INDI"] = [c for c in empty["INDI"] if c != "indi_drug_seq"]
    lines.append("- EMPTY on every row (not published): " + "; ".join(
        f"{name} {', '.join(cols)}" for name, cols in empty.items() if cols) + ".")
    return [*lines, ""]


def faers_notes(period: str, manifest: Mapping | None, columns: Collection[str],
                replaced: int = 0, *,
                date_digits: Mapping[str, Collection[int]] | None = None) -> str:
    """The text of :data:`NOTES_FILE` for one release: how its FAERS files carry it.

    Its first line names the files' encoding; then come the FDA columns whose meaning differs
    from FDA's, then the perturbed columns (a DP release), the deduplication caveat and the
    suppressed terms. Every number in it is read from ``manifest`` (mechanisms, ε, counts), never
    typed here.

    Args:
        period: The release's period.
        manifest: The release's manifest.
        columns: The release's columns.
        replaced: How many cells had a ``$`` or a line break written as a space.
        date_digits: Date column -> the lengths of its published (non-empty) values, for the
            release's columns among ``init_fda_dt`` and ``fda_dt``; absent: not published.

    Raises:
        InputFormatError: the manifest declares a perturbed QID without its mechanism and ε.
    """
    manifest = _mapping(manifest)
    details = _mapping(manifest.get("details"))
    counts = _mapping(manifest.get("counts"))
    release_wide = details.get("suppressed_terms") or {}
    perturbed = perturbed_qids(manifest, period)
    if date_digits is None:  # not told: the columns the release has, at an unknown granularity
        date_digits = {c: () for c in DATE_COLUMNS if c in columns}
    lines = [
        f"Encoding: {ENCODING.upper()} (no byte-order mark); fields separated by '$', lines ended "
        "by LF. pandas.read_csv(path, sep='$') reads these files with its defaults; FDA's own "
        "files are ASCII, which is UTF-8.",
        f"medanon release {period}, method {_mapping(manifest.get('method')).get('name', '?')}: "
        "the FAERS files of this folder, and how they carry the release.",
        "The exact published cells are in release.csv; manifest.json states the method, its "
        "parameters and guarantee. See docs/faers-export.md.",
        "",
        *_changed_lines(period, manifest, columns, perturbed, date_digits),
        *_perturbed_lines(perturbed, manifest),
        "Other conventions:",
        *([] if case_id_mode(manifest) == "pseudonym" else [_caseid_line(manifest)]),
        ("- OUTC: one row per published outcome code." if OUTCOME_COLUMN in columns
         else "- OUTC: this release has no outcomes column: the file holds only its header."),
        "",
        *_dedup_lines(manifest),
        "Suppressed terms (marked here, for the release as a whole, never per case: a per-case "
        "mark would disclose the terms the suppression hides):",
        ("- removed from every case of this release (their theta could not be met): "
         + ", ".join(sorted(release_wide)) if release_wide
         # which terms suppress-terms removed is a fact of the input (issue 41): operator-only
         else "- terms whose theta could not be met may have been removed from every case "
              "(--on-infeasible suppress-terms); which ones is not published."
         if _mapping(_mapping(manifest.get("method")).get("parameters")).get("on_infeasible")
         == "suppress-terms"
         else "- no term was removed from every case of this release."),
    ]
    per_case = details.get("cases_with_suppressed_terms")
    if per_case:
        lines.append(f"- {per_case} case(s) were published with some of their terms removed so that "
                     "they fit a group (which cases and terms is not published).")
    if counts.get("suppressed_terms"):
        lines.append(f"- {counts['suppressed_terms']} (case, term) pair(s) removed in all "
                     "(manifest counts.suppressed_terms).")
    lines += ["- so an empty reactions or indications cell means no published term: none "
              "reported, or every term suppressed."]
    if replaced:
        lines.append(f"- {replaced} value(s) held '$' or a line break, written as a space here "
                     "(release.csv has them as published).")
    return "\n".join(lines) + "\n"
