"""The report's figures, drawn with matplotlib and returned as PNG bytes (embedded in the page).

Figures are built on :class:`matplotlib.figure.Figure` directly, not through ``pyplot``: no
global state, no GUI backend, safe in worker processes and threads.

Conventions every figure keeps (the browser test reads them back from :func:`figure_meta`):

* every visible axes has an x and a y label, with the unit where there is one;
* figures are drawn at the page's full content width (:data:`FIG_WIDTH`) and the page shows
  them at 100% width;
* legends sit outside the axes (below the figure), so they never cover data;
* no two texts overlap: period tick labels are thinned to the room an axes has, and rule titles
  are wrapped;
* ratios that are not finite are never drawn as 0: an infinite PRR (c = 0) is a marker on the
  top edge of the log axis, a PRR set to 0 by 001's a < 3 rule a hollow marker on the bottom
  edge, an undefined PRR is not drawn (and each is named in the legend);
* empty releases (no case) have no NIL or DIR: they are gaps, not zeros;
* a line is one series' own (or, for what series of the same data share, such as the ingested
  cases and the original PRR, one group's of :func:`~medanon.report.collect.data_groups`):
  no line ever joins the periods of two series of different data.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..metrics.signals import MIN_CASES, MIN_PRR, ratio_from_json
from .collect import SeriesReport, data_groups, rule_name

if TYPE_CHECKING:  # matplotlib is loaded when the first figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure
    from matplotlib.text import Text

__all__ = ["disclosure_figure", "figure_meta", "figure_png", "generalization_figure",
           "ledger_figure", "nil_figure", "signals_figure", "text_overlaps", "volume_figure"]

#: Colour-blind-safe palette (Okabe-Ito), one colour per series.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: The lines series of one input share (ingested cases, original PRR), one shade per input.
_GROUP_GREYS = ("#000000", "#777777", "#444444", "#AAAAAA")
#: Width of every figure in inches: the page's content column (1116 px) at :data:`DPI`.
FIG_WIDTH = 10.0
DPI = 110
PERIOD_LABEL = "period (quarter)"
_MAX_RULE_PANELS = 8
#: The attribute :func:`_period_axis` sets on an axes: its periods, for :func:`_fit_period_ticks`
#: (matplotlib's Axes has no field for them; read through :func:`_axis_periods`)
_PERIODS_ATTR = "_medanon_periods"
#: One side of a rule's PRR: period -> (PRR as a float, a)
_Points = dict[str, tuple[float, int]]
_RULE_COLUMNS = 2


def new_figure(height: float) -> Figure:
    """A fresh full-width figure with constrained layout (matplotlib is imported here, on first
    use, not with the module); constrained layout keeps titles, labels and the outside legends
    apart."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(FIG_WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # the raster canvas figure_meta measures texts on (no GUI backend)
    return fig


def _renderer(fig: Figure) -> RendererAgg:
    """The renderer of a figure's Agg canvas, to measure texts on."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # every figure here comes from new_figure
    return canvas.get_renderer()


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes, at :data:`DPI`, the size :func:`figure_meta` measures."""
    _fit_period_ticks(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _drawn_ticklabels(axis) -> list:
    """Tick labels matplotlib actually draws: visible, non-empty, inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    span = hi - lo
    out = []
    for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
        for tick in ticks:
            loc = tick.get_loc()
            if loc is None or not (lo - 1e-9 * span <= loc <= hi + 1e-9 * span):
                continue
            for label in (tick.label1, tick.label2):
                if label.get_visible() and label.get_text().strip():
                    out.append(label)
    return out


def figure_meta(fig: Figure) -> dict:
    """What the figure shows, for the page to embed beside the image.

    Returns:
        ``{"width", "height"}`` in pixels of :func:`figure_png`'s image; ``"axes"``: per visible
        axes its ``title``, ``xlabel``, ``ylabel`` and ``box`` (the plotting area); ``"texts"``:
        every drawn text as ``[role, text, x0, y0, x1, y1]``. Boxes are ``[x0, y0, x1, y1]`` in
        image pixels, origin top left.
    """
    _fit_period_ticks(fig)
    fig.canvas.draw()  # resolves the constrained layout and every text position
    renderer = _renderer(fig)
    width, height = fig.canvas.get_width_height()
    texts: list[list] = []

    def add(role: str, artist: Text) -> None:
        if not artist.get_visible() or not artist.get_text().strip():
            return
        box = artist.get_window_extent(renderer)
        texts.append([role, artist.get_text(), round(box.x0, 1), round(height - box.y1, 1),
                      round(box.x1, 1), round(height - box.y0, 1)])

    axes = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        frame = ax.get_window_extent(renderer)
        axes.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(),
                     "ylabel": ax.get_ylabel(),
                     "box": [round(frame.x0, 1), round(height - frame.y1, 1),
                             round(frame.x1, 1), round(height - frame.y0, 1)]})
        add("title", ax.title)
        add("xlabel", ax.xaxis.label)
        add("ylabel", ax.yaxis.label)
        for label in _drawn_ticklabels(ax.xaxis):
            add("xtick", label)
        for label in _drawn_ticklabels(ax.yaxis):
            add("ytick", label)
        for text in ax.texts:
            add("annotation", text)
        legend = ax.get_legend()
        if legend is not None:
            for text in legend.get_texts():
                add("legend", text)
    for legend in fig.legends:
        for text in legend.get_texts():
            add("legend", text)
    # matplotlib keeps the suptitle in a private attribute (no public getter of its Text, and
    # its stubs do not declare the attribute)
    suptitle: Text | None = getattr(fig, "_suptitle", None)
    if suptitle is not None:
        add("suptitle", suptitle)
    return {"width": width, "height": height, "axes": axes, "texts": texts}


def text_overlaps(texts: Sequence[Sequence], tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts (from :func:`figure_meta`) whose boxes overlap by more than
    ``tolerance`` pixels in both directions."""
    out = []
    for i, (_, a, ax0, ay0, ax1, ay1) in enumerate(texts):
        for _, b, bx0, by0, bx1, by1 in texts[i + 1:]:
            if (min(ax1, bx1) - max(ax0, bx0) > tolerance
                    and min(ay1, by1) - max(ay0, by0) > tolerance):
                out.append((a, b))
    return out


def _periods(reports: Sequence[SeriesReport]) -> list[str]:
    return sorted({p for r in reports for p in r.periods})


def _period_axis(ax: Axes, periods: list[str]) -> None:
    """Period ticks on the x axis, every period labelled at first; :func:`_fit_period_ticks`
    thins them once the layout is known (horizontal labels: rotated ones overprint each
    other's boxes)."""
    setattr(ax, _PERIODS_ATTR, list(periods))  # read back by _fit_period_ticks
    _set_period_ticks(ax, periods, 1)
    n = len(periods)
    ax.set_xlim(-0.5, max(n - 0.5, 0.5))
    ax.set_xlabel(PERIOD_LABEL, fontsize=9)
    ax.grid(alpha=0.3)


def _axis_periods(ax: Axes) -> list[str] | None:
    """The periods :func:`_period_axis` put on the x axis of ``ax``; None for another axes."""
    return getattr(ax, _PERIODS_ATTR, None)


def _set_period_ticks(ax: Axes, periods: list[str], step: int) -> None:
    ax.set_xticks(range(0, len(periods), step))
    ax.set_xticklabels(periods[::step], fontsize=8)


def _fit_period_ticks(fig: Figure, gap: float = 4.0) -> None:
    """Label every period where the labels fit side by side, else every 2nd, 3rd, ...: draw,
    measure the labels, and thin the axes whose labels touch (``gap`` pixels apart at least)."""
    periods = {ax: labels for ax in fig.axes if (labels := _axis_periods(ax))}
    steps = {ax: 1 for ax in periods}
    while steps:
        fig.canvas.draw()
        renderer = _renderer(fig)
        crowded = []
        for ax, step in steps.items():
            boxes = sorted((label.get_window_extent(renderer) for label in
                            _drawn_ticklabels(ax.xaxis)), key=lambda b: b.x0)
            if any(b.x0 - a.x1 < gap for a, b in zip(boxes, boxes[1:])) and step < len(
                    periods[ax]):
                crowded.append(ax)
        if not crowded:
            return
        for ax in crowded:
            steps[ax] += 1
            _set_period_ticks(ax, periods[ax], steps[ax])
        steps = {ax: steps[ax] for ax in crowded}


def _value(release: dict, key: str) -> float | None:
    """A release's metric, or None for an empty release (its ratios are 0/0, not 0)."""
    if not release.get("cases"):
        return None
    return release.get(key)


def _series_line(ax: Axes, periods: list[str], report: SeriesReport, key: str, colour: str,
                 label: str, *, empty_is_gap: bool = True) -> None:
    by_period = {r["period"]: (_value(r, key) if empty_is_gap else r.get(key))
                 for r in report.releases}
    # NaN breaks the line where a period has no value, instead of joining across it
    values = [by_period.get(p) for p in periods]
    ys = [math.nan if y is None else y for y in values]
    if any(not math.isnan(y) for y in ys):
        ax.plot(range(len(periods)), ys, marker="o", color=colour, label=label)


def _legend_below(fig: Figure, ax: Axes | None = None, ncols: int | None = None) -> None:
    """One legend for the figure, outside the axes, below them. Entries are collected from
    every axes, without repeats."""
    handles, labels = [], []
    for a in fig.axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    if labels:
        fig.legend(handles, labels, loc="outside lower center", fontsize=8,
                   ncols=ncols or min(len(labels), 4), frameon=False)


def volume_figure(reports: Sequence[SeriesReport]) -> Figure:
    """Cases ingested and released, and groups formed, per period."""
    periods = _periods(reports)
    fig = new_figure(3.6)
    left, right = fig.subplots(1, 2)
    for i, r in enumerate(reports):
        colour = PALETTE[i % len(PALETTE)]
        _series_line(left, periods, r, "cases", colour, f"{r.name}: released",
                     empty_is_gap=False)
        _series_line(right, periods, r, "groups", colour, f"{r.name}: released",
                     empty_is_gap=False)
    # one ingested line per input: series of the same data share it, series of different
    # data each have their own (one line across both would join their periods, issue 44)
    groups = data_groups(reports)
    for group in groups:
        ingested = {row["period"]: row["n_cases"] for row in group[0].ingested}
        label = ("ingested (cases in the store)" if len(groups) == 1
                 else f"ingested: {', '.join(r.name for r in group)}")
        # drawn over the released lines (which often equal it), dashed and hollow so that both
        # stay visible, and a legend entry one can see
        left.plot(range(len(periods)), [ingested.get(p, math.nan) for p in periods],
                  color=_GROUP_GREYS[(groups.index(group) + 2) % len(_GROUP_GREYS)],
                  linestyle=(0, (4, 3)), linewidth=1.4, marker="s", markersize=7,
                  markerfacecolor="none", zorder=3, label=label)
    left.set_title("Cases per period")
    left.set_ylabel("cases")
    right.set_title("Groups (equivalence classes) per period")
    right.set_ylabel("groups")
    for ax in (left, right):
        _period_axis(ax, periods)
        # from 0 to a tenth above the largest value: no point on the frame
        top = max((y for line in ax.get_lines() for y in line.get_ydata()
                   if y is not None and not math.isnan(y)), default=0)
        ax.set_ylim(0, max(top, 1) * 1.12)
    _legend_below(fig)
    return fig


def nil_figure(reports: Sequence[SeriesReport]) -> Figure:
    """NIL (001) and NIL with IL* (000) per period: what the release costs an analyst."""
    periods = _periods(reports)
    fig = new_figure(3.6)
    axes = fig.subplots(1, 2)
    titles = ("NIL (001, from the published rows)", "NIL* (000, IL* against the originals)")
    for i, r in enumerate(reports):
        for ax, key in zip(axes, ("nil", "nil_star")):
            _series_line(ax, periods, r, key, PALETTE[i % len(PALETTE)], r.name)
    for ax, title in zip(axes, titles):
        ax.set_title(title)
        _period_axis(ax, periods)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("information loss (0 = none, 1 = all; lower is better)", fontsize=8)
    _legend_below(fig)
    return fig


def disclosure_figure(reports: Sequence[SeriesReport]) -> Figure:
    """DIR, DSR (and SSGR when any release declares α) after the attacks, per period."""
    periods = _periods(reports)
    # on strict DP releases "dir"/"dsr" are the likelihood-weighted attacker's (posterior)
    keys = [("dir", "DIR: < k candidates left"), ("dsr", "DSR: a term above its θ")]
    if any(rel.get("ssgr") is not None for r in reports for rel in r.releases):
        keys.append(("ssgr", "SSGR: substantial symptoms above α"))
    fig = new_figure(3.8)
    axes = fig.subplots(1, len(keys), sharey=True)
    for ax, (key, title) in zip(axes, keys):
        for i, r in enumerate(reports):
            _series_line(ax, periods, r, key, PALETTE[i % len(PALETTE)], r.name)
        ax.set_title(title, fontsize=10)
        _period_axis(ax, periods)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("share of groups (lower is safer)", fontsize=8)
    fig.suptitle("Disclosure after the attacks (DP releases: the likelihood-weighted attacker)",
                 fontsize=11)
    _legend_below(fig)
    return fig


def _prr_points(reports: Sequence[SeriesReport], rule: str
                ) -> tuple[list[tuple[str, _Points]], list[tuple[str, _Points]]]:
    """The original side of each input (:func:`~medanon.report.collect.data_groups`: from the
    first series of the group holding the rule, since series of one input agree on it), named
    by the group's series, and each series' release side, as period -> (PRR as a float, a)."""
    originals: list[tuple[str, _Points]] = []
    released: list[tuple[str, _Points]] = []
    for group in data_groups(reports):
        original: _Points = {}
        for r in group:
            side: _Points = {}
            for rel in r.releases:
                for s in rel.get("signals", []):
                    if rule_name(s["rule"]) == rule:
                        o, x = s["original"], s["release"]
                        original.setdefault(rel["period"], (ratio_from_json(o["prr"]), o["a"]))
                        side[rel["period"]] = (ratio_from_json(x["prr"]), x["a"])
            released.append((r.name, side))
        originals.append((", ".join(r.name for r in group), original))
    return originals, released


_INF_LABEL = "∞ (grey band at the top): c = 0, the reaction never without the drug"
# The ∞ and a < 3 rows are bands at the top and bottom of the log axis, this factor wide; the
# finite values keep out of them.
_BAND = 3.0
_EDGE = _BAND ** 0.5  # the markers sit in the middle of their band
_RARE_LABEL = "a < 3 (grey band at the bottom): no PRR, 001 sets it to 0"


def _draw_prr(ax: Axes, points: dict, periods: list[str], top: float, bottom: float, *,
              colour: str, label: str, linestyle: str = "-", marker: str = "o",
              shift: float = 0.0) -> set[str]:
    """One PRR series on a log axis: finite values as a line, ∞ on the top edge, a < 3 on the
    bottom edge, undefined values left out. Nothing is ever drawn at 0. Returns the edge
    markers drawn (their legend entries are added once per figure, in grey)."""
    xs = range(len(periods))
    finite = [points[p][0] if p in points and points[p][1] >= MIN_CASES
              and math.isfinite(points[p][0]) and points[p][0] > 0 else math.nan
              for p in periods]
    if any(not math.isnan(y) for y in finite):
        ax.plot(xs, finite, color=colour, linestyle=linestyle, marker=marker, label=label)
    inf = [i for i, p in enumerate(periods)
           if p in points and points[p][1] >= MIN_CASES and math.isinf(points[p][0])]
    # edge markers sit just inside the axes (so they cannot run into the title or the tick
    # labels), shifted sideways per series so that the original and each release stay visible
    if inf:
        ax.plot([i + shift for i in inf], [top / _EDGE] * len(inf), linestyle="none",
                marker="^", markersize=8, color=colour)
    rare = [i for i, p in enumerate(periods) if p in points and points[p][1] < MIN_CASES]
    if rare:
        ax.plot([i + shift for i in rare], [bottom * _EDGE] * len(rare), linestyle="none",
                marker="v", markersize=6, markerfacecolor="none", color=colour)
    return ({_INF_LABEL} if inf else set()) | ({_RARE_LABEL} if rare else set())


def _edge_bands(ax: Axes, drawn: set[str], top: float, bottom: float) -> None:
    """Shade the ∞ and a < 3 bands that hold markers and name them at the right edge, so that
    a marker there is never read as a PRR value."""
    from matplotlib.transforms import blended_transform_factory

    names = blended_transform_factory(ax.transAxes, ax.transData)
    if _INF_LABEL in drawn:
        ax.axhspan(top / _BAND, top, color="#eeeeee", zorder=0)
        ax.text(1.01, top / _EDGE, "∞", transform=names, ha="left", va="center", fontsize=10)
    if _RARE_LABEL in drawn:
        ax.axhspan(bottom, bottom * _BAND, color="#eeeeee", zorder=0)
        ax.text(1.01, bottom * _EDGE, "a<3", transform=names, ha="left", va="center",
                fontsize=7)


def signals_figure(reports: Sequence[SeriesReport]) -> Figure | None:
    """PRR of each signal rule per period on a log scale: original (black) against each
    release; ∞ on the top edge, a < 3 on the bottom edge, never a 0."""
    rule_names: list[str] = []
    for r in reports:
        for rel in r.releases:
            for s in rel.get("signals", []):
                if rule_name(s["rule"]) not in rule_names:
                    rule_names.append(rule_name(s["rule"]))
    if not rule_names:
        return None
    shown = rule_names[:_MAX_RULE_PANELS]
    periods = _periods(reports)
    cols = min(_RULE_COLUMNS, len(shown))
    rows = -(-len(shown) // cols)
    fig = new_figure(2.9 * rows + 1.2)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    edges: set[str] = set()
    for ax, rule in zip(axes, shown):
        originals, released = _prr_points(reports, rule)
        values = [v for _, side in [*originals, *released] for v, a in side.values()
                  if a >= MIN_CASES and math.isfinite(v) and v > 0]
        # a log axis that always shows the threshold and leaves room at both edges
        # the bands start a quarter beyond the extreme finite values, so no value sits on them
        bottom = min([*values, MIN_PRR]) / (_BAND * 1.25)
        top = max([*values, MIN_PRR]) * _BAND * 1.25
        ax.set_yscale("log")
        ax.set_ylim(bottom, top)
        drawn: set[str] = set()
        for i, (name, side) in enumerate(released):
            drawn |= _draw_prr(ax, side, periods, top, bottom, colour=PALETTE[i % len(PALETTE)],
                               label=f"{name} (release)", shift=0.12 * (i + 1))
        for j, (names, original) in enumerate(originals):
            drawn |= _draw_prr(ax, original, periods, top, bottom,
                               colour=_GROUP_GREYS[j % len(_GROUP_GREYS)],
                               label=("original data" if len(originals) == 1
                                      else f"original data of {names}"),
                               linestyle="--", marker="x")
        _edge_bands(ax, drawn, top, bottom)
        edges |= drawn
        ax.axhline(MIN_PRR, color="grey", linewidth=0.8, linestyle=":",
                   label="PRR = 2 (signal threshold)")
        ax.set_title("\n".join(textwrap.wrap(rule, 48)), fontsize=9)
        _period_axis(ax, periods)
        ax.set_ylabel("PRR (log scale)", fontsize=8)
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    # legend-only entries (no data) for the edge markers, in grey: their shape is the message
    if _INF_LABEL in edges:
        axes[0].plot([], [], linestyle="none", marker="^", color="grey", label=_INF_LABEL)
    if _RARE_LABEL in edges:
        axes[0].plot([], [], linestyle="none", marker="v", markerfacecolor="none", color="grey",
                     label=_RARE_LABEL)
    fig.suptitle("PRR per rule, original versus release", fontsize=11)
    _legend_below(fig, ncols=3)
    return fig


def ledger_figure(report: SeriesReport) -> Figure | None:
    """The ε ledger: how many cases carry each total, and the largest charge per period."""
    ledger = report.ledger
    if ledger is None or not ledger.cases:
        return None
    fig = new_figure(3.4)
    left, right = fig.subplots(1, 2)
    totals = [float(t) for t, _ in ledger.distribution]
    left.bar(range(len(totals)), [n for _, n in ledger.distribution], color=PALETTE[0])
    step = max(1, math.ceil(len(totals) / 8))
    left.set_xticks(range(0, len(totals), step))
    left.set_xticklabels([f"{t:g}" for t in totals][::step], fontsize=8)
    left.set_xlabel("ε per case, summed over releases")
    left.set_ylabel("cases")
    left.set_title("Cases per total ε")
    periods = [row["period"] for row in ledger.per_period]
    right.bar(range(len(periods)), [float(row["epsilon_per_case"]) for row in ledger.per_period],
              color=PALETTE[1])
    _period_axis(right, periods)
    right.set_ylabel("largest ε charged to one case")
    right.set_title("Largest ε charged to one case, per release")
    return fig


def generalization_figure(report: SeriesReport) -> Figure:
    """Per QID and period: share of cases published with a most specific value (exact, or
    perturbed for DP-perturbed QIDs), generalized, suppressed, or missing (published empty: the
    value was missing in the data)."""
    periods = report.periods
    names = [q.name for q in report.profiles[periods[0]]] if periods else []
    fig = new_figure(3.6)
    axes = fig.subplots(1, max(len(names), 1), squeeze=False).ravel()
    for ax, name in zip(axes, names):
        profiles = [next(q for q in report.profiles[p] if q.name == name) for p in periods]
        xs = range(len(periods))
        specific = [0.0 if q.perturbed else q.exact for q in profiles]
        noisy = [q.exact if q.perturbed else 0.0 for q in profiles]
        generalized = [q.generalized for q in profiles]
        suppressed = [q.suppressed for q in profiles]
        missing = [q.missing for q in profiles]
        if any(specific):
            ax.bar(xs, specific, color="#009E73", label="exact (original value)")
        if any(noisy):
            ax.bar(xs, noisy, color="#56B4E9", label="perturbed (DP noise, not exact)")
        base = [a + b for a, b in zip(specific, noisy)]
        ax.bar(xs, generalized, bottom=base, color="#E69F00", label="generalized")
        ax.bar(xs, suppressed, bottom=[b + g for b, g in zip(base, generalized)],
               color="#D55E00", label="suppressed (*)")
        if any(missing):  # published empty: missing in the data, not generalized
            ax.bar(xs, missing, bottom=[b + g + s for b, g, s in zip(base, generalized,
                                                                      suppressed)],
                   color="#BBBBBB", hatch="//", edgecolor="white",
                   label="missing (published empty)")
        ax.set_title(name)
        _period_axis(ax, periods)
        ax.set_ylim(0, 1)
        ax.set_ylabel("share of cases", fontsize=8)
    fig.suptitle(f"{report.name}: how each quasi-identifier was published", fontsize=11)
    _legend_below(fig)
    return fig
