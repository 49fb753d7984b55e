"""Short, bounded descriptions of the public objects for a console or a notebook (issue 33).

``__repr__`` gives one line of at most :data:`MAX_REPR` characters, whatever the data size;
``_repr_html_`` a small summary (a header, a table of facts and at most :data:`MAX_HTML_ROWS`
rows of a detail table, then "and N more"), every value escaped. Both read cheap facts only:
sizes, labels, the published manifest's method and verdict; never a hash of the input nor an
operator-only fact.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: the longest ``__repr__``
MAX_REPR = 300
#: the rows of an HTML summary's detail table shown before "and N more"
MAX_HTML_ROWS = 30
#: the longest value shown in one cell or one fact
MAX_VALUE = 80


def clip(value: Any, limit: int = MAX_VALUE) -> str:
    """``str(value)`` on one line, cut to ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:max(limit - 3, 0)] + "..."


def one_line(text: str) -> str:
    """A repr: one line of at most :data:`MAX_REPR` characters, its closing ``>`` kept."""
    text = " ".join(text.split())
    if len(text) <= MAX_REPR:
        return text
    closing = ">" if text.endswith(">") else ""
    return text[:MAX_REPR - 3 - len(closing)] + "..." + closing


def span(labels: Sequence[str]) -> str:
    """``2020Q1..2020Q3`` (first..last), one label, or ``none``."""
    if not labels:
        return "none"
    first, last = clip(labels[0], 20), clip(labels[-1], 20)
    return first if len(labels) == 1 else f"{first}..{last}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 release``, ``3 releases``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def method_of(manifest: Mapping | None) -> str:
    """A manifest's method and its key parameters (``ppms++ k=5``, ``ipa epsilon=1``); ``?``
    for a manifest without a method."""
    method = (manifest or {}).get("method") if isinstance(manifest, Mapping) else None
    if not isinstance(method, Mapping):
        return "?"
    parameters = method.get("parameters")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    shown = [f"{name}={clip(parameters[name], 12)}" for name in ("k", "epsilon")
             if parameters.get(name) is not None]
    return " ".join([clip(method.get("name", "?"), 30), *shown])


def verdict_of(manifest: Mapping | None) -> str:
    """A manifest's gate verdict, ``?`` when it has none."""
    entry = (manifest or {}).get("verification") if isinstance(manifest, Mapping) else None
    return clip(entry.get("verdict", "?"), 20) if isinstance(entry, Mapping) else "?"


def tally(values: Iterable[str]) -> str:
    """``3 passed`` / ``2 passed, 1 violated``, in first-seen order."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items()) or "none"


def html_summary(title: str, facts: Iterable[tuple[str, Any]],
                 header: Sequence[str] = (), rows: Sequence[Sequence[Any]] = (),
                 total: int | None = None) -> str:
    """A small HTML summary: ``title`` (bold), a table of ``facts`` (name, value) and, when
    ``header`` is given, a detail table of its first :data:`MAX_HTML_ROWS` ``rows`` followed by
    "and N more" (``total``: how many rows there are, when only the first were built). Every
    text is clipped and escaped."""

    def cell(value: Any, tag: str = "td") -> str:
        return f"<{tag}>{html.escape(clip(value))}</{tag}>"

    parts = [f'<div class="medanon-repr"><p><strong>{html.escape(clip(title, MAX_REPR))}'
             f'</strong></p>']
    fact_rows = "".join(f"<tr>{cell(name, 'th')}{cell(value)}</tr>" for name, value in facts)
    if fact_rows:
        parts.append(f"<table>{fact_rows}</table>")
    if header:
        shown = rows[:MAX_HTML_ROWS]
        body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in shown)
        more = (len(rows) if total is None else total) - len(shown)
        if more > 0:
            body += (f'<tr><td colspan="{len(header)}">and {more} more'
                     f'</td></tr>')
        parts.append("<table><thead><tr>" + "".join(cell(h, "th") for h in header)
                     + f"</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</div>")
    return "".join(parts)
