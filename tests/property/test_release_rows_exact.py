"""Property tests: the release's record path (super records, published cells)
gives what its plain, cell-by-cell definitions give, on the shortcuts issue 43 added: the
packed sort keys of text, the unions and the multi cells' sortedness read from term
objects, floats formatted once per bit pattern."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from medanon.data.records import (_packed_text_keys, _union_of_str_tuples, as_value_set,
                                  map_cells, stable_sort_order)
from medanon.data.schema import Schema
from medanon.published.format import (_format_multi_many, format_label, format_multi,
                                      format_numeric, to_published_rows)

#: alphabets the packed keys take (digits: CaseID pseudonyms) and ones they refuse
#: (non-ASCII, NUL) or that do not fit 64 bits when long
ALPHABETS = ["0123456789", "0123456789abcdef", "ab", "aZ ~\x7f", "xyz\x00", "aé"]


def _texts(alphabet: str, max_size: int = 30):
    return st.lists(st.text(alphabet=st.sampled_from(list(alphabet)), max_size=18),
                    max_size=max_size)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(ALPHABETS).flatmap(_texts))
def test_packed_text_keys_order_texts_by_code_point(texts: list[str]) -> None:
    """Keys sort as the texts sort (a prefix first), equal exactly when the texts are; None
    only for texts they cannot hold."""
    keys = _packed_text_keys(texts)
    fits = all(t.isascii() and "\x00" not in t for t in texts)
    if keys is None:
        width = max(map(len, texts), default=0)
        alphabet = set("".join(texts)) | ({""} if len(set(map(len, texts))) > 1 else set())
        assert not fits or len(alphabet) ** width > 2 ** 64
        return
    assert fits and keys.dtype == np.uint64 and len(keys) == len(texts)
    assert np.argsort(keys, kind="stable").tolist() == sorted(range(len(texts)),
                                                              key=texts.__getitem__)
    for i, a in enumerate(texts):
        assert [keys[i] == keys[j] for j in range(len(texts))] == [a == b for b in texts]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["2020Q1", "2020Q2"]),
                          st.text(alphabet=st.sampled_from(list("0123456789")), min_size=0,
                                  max_size=16),
                          st.integers(1, 3)), min_size=2, max_size=40),
       st.booleans())
def test_pseudonym_like_keys_sort_as_pandas(rows: list[tuple], shared: bool) -> None:
    """Digit CaseIDs (the packed keys' case), period cells sharing one str object or not:
    the order is ``sort_values(kind="stable")``'s."""
    frame = pd.DataFrame(rows, columns=["period", "case_id", "version"])
    if shared:  # as the store gives them: one str per distinct text
        for name in ("period", "case_id"):
            codes, distinct = pd.factorize(frame[name].to_numpy(dtype=object))
            frame[name] = pd.Series(np.asarray(distinct, dtype=object)[codes], dtype=object)
    keys = ["period", "case_id", "version"]
    expected = frame.reset_index(drop=True).sort_values(keys, kind="stable").index.tolist()
    got = stable_sort_order(frame, keys)
    assert (list(range(len(frame))) if got is None else got.tolist()) == expected


_TERMS = ["b", "a", " a ", "", "c d", "Z", "é", "a"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(range(len(_TERMS))), max_size=4), max_size=30),
       st.data())
def test_union_with_shared_term_objects_is_the_value_set(cells: list[list[int]], data) -> None:
    """Terms shared as one str object (as the store shares them) or not: each group's union
    is :func:`as_value_set` of its rows' terms."""
    objects = [str(t) for t in _TERMS]  # "a" twice: equal values, two objects
    tuples = [tuple(objects[i] for i in c) for c in cells]
    n = len(tuples)
    if not n:
        return
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=n))
    group = np.repeat(np.arange(len(sizes)), sizes)[:n]
    group = np.r_[group, np.full(n - len(group), group[-1])]
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    expected = [as_value_set([t for i in np.flatnonzero(group == g) for t in tuples[i]])
                for g in range(len(first))]
    assert _union_of_str_tuples(tuples, group, first) == expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.lists(st.sampled_from(_TERMS), max_size=4).map(tuple),
                          st.sampled_from(["a|b", ""]), st.none()), max_size=20))
def test_multi_cells_with_shared_terms_format_as_format_multi(cells: list) -> None:
    assert _format_multi_many(cells) == [format_multi(c) for c in cells]


def test_floats_are_formatted_once_per_bit_pattern() -> None:
    """A NaN object per missing cell is formatted once; 0.0 and -0.0, and NaNs of other
    bits, apart."""
    other_nan = np.frombuffer(np.array([0x7FF8000000000001], dtype=np.int64).tobytes())[0]
    cells = [float("nan") for _ in range(5)] + [0.0, -0.0, 1.5, float(other_nan), 1.5]
    calls: list[object] = []

    def fn(v: object) -> str:
        calls.append(v)
        return repr(v) + ("*" if isinstance(v, float) and math.isnan(v)
                          and np.array(v).view(np.int64) != np.array(np.nan).view(np.int64)
                          else "")

    assert map_cells(cells, fn) == [fn(v) for v in cells]
    assert len(calls) - len(cells) == 5  # nan, other nan, 0.0, -0.0, 1.5


def _published_one_by_one(table: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """``to_published_rows`` cell by cell, each column assigned as a list: the reference."""
    from medanon.data.dates import publish_dates

    out = pd.DataFrame({c: table[c].astype(str).to_numpy() for c in ("period", "case_id",
                                                                     "group")})
    for qid in schema.qids:
        fmt = format_numeric if qid.kind == "numeric" else format_label
        out[qid.name] = [fmt(v) for v in table[qid.name].to_numpy(dtype=object)]
    for name in schema.sensitive + schema.multi:
        out[name] = [format_multi(v) for v in table[name].to_numpy(dtype=object)]
    for name in schema.insensitive:
        out[name] = [format_label(v) for v in table[name].to_numpy(dtype=object)]
    for name, granularity in schema.dates.items():
        out[name] = publish_dates(table[name].to_numpy(dtype=object), granularity)
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["Adult", "*", None]), st.sampled_from(["F", None]),
                          st.one_of(st.none(), st.just(float("nan")), st.floats(0, 9)),
                          st.lists(st.sampled_from(_TERMS), max_size=3).map(tuple),
                          st.sampled_from(["20200105", "2019", None])), max_size=12))
def test_published_rows_equal_the_cell_by_cell_rows(rows: list[tuple]) -> None:
    """The same cells and the same dtypes as formatting cell by cell, with no rows too."""
    schema = Schema.default()
    n = len(rows)
    table = pd.DataFrame({"period": ["2020Q1"] * n, "case_id": [str(i) for i in range(n)],
                          "group": [str(i // 2) for i in range(n)]})
    for qid in schema.qids:
        column = {"age": 0, "sex": 1, "weight": 2}.get(qid.name)
        table[qid.name] = pd.Series([r[column] if column is not None else None for r in rows],
                                    dtype=object)
    for name in schema.sensitive + schema.multi:
        table[name] = pd.Series([r[3] for r in rows], dtype=object)
    for name in schema.insensitive:
        table[name] = pd.Series([r[0] for r in rows], dtype=object)
    for name in schema.dates:
        table[name] = pd.Series([r[4] for r in rows], dtype=object)
    got, want = to_published_rows(table, schema), _published_one_by_one(table, schema)
    assert got.dtypes.to_dict() == want.dtypes.to_dict()
    assert got.to_dict("list") == want.to_dict("list")
