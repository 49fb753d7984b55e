"""The report's figures, drawn with matplotlib and returned as PNG bytes (embedded in the page).

Figures are built on :class:`matplotlib.figure.Figure` directly, not through ``pyplot``: no
global state, no GUI backend, safe in worker processes and threads.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .collect import SeriesReport

if TYPE_CHECKING:  # matplotlib is loaded when the first figure is drawn
    from matplotlib.figure import Figure

__all__ = ["disclosure_figure", "generalization_figure", "ledger_figure", "nil_figure",
           "signals_figure", "volume_figure", "figure_png"]

#: Colour-blind-safe palette (Okabe-Ito), one colour per series.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
_MAX_RULE_PANELS = 6


def new_figure(figsize: tuple[float, float]) -> Figure:
    """A fresh figure (matplotlib is imported here, on first use, not with the module)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def _periods(reports: Sequence[SeriesReport]) -> list[str]:
    return sorted({p for r in reports for p in r.periods})


def _series_line(ax, periods: list[str], report: SeriesReport, key: str, colour: str,
                 label: str, **style) -> None:
    by_period = {r["period"]: r.get(key) for r in report.releases}
    xs = [i for i, p in enumerate(periods) if by_period.get(p) is not None]
    ys = [by_period[periods[i]] for i in xs]
    if xs:
        ax.plot(xs, ys, marker="o", color=colour, label=label, **style)


def _period_axis(ax, periods: list[str]) -> None:
    ax.set_xticks(range(len(periods)))
    ax.set_xticklabels(periods, rotation=45, ha="right", fontsize=8)
    ax.grid(alpha=0.3)


def _two_panels(reports: Sequence[SeriesReport], keys: tuple[str, str], titles: tuple[str, str],
                ylim: tuple[float, float | None]) -> tuple[Figure, object, list[str]]:
    """Two period panels, one line per series in each: ``keys[0]`` left, ``keys[1]`` right."""
    periods = _periods(reports)
    fig = new_figure((9, 3.4))
    axes = fig.subplots(1, 2)
    for i, r in enumerate(reports):
        for ax, key in zip(axes, keys):
            _series_line(ax, periods, r, key, PALETTE[i % len(PALETTE)], r.name)
    for ax, title in zip(axes, titles):
        ax.set_title(title)
        _period_axis(ax, periods)
        ax.set_ylim(*ylim)
    return fig, axes, periods


def volume_figure(reports: Sequence[SeriesReport]) -> Figure:
    """Cases ingested and released, and groups formed, per period."""
    fig, (left, right), periods = _two_panels(
        reports, ("cases", "groups"),
        ("Cases per period", "Groups (equivalence classes) per period"), (0, None))
    ingested = {}
    for r in reports:
        ingested.update({row["period"]: row["n_cases"] for row in r.ingested})
    left.plot(range(len(periods)), [ingested.get(p) for p in periods], color="grey",
              linestyle="--", marker=".", label="ingested")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    return fig


def nil_figure(reports: Sequence[SeriesReport]) -> Figure:
    """NIL (001) and NIL with IL* (000) per period: what the release costs an analyst."""
    fig, axes, _ = _two_panels(
        reports, ("nil", "nil_star"),
        ("NIL (001, from the published rows)", "NIL with IL* (000, against the originals)"),
        (0, 1.02))
    for ax in axes:
        ax.legend(fontsize=8)
    return fig


def disclosure_figure(reports: Sequence[SeriesReport]) -> Figure:
    """DIR, DSR (and SSGR when any release declares α) after the attacks, per period."""
    periods = _periods(reports)
    # on strict DP releases "dir"/"dsr" are the likelihood-weighted attacker's (posterior)
    keys = [("dir", "DIR: < k candidates (DP: max posterior > 1/k)"),
            ("dsr", "DSR: a term above its θ (DP: posterior share)")]
    if any(rel.get("ssgr") is not None for r in reports for rel in r.releases):
        keys.append(("ssgr", "SSGR: substantial symptoms above α"))
    fig = new_figure((4.2 * len(keys), 3.4))
    axes = fig.subplots(1, len(keys), sharey=True)
    for ax, (key, title) in zip(axes, keys):
        for i, r in enumerate(reports):
            _series_line(ax, periods, r, key, PALETTE[i % len(PALETTE)], r.name)
        ax.set_title(title, fontsize=10)
        _period_axis(ax, periods)
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8)
    fig.suptitle("Disclosure after the attacks (share of groups; lower is safer)", fontsize=11)
    return fig


def signals_figure(reports: Sequence[SeriesReport]) -> Figure | None:
    """PRR of each signal rule per period: original (black) against each release."""
    rule_names = []
    for r in reports:
        for rel in r.releases:
            for s in rel.get("signals", []):
                if _rule_name(s["rule"]) not in rule_names:
                    rule_names.append(_rule_name(s["rule"]))
    if not rule_names:
        return None
    shown = rule_names[:_MAX_RULE_PANELS]
    periods = _periods(reports)
    cols = min(3, len(shown))
    rows = -(-len(shown) // cols)
    fig = new_figure((4.2 * cols, 3.3 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, rule in zip(axes, shown):
        original: dict[str, float] = {}
        for i, r in enumerate(reports):
            released = {}
            for rel in r.releases:
                for s in rel.get("signals", []):
                    if _rule_name(s["rule"]) == rule:
                        # the first series' originals (stores of one input agree)
                        original.setdefault(rel["period"], s["original"]["prr"])
                        released[rel["period"]] = s["release"]["prr"]
            xs = [j for j, p in enumerate(periods) if p in released]
            ax.plot(xs, [released[periods[j]] for j in xs], marker="o",
                    color=PALETTE[i % len(PALETTE)], label=r.name)
        xs = [j for j, p in enumerate(periods) if p in original]
        ax.plot(xs, [original[periods[j]] for j in xs], color="black", linestyle="--",
                marker="x", label="original")
        ax.axhline(2.0, color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(rule, fontsize=9)
        _period_axis(ax, periods)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    fig.suptitle("PRR, original versus release (dotted: the PRR >= 2 signal threshold)",
                 fontsize=11)
    return fig


def _rule_name(rule: dict) -> str:
    condition = f" | {rule['condition']}" if rule.get("condition") else ""
    return f"{rule['drug']} -> {rule['reaction']}{condition}"


def ledger_figure(report: SeriesReport) -> Figure | None:
    """The ε ledger: how many cases carry each total, and the largest charge per period."""
    ledger = report.ledger
    if ledger is None or not ledger.cases:
        return None
    fig = new_figure((9, 3.2))
    left, right = fig.subplots(1, 2)
    totals = [float(t) for t, _ in ledger.distribution]
    left.bar(range(len(totals)), [n for _, n in ledger.distribution], color=PALETTE[0])
    left.set_xticks(range(len(totals)))
    left.set_xticklabels([f"{t:g}" for t in totals], rotation=45, ha="right", fontsize=8)
    left.set_xlabel("ε per case, summed over releases")
    left.set_ylabel("cases")
    left.set_title("Cases per total ε")
    periods = [row["period"] for row in ledger.per_period]
    right.bar(range(len(periods)), [float(row["epsilon_per_case"]) for row in ledger.per_period],
              color=PALETTE[1])
    _period_axis(right, periods)
    right.set_title("Largest ε charged to one case, per release")
    return fig


def generalization_figure(report: SeriesReport) -> Figure:
    """Per QID and period: share of cases published exactly, generalized, or suppressed."""
    periods = report.periods
    names = [q.name for q in report.profiles[periods[0]]] if periods else []
    fig = new_figure((3.6 * max(len(names), 1), 3.2))
    axes = fig.subplots(1, max(len(names), 1), squeeze=False).ravel()
    for ax, name in zip(axes, names):
        exact, suppressed = [], []
        for p in periods:
            profile = next(q for q in report.profiles[p] if q.name == name)
            exact.append(profile.exact)
            suppressed.append(profile.suppressed)
        generalized = [1 - e - s for e, s in zip(exact, suppressed)]
        xs = range(len(periods))
        ax.bar(xs, exact, color="#009E73", label="exact")
        ax.bar(xs, generalized, bottom=exact, color="#E69F00", label="generalized")
        ax.bar(xs, suppressed, bottom=[e + g for e, g in zip(exact, generalized)],
               color="#D55E00", label="suppressed (*)")
        ax.set_title(name)
        _period_axis(ax, periods)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    fig.suptitle(f"{report.name}: how each quasi-identifier was published", fontsize=11)
    return fig
