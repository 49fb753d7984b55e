"""The report as one self-contained HTML page: inline CSS, figures as embedded PNG, no script.

Nothing on the page is fetched from anywhere, so it can be mailed, archived with a release, or
opened on a machine with no network. Every value shown comes from a :class:`SeriesReport`.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from .. import __version__
from ..errors import ValidationError
from . import plots
from .collect import SeriesReport, check_report_names, signal_tally

__all__ = ["render_report", "write_report"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; line-height: 1.45; }
header { background: #16324f; color: #fff; padding: 1.4rem 2rem; }
header h1 { margin: 0 0 .3rem 0; font-size: 1.6rem; }
header p { margin: 0; opacity: .85; font-size: .9rem; }
main { max-width: 1180px; margin: 0 auto; padding: 1rem 2rem 3rem 2rem; }
section { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 1rem 1.4rem;
          margin: 1.2rem 0; }
h2 { font-size: 1.25rem; margin-top: .2rem; color: #16324f; }
h3 { font-size: 1.05rem; margin-bottom: .4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem 0; font-size: .85rem; }
th, td { border-bottom: 1px solid #e3e6ea; padding: .25rem .6rem; text-align: right; }
th { background: #eef1f5; }
td.l, th.l { text-align: left; }
.ok { color: #12723b; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.note { color: #555; font-size: .85rem; }
img { max-width: 100%; height: auto; display: block; margin: .6rem 0; }
details { margin: .4rem 0; }
summary { cursor: pointer; font-weight: 600; }
pre { background: #f3f4f6; padding: .6rem; overflow-x: auto; font-size: .75rem; }
dl { display: grid; grid-template-columns: max-content auto; gap: .15rem 1rem; font-size: .85rem; }
dt { font-weight: 600; }
dd { margin: 0; }
"""


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def _img(fig, alt: str) -> str:
    data = base64.b64encode(plots.figure_png(fig)).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns are text (left-aligned). Cells are escaped
    by the caller (they may hold markup such as a verdict's class)."""
    head = "".join(f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _max(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _summary(reports: Sequence[SeriesReport]) -> str:
    rows = []
    for r in reports:
        rels = r.releases
        methods = sorted({str(x["method"]) for x in rels})
        kept, lost, spurious = signal_tally(r)
        verdicts = [(r.manifests[x["period"]].get("verification") or {}).get("verdict")
                    for x in rels]
        failed = sum(v not in (None, "passed") for v in verdicts)
        rows.append([
            escape(r.name), escape(", ".join(methods)), str(len(rels)),
            str(sum(x["cases"] for x in rels)), _fmt(_mean([x["nil"] for x in rels])),
            _fmt(_max([x["dir"] for x in rels])), _fmt(_max([x["dsr"] for x in rels])),
            _fmt(_max([x["ssgr"] for x in rels])), str(sum(x["reidentified"] for x in rels)),
            (f"{kept} kept, {lost} lost, {spurious} spurious" if r.rules else "no rules given"),
            (escape(r.ledger.max_epsilon) if r.ledger else "not DP"),
            (f'<span class="bad">{failed} not passed</span>' if failed
             else '<span class="ok">all passed</span>'),
        ])
    return ("<section><h2>Summary</h2>"
            + _table(["series", "method", "releases", "cases", "mean NIL", "max DIR", "max DSR",
                      "max SSGR", "re-identified (RR)", "signals", "max ε per case",
                      "verify gate"], rows, left=2)
            + '<p class="note">DIR: share of groups an attacker linking the releases (B-, F-, '
              "L-attacks; MD when the model declares it) narrows to fewer than k candidate "
              "cases. DSR: share of groups where a sensitive term's share among the remaining "
              "candidates exceeds its θ. RR re-identified: cases whose candidate set shrinks to "
              "one under 000's record-linkage attack. On differentially private releases "
              "(PPMS-DP, strict variant) these are the likelihood-weighted attacker's numbers: "
              "noisy QIDs never exclude a candidate, they weigh it; a group is dangerous when "
              "some candidate's posterior exceeds 1/k, and a case is re-identified when its own "
              "record's posterior exceeds 1/2. The verify gate checks the exclusions that hold "
              "for sure (DIR hard in the period tables) and records the combined posterior "
              "bound, so a release can pass the gate while this attacker still succeeds. "
              "Signals compare each rule's PRR/χ² criterion on the original data and on the "
              "release.</p></section>")


def _figures(reports: Sequence[SeriesReport]) -> str:
    parts = ["<section><h2>What was published</h2>",
             _img(plots.volume_figure(reports), "cases and groups per period"),
             _img(plots.nil_figure(reports), "information loss per period"),
             "</section><section><h2>What an attacker could do</h2>",
             _img(plots.disclosure_figure(reports), "disclosure after the attacks per period"),
             "</section><section><h2>What the release still tells an analyst</h2>"]
    signals = plots.signals_figure(reports)
    if signals is None:
        parts.append('<p class="note">No signal rules were given (<code>--rules FILE</code>), '
                     "so no signal was compared.</p>")
    else:
        parts.append(_img(signals, "PRR original versus release per rule"))
    parts.append("</section>")
    return "".join(parts)


def _period_table(r: SeriesReport) -> str:
    ingested = {row["period"]: row for row in r.ingested}
    rows = []
    for x in r.releases:
        verdict = (r.manifests[x["period"]].get("verification") or {}).get("verdict")
        css = "ok" if verdict == "passed" else "bad"
        shown = f'<span class="{css}">{escape(verdict)}</span>' if verdict else "not checked"
        source = ingested.get(x["period"], {})
        bound = (r.manifests[x["period"]].get("verification") or {}).get("bound") or {}
        rows.append([escape(x["period"]), escape(str(x["method"])),
                     _fmt(source.get("n_reports")), _fmt(source.get("n_cases")), str(x["cases"]),
                     str(x["groups"]), _fmt(x["nil"]), _fmt(x["nil_star"]),
                     escape(_ATTACKERS.get(x.get("attacker"), "hard")), _fmt(x["dir"]),
                     _fmt(x["dsr"]), _fmt(x["ssgr"]), escape(x["attacks"]), _fmt(x["rr"], 4),
                     _fmt(x["ar_rev"], 4), _fmt(x.get("dir_hard")),
                     _fmt(bound.get("max_posterior")), shown])
    return (_table(["period", "method", "reports in", "cases in", "cases out", "groups", "NIL",
                    "NIL*", "attacker", "DIR", "DSR", "SSGR", "attacks", "RR", "AR_rev",
                    "DIR hard", "posterior bound", "verify gate"], rows, left=2)
            + '<p class="note">attacker: "likelihood" on strict PPMS-DP releases (DIR, DSR, RR '
              "and AR_rev from the posterior over candidates weighted by their noisy QIDs), "
              '"hard" elsewhere. DIR hard: exclusions that hold for sure, the DIR the gate '
              "checks. Posterior bound: the largest posterior the gate's combined DP bound "
              "allows (recorded, and enforced only with dp-aware grouping).</p>")


_ATTACKERS = {"likelihood-weighted": "likelihood", "hard-exclusion": "hard"}


def _signal_table(r: SeriesReport) -> str:
    rows = []
    for x in r.releases:
        for s in x.get("signals", []):
            o, rel = s["original"], s["release"]
            changed = o["signal"] != rel["signal"]
            flag = (f'<span class="bad">{_fmt(o["signal"])} → {_fmt(rel["signal"])}</span>'
                    if changed else _fmt(o["signal"]))
            rows.append([escape(x["period"]), escape(plots._rule_name(s["rule"])),
                         str(o["count"]), str(rel["count"]), _fmt(o["prr"], 2),
                         _fmt(rel["prr"], 2), _fmt(o["ror"], 2), _fmt(rel["ror"], 2), flag])
    if not rows:
        return ""
    return ("<h3>Signals, original versus release</h3>"
            + _table(["period", "rule", "count orig", "count rel", "PRR orig", "PRR rel",
                      "ROR orig", "ROR rel", "signal"], rows, left=2))


def _ledger(r: SeriesReport) -> str:
    if r.ledger is None:
        return ('<h3>Privacy ledger</h3><p class="note">No differentially private release in '
                "this store: no ε was spent.</p>")
    led = r.ledger
    figure = plots.ledger_figure(r)
    return ("<h3>Privacy ledger (ε per case, summed over releases)</h3>"
            + f"<p>{led.cases} cases charged over {len(led.periods)} release(s); max "
              f"{escape(led.max_epsilon)}, mean {led.mean_epsilon:.4g}, median "
              f"{led.median_epsilon:.4g}, p90 {led.quantiles['p90']:.4g}.</p>"
            + (_img(figure, "epsilon ledger") if figure is not None else "")
            + _table(["case", "ε", "releases"],
                     [[escape(str(w["case_id"])), escape(str(w["epsilon"])),
                       escape(str(w["releases"]))] for w in led.worst_cases])
            + (f'<p class="note">{led.non_dp["cases"]} case(s) also appear in release(s) without '
               f'an ε-DP claim ({escape(", ".join(led.non_dp["periods"]))}; e.g. PPMS-DP\'s '
               "paper variant): their nominal ε is not counted above.</p>"
               if led.non_dp["entries"] else ""))


def _flatten(value: object, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            out += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list):
        return [(prefix, ", ".join(map(str, value)) if value else "none")]
    return [(prefix, "–" if value is None else str(value))]


def _dl(pairs: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs) + "</dl>"


def _why(manifest: dict) -> tuple[str, dict]:
    """The reasons the manifest gives for generalizing or withholding (as HTML), and the
    remaining details."""
    method = manifest.get("method") or {}
    details = dict(manifest.get("details") or {})
    lines = []
    if method.get("guarantee"):
        lines.append(f"Generalized so that: {method['guarantee']}")
    theta = details.pop("theta_table", None)
    if isinstance(theta, dict):
        overrides = theta.get("overrides") or {}
        lines.append(f"θ per sensitive term: default {theta.get('default')}, "
                     f"{len(overrides)} term(s) with their own θ"
                     + (f" ({', '.join(f'{k} {v}' for k, v in list(overrides.items())[:8])}"
                        + (", ..." if len(overrides) > 8 else "") + ")" if overrides else ""))
    counts = manifest.get("counts") or {}
    if counts.get("suppressed"):
        lines.append(f"{counts['suppressed']} case(s) withheld from the release.")
    if not lines:
        lines.append("The manifest states no reason (method without a privacy model?).")
    return "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>", details


def _manifests(r: SeriesReport) -> str:
    parts = ["<h3>Releases and their manifests</h3>"]
    for period in r.periods:
        m = r.manifests[period]
        method = m.get("method") or {}
        why, details = _why(m)
        profile_rows = []
        for q in r.profiles[period]:
            levels = (", ".join(f"level {lvl}: {share:.0%}" for lvl, share in q.levels.items())
                      if q.kind == "categorical" else f"mean width {q.mean_width:.0%} of range")
            profile_rows.append([escape(q.name), escape(q.kind), f"{q.exact:.0%}",
                                 f"{1 - q.exact - q.suppressed:.0%}", f"{q.suppressed:.0%}",
                                 escape(levels)])
        parts.append(
            f"<details><summary>{escape(period)}: {escape(str(method.get('name')))} — "
            f"{escape(str(method.get('privacy_model') or 'no privacy model'))}</summary>"
            + _dl([("method", str(method.get("name"))),
                   ("privacy model", str(method.get("privacy_model") or "none"))]
                  + [(f"parameter {k}", v) for k, v in _flatten(method.get("parameters") or {})]
                  + [(f"count {k}", v) for k, v in _flatten(m.get("counts") or {})]
                  + [(f"privacy spent {k}", v) for k, v in _flatten(m.get("privacy_spent") or {})]
                  + [(f"verification {k}", v) for k, v in _flatten(m.get("verification") or {})]
                  + [(f"randomness {k}", v) for k, v in _flatten(m.get("rng") or {})]
                  + [("published at", str(m.get("published_at")))])
            + "<p><b>What was generalized or withheld, and why</b></p>" + why
            + _table(["QID", "kind", "exact", "generalized", "suppressed (*)", "levels"],
                     profile_rows, left=2)
            + (_dl([(f"detail {k}", v) for k, v in _flatten(details)]) if details else "")
            + "<details><summary>full manifest (JSON)</summary><pre>"
            + escape(json.dumps(m, indent=2, sort_keys=True, default=str)) + "</pre></details>"
            + "</details>")
    return "".join(parts)


def _series_section(r: SeriesReport) -> str:
    return (f"<section><h2>Series {escape(r.name)}</h2>"
            f'<p class="note">store {escape(r.store)}, schema {escape(r.schema)}</p>'
            + _period_table(r) + _signal_table(r)
            + _img(plots.generalization_figure(r), f"generalization profile of {r.name}")
            + _ledger(r) + _manifests(r) + "</section>")


def render_report(reports: Sequence[SeriesReport], *, title: str = "medanon release report",
                  progress: Callable[[str], None] | None = None) -> str:
    """The whole page as a string."""
    if not reports:
        raise ValidationError("A report needs at least one store.")
    check_report_names(reports)
    step = progress or (lambda _step: None)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{escape(title)}</h1><p>medanon {escape(__version__)} · generated "
            f"{now} · {len(reports)} series: {escape(', '.join(r.name for r in reports))}</p>"
            "</header><main>")
    body = [_summary(reports)]
    body.append(_figures(reports))
    step("figures")
    for r in reports:
        body.append(_series_section(r))
        step(r.name)
    return head + "".join(body) + "</main></body></html>\n"


def write_report(page: str, out: str | Path) -> Path:
    """Write the page atomically: a temporary file beside ``out``, then a rename.

    An interrupted write leaves any earlier report as it was.
    """
    out = Path(out)
    if out.is_dir():
        raise ValidationError(f"--out {str(out)!r} is a folder; give a file name such as "
                              "report.html.")
    if not out.parent.is_dir():  # a typo in a path must not create folders from '/' down
        raise ValidationError(f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist; "
                              "create it first, or write the report elsewhere.")
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(page)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a report is an ordinary file
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
