"""Period labels: quarters written ``YYYYQn`` (``2022Q4``), ordered in time.

FAERS names its files with two-digit years (``DEMO22Q4.txt``); :func:`period_from_faers_tag`
maps those to full labels. Every label that enters medanon passes through :func:`parse_period`,
so a bad label fails early with one clear message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ValidationError

_LABEL = re.compile(r"^\s*(\d{4})\s*[Qq]\s*([1-4])\s*$")


@dataclass(frozen=True, order=True)
class Period:
    """A calendar quarter; ordering follows time."""

    year: int
    quarter: int

    @property
    def label(self) -> str:
        return f"{self.year}Q{self.quarter}"

    @property
    def faers_tag(self) -> str:
        """The ``yyQq`` tag FAERS uses in file names, e.g. ``22Q4``."""
        return f"{self.year % 100:02d}Q{self.quarter}"

    @property
    def ordinal(self) -> int:
        """Quarters since year 0; consecutive quarters differ by 1."""
        return self.year * 4 + self.quarter - 1

    def shift(self, quarters: int) -> "Period":
        ordinal = self.ordinal + quarters
        return Period(ordinal // 4, ordinal % 4 + 1)

    def __str__(self) -> str:
        return self.label


def parse_period(text: object) -> Period:
    """Parse ``2022Q4`` (case and spaces tolerated) into a :class:`Period`.

    Raises:
        ValidationError: when the label is not a quarter written YYYYQn.
    """
    if isinstance(text, Period):
        return text
    match = _LABEL.match(str(text)) if isinstance(text, str) else None
    if not match:
        raise ValidationError(
            f"Period label {text!r} does not parse: write a quarter as YYYYQn, e.g. 2022Q4.")
    return Period(int(match.group(1)), int(match.group(2)))


def period_from_faers_tag(tag: str) -> Period:
    """Map a FAERS file-name tag (``04Q1``, ``22q4``) to a period; years are 2000-2099."""
    match = re.fullmatch(r"(\d{2})[Qq]([1-4])", tag)
    if not match:
        raise ValidationError(f"FAERS quarter tag {tag!r} does not parse: expected yyQn, e.g. 22Q4.")
    return Period(2000 + int(match.group(1)), int(match.group(2)))
