"""The HTML report of a release store: what was published, what an attacker could do against
it, and what it still tells an analyst (``medanon report``, ``medanon demo``).

The names below are loaded on first use: importing :mod:`medanon.report.collect` (as other
commands do) must not load matplotlib, which only :mod:`.html` and :mod:`.plots` need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .collect import (ModelCard, QidProfile, SeriesCard, SeriesReport, collect_series_report,
                          data_groups, generalization_profile, not_compared, report_steps)
    from .html import render_report, write_report

_LAZY = {"ModelCard": "collect", "QidProfile": "collect", "SeriesCard": "collect",
         "SeriesReport": "collect", "collect_series_report": "collect",
         "generalization_profile": "collect", "data_groups": "collect",
         "not_compared": "collect", "report_steps": "collect", "render_report": "html",
         "write_report": "html"}

__all__ = ["ModelCard", "QidProfile", "SeriesCard", "SeriesReport", "collect_series_report",
           "data_groups", "generalization_profile", "not_compared", "render_report",
           "report_steps", "write_report"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
