"""Non-interference checks: what a release may not depend on (reusable; issue 41).

A release is a function of its groups, of declared public settings and of declared random
mechanisms, and of nothing else. So, with the same seed, two inputs that differ only in

(a) a withheld case's terms or QIDs (a case the release withholds in both runs; for HA, which by
    default publishes an unplaceable case with the terms that block it suppressed, the content
    that is not published),
(b) the true receipt dates within a quarter (FAERS ``fda_dt``/``init_fda_dt``, published only
    coarsened or derived from the series),
(c) columns that are not published (the schema's withheld columns, e.g. ``report_id`` and the
    exact ``age_years``, and any column the schema does not name),

must give the same published files byte for byte, timestamps aside (:data:`TIME_DEPENDENT`).

The check publishes both inputs on the real path — :class:`medanon.Publisher` in memory
(:func:`publish_periodic`, :func:`publish_table`, :func:`publish_ehr`) or two fresh stores
(:func:`publish_periodic_in_store`) — writes the published files (the release format, and for
FAERS-numbered case ids the FAERS layout too) and compares them (:func:`compare`), reporting
the first differing item precisely: the file, then the row and column of a CSV, or the JSON path
of a manifest leaf.

What may still differ, and why, is declared here and nowhere else:

* :data:`KNOWN_DIFFERENCES`: manifest items another part of issue 41 removes (each pattern
  names the part). The lead deletes an entry when that part is merged.
* :data:`CASE_IDS_RENAMED`: the published CaseIDs become keyed pseudonyms (part "caseid"); while
  set, releases are compared up to a renaming of their CaseIDs (and the row order and group
  numbering that follow CaseID order), never up to a change of which records form a group.
* :func:`declared_dependences`: what a release's privacy model declares may depend on the input
  by design (the frequency rule's θ table, ...). Empty until the models declare it (part
  "manifest"); the check then allows exactly that.
* :data:`INHERENT`: differences that are the algorithm's own design and cannot be removed
  without changing it; each names what differs and why. Tests pass them explicitly
  (``allow=``), never by default.

Builders of the two inputs: :func:`with_case_changed` (a), :func:`with_dates_moved` (b),
:func:`with_unpublished_changed` (c), plus :func:`with_rows_shuffled` (the input's row order,
which is not published either).
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import re
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tests.neighbours import TIME_DEPENDENT, json_leaves

#: Manifest items that describe the input or the withheld cases, removed from the manifest (to
#: the store, or made functions of published or public data) by another part of issue 41.
#: ``fnmatch`` patterns over the dotted leaf paths of :func:`tests.neighbours.json_leaves`
#: (``path.__keys__`` is a mapping's key set, ``path.__len__`` a list's length) -> the part.
KNOWN_DIFFERENCES: dict[str, str] = {}

#: The same items where a published text file quotes them: regular expressions over the text
#: (the match is blanked in both files before they are compared) -> the part.
KNOWN_TEXT_DIFFERENCES: dict[str, str] = {}

#: While the published CaseIDs are keyed pseudonyms under a key the two runs do not share
#: (part "caseid"), releases are compared up to a renaming of the CaseIDs: the row order and
#: the group numbering that follow CaseID order are put in a canonical order first. Which records
#: form a group, and every other cell, is still compared. None compares the ids as they are.
CASE_IDS_RENAMED: str | None = None

#: Differences inherent in an algorithm as the papers define it (see the module docstring):
#: name -> (patterns, why). Never applied by default: a test that meets one passes it by name.
INHERENT: dict[str, tuple[tuple[str, ...], str]] = {}

#: The files whose bytes are compared: a period's release and manifest, and the FAERS layout.
PUBLISHED_SUFFIXES = (".csv", ".json", ".txt")


def declared_dependences(manifest: Mapping) -> tuple[str, ...]:
    """The manifest items a release's privacy model declares may depend on the input.

    The hook for part "manifest" of issue 41, which declares on the model object which settings
    may depend on the input by design (e.g. the frequency rule's θ table): read from the model
    the manifest declares (``model.input_dependence``: its patterns, and the key sets of the
    mappings they name).
    """
    from medanon.models import model_from_manifest

    try:
        model = model_from_manifest(dict(manifest), str(manifest.get("period", "")))
    except Exception:  # a one-off manifest: no periodic model to ask
        return ()
    declared = getattr(model, "input_dependence", {}) if model is not None else {}
    # the model's patterns (medanon.published.manifest_roles: "*" one key, "[]" a list index,
    # a final "**" a subtree) as fnmatch patterns over json_leaves' dotted paths; a declared
    # mapping may also change its key set (a term whose band or grid cell moves)
    out = []
    for pattern in declared:
        glob = pattern.replace("[]", "*").replace("**", "*")
        out.append(glob)
        parent = glob.rsplit(".", 1)[0]
        if parent != glob:
            out.append(parent + ".__keys__")
    if out:
        # the model's texts summarise its settings, the declared ones too (e.g. "from 0.35 to
        # 0.55"); tests/system/test_manifest_leaf_roles.py checks that each text is the one the
        # model rebuilds from the manifest, so they move with the declared leaves and nothing else
        out += ["method.guarantee", "method.does_not_guarantee", "method.model.guarantee",
                "method.model.does_not_guarantee", "privacy_spent.guarantee",
                "privacy_spent.does_not_guarantee"]
    return tuple(out)


# ------------------------------------------------------------------------------ publications
#: A publication: relative path of each published file -> its bytes.
Publication = dict[str, bytes]


def read_folder(folder: Path) -> Publication:
    """Every published file under ``folder``, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix in PUBLISHED_SUFFIXES}


def _faers_ids(series) -> bool:
    """Whether every published CaseID is a FAERS caseid (the FAERS layout can carry it)."""
    ids = pd.concat([r["case_id"].astype(str) for r in series.releases.values()]) \
        if series.releases else pd.Series([], dtype=str)
    return bool(len(ids)) and bool(ids.str.fullmatch(r"[1-9][0-9]*").all())


def export_series(series) -> Publication:
    """The files of a published series: the release format, and the FAERS layout when its
    CaseIDs allow it (``Series.export``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        series.export(out, "faers" if _faers_ids(series) else "csv")
        return read_folder(out)


def publish_periodic(method: str, records: Mapping[str, pd.DataFrame], *, seed: int,
                     schema=None, final: bool = False, **parameters) -> tuple[Publication, object]:
    """Publish every period of ``records`` in memory (``medanon.Publisher``) and export it.

    The safety checks' overrides are given (the tests pick short series on purpose) and a
    violating release is kept (its verdict is published and compared too). Returns the files
    and the series (for :func:`withheld_cases`).
    """
    import medanon

    data = medanon.Dataset(dict(records), schema)
    series = medanon.Publisher(method, seed=seed, **parameters).publish(
        data, allow_violations=True, allow_unprotected=True, allow_unknown_terms=True,
        allow_gap=True, allow_short_lifespan=True, final=final)
    return export_series(series), series


def publish_periodic_in_store(method: str, records: Mapping[str, pd.DataFrame], *, seed: int,
                              schema=None, **parameters) -> Publication:
    """Publish every period of ``records`` into a fresh store (the path ``medanon release``
    runs: ingest, then ``publish_periods``) and export the store's series."""
    import medanon
    from medanon.pipeline.methods import periodic_method
    from medanon.pipeline.publish import publish_periods
    from medanon.pipeline.checks import Acknowledgements
    from medanon.store import ReleaseStore

    data = medanon.Dataset(dict(records), schema)
    with tempfile.TemporaryDirectory() as tmp:
        store = ReleaseStore.create_or_open(Path(tmp) / "store.duckdb", data.schema)
        try:
            store.ingest(data)
            everything = Acknowledgements(seeded=True, violations=True, unprotected=True,
                                          unknown_terms=True, gap=True, short_lifespan=True)
            publish_periods(store, periodic_method(method, **parameters), [],
                            medanon.randomness(seed), acknowledged=everything)
            releases = {p: (store.release_rows(p), store.manifest(p))
                        for p in store.published_periods()}
        finally:
            store.close()
        from medanon.pipeline.export import export_releases

        ids = pd.concat([r["case_id"].astype(str) for r, _ in releases.values()])
        fmt = "faers" if len(ids) and ids.str.fullmatch(r"[1-9][0-9]*").all() else "csv"
        export_releases(releases, Path(tmp) / "out", fmt)
        return read_folder(Path(tmp) / "out")


def publish_table(method: str, frame: pd.DataFrame, table_schema, *, seed: int,
                  **parameters) -> tuple[Publication, object]:
    """Publish a one-off table release (ipa, kanon, dphist) in memory and write it."""
    import medanon

    release = medanon.Publisher(method, seed=seed, **parameters).publish(
        medanon.Table.from_dataframe(frame, table_schema), allow_violations=True)
    return _write_one_off(release), release


def publish_ehr(method: str, records, *, seed: int, **parameters) -> tuple[Publication, object]:
    """Publish a one-off EHR release (ClinSimRR, ...) in memory with the source ids published
    as they are (a fresh pseudonym key per run would rename them: what is compared here is
    everything else) and write it."""
    import medanon
    from medanon.pipeline.ehr import Pseudonyms

    release = medanon.Publisher(method, seed=seed, **parameters).publish(
        records, allow_violations=True, identifiers=Pseudonyms.raw())
    return _write_one_off(release), release


def _write_one_off(release) -> Publication:
    with tempfile.TemporaryDirectory() as tmp:
        release.write(Path(tmp) / "out")
        return read_folder(Path(tmp) / "out")


def withheld_cases(series, records: Mapping[str, pd.DataFrame], *, seed: int | None = None,
                   case_id: str = "case_id") -> dict[str, list[str]]:
    """Period -> the input's CaseIDs its release does not publish, sorted (a period without a
    release is left out). With ``seed``, the series was published seeded under pseudonymous
    CaseIDs (issue 41): the input's CaseIDs are mapped through the key a seeded publisher derives
    from that seed, as the library does (``medanon.pipeline.case_ids.new_case_key``)."""
    from medanon import randomness
    from medanon.pipeline.case_ids import CaseIds, new_case_key

    ids_of = None
    if seed is not None:
        ids = CaseIds("pseudonym", new_case_key(randomness(seed)))
        ids_of = ids.of
    out = {}
    for period, rows in series.releases.items():
        published = set(rows["case_id"].astype(str))
        real = records[period][case_id].astype(str).unique()
        shown = ids_of(real) if ids_of is not None else real
        out[period] = sorted(c for c, p in zip(real, shown) if str(p) not in published)
    return out


# -------------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Difference:
    """One published item that differs between the two runs."""

    file: str
    item: str       # a CSV's "line N, column C" or a manifest's JSON path
    first: object
    second: object

    def __str__(self) -> str:
        return f"{self.file}: {self.item}: {self.first!r} != {self.second!r}"


def _matches(path: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern):
            return True
        # a mapping's key set and a list's length belong to the item itself
        for suffix in (".__keys__", ".__len__"):
            if path.endswith(suffix) and fnmatch.fnmatchcase(path[:-len(suffix)], pattern):
                return True
    return False


def allowed_patterns(manifest: Mapping | None, allow: Iterable[str] = ()) -> tuple[str, ...]:
    """Every pattern a comparison ignores: the clock, the known differences, what the model
    declares, and ``allow`` (names of :data:`INHERENT` entries, or patterns)."""
    out = [*TIME_DEPENDENT, *KNOWN_DIFFERENCES]
    if manifest is not None:
        out += declared_dependences(manifest)
    for name in allow:
        out += INHERENT[name][0] if name in INHERENT else (name,)
    return tuple(out)


def _manifest_differences(name: str, a: bytes, b: bytes, allow: Iterable[str]) -> list[Difference]:
    first, second = json.loads(a), json.loads(b)
    patterns = (allowed_patterns(first, allow) + allowed_patterns(second, allow)
                + (("rows.case_id",) if CASE_IDS_RENAMED else ()))
    la, lb = json_leaves(first), json_leaves(second)
    out = []
    for path in sorted(set(la) | set(lb)):
        if _matches(path, patterns):
            continue
        va, vb = la.get(path, "<absent>"), lb.get(path, "<absent>")
        if va != vb:
            out.append(Difference(name, path, va, vb))
    if not out and not any(_matches(p, patterns) for p in set(la) | set(lb)) and a != b:
        # same leaves, other bytes (key order, number formatting): still a difference
        out.append(Difference(name, "<bytes>", a[:80], b[:80]))
    return out


def _canonical_rows(rows: list[list[str]], header: list[str]) -> list[list[str]]:
    """Rows up to a renaming of CaseIDs: case ids blanked, groups renumbered by their content,
    rows sorted (see :data:`CASE_IDS_RENAMED`). A caseid/primaryid column of the FAERS layout
    is blanked too."""
    id_columns = [i for i, c in enumerate(header)
                  if c.lower() in ("case_id", "caseid", "primaryid")]
    group = header.index("group") if "group" in header else None
    blank = [[("" if i in id_columns else cell) for i, cell in enumerate(row)] for row in rows]
    if group is None:
        return sorted(blank)
    members: dict[str, list] = {}
    for row in blank:
        members.setdefault(row[group], []).append([c for i, c in enumerate(row) if i != group])
    order = sorted(members, key=lambda g: sorted(members[g]))
    renamed = {g: str(i + 1) for i, g in enumerate(order)}
    return sorted([*row[:group], renamed[row[group]], *row[group + 1:]] for row in blank)


def _table_differences(name: str, a: bytes, b: bytes) -> list[Difference]:
    if a == b:
        return []
    delimiter = "$" if name.endswith(".txt") else ","
    encoding = "latin-1" if name.endswith(".txt") else "utf-8"
    ta, tb = a.decode(encoding), b.decode(encoding)
    for pattern in KNOWN_TEXT_DIFFERENCES:
        ta, tb = re.sub(pattern, "<known>", ta), re.sub(pattern, "<known>", tb)
    if ta == tb:
        return []
    ra = list(csv.reader(io.StringIO(ta), delimiter=delimiter))
    rb = list(csv.reader(io.StringIO(tb), delimiter=delimiter))
    header = ra[0] if ra else []
    if CASE_IDS_RENAMED and ra and rb and ra[0] == rb[0]:
        ca, cb = _canonical_rows(ra[1:], header), _canonical_rows(rb[1:], header)
        if ca == cb:
            return []
        ra, rb = [header, *ca], [header, *cb]
    for line, (x, y) in enumerate(zip(ra, rb), start=1):
        if x != y:
            if line == 1:
                return [Difference(name, "header", x, y)]
            for column, (u, v) in enumerate(zip(x, y)):
                if u != v:
                    label = header[column] if column < len(header) else str(column)
                    return [Difference(name, f"line {line}, column {label}", u, v)]
            return [Difference(name, f"line {line} (width)", x, y)]
    if len(ra) != len(rb):
        return [Difference(name, "lines", len(ra), len(rb))]
    return [Difference(name, "<bytes>", a[:80], b[:80])]


def compare(first: Publication, second: Publication, *, allow: Iterable[str] = ()
            ) -> list[Difference]:
    """Every differing manifest leaf, and the first differing item of every other file.

    Args:
        first, second: The two publications.
        allow: Names of :data:`INHERENT` entries (or extra patterns) to ignore as well.
    """
    allow = tuple(allow)
    out = []
    for name in sorted(set(first) | set(second)):
        if name not in first or name not in second:
            out.append(Difference(name, "<file>", name in first, name in second))
        elif name.endswith(".json"):
            out += _manifest_differences(name, first[name], second[name], allow)
        else:
            out += _table_differences(name, first[name], second[name])
    return out


def report(differences: Collection[Difference], limit: int = 8) -> str:
    """The differences as lines for an assertion message (the first ``limit``)."""
    shown = "\n".join(f"  {d}" for d in list(differences)[:limit])
    more = f"\n  ... and {len(differences) - limit} more" if len(differences) > limit else ""
    return f"{len(differences)} published item(s) differ:\n{shown}{more}"


# ------------------------------------------------------------------------------------ inputs
def with_case_changed(records: Mapping[str, pd.DataFrame], period: str, case: str, *,
                      terms: Mapping[str, tuple[str, ...]] | None = None,
                      qids: Mapping[str, object] | None = None,
                      case_id: str = "case_id") -> dict[str, pd.DataFrame]:
    """``records`` with every report of ``case`` in ``period`` given other terms (sensitive
    column -> its new tuple) and other QID values (column -> value; None or NaN: missing)."""
    out = {p: f.copy() for p, f in records.items()}
    frame = out[period]
    at = frame.index[frame[case_id].astype(str) == str(case)]
    for column, value in (terms or {}).items():
        frame[column] = frame[column].astype(object)
        for i in at:
            frame.at[i, column] = tuple(sorted(set(value)))
    for column, value in (qids or {}).items():
        if pd.api.types.is_numeric_dtype(frame[column]):
            frame.loc[at, column] = np.nan if value is None else float(value)
        else:
            frame[column] = frame[column].astype(object)
            frame.loc[at, column] = value
    return out


def _quarter_days(date: str, rng: np.random.Generator) -> str:
    """Another day of the quarter of ``date`` (``YYYYMMDD``; a partial date stays as it is)."""
    if len(date) != 8:
        return date
    start = pd.Timestamp(date).to_period("Q").start_time
    end = pd.Timestamp(date).to_period("Q").end_time
    days = (end.normalize() - start).days + 1
    return (start + pd.Timedelta(days=int(rng.integers(days)))).strftime("%Y%m%d")


def with_dates_moved(records: Mapping[str, pd.DataFrame], columns: Iterable[str], *,
                     seed: int) -> dict[str, pd.DataFrame]:
    """``records`` with every full date of ``columns`` moved to another day of its quarter (a
    case's ``init_fda_dt`` moved alike in all its reports, as FDA keeps one)."""
    rng = np.random.default_rng(seed)
    out = {}
    moved: dict[tuple[str, str], str] = {}
    for period, frame in records.items():
        frame = frame.copy()
        for column in columns:
            cells = frame[column].astype(object).tolist()
            ids = frame["case_id"].astype(str).tolist()
            new = []
            for case, cell in zip(ids, cells):
                if not isinstance(cell, str) or not cell:
                    new.append(cell)
                elif column == "init_fda_dt":   # one first receipt per case
                    new.append(moved.setdefault((case, cell), _quarter_days(cell, rng)))
                else:
                    new.append(_quarter_days(cell, rng))
            frame[column] = pd.Series(new, index=frame.index, dtype=frame[column].dtype)
        out[period] = frame
    return out


def with_unpublished_changed(records: Mapping[str, pd.DataFrame], schema, *, seed: int,
                             extra: Mapping[str, Callable[[int, np.random.Generator], object]]
                             | None = None) -> dict[str, pd.DataFrame]:
    """``records`` with the schema's withheld columns (identifiers: other unique values;
    private: other values) redrawn, extra columns added and the columns in another order."""
    rng = np.random.default_rng(seed)
    extra = dict(extra or {"event_dt": lambda n, g: [f"2019{int(m):02d}15"
                                                      for m in g.integers(1, 13, n)],
                           "narrative": lambda n, g: [f"note {int(x)}" for x in g.integers(0, 9, n)]})
    out = {}
    for period, frame in records.items():
        frame = frame.copy()
        n = len(frame)
        for column in schema.identifiers:
            frame[column] = [f"X{period}-{i}-{int(x)}" for i, x in
                             enumerate(rng.permutation(max(n, 1))[:n])]
        for column in schema.private:
            if pd.api.types.is_numeric_dtype(frame[column]):
                frame[column] = rng.uniform(0, 100, n).round(1)
            else:
                frame[column] = [f"p{int(x)}" for x in rng.integers(0, 99, n)]
        for column, make in extra.items():
            frame[column] = make(n, rng)
        columns = list(frame.columns)
        rng.shuffle(columns)
        out[period] = frame[columns]
    return out


def with_rows_shuffled(records: Mapping[str, pd.DataFrame], *, seed: int) -> dict[str, pd.DataFrame]:
    """``records`` with each period's rows in another order (index reset)."""
    rng = np.random.default_rng(seed)
    return {p: f.iloc[rng.permutation(len(f))].reset_index(drop=True) for p, f in records.items()}


# ------------------------------------------------------------------------------ small series
AGE_LEAVES = ("Newborn", "Infant (1-23 months)", "Preschool", "In-school", "Adolescent",
              "Young Adult", "Adult (25-44)", "Middle Aged", "Aged (65-79)", "Aged, 80 and over")
OUTCOMES = ("DE", "HO", "LT", "OT", "RI")


def faers_series(seed: int, periods: int = 2, *, cases: tuple[int, int] = (40, 80),
                 vocabulary: int = 14, followups: float = 0.3, missing: float = 0.1,
                 start: str = "2020Q1") -> dict[str, pd.DataFrame]:
    """A small FAERS-like series in the layout of ``Schema.default()`` (the FAERS loader's):
    follow-ups of earlier cases (some with a second report in a quarter), sets of terms, drugs
    per role, outcomes, full receipt dates in the period's quarter (``fda_dt``) and the case's
    first receipt (``init_fda_dt``), a ``version``, ``report_id`` and ``age_years``. CaseIDs are
    FAERS-like numbers in order of first receipt (as FDA numbers them)."""
    rng = np.random.default_rng(seed)
    terms = [f"T{i:02d}" for i in range(vocabulary)]
    drugs = [f"DRUG{i}" for i in range(6)]
    first = pd.Period(start, freq="Q")
    known: list[dict] = []
    out = {}
    next_id = 1000 + int(rng.integers(0, 50))
    for index in range(periods):
        quarter = first + index
        label = str(quarter)
        begin, days = quarter.start_time, (quarter.end_time.normalize() - quarter.start_time).days + 1

        def day(begin=begin, days=days) -> str:
            return (begin + pd.Timedelta(days=int(rng.integers(days)))).strftime("%Y%m%d")

        chosen = [dict(c) for c in known if rng.random() < followups]
        for case in chosen:
            if rng.random() < 0.2:
                case["age"] = str(rng.choice(AGE_LEAVES))
            case["weight"] = case["weight"] + float(rng.integers(-3, 4))
        new = []
        for _ in range(int(rng.integers(*cases))):
            next_id += int(rng.integers(1, 4))
            case = {"case_id": str(next_id), "init_fda_dt": day(),
                    "age": str(rng.choice(AGE_LEAVES[4:] if rng.random() < 0.8 else AGE_LEAVES)),
                    "sex": str(rng.choice(["F", "M"])), "weight": float(rng.integers(40, 110))}
            known.append(case)
            new.append(dict(case))
        rows = []
        for case in chosen + new:
            for version in range(1 + int(rng.random() < 0.15)):
                row = dict(case)
                if rng.random() < missing:
                    row[str(rng.choice(["age", "sex", "weight"]))] = None
                ps = (str(rng.choice(drugs)),)
                cc = tuple(sorted(set(map(str, rng.choice(drugs, int(rng.integers(0, 3)))))
                                  - set(ps)))
                row.update(
                    period=label, version=version + 1, fda_dt=day(),
                    indications=tuple(sorted(map(str, rng.choice(terms[:5], int(rng.integers(0, 2)),
                                                                  replace=False)))),
                    reactions=tuple(sorted(map(str, rng.choice(terms, int(rng.choice([1, 2, 3])),
                                                                replace=False)))),
                    drugs=tuple(sorted(set(ps) | set(cc))), drugs_primary_suspect=ps,
                    drugs_secondary_suspect=(), drugs_concomitant=cc, drugs_interacting=(),
                    outcomes=tuple(sorted(map(str, rng.choice(OUTCOMES, int(rng.integers(0, 2)),
                                                               replace=False)))),
                    age_years=float(rng.integers(15, 90)))
                rows.append(row)
        frame = pd.DataFrame(rows)
        frame["report_id"] = [f"{c}{v}" for c, v in zip(frame["case_id"], frame["version"])]
        frame["weight"] = frame["weight"].astype(float)
        frame["version"] = frame["version"].astype("Int64")
        out[label] = frame[["case_id", "period", "report_id", "version", "age", "sex", "weight",
                            "indications", "reactions", "drugs", "drugs_primary_suspect",
                            "drugs_secondary_suspect", "drugs_concomitant", "drugs_interacting",
                            "outcomes", "age_years", "init_fda_dt", "fda_dt"]]
    return out
