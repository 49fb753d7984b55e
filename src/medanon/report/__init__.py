"""The HTML report of a release store: what was published, what an attacker could do against
it, and what it still tells an analyst (``medanon report``, ``medanon demo``)."""

from .collect import QidProfile, SeriesReport, collect_series_report, generalization_profile
from .html import render_report, write_report

__all__ = ["QidProfile", "SeriesReport", "collect_series_report", "generalization_profile",
           "render_report", "write_report"]
