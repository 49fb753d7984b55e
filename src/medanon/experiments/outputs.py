"""Tables and figures of an experiment, in the papers' kinds: a metric per period for each method
(001, 002: one panel per k and θ), or a metric against ε (000, 004, 003), with the methods that
take no ε drawn as horizontal reference lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..report.plots import PALETTE, figure_png

__all__ = ["LEGEND", "METRICS", "PARAMS", "setting_marks", "summarize", "write_figures",
           "write_tables"]

#: experiment -> the metrics its tables and figures show (column, title)
METRICS = {
    "jmir2021": [("nil", "NIL (published cases)"), ("nil_cases", "NIL per published case"),
                 ("nil_all", "NIL on all cases (withheld = 1)"),
                 ("dir", "DIR after B/F/L"), ("dsr", "DSR after B/F/L (effective θ*)"),
                 ("dsr_requested", "DSR after B/F/L (requested θ*)"),
                 ("withheld_share", "share of cases withheld"),
                 ("count_bias_abs", "|count bias| of the signal rules"),
                 ("prr_bias_abs", "|PRR bias| of the signal rules")],
    "plos2021": [("nil", "NIL (published cases)"), ("nil_cases", "NIL per published case"),
                 ("nil_all", "NIL on all cases (withheld = 1)"),
                 ("dir", "DIR after B/F/L/MD"), ("dsr", "DSR after B/F/L/MD (effective θ)"),
                 ("dsr_requested", "DSR after B/F/L/MD (requested θ)"), ("ssgr", "SSGR"),
                 ("withheld_share", "share of cases withheld"),
                 ("suppressed_terms", "terms suppressed per release")],
    "ppms-dp": [("nil_star", "NIL with IL* (published cases)"),
                ("nil_star_all", "NIL with IL* on all cases (withheld = 1)"),
                ("rr", "record-linkage risk RR"),
                ("ar_rev", "attribute risk AR_rev"), ("dsr", "DSR (effective θ*)"),
                ("dsr_requested", "DSR (requested θ*)"), ("prr_bias_abs", "|PRR bias|")],
    "ipa": [("il", "IL = NCP + EMD + Rate"), ("ncp", "NCP"), ("emd", "EMD"), ("rate", "Rate")],
    "clinsimrr": [("cil", "clinical information loss CIL"), ("map", "attack MAP"),
                  ("map_sensitive_inputs", "attack MAP, 003's scoring"),
                  ("kl", "KL(original ‖ release)")],
}
PARAMS = ("k", "theta", "alpha", "on_unplaceable", "epsilon", "variant", "gamma", "selection")

#: The marks of summary.md: a setting the method had to change, and the cells that measure the
#: changed release rather than the requested setting (docs/experiments.md).
RAISED, WITHHELD, SUPPRESSED, VIOLATED = "†", "‡", "§", "!"
LEGEND = {
    RAISED: "θ raised: some term's θ was infeasible and was raised for the release (the "
            "'changes' column gives how many terms and the highest θ given); DSR is measured "
            "against the raised θ, dsr_requested against the setting's own",
    WITHHELD: "cases withheld: NIL, NIL per case and NIL with IL* are over the published "
              "cases only; nil_all and nil_star_all count each withheld case as full loss (1.0)",
    SUPPRESSED: "terms suppressed from published cases (suppressed_terms counts the (case, term) "
                "pairs)",
    VIOLATED: "the verify gate found the release violating its model (kept for measurement)",
}


def _params(frame: pd.DataFrame) -> list[str]:
    return [p for p in PARAMS if p in frame.columns]


def summarize(frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """Mean and standard deviation of each metric per setting, over periods and runs; a metric
    that is undefined (NaN) in some tasks also gets ``<metric>_defined``, the tasks where it is
    defined (means are over those; ``summary.md`` shows "n/a" when there are none)."""
    metrics = [m for m, _ in METRICS[experiment] if m in frame.columns]
    keys = ["method", *_params(frame)]
    grouped = frame.assign(**{p: frame[p].astype(object).where(frame[p].notna(), "-")
                              for p in _params(frame)}).groupby(keys, sort=False)
    out = grouped[metrics].agg(["mean", "std"])
    # (metric, statistic) pairs: the two levels of agg's column MultiIndex
    out.columns = [f"{m}_{stat}" for m, stat in zip(out.columns.get_level_values(0),
                                                    out.columns.get_level_values(1))]
    for m in metrics:          # a metric that can be undefined (MAP): in how many tasks it is
        if frame[m].isna().any():
            out[f"{m}_defined"] = grouped[m].count()
    out["tasks"] = grouped.size()
    out["seconds_mean"] = grouped["seconds"].mean()
    # what the methods changed of the setting (periodic grids): never averaged away
    if "raised_terms" in frame.columns:
        out["theta_raised_tasks"] = grouped["raised_terms"].agg(lambda x: int((x > 0).sum()))
        # the fewest terms raised in a task that raised any (0 only when none did)
        out["raised_terms_min"] = grouped["raised_terms"].agg(
            lambda x: int(x[x > 0].min()) if (x > 0).any() else 0)
        out["raised_terms_max"] = grouped["raised_terms"].max()
        out["theta_effective_max"] = grouped["theta_effective_max"].max()
    if "withheld_cases" in frame.columns:
        out["withheld_tasks"] = grouped["withheld_cases"].agg(lambda x: int((x > 0).sum()))
        out["withheld_share_max"] = grouped["withheld_share"].max()
    if "suppressed_terms" in frame.columns:
        out["suppressed_terms_tasks"] = grouped["suppressed_terms"].agg(
            lambda x: int((x > 0).sum()))
    if "gate" in frame.columns:
        out["gate_violated_tasks"] = grouped["gate"].agg(lambda x: int((x == "violated").sum()))
    return out.reset_index()


def setting_marks(row: pd.Series) -> dict[str, str]:
    """The marks of a summary row (:data:`LEGEND`) and the cells each one marks."""
    def some(column: str) -> bool:
        return column in row.index and not pd.isna(row[column]) and row[column] > 0

    marks = {}
    if some("theta_raised_tasks"):
        marks[RAISED] = "dsr"
    if some("withheld_tasks"):
        marks[WITHHELD] = "nil"
    if some("suppressed_terms_tasks"):
        marks[SUPPRESSED] = ""
    if some("gate_violated_tasks"):
        marks[VIOLATED] = ""
    return marks


def _changes(row: pd.Series) -> str:
    """What the method changed of the setting, in words (the 'changes' column)."""
    parts = []
    tasks = row["tasks"]
    if "theta_raised_tasks" in row.index and row["theta_raised_tasks"] > 0:
        low, high = int(row["raised_terms_min"]), int(row["raised_terms_max"])
        terms = f"{low}–{high}" if low != high else f"{high}"
        parts.append(f"{RAISED} θ raised in {row['theta_raised_tasks']}/{tasks} tasks "
                     f"({terms} terms, up to {row['theta_effective_max']:.4g})")
    if "withheld_tasks" in row.index and row["withheld_tasks"] > 0:
        parts.append(f"{WITHHELD} cases withheld in {row['withheld_tasks']}/{tasks} tasks "
                     f"(up to {row['withheld_share_max']:.1%})")
    if "suppressed_terms_tasks" in row.index and row["suppressed_terms_tasks"] > 0:
        parts.append(f"{SUPPRESSED} terms suppressed in {row['suppressed_terms_tasks']}/{tasks} "
                     "tasks")
    if "gate_violated_tasks" in row.index and row["gate_violated_tasks"] > 0:
        parts.append(f"{VIOLATED} gate: violated in {row['gate_violated_tasks']}/{tasks} tasks")
    return "; ".join(parts) or "as requested"


def _markdown(summary: pd.DataFrame, experiment: str) -> str:
    metrics = [m for m, _ in METRICS[experiment] if f"{m}_mean" in summary.columns]
    keys = [c for c in ("method", *PARAMS) if c in summary.columns]
    # the periodic grids say what each setting changed; the other grids change nothing
    tracked = "theta_raised_tasks" in summary.columns or "withheld_tasks" in summary.columns
    extra = ["changes"] if tracked else []
    lines = ["| " + " | ".join(keys + metrics + ["tasks"] + extra) + " |",
             "|" + "---|" * (len(keys) + len(metrics) + 1 + len(extra))]
    used: set[str] = set()
    for _, row in summary.iterrows():
        marks = setting_marks(row) if tracked else {}
        used |= set(marks)
        # the setting's cell carries every mark, the cells they concern their own
        cells = [str(row[k]) + (" " + "".join(marks) if k == "method" and marks else "")
                 for k in keys]
        for m in metrics:
            mean, std = row[f"{m}_mean"], row[f"{m}_std"]
            defined = row.get(f"{m}_defined", row["tasks"])
            mark = "".join(sign for sign, cell in marks.items()
                           if cell and m in (cell, f"{cell}_star", f"{cell}_cases",
                                             f"{cell}_star_cases"))
            cells.append(("n/a" if pd.isna(mean) else
                          f"{mean:.4f}" + ("" if pd.isna(std) else f" ± {std:.4f}")
                          + ("" if defined == row["tasks"]
                             else f" ({defined} of {row['tasks']} defined)")) + mark)
        lines.append("| " + " | ".join(cells + [str(row["tasks"])]
                                       + ([_changes(row)] if tracked else [])) + " |")
    if used:
        lines += ["", *(f"{sign} {LEGEND[sign]}." for sign in LEGEND if sign in used)]
    return "\n".join(lines) + "\n"


def write_tables(frame: pd.DataFrame, experiment: str, out: Path) -> pd.DataFrame:
    """``results.csv`` (one row per measured task), ``summary.csv`` and ``summary.md``."""
    frame.to_csv(out / "results.csv", index=False)
    summary = summarize(frame, experiment)
    summary.to_csv(out / "summary.csv", index=False)
    (out / "summary.md").write_text(_markdown(summary, experiment), encoding="utf-8")
    return summary


def _line_marks(rows: pd.DataFrame) -> str:
    """The summary's marks for the tasks a figure line draws, so no figure hides a change."""
    marks = ""
    if "raised_terms" in rows.columns and (rows["raised_terms"] > 0).any():
        marks += RAISED
    if "withheld_cases" in rows.columns and (rows["withheld_cases"] > 0).any():
        marks += WITHHELD
    if "suppressed_terms" in rows.columns and (rows["suppressed_terms"] > 0).any():
        marks += SUPPRESSED
    return f" {marks}" if marks else ""


def _panels(frame: pd.DataFrame, by: list[str]) -> list[tuple[str, pd.DataFrame]]:
    if not by:
        return [("", frame)]
    filled = frame.assign(**{p: frame[p].astype(object).where(frame[p].notna(), "-") for p in by})
    return [(", ".join(f"{p}={v}" for p, v in zip(by, key if isinstance(key, tuple) else (key,))),
             part) for key, part in filled.groupby(by, sort=False)]


def _grid_figure(n: int) -> tuple[Figure, list]:
    cols = min(4, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(4 * cols, 3.2 * rows))
    axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _by_period(frame: pd.DataFrame, metric: str, title: str) -> Figure:
    """001/002's kind: the metric per period, one line per method, one panel per k, θ (, α)."""
    panels = _panels(frame, [p for p in ("k", "theta") if p in frame.columns])
    periods = sorted(frame["period"].unique())
    fig, axes = _grid_figure(len(panels))
    for ax, (name, part) in zip(axes, panels):
        for i, (setting, one) in enumerate(part.groupby("setting", sort=False)):
            means = one.groupby("period")[metric].mean().reindex(periods)
            label = " ".join(w for w in str(setting).split()
                             if not w.startswith(("k=", "theta=")))
            label += _line_marks(one)
            ax.plot(range(len(periods)), means.to_numpy(dtype=float), marker="o",
                    color=PALETTE[i % len(PALETTE)], label=label)
        ax.set_title(name or title, fontsize=9)
        ax.set_xticks(range(len(periods)))
        ax.set_xticklabels(periods, rotation=45, ha="right", fontsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} per period", fontsize=11)
    return fig


def _by_epsilon(frame: pd.DataFrame, metric: str, title: str) -> Figure:
    """000/004/003's kind: the metric against ε (log axis), one line per method (and γ / α),
    means over periods and runs with ± one standard deviation over runs; methods without ε are
    horizontal dashed lines."""
    has_eps = frame["epsilon"].notna() if "epsilon" in frame else pd.Series(False, frame.index)
    # Panels by the parameters the ε methods vary; a baseline without ε (kanon, PPMS++) is drawn
    # in every panel whose parameters it matches or does not have.
    by = [p for p in ("k", "theta") if p in frame.columns and frame.loc[has_eps, p].notna().any()]
    panels = _panels(frame[has_eps], by) if has_eps.any() else _panels(frame, by)
    baselines = frame[~has_eps]
    fig, axes = _grid_figure(len(panels))
    for ax, (name, with_eps) in zip(axes, panels):
        values = with_eps.iloc[0] if len(with_eps) else None
        keep = pd.Series(True, baselines.index)
        for p in by:
            if values is not None:
                keep &= baselines[p].isna() | (baselines[p].astype(object) == values[p])
        part = pd.concat([with_eps, baselines[keep]])
        series_keys = ["method"] + [p for p in ("gamma", "alpha", "selection", "variant",
                                                "on_unplaceable") if p in part.columns]
        for i, (key, line) in enumerate(with_eps.groupby(series_keys, sort=False, dropna=False)):
            key = key if isinstance(key, tuple) else (key,)
            missing = pd.isna(list(key[1:]))  # per key value: NaN or None, a parameter not set
            label = " ".join([str(key[0])] + [f"{p}={v}" for p, v, na in
                                               zip(series_keys[1:], key[1:], missing) if not na])
            label += _line_marks(line)
            per_run = line.groupby(["epsilon", "run"])[metric].mean().groupby("epsilon")
            means, stds = per_run.mean(), per_run.std().fillna(0.0)
            ax.errorbar(means.index.to_numpy(dtype=float), means.to_numpy(dtype=float),
                        yerr=stds.to_numpy(dtype=float), marker="o", capsize=3,
                        color=PALETTE[i % len(PALETTE)], label=label)
        without = part[part["epsilon"].isna()] if "epsilon" in part else part
        for j, (method, line) in enumerate(without.groupby("method", sort=False)):
            value = line[metric].mean()
            if not np.isnan(value):
                ax.axhline(value, linestyle="--", color="black" if j == 0 else "grey",
                           label=f"{method} (no ε){_line_marks(line)}")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        if name:  # one panel: the figure's title says it all
            ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} against ε", fontsize=11)
    return fig


def write_figures(frame: pd.DataFrame, experiment: str, out: Path) -> list[Path]:
    """One PNG per metric in ``out/figures``."""
    folder = out / "figures"
    folder.mkdir()
    written = []
    against_epsilon = "epsilon" in frame.columns and frame["epsilon"].notna().any()
    for metric, title in METRICS[experiment]:
        if metric not in frame.columns or frame[metric].isna().all():
            continue
        fig = (_by_epsilon if against_epsilon else _by_period)(frame, metric, title)
        used = _line_marks(frame).strip()
        if used:  # the marks on the lines, explained (summary.md says how much)
            names = {RAISED: "θ raised", WITHHELD: "withheld", SUPPRESSED: "terms suppressed"}
            # one more title line: the figure grows by its height, the panels keep theirs
            height, extra = fig.get_figheight(), 0.3
            top = 1 - ((1 - fig.subplotpars.top) * height + extra) / (height + extra)
            fig.set_figheight(height + extra)
            fig.subplots_adjust(top=top)
            fig.suptitle(fig.get_suptitle() + "\n" + "  ".join(f"{m} {names[m]}" for m in used),
                         fontsize=10)
        path = folder / f"{metric}.png"
        path.write_bytes(figure_png(fig))
        written.append(path)
    return written
