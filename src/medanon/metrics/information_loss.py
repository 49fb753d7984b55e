"""Information loss of a published release: NIL of paper 001 and IL+, IL* of paper 000.

NIL of 001 (Eqs. 1, 8, 9), :func:`normalized_information_loss`
------------------------------------------------------------------
IL(g) = |g|·[Σ_i (max(N_i, g) − min(N_i, g)) / (max(N_i) − min(N_i)) + Σ_j h(C_j, g)/h(C_j)]
(001 Eq. 1, Byun et al.); NIL(g) = IL(g) / (|g|·|QID|) (Eq. 8); NIL(R) = the mean of NIL(g) over
the groups of R (Eq. 9; ``algorithms.md`` §1.5). Read from the published rows alone: a numeric
value ``[lo-hi]`` spans hi − lo, a categorical label has the height of its subtree; the ranges
max(N_i) − min(N_i) are taken over the release. An empty cell publishes a missing value as
missing (nothing generalized) and costs 0; ``*`` costs 1 (the root, or the whole range). (No
method publishes an empty cell for a present value; method ``none`` publishes missing values
this way, and now costs 0 as it should.) NIL lies in [0, 1].

IL+, IL* and NIL of 000 (PPMS-DP, Wu, Shen, Lin), :func:`information_loss_star`
----------------------------------------------------------------------------------
000 compares every published record r'_j with its original r_j (``algorithms.md`` §5.7)::

    IL+(g) = Σ_{j=1..|g|} [ Σ_{i=1..m} |α(r'_j, N_i) − α(r_j, N_i)| / (max N_i − min N_i)
                            + Σ_{i=1..n} IL_c(α(r_j, C_i), α(r'_j, C_i)) ]

    IL_c(u, v) = (|φ(u) ∪ φ(v)| − |φ(u) ∩ φ(v)|) / |φ(u) ∪ φ(v)|,   φ(x) = ancestors of x and x

IL*(g) is IL+(g) in which a numeric value published as an interval [L, U] contributes the mean
distance of a uniform point of [L, U] to the original value a::

    |α(r'_j, N_i) − α(r_j, N_i)| := (1/(U − L)) ∫_L^U |x − a| dx
                                  = ((a − L)² + (U − a)²) / (2(U − L))        if L ≤ a ≤ U
                                  = (L + U)/2 − a                            if a < L
                                  = a − (L + U)/2                            if a > U
                                  = |L − a|                                  if L = U

(outside [L, U] the integrand has one sign, so the integral is the distance from a to the
midpoint). With c = clip(a, L, U) all cases are ``|a − c| + ((c − L)² + (U − c)²) / (2(U − L))``.
On point values (a published number x, i.e. L = U = x) the term is |x − a|, so IL*(g) reduces to
IL+(g): this module has a single implementation and its ``per_group`` is IL+(g) whenever every
published numeric value is a number. With depth(root) = 0, d_u = depth(u), d_v = depth(v) and
w = LCA(u, v), |φ(x)| = depth(x) + 1 and φ(u) ∩ φ(v) = φ(w), so::

    IL_c(u, v) = (d_u + d_v − 2·d_w) / (d_u + d_v − d_w + 1)

which for a generalization u → ancestor v (w = v) is (d_u − d_v)/(d_u + 1) as in §5.7.

NIL (000 prints Σ_g IL*(g) / (|QID|·|g|), which grows with the number of groups; §1.5) is read
as 001's Eqs. 8–9 with IL* in place of IL::

    NIL(g) = IL*(g) / (|g|·|QID|)        NIL(R) = (1/GroupNum(R)) · Σ_{g ∈ R} NIL(g)

Choices (deviations from, or details missing in, 000 and ``algorithms.md``):

* **Perturbed categorical values.** 000's exponential mechanism may publish a label that is
  not an ancestor-or-self of the original (a sibling, a cousin, a descendant). Such a pair is
  scored with 000's own IL_c, 1 − Jaccard(φ(u), φ(v)), written through the lowest common
  ancestor w above; it coincides with the §5.7 formula on generalizations and rates a wrong
  sibling (Preschool → In-school: 2/5) worse than the honest parent (Preschool → Child: 1/4).
* **Missing categorical originals** (empty cells) are the root: they cost 0 when published as
  the root or empty, and IL_c(root, v) = d_v/(d_v + 1) when a label was made up for them. A
  published empty cell, or ``*``, is the root.
* **Interval originals.** The numeric QIDs of super records are intervals [a1, a2] (the hull of
  a case's follow-ups); a = (a1 + a2)/2, their midpoint. A single value v is [v, v], so a = v.
* **Range.** max N − min N is the span (largest upper bound minus smallest lower bound) of the
  ORIGINAL values of the period, over all of its super records, including those the release
  withholds, unless ``numeric_ranges`` gives it. If the span is 0, a term is 0 when its distance
  is 0 and 1 otherwise.
* **Whole domain.** A numeric cell published as ``*`` or empty costs 1. A missing numeric
  original costs 0 when published as ``*``/empty and 1 when a value was published for it.
  So a missing value is counted honestly: it had no value to lose, while each present value
  published as ``*`` because its group mixes in a missing one costs 1 (the grouping methods
  keep missing with missing for that reason, ``anonymize/common.py``).
* **Clipping.** Each normalized numeric term is clipped to [0, 1]: a Laplace-perturbed value
  (000's PPMS-DP) can fall far outside [min N, max N] and would otherwise dominate the mean;
  1 is the cost of publishing nothing. Categorical terms already lie in [0, 1). Hence every
  per-record term, ``per_attribute`` and NIL lie in [0, 1].
* **Withheld cases.** Records are joined on ``case_id``; only cases present in both the
  original super records and the release are scored (their count is ``n_records``; the
  original cases absent from the release are counted in ``n_withheld`` and cost nothing). A
  release case unknown to the original is an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, ValidationError
from ..hierarchies import Interval, Taxonomy
from ..published.cells import interval_bounds

__all__ = ["StarLoss", "encode_distinct", "information_loss_star", "normalized_information_loss"]

#: the dtype of text cells read as strings (``astype(str)``: pandas' string dtype)
_STR = pd.Series([], dtype=object).astype(str).dtype
_WHOLE = ("", "*")  # published cells meaning "the whole domain" (numeric) / the root (categorical)


#: :meth:`Interval.parse`'s bounds of a published cell, each text parsed once per process: the
#: releases of a series publish the same numbers and intervals again and again, and ``medanon
#: evaluate`` reads every one of them twice. The checks' cache (the same function of the same
#: stripped text), so that a text verify's check parsed is not parsed again here (issue 43).
_parsed = interval_bounds


def encode_distinct(tax: Taxonomy, labels: np.ndarray) -> np.ndarray:
    """``tax.encode(labels)`` (int32 codes), each distinct label looked up once: a release
    repeats a group's label on every row (issue 43). It raises as ``encode`` does, naming the
    same labels in the same order (the distinct ones, as first met)."""
    labels = np.asarray(labels, dtype=object)
    codes, uniques = pd.factorize(labels, use_na_sentinel=False)
    distinct = np.asarray(uniques, dtype=object)
    if not all(isinstance(u, str) for u in distinct.tolist()):
        return tax.encode(labels)  # not a label (None, NaN): encode refuses it, naming it
    return tax.encode(distinct)[codes] if len(codes) else tax.encode([])


def _bounds(texts: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of distinct published numeric cells (as :func:`_texts` reads them); NaN for an
    empty cell (missing) and for ``*``."""
    parsed = [_parsed(t) if t not in _WHOLE else (np.nan, np.nan) for t in texts]
    lo = np.array([p[0] for p in parsed], dtype=np.float64)
    hi = np.array([p[1] for p in parsed], dtype=np.float64)
    return lo, hi


def normalized_information_loss(rows: pd.DataFrame, qids: Sequence[tuple[str, str]],
                                hierarchies: Mapping[str, Taxonomy], *,
                                per: str = "group") -> float:
    """NIL(R) of a release in the published format.

    Args:
        rows: release rows (``group`` plus the QID columns, as published strings).
        qids: ``(name, kind)`` pairs, kind ``"numeric"`` or ``"categorical"``.
        hierarchies: taxonomy of each categorical QID.
        per: ``"group"`` (001's Eq. 9: the mean of NIL(g) over the groups) or ``"case"``
            (the mean over the published cases of their group's NIL(g), i.e. Eq. 9 weighted by
            group size: the scale on which withheld cases can be added, one per case).
    """
    if per not in ("group", "case"):
        raise ValidationError(f"The 'per' parameter of normalized_information_loss must be "
                              f"'group' or 'case'; got {per!r}.")
    if not len(rows) or not qids:
        return 0.0
    loss = np.zeros(len(rows))
    for name, kind in qids:
        # An empty cell publishes a missing value as missing: nothing was generalized, so it
        # costs 0; ``*`` is the root (categorical) or the whole range (numeric) and costs 1.
        # each distinct cell read once: a release repeats a group's cells on its rows
        at, texts = _text_codes(rows[name])
        distinct = np.asarray(texts, dtype=object)
        empty_u = distinct == ""
        empty = empty_u[at]
        if kind == "numeric":
            lo_u, hi_u = _bounds(texts)
            lo, hi = lo_u[at], hi_u[at]
            span_all = np.nanmax(hi) - np.nanmin(lo) if np.isfinite(hi).any() else 0.0
            if span_all > 0:
                term = (hi - lo) / span_all
                loss += np.where(empty, 0.0, np.where(np.isnan(term), 1.0, term))
            else:
                loss += np.where(np.isnan(hi) & ~empty, 1.0, 0.0)
        else:
            tax = hierarchies[name]
            if tax.height > 0:
                codes = encode_distinct(tax, np.where(empty_u, tax.root, distinct))[at]
                loss += np.where(empty, 0.0,
                                 np.asarray(tax.subtree_height_array, dtype=float)[codes] / tax.height)
    per_group = pd.Series(loss / len(qids)).groupby(rows["group"].to_numpy()).first()
    if per == "case":  # every case of a group has the group's loss (first() reads it)
        sizes = rows.groupby(rows["group"].to_numpy()).size().reindex(per_group.index)
        return float((per_group * sizes).sum() / sizes.sum())
    return float(per_group.mean())


# ------------------------------------------------------------------------------ IL+ / IL* (000)
_OWNER = "information_loss_star"
_CASE = "case_id"
_GROUP = "group"
_SHOWN = 5


def _show(items: Sequence[Any]) -> str:
    items = list(items)
    text = ", ".join(repr(x) for x in items[:_SHOWN])
    return text + (f" (and {len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")


@dataclass(frozen=True, eq=False)
class StarLoss:
    """Information loss of a release against its original super records (IL*/IL+ of 000).

    Attributes:
        nil: NIL(R) = mean over the groups g of IL*(g) / (|g|·|QID|), in [0, 1] (0.0 when no
            case is scored).
        per_group: IL*(g) by group label (the ``group`` column, as text), sorted by label; it
            is IL+(g) of 000 when every published numeric value is a number.
        per_attribute: mean per-record loss of each QID over the scored records, by QID name,
            in the order of ``qids``; each in [0, 1].
        n_records: number of cases scored (present in both the original and the release).
        n_withheld: number of original cases the release does not publish (not scored).
    """

    nil: float
    per_group: pd.Series
    per_attribute: pd.Series
    n_records: int
    n_withheld: int

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready form: floats and ints, groups and QIDs as string keys."""
        return {
            "nil": float(self.nil),
            "per_group": {str(k): float(v) for k, v in self.per_group.items()},
            "per_attribute": {str(k): float(v) for k, v in self.per_attribute.items()},
            "n_records": int(self.n_records),
            "n_withheld": int(self.n_withheld),
        }


def _texts(column: pd.Series) -> pd.Series:
    """Cells as stripped strings; missing cells become ``""``."""
    values = column.to_numpy(dtype=object)  # (no copy of an object column)
    if set(map(type, values.tolist())) <= {str}:
        # every cell a str, none missing (release rows and CaseIDs): each distinct one
        # stripped once, and none when no distinct text holds white space (what str.strip
        # removes; str.split splits on the same), which one split of them joined tells (a
        # CaseID column is all distinct: issue 43)
        codes, uniques = pd.factorize(values)
        listed = uniques.tolist()
        joined = "\x00".join(listed)
        if joined.split(maxsplit=1) != [joined]:
            uniques = np.array([u.strip() for u in listed], dtype=object)
        return pd.Series(np.asarray(uniques, dtype=object)[codes], index=column.index,
                         dtype=_STR, name=column.name)
    cells = column.astype(object)
    cells = cells.where(cells.notna(), "")
    values = cells.to_numpy()
    if pd.api.types.infer_dtype(values, skipna=False) != "string":
        return cells.astype(str).str.strip()
    # text cells: each distinct one stripped once (a release repeats a group's value on every
    # row, and pandas strips a cell at a time), into the same strings and dtype
    codes, uniques = pd.factorize(values)
    # every distinct cell is a str here: str.strip on each, which is what pandas' strip calls
    stripped = np.array([u.strip() for u in uniques.tolist()], dtype=object)
    return pd.Series(stripped[codes], index=column.index, dtype=_STR, name=column.name)


def _check_qids(qids: Any) -> list[tuple[str, str]]:
    if isinstance(qids, (str, bytes)) or not isinstance(qids, Sequence):
        raise ValidationError(
            f"The 'qids' parameter of {_OWNER} must be a sequence of (name, kind) pairs; got "
            f"{type(qids).__name__}.")
    out: list[tuple[str, str]] = []
    for q in qids:
        if hasattr(q, "name") and hasattr(q, "kind"):  # a schema QIDSpec
            q = (q.name, q.kind)
        if (not isinstance(q, (tuple, list)) or len(q) != 2 or not isinstance(q[0], str)
                or q[1] not in ("numeric", "categorical")):
            raise ValidationError(
                f"The 'qids' parameter of {_OWNER} must hold (name, kind) pairs with kind "
                f"'numeric' or 'categorical'; got {q!r}.")
        out.append((q[0], q[1]))
    if not out:
        raise ValidationError(
            f"The 'qids' parameter of {_OWNER} must name at least one QID; got none.")
    names = [n for n, _ in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValidationError(
            f"The 'qids' parameter of {_OWNER} must name each QID once; got duplicates "
            f"{_show(dup)}.")
    return out


def _check_ranges(numeric_ranges: Any, numeric: list[str]) -> dict[str, float]:
    if numeric_ranges is None:
        return {}
    if not isinstance(numeric_ranges, Mapping):
        raise ValidationError(
            f"The 'numeric_ranges' parameter of {_OWNER} must map numeric QID names to positive "
            f"ranges; got {type(numeric_ranges).__name__}.")
    out: dict[str, float] = {}
    for name, value in numeric_ranges.items():
        if name not in numeric:
            raise ValidationError(
                f"The 'numeric_ranges' parameter of {_OWNER} must only name numeric QIDs "
                f"({_show(numeric) or 'none'}); got {name!r}.")
        if (isinstance(value, bool) or not isinstance(value, Real)
                or not math.isfinite(float(value)) or float(value) <= 0):
            raise ValidationError(
                f"The 'numeric_ranges' parameter of {_OWNER} must give a positive finite range "
                f"for {name!r}; got {value!r}.")
        out[name] = float(value)
    return out


def _original_bounds(column: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of an original numeric QID (NaN = missing)."""
    if isinstance(column.dtype, pd.IntervalDtype):
        arr = column.array
        return np.asarray(arr.left, dtype=float), np.asarray(arr.right, dtype=float)
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        values = column.to_numpy(dtype=float, na_value=np.nan)
        return values, values.copy()
    codes, uniques = pd.factorize(column.to_numpy(dtype=object), use_na_sentinel=True)
    lo_u = np.full(len(uniques), np.nan)
    hi_u = np.full(len(uniques), np.nan)
    for i, v in enumerate(uniques):
        if isinstance(v, pd.Interval):
            lo_u[i], hi_u[i] = float(v.left), float(v.right)
        elif isinstance(v, Interval):
            lo_u[i], hi_u[i] = v.lo, v.hi
        elif isinstance(v, Real) and not isinstance(v, bool):
            lo_u[i] = hi_u[i] = float(v)
        elif isinstance(v, str) and v.strip() == "":
            pass
        elif isinstance(v, str):
            try:
                parsed = Interval.parse(v)
            except ValidationError:
                parsed = None
            if parsed is None:
                raise ValidationError(
                    f"The 'original' parameter of {_OWNER} must hold numbers or intervals in "
                    f"numeric QID {name!r}; got {v!r}.")
            lo_u[i], hi_u[i] = parsed.lo, parsed.hi
        else:
            raise ValidationError(
                f"The 'original' parameter of {_OWNER} must hold numbers or intervals in "
                f"numeric QID {name!r}; got {v!r}.")
    lo = np.where(codes >= 0, lo_u[np.maximum(codes, 0)] if len(uniques) else np.nan, np.nan)
    hi = np.where(codes >= 0, hi_u[np.maximum(codes, 0)] if len(uniques) else np.nan, np.nan)
    return lo, hi


def _text_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(_texts(column))``: each cell's code among the distinct texts (in order of
    first appearance) and those texts. A column of str cells (release rows) is factorized once
    and its distinct cells stripped, instead of factorized again as stripped texts (issue 43):
    the first cell of each stripped text is the first of the distinct cells that strip to it,
    so the codes and the order are the same.

    A string column (the original super records' labels) is read with its missing cells as
    ``""``, what :func:`_texts` makes of them, so it too takes that path: its missing cells
    sent it through :func:`_texts`' conversions and a second factorize (a fifth of IL* in
    ``evaluate``, issue 43)."""
    values = (column.to_numpy(dtype=object, na_value="")
              if isinstance(column.dtype, pd.StringDtype) else column.to_numpy(dtype=object))
    if not set(map(type, values.tolist())) <= {str}:
        return pd.factorize(_texts(column))
    codes, uniques = pd.factorize(values)
    listed = uniques.tolist()
    joined = "\x00".join(listed)
    if joined.split(maxsplit=1) != [joined]:  # white space to strip (as :func:`_texts` tells)
        outer, distinct = pd.factorize(np.array([u.strip() for u in listed], dtype=object))
        codes, uniques = outer[codes], distinct
    return codes, pd.Index(np.asarray(uniques, dtype=object), dtype=_STR)


def _published_bounds(column: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """L, U and the whole-domain mask of a published numeric QID (``*``/empty = whole domain)."""
    codes, uniques = _text_codes(column)
    lo_u = np.full(len(uniques), np.nan)
    hi_u = np.full(len(uniques), np.nan)
    whole_u = np.zeros(len(uniques), dtype=bool)
    bad = []
    for i, text in enumerate(uniques):
        if text in _WHOLE:
            whole_u[i] = True
            continue
        try:
            lo_u[i], hi_u[i] = _parsed(text)
        except ValidationError:
            bad.append(text)
    if bad:
        raise ValidationError(
            f"The 'rows' parameter of {_OWNER} must hold, in numeric QID {name!r}, numbers or "
            f"inclusive intervals '[lo-hi]' ('*' or empty for the whole domain); got "
            f"{_show(bad)}.")
    return lo_u[codes], hi_u[codes], whole_u[codes]


def _label_codes(column: pd.Series, tax: Taxonomy, name: str, param: str) -> np.ndarray:
    """Codes of labels; empty cells and ``*`` are the root.

    An original label that names a node with a self leaf (a raw ``Adult``) is that leaf: the
    record value, not the generalization it would be in a release.
    """
    codes, uniques = _text_codes(column)
    if param == "original":
        uniques = pd.Index(tax.record_labels(uniques))
    root = tax.code_of[tax.root]
    get = tax.code_of.get
    mapped = np.array([root if (t in _WHOLE and t not in tax.code_of) else get(t, -1)
                       for t in uniques], dtype=np.int64)
    if (mapped < 0).any():
        bad = [t for t, c in zip(uniques, mapped, strict=True) if c < 0]
        raise ValidationError(
            f"The '{param}' parameter of {_OWNER} must hold, in categorical QID {name!r}, labels "
            f"of hierarchy {tax.name!r} (empty or '*' for the root); got {_show(bad)}.")
    return mapped[codes]


def _lca_pairs(u: np.ndarray, v: np.ndarray, tax: Taxonomy) -> np.ndarray:
    """Code of LCA(u[i], v[i]) for every i, by climbing parents (at most ``height`` steps)."""
    parent = tax.parent_array.astype(np.int64)
    depth = np.asarray(tax.depth_array, dtype=np.int64)
    a, b = u.copy(), v.copy()
    da, db = depth[a], depth[b]
    while True:  # bring both to the same depth
        up_a, up_b = da > db, db > da
        if not (up_a.any() or up_b.any()):
            break
        a[up_a] = parent[a[up_a]]
        da[up_a] -= 1
        b[up_b] = parent[b[up_b]]
        db[up_b] -= 1
    while True:  # then climb together until they meet
        diff = a != b
        if not diff.any():
            break
        a[diff] = parent[a[diff]]
        b[diff] = parent[b[diff]]
    return a


def _categorical_loss(u: np.ndarray, v: np.ndarray, tax: Taxonomy) -> np.ndarray:
    """000's IL_c(u, v) = (d_u + d_v − 2·d_w) / (d_u + d_v − d_w + 1), w = LCA(u, v)."""
    if len(u) == 0:
        return np.zeros(0)
    n = len(tax)
    pairs, inverse = np.unique(u * n + v, return_inverse=True)  # few distinct pairs
    pu, pv = pairs // n, pairs % n
    depth = np.asarray(tax.depth_array, dtype=float)
    du, dv, dw = depth[pu], depth[pv], depth[_lca_pairs(pu, pv, tax)]
    return ((du + dv - 2 * dw) / (du + dv - dw + 1))[inverse.ravel()]


def _numeric_loss(a: np.ndarray, lo: np.ndarray, hi: np.ndarray, whole: np.ndarray,
                  span: float) -> np.ndarray:
    """Normalized, clipped IL* term of a numeric QID (see the module docstring)."""
    missing = np.isnan(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.clip(a, lo, hi)  # the point of [L, U] nearest to a
        width = hi - lo
        spread = np.where(width > 0, ((c - lo) ** 2 + (hi - c) ** 2)
                          / (2 * np.where(width > 0, width, 1.0)), 0.0)
        dist = np.abs(a - c) + spread  # = (1/(U−L)) ∫_L^U |x − a| dx, or |L − a| if L = U
        if span > 0:
            term = np.minimum(dist / span, 1.0)
        else:
            term = np.where(dist > 0, 1.0, 0.0)
    term = np.where(whole, 1.0, term)
    return np.where(missing, np.where(whole, 0.0, 1.0), term)


def information_loss_star(original: Any, rows: pd.DataFrame,
                          qids: Sequence[tuple[str, str]], hierarchies: Mapping[str, Taxonomy],
                          *, numeric_ranges: Mapping[str, float] | None = None) -> StarLoss:
    """IL*(g), and NIL with IL* (paper 000; ``algorithms.md`` §5.7), of one period's release.

    Every published record is compared with its original super record (joined on
    ``case_id``): numeric QIDs by the mean distance of the published number or interval to the
    original value over the range, categorical QIDs by 000's IL_c on the taxonomy. IL*(g) sums
    those terms over the records and QIDs of group g; on point values it is 000's IL+(g). The
    formulas and every choice (perturbed labels, interval originals, ranges, clipping, missing
    cells, withheld cases) are listed in the module docstring.

    Args:
        original: the ORIGINAL super records of the period: a DataFrame with ``case_id`` and
            the QID columns (categorical labels, empty = missing; numeric as a pandas
            ``IntervalArray`` closed on both sides, plain numbers, or ``[lo-hi]`` text), or a
            :class:`~medanon.data.records.SuperRecords` (its frame and case-id column).
        rows: the PUBLISHED release rows of that period, as strings: ``case_id``, ``group``
            and the QID columns (categorical: a hierarchy label, ``*``/empty = root; numeric: a
            number or ``[lo-hi]``, ``*``/empty = the whole domain). Cases of ``original``
            missing here are withheld and not scored.
        qids: ``(name, kind)`` pairs (or schema QID specs), kind ``"numeric"`` or
            ``"categorical"``; |QID| = ``len(qids)``.
        hierarchies: the taxonomy of each categorical QID.
        numeric_ranges: max N − min N of some numeric QIDs (positive); by default the span of
            the original values of the period.

    Returns:
        A :class:`StarLoss` (``nil``, ``per_group``, ``per_attribute``, ``n_records``,
        ``n_withheld``).

    Raises:
        ValidationError: a parameter has the wrong type or value, a cell cannot be read, a
            case id is repeated, or the release holds a case that is not in ``original``.
        SchemaError: a column is missing, or a categorical QID has no hierarchy.

    Example:
        >>> import pandas as pd
        >>> from medanon.hierarchies import mesh_age_tree
        >>> orig = pd.DataFrame({"case_id": ["1", "2"], "age": ["Preschool", "In-school"],
        ...                      "weight": [40.0, 60.0]})
        >>> rows = pd.DataFrame({"case_id": ["1", "2"], "group": ["g", "g"],
        ...                      "age": ["Child", "Child"], "weight": ["[30-50]", "60"]})
        >>> loss = information_loss_star(orig, rows, [("age", "categorical"),
        ...                              ("weight", "numeric")], {"age": mesh_age_tree()})
        >>> round(loss.nil, 4)  # (1/4 + 1/4 + 5/20 + 0) / (2 records · 2 QIDs)
        0.1875
    """
    case_col = _CASE
    if hasattr(original, "frame") and hasattr(original, "schema"):  # SuperRecords
        case_col = original.schema.case_id
        original = original.frame
    if not isinstance(original, pd.DataFrame):
        raise ValidationError(
            f"The 'original' parameter of {_OWNER} must be a pandas DataFrame of super records; "
            f"got {type(original).__name__}.")
    if not isinstance(rows, pd.DataFrame):
        raise ValidationError(
            f"The 'rows' parameter of {_OWNER} must be a pandas DataFrame of release rows; got "
            f"{type(rows).__name__}.")
    specs = _check_qids(qids)
    if not isinstance(hierarchies, Mapping):
        raise ValidationError(
            f"The 'hierarchies' parameter of {_OWNER} must map categorical QIDs to Taxonomy "
            f"objects; got {type(hierarchies).__name__}.")
    names = [n for n, _ in specs]
    numeric = [n for n, k in specs if k == "numeric"]
    ranges = _check_ranges(numeric_ranges, numeric)
    for name, kind in specs:
        if kind == "categorical" and not isinstance(hierarchies.get(name), Taxonomy):
            raise SchemaError(
                f"The 'hierarchies' parameter of {_OWNER} must hold a Taxonomy for every "
                f"categorical QID; got none for {name!r}.")
    for param, frame, needed in (("original", original, [case_col, *names]),
                                 ("rows", rows, [_CASE, _GROUP, *names])):
        absent = [c for c in needed if c not in frame.columns]
        if absent:
            raise SchemaError(
                f"The '{param}' parameter of {_OWNER} must have the column(s) {_show(needed)}; "
                f"got none named {_show(absent)}.")

    # Join on case_id: every release case must be an original case; the rest are withheld.
    orig_ids = _texts(original[case_col])
    row_ids = _texts(rows[_CASE])
    # each side's ids hashed once: the Index that tells they are distinct keeps its hash
    # table, which the join probes (a duplicated() per side hashed them again, issue 43)
    orig_index = pd.Index(orig_ids)
    for param, ids, index in (("original", orig_ids, orig_index),
                              ("rows", row_ids, pd.Index(row_ids))):
        if index.is_unique:
            continue
        dup = ids[ids.duplicated()].unique().tolist()
        raise ValidationError(
            f"The '{param}' parameter of {_OWNER} must hold each case_id once; got repeated "
            f"case_id(s) {_show(dup)}.")
    pos = orig_index.get_indexer(row_ids)
    if (pos < 0).any():
        unknown = row_ids[pos < 0].tolist()
        raise ValidationError(
            f"The 'rows' parameter of {_OWNER} must only publish cases of the original super "
            f"records; got {len(unknown)} unknown case_id(s): {_show(unknown)}.")
    n = len(pos)

    terms = np.zeros((n, len(specs)))
    for j, (name, kind) in enumerate(specs):
        if kind == "numeric":
            o_lo, o_hi = _original_bounds(original[name], name)
            if name in ranges:
                span = ranges[name]
            elif np.isfinite(o_lo).any():
                span = float(np.nanmax(o_hi) - np.nanmin(o_lo))
            else:
                span = 0.0
            a = (o_lo[pos] + o_hi[pos]) / 2  # midpoint of an original interval [a1, a2]
            lo, hi, whole = _published_bounds(rows[name], name)
            terms[:, j] = _numeric_loss(a, lo, hi, whole, span)
        else:
            tax = hierarchies[name]
            u = _label_codes(original[name], tax, name, "original")[pos]
            v = _label_codes(rows[name], tax, name, "rows")
            terms[:, j] = _categorical_loss(u, v, tax)

    groups = _texts(rows[_GROUP]).to_numpy()
    totals = pd.Series(terms.sum(axis=1)).groupby(groups, sort=True)
    per_group = totals.sum().rename("il_star")
    per_group.index.name = _GROUP
    sizes = totals.size()
    nil = float((per_group / (sizes * len(specs))).mean()) if n else 0.0
    per_attribute = pd.Series(terms.mean(axis=0) if n else np.zeros(len(specs)),
                              index=pd.Index(names, name="qid"), name="loss")
    return StarLoss(nil=nil, per_group=per_group, per_attribute=per_attribute, n_records=n,
                    n_withheld=int(len(orig_ids) - n))
