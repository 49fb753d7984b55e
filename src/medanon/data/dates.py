"""FAERS dates: ``YYYYMMDD``, or the partial ``YYYYMM`` and ``YYYY`` FDA accepts.

A date column of a schema (``dates = {column = granularity}``) is published at its
granularity: ``day`` keeps ``YYYYMMDD``, ``month`` writes ``YYYYMM``, ``year`` writes ``YYYY``.
A partial date already coarser than the granularity is published as it is (a ``YYYY`` date at
``month`` granularity stays ``YYYY``): nothing is invented.
"""

from __future__ import annotations

import datetime as _dt
import re

import numpy as np
import pandas as pd

#: granularity -> the length of a date written at it
GRANULARITIES = {"day": 8, "month": 6, "year": 4}
_DATE = re.compile(r"^(\d{4})(\d{2})?(\d{2})?$")
#: earliest year taken as a date (FAERS started 1968; years before 1900 are entry errors)
FIRST_YEAR = 1900


def faers_date(text: str) -> str | None:
    """``text`` (stripped) when it is a valid FAERS date, full or partial, else None.

    Valid: ``YYYY``, ``YYYYMM`` or ``YYYYMMDD`` naming a real calendar year (from
    :data:`FIRST_YEAR`), month and day.
    """
    text = text.strip()
    match = _DATE.match(text)
    if match is None:
        return None
    year, month, day = match.groups()
    if int(year) < FIRST_YEAR:
        return None
    if month is None:
        return text
    if day is None:
        return text if 1 <= int(month) <= 12 else None
    try:
        _dt.date(int(year), int(month), int(day))
    except ValueError:
        return None
    return text


def as_faers_date(value: object) -> str | None:
    """A record's date cell as a FAERS date string: None for a missing cell; a date or
    timestamp is written ``YYYYMMDD``; a string must be a valid FAERS date.

    Raises:
        ValueError: a value that is neither missing, a date, nor a valid FAERS date string.
    """
    # pd.isna is a bool for any scalar cell (None, NaN, NaT, pd.NA, Decimal NaN, ...). Narrowing
    # to the scalar types pandas-stubs lists first would stop seeing some of these as missing.
    if value is None or (not isinstance(value, str) and pd.isna(value)):  # type: ignore[call-overload]  # no isna(object) overload in pandas-stubs; any scalar works
        return None
    if isinstance(value, (_dt.date, pd.Timestamp, np.datetime64)):
        return pd.Timestamp(value).strftime("%Y%m%d")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = str(value)  # 20221123 read from a CSV as a number
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = str(int(value))  # ... in a column that also holds NaN
    if isinstance(value, str):
        if not value.strip():
            return None
        date = faers_date(value)
        if date is not None:
            return date
    raise ValueError(f"{value!r} is not a FAERS date (YYYYMMDD, YYYYMM or YYYY)")


def truncate_date(date: str | None, granularity: str) -> str:
    """``date`` (a valid FAERS date, or None) written at ``granularity``: empty when missing."""
    if not date:
        return ""
    return date[:GRANULARITIES[granularity]]


def valid_dates(values: np.ndarray) -> tuple[np.ndarray, int]:
    """FAERS date strings checked once per distinct value: each valid date (stripped), None for
    an empty or invalid one, and how many non-empty values were invalid."""
    which, distinct = pd.factorize(np.asarray(values, dtype=object))
    checked = np.array([faers_date(str(v)) for v in distinct] + [None], dtype=object)
    empty = np.array([not str(v).strip() for v in distinct] + [True], dtype=bool)
    # factorize gives -1 for a missing value: the extra last slot (None, empty)
    out = checked[which]
    invalid = int(np.count_nonzero(pd.isna(out) & ~empty[which]))
    return out, invalid


def publish_dates(values: np.ndarray, granularity: str) -> list[str]:
    """Date cells (FAERS date strings or None) as published at ``granularity``, each distinct
    value written once."""
    which, distinct = pd.factorize(np.asarray(values, dtype=object))
    written = [truncate_date(as_faers_date(v), granularity) for v in distinct] + [""]
    return [written[i] for i in which]
