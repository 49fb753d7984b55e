"""002's substantial-symptoms (SS) attack: groups crowded with ss-records.

An *ss-record* carries many more terms than usual (002 §3, "Publishers can decide the specific
method for defining an ss-record"). A group where most records are ss-records tells the adversary
that its members have many reactions even when no record is singled out (002 Example 2). The
attack flags a group whose share of ss-records exceeds α.

ss-records are defined, per multi-valued column, by a minimum number of distinct terms: given
explicitly, or by the rule ``mean+sd`` used by our HA releases, read here from the published
cells (the ceiling of the mean plus the population standard deviation of the per-record term
counts, at least 1). The release's own manifest records the thresholds it used
(``details.ss_min_counts``); an audit takes those when present.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import ValidationError
from ..published.cells import cell_strings, term_pairs

__all__ = ["MEAN_SD", "parse_ss_rule", "ss_records", "ss_thresholds"]

MEAN_SD = "mean+sd"


def parse_ss_rule(text: str | None) -> str | dict[str, int]:
    """``"mean+sd"`` (default) or ``"column=count,..."``.

    Raises:
        ValidationError: a malformed pair or a count below 1.
    """
    if text is None or text.strip() == MEAN_SD:
        return MEAN_SD
    out: dict[str, int] = {}
    for part in (p for p in text.split(",") if p.strip()):
        col, _, count = part.partition("=")
        try:
            value = int(count)
        except ValueError:
            value = 0
        if not col.strip() or value < 1:
            raise ValidationError(f"The ss rule must be 'mean+sd' or 'column=count,...' with "
                                  f"counts >= 1; got {part.strip()!r}.")
        out[col.strip()] = value
    if not out:
        raise ValidationError("The ss rule is empty; use 'mean+sd' or 'column=count,...'.")
    return out


def _term_counts(rows: pd.DataFrame, column: str) -> np.ndarray:
    found, _, _ = term_pairs(cell_strings(rows[column]))
    return np.bincount(found, minlength=len(rows))


def ss_thresholds(rows: pd.DataFrame, columns, rule: str | Mapping[str, int]) -> dict[str, int]:
    """Minimum term count per column that makes an ss-record."""
    if isinstance(rule, Mapping):
        unknown = sorted(set(rule) - set(rows.columns))
        if unknown:
            raise ValidationError(f"The ss rule names column(s) {', '.join(unknown)} that the "
                                  f"release does not have.")
        return {str(c): int(v) for c, v in rule.items()}
    out = {}
    for column in columns:
        counts = _term_counts(rows, column).astype(float)
        level = float(counts.mean() + counts.std()) if len(counts) else 0.0
        out[column] = max(1, math.ceil(level - 1e-9))
    return out


def ss_records(rows: pd.DataFrame, thresholds: Mapping[str, int]) -> np.ndarray:
    """Whether each row reaches the minimum term count of some column."""
    flags = np.zeros(len(rows), dtype=bool)
    for column, minimum in thresholds.items():
        flags |= _term_counts(rows, column) >= minimum
    return flags
