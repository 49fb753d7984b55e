"""Multi-valued cells as integer codes into one vocabulary (issue 43).

A period's multi-valued columns hold a few hundred distinct terms in millions of cells. Read as
text, each cell is a string that is made, hashed and split again; coded, a column is two integer
arrays, and its text is made once per distinct cell (:meth:`TermCodes.tuples`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .records import first_appearances

__all__ = ["CodedRecords", "TermCodes", "key_type"]


def key_type(largest: int) -> type[np.int32] | type[np.int64]:
    """The integer type for keys that combine codes (a group and a term, a row and a rank)
    up to ``largest``: int32 when it fits, else int64. A 450k quarter's keys fit, and int32
    halves the bytes sorted and scanned: numpy's sort of int32 took a third of that of int64,
    and equal integers sort alike whatever the type (issue 43)."""
    return np.int32 if largest < np.iinfo(np.int32).max else np.int64


@dataclass(frozen=True)
class TermCodes:
    """The multi-valued cells of one column, as integer codes into a vocabulary of terms.

    Row ``i`` holds the terms ``vocabulary[codes[ptr[i]:ptr[i + 1]]]``, in the cell's own order
    (repeats kept, nothing stripped or dropped): the cells a reader gets are exactly these tuples
    (:meth:`tuples`).

    Attributes:
        vocabulary: The distinct terms, a ``str`` each. A reader that codes several columns
            into one vocabulary shares one ``str`` per term among them.
        ptr: ``int64``, one more than the rows: where each row's codes start and end.
        codes: Integers, one per term of every row, row after row: positions in
            ``vocabulary``.
    """

    vocabulary: list[str]
    ptr: np.ndarray
    codes: np.ndarray

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def distinct_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_distinct_rows`, made once (the read, the super records and the input digest
        all number the distinct cells)."""
        return self._distinct_rows

    @cached_property
    def _distinct_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the number of its cell among the distinct cells (equal codes, in order of
        first appearance from 0, as ``pd.factorize`` numbers values), and each distinct
        cell's first row.

        A row of at most :func:`_packed_terms` terms is keyed exactly by its codes packed into
        one integer (each code plus one in its own field of ``bits`` bits, the first term in
        the highest field: a field is never 0, so the fields' count is the row's length), and
        the keys are factorized as integers. The longer rows (a few percent of a quarter's
        reactions and drugs) are numbered among themselves by :func:`_hashed_row_numbers`, and
        keyed by that number with the top bit set, which no packed key has. Packing the codes
        needs no check of a hash collision, which with the terms' places cost half of this
        step at 450k rows (issue 43).
        """
        n = len(self)
        if not n:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        lengths = np.diff(self.ptr)
        starts = self.ptr[:-1]
        # the bits of the largest code + 1 (read from the codes, not assumed of the vocabulary)
        bits = (int(self.codes.max()) + 1 if len(self.codes) else 1).bit_length()
        fits = _packed_terms(bits)
        key = np.zeros(n, dtype=np.uint64)
        shift = np.uint64(bits)
        at = np.flatnonzero(lengths > 0)   # the rows holding a term at place ``j``
        key[at] = self.codes[starts[at]].astype(np.uint64) + np.uint64(1)
        for j in range(1, min(fits, int(lengths.max()))):
            at = at[lengths[at] > j]
            key[at] = (key[at] << shift) | (self.codes[starts[at] + j].astype(np.uint64)
                                            + np.uint64(1))
        longer = np.flatnonzero(lengths > fits)
        if len(longer):
            numbers = _hashed_row_numbers(*self._items_as_rows(longer))
            key[longer] = numbers.astype(np.uint64) | np.uint64(1 << 63)
        which, _ = pd.factorize(key)
        return which, first_appearances(which)

    def _items_as_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``ptr`` and ``codes`` of the rows ``rows`` alone (:meth:`take`'s arrays)."""
        lengths, codes = self.items_of(rows)
        ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        return ptr, codes

    def items_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The terms of ``rows`` (row numbers): each one's number of terms, and their codes,
        row after row in the order of ``rows``."""
        lengths = np.diff(self.ptr)[rows]
        at = np.repeat(self.ptr[:-1][rows] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return lengths, self.codes[at + np.arange(len(at))]

    def tuples(self) -> np.ndarray:
        """Per row, the tuple of its terms (an object array); rows holding equal cells hold
        one tuple (:meth:`distinct_tuples`), and each term is the vocabulary's own ``str``: a
        quarter's 450k reaction cells are about 220k distinct tuples of a few hundred terms
        (issue 30)."""
        which, _ = self.distinct_rows()
        return self.distinct_tuples()[which]

    def distinct_tuples(self) -> np.ndarray:
        """The tuple of each distinct cell (numbered as :meth:`distinct_rows` numbers them),
        made once: the rows' tuples (:meth:`tuples`) and the super records' unions of one row
        (``data.records``) are these objects."""
        return self._distinct_tuples

    @cached_property
    def _distinct_tuples(self) -> np.ndarray:
        _, first = self.distinct_rows()
        lengths = np.diff(self.ptr)[first]
        starts = self.ptr[:-1][first]
        words = np.array(self.vocabulary, dtype=object)
        cells = np.empty(len(first), dtype=object)
        # The cells of one length are made together: their terms as one (cells x length)
        # array, its columns zipped, so that each tuple is made by zip in C rather than by a
        # slice and a tuple() call per cell (half of evaluate's read of a period's originals,
        # issue 43). Each term is still the vocabulary's own str.
        for size in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == size)
            at = starts[rows, None] + np.arange(size)
            terms = words[self.codes[at]] if size else np.empty((len(rows), 0), dtype=object)
            cells[rows] = np.fromiter(zip(*(terms[:, j].tolist() for j in range(size)))
                                      if size else iter([()] * len(rows)),
                                      dtype=object, count=len(rows))
        return cells

    def take(self, rows: np.ndarray) -> TermCodes:
        """The rows ``rows`` (row numbers, in that order), into the same vocabulary."""
        return TermCodes(self.vocabulary, *self._items_as_rows(np.asarray(rows, dtype=np.int64)))

    def without(self, dropped: np.ndarray) -> TermCodes:
        """The same rows without the items where ``dropped`` (a bool per item) is set."""
        keep = ~np.asarray(dropped, dtype=bool)
        # items kept before each item; read at the rows' bounds, they are the new bounds
        kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept_before[1:])
        return TermCodes(self.vocabulary, kept_before[self.ptr], self.codes[keep])

    def increasing(self) -> bool:
        """Whether each row's codes strictly increase: with a vocabulary sorted as ``sorted``
        sorts str, each row's terms are then sorted without repeats."""
        codes = self.codes
        if len(codes) < 2:
            return True
        starts = np.zeros(len(codes), dtype=bool)
        starts[self.ptr[:-1][np.diff(self.ptr) > 0]] = True   # a row's first item
        return bool(((codes[1:] > codes[:-1]) | starts[1:]).all())


@dataclass(frozen=True)
class CodedRecords:
    """A period's records as the store reads them, with the integer codes of their list cells.

    What a release reads of the records (the super records' unions, the input digest) works on
    the codes: a list column the store read as codes is made a column of tuples only when a
    reader asks for :attr:`frame`. A release reads the tuples of the distinct cells only
    (:meth:`TermCodes.distinct_tuples`, the super records' cells of one report), never a
    tuple per row (issue 43).

    Attributes:
        base: The records, as ``ReleaseStore.records`` gives them, without the list columns
            that ``terms`` holds and it lacks.
        terms: For some of the multi-valued columns (those read as codes), their cells as
            codes, row for row of ``base``: ``terms[c].tuples()`` is the column ``c`` of
            :attr:`frame`.
        columns: Every column of the records, in their order.
    """

    base: pd.DataFrame
    terms: Mapping[str, TermCodes]
    columns: tuple[str, ...]

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The records exactly as ``ReleaseStore.records`` gives them (tuple cells), made
        once."""
        made = {name: self.terms[name].tuples() for name in self.columns
                if name not in self.base.columns}
        if not made:
            return self.base
        frame = self.base.copy(deep=False)   # the base's columns are shared, not copied
        for name, cells in made.items():
            frame[name] = cells
        return frame[list(self.columns)]


def codes_of(terms: Mapping[str, TermCodes] | None, cells: np.ndarray,
             name: str) -> TermCodes | None:
    """``terms[name]`` when it holds the cells ``cells`` (an object array of a frame's column),
    None otherwise: the same number of rows, and equal cells at a sample of rows. A frame whose
    rows were dropped or reordered since it was read is not read through stale codes."""
    coded = None if terms is None else terms.get(name)
    if coded is None or len(coded) != len(cells):
        return None
    sample = np.unique(np.linspace(0, len(cells) - 1, num=min(len(cells), 64)).astype(np.int64))
    words = coded.vocabulary
    for row in sample.tolist():
        a, b = int(coded.ptr[row]), int(coded.ptr[row + 1])
        if cells[row] != tuple(words[c] for c in coded.codes[a:b].tolist()):
            return None
    return coded


#: the bits a row's packed key may use (:func:`_packed_terms`): the top bit of a uint64 marks
#: the number of a longer row (``TermCodes._distinct_rows``)
_PACKED_BITS = 63


def _packed_terms(bits: int) -> int:
    """The most terms a row's key packs exactly, at ``bits`` bits a term (at least one)."""
    return max(_PACKED_BITS // bits, 1)


def _hashed_row_numbers(ptr: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per row of ``ptr``/``codes`` (as :class:`TermCodes` holds them, one row at least), the
    number of its code list among the distinct ones, in order of first appearance from 0.

    Rows are hashed from their codes in one numpy pass (a polynomial in each term's place,
    wrapping at 2**64), factorized as integers, and every row is then compared code by code
    with the first row of its number: a collision of hashes is found, and the rows are then
    numbered exactly from their codes' bytes.
    """
    lengths = np.diff(ptr)
    starts = ptr[:-1]
    codes = np.asarray(codes, dtype=np.int64)
    place = np.arange(len(codes), dtype=np.int64) - np.repeat(starts, lengths)
    filled = lengths > 0
    with np.errstate(over="ignore"):   # the hash wraps at 2**64 on purpose
        row_hash = lengths.astype(np.uint64) * np.uint64(_LENGTH_WEIGHT)
        if filled.any():
            # (code + 1) * W**place: a code 0 still counts
            weights = np.cumprod(np.full(int(lengths.max()), _PLACE_WEIGHT, dtype=np.uint64))
            terms = (codes.astype(np.uint64) + np.uint64(1)) * weights[place]
            row_hash[filled] += np.add.reduceat(terms, starts[filled])
    which, _ = pd.factorize(row_hash)
    same = first_appearances(which)[which]
    if (bool((lengths[same] == lengths).all())
            and bool((codes[np.repeat(starts[same], lengths) + place] == codes).all())):
        return which
    # two different rows hashed alike: number them by their codes' bytes
    keyed = [codes[a:b].tobytes() for a, b in zip(starts.tolist(), ptr[1:].tolist())]
    which, _ = pd.factorize(np.array(keyed, dtype=object))
    return which


#: the weight of a term's place in a row's hash (odd, so its powers never reach 0 mod 2**64)
_PLACE_WEIGHT = 0x9E3779B97F4A7C15
#: the weight of a row's length in its hash
_LENGTH_WEIGHT = 0xC2B2AE3D27D4EB4F
