"""The report as one self-contained HTML page: inline CSS, figures as embedded PNG, no script.

Nothing on the page is fetched from anywhere, so it can be mailed, archived with a release, or
opened on a machine with no network. Every value shown comes from a :class:`SeriesReport`, and
every guarantee or caveat from the privacy-model objects through it (never typed here).

The page opens with a table of contents and a decision per series, "What to publish and why"
(:func:`medanon.report.collect.decision`: read from the verify gate, the attacks and the
screening, never typed here), then one summary card per series (what was promised, what was not,
what verify and the attacks say about it), then compares the series in figures, then gives each
series in detail: ingest accounting, per-period metrics, signals, generalization, ε ledger,
manifests. A glossary closes it, in the metric names every table uses. Tables fit a 1,000 px
window; a wider one scrolls inside its own box, never the page. Each figure's ``<img>`` carries
what it shows as data attributes (``data-axes``: title and axis labels per axes;
``data-texts``: every drawn text with its box in image pixels), so a test can check labels and
overlaps without reading pixels.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from html import escape
from pathlib import Path

from .. import __version__
from ..errors import ValidationError
from ..metrics.signals import format_ratio
from ..vocabulary import GLOSSARY
from . import plots
from .collect import (RECALL_CARE, ModelCard, SeriesReport, check_report_names, comparison,
                      decision, missing_sentence, not_compared, rule_name, rule_tally,
                      signal_tally)

__all__ = ["render_report", "write_report"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; line-height: 1.45; }
header { background: #16324f; color: #fff; padding: 1.4rem 2rem; }
header h1 { margin: 0 0 .3rem 0; font-size: 1.6rem; }
header p { margin: 0; opacity: .85; font-size: .9rem; }
main { max-width: 1180px; margin: 0 auto; padding: 1rem 2rem 3rem 2rem; }
nav.toc { font-size: .88rem; }
nav.toc ol { margin: .2rem 0; padding-left: 1.4rem; }
nav.toc ol ol { columns: 2; column-gap: 2rem; }
nav.toc a { color: #16324f; }
.decision { border-left: 6px solid #16324f; padding: .5rem .9rem; margin: .8rem 0;
            background: #fff; }
.decision.state-publish { border-left-color: #12723b; }
.decision.state-care { border-left-color: #d08a00; }
.decision.state-hold { border-left-color: #b3261e; }
.decision p.line { font-size: 1.05rem; margin: .2rem 0 .3rem 0; }
.decision ul { margin: .2rem 0; padding-left: 1.2rem; font-size: .9rem; }
a.anchor { display: block; position: relative; top: -.5rem; visibility: hidden; }
section { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 1rem 1.4rem;
          margin: 1.2rem 0; }
h2 { font-size: 1.25rem; margin-top: .2rem; color: #16324f; }
h3 { font-size: 1.05rem; margin-bottom: .4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem 0; font-size: .85rem; }
th, td { border-bottom: 1px solid #e3e6ea; padding: .25rem .45rem; text-align: right; }
th { background: #eef1f5; font-size: .8rem; hyphens: manual; }
td.l, th.l { text-align: left; }
.nw { white-space: nowrap; }
div.wide { overflow-x: auto; max-width: 100%; }
tr.total td { font-weight: 600; border-top: 2px solid #c8ced6; }
.ok { color: #12723b; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.warn { color: #8a5300; font-weight: 600; }
.note { color: #555; font-size: .85rem; }
figure.plot { margin: .8rem 0; }
img.plot { width: 100%; height: auto; display: block; }
details { margin: .4rem 0; }
summary { cursor: pointer; font-weight: 600; }
pre { background: #f3f4f6; padding: .6rem; overflow-x: auto; font-size: .75rem; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .15rem 1rem;
     font-size: .85rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
.card { border: 1px solid #c8ced6; border-left: 6px solid #16324f; border-radius: 6px;
        padding: .8rem 1.2rem; margin: 1rem 0; background: #fff; }
.card.state-ok { border-left-color: #12723b; } .card.state-warn { border-left-color: #d08a00; }
.card.state-bad { border-left-color: #b3261e; }
.card h3 { margin: 0 0 .5rem 0; font-size: 1.15rem; }
.card h4 { margin: .7rem 0 .3rem 0; font-size: .95rem; color: #16324f; }
.card dl { font-size: .88rem; }
.badge { font-size: .8rem; padding: .1rem .5rem; border-radius: 1rem; margin-left: .6rem;
         vertical-align: middle; }
.badge.ok { background: #e3f3e8; } .badge.warn { background: #fdf0d5; }
.badge.bad { background: #fbe3e1; }
ul.findings li.ok, ul.findings li.warn, ul.findings li.bad { font-weight: normal; }
ul.findings li.warn::marker, ul.findings li.bad::marker { content: "⚠ "; }
.caveat { background: #fdf0d5; border-radius: 4px; padding: .45rem .7rem; margin: .5rem 0;
          font-size: .88rem; }
.promise { background: #eef1f5; border-radius: 4px; padding: .45rem .7rem; margin: .5rem 0;
           font-size: .88rem; }
ul.findings { margin: .4rem 0; padding-left: 1.2rem; font-size: .88rem; }
ul.findings li { margin: .2rem 0; }
.terms { font-size: .85rem; }
.alert { background: #fbe3e1; border-left: 4px solid #b3261e; border-radius: 4px;
         padding: .5rem .8rem; margin: .3rem 0 .7rem 0; font-size: .95rem; }
.alert b { color: #b3261e; }
"""

#: The attacker names of evaluate's JSON (``attacker``), as every table shows them; looked up
#: with the release's ``attacker``, None when an older evaluation names none.
_ATTACKERS: dict[str | None, str] = {"likelihood-weighted": "likelihood-weighted",
              "hard-exclusion": "hard-exclusion"}


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _share(part: int | None, whole: int | None) -> str:
    return "–" if part is None or not whole else f"{part / whole:.0%}"


def _span(periods: Sequence[str]) -> str:
    if not periods:
        return "none"
    return periods[0] if len(periods) == 1 else f"{periods[0]}–{periods[-1]}"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "series"


def _img(fig, alt: str, kind: str) -> str:
    """The figure as an embedded PNG, with what it shows as data attributes (see the module
    docstring): the test reads them instead of guessing from pixels."""
    meta = plots.figure_meta(fig)
    data = base64.b64encode(plots.figure_png(fig)).decode("ascii")
    attrs = {"data-figure": kind, "data-width": str(meta["width"]),
             "data-height": str(meta["height"]),
             "data-axes": json.dumps(meta["axes"], ensure_ascii=False),
             "data-texts": json.dumps(meta["texts"], ensure_ascii=False)}
    extra = " ".join(f'{k}="{escape(v, quote=True)}"' for k, v in attrs.items())
    return (f'<figure class="plot"><img alt="{escape(alt)}" src="data:image/png;base64,{data}" '
            f'class="plot" {extra}></figure>')


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1,
           total: Sequence[str] | None = None) -> str:
    """An HTML table; the first ``left`` columns are text (left-aligned). Cells are escaped
    by the caller (they may hold markup such as a verdict's class)."""
    head = "".join(f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(header))

    def row_html(row: Sequence[str], css: str = "") -> str:
        cells = "".join(f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>"
                        for i, c in enumerate(row))
        return f'<tr{f" class={css!r}" if css else ""}>{cells}</tr>'

    body = "".join(row_html(row) for row in rows)
    if total is not None:
        body += row_html(total, "total")
    # a wide table scrolls inside its section instead of running past the page's edge
    return (f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table></div>")


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _max(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _filled(r: SeriesReport) -> list[dict]:
    """The releases that publish at least one case: an empty release has no NIL or DIR (0/0),
    and must not pull a mean to 0 or pass as 'all passed'."""
    return [x for x in r.releases if x["cases"]]


# ---------------------------------------------------------------------------- summary cards
def _card_state(r: SeriesReport) -> str:
    card = r.summary_card
    kinds = {kind for kind, _ in card.findings}
    if card.failed or card.verify_error or "bad" in kinds:
        return "bad"
    if card.empty or card.held_back or "warn" in kinds or card.unbounded or card.default_unbounded:
        return "warn"
    return "ok"


def _verify_badge(r: SeriesReport) -> str:
    card = r.summary_card
    if card.verify_error:
        return '<span class="badge bad">verify could not run</span>'
    filled = [p for p in card.published if p not in card.empty]
    passed = sum(card.verdicts.get(p) == "passed" for p in filled)
    failed = [p for p in filled if card.verdicts.get(p) != "passed"]
    parts = []
    if failed:
        parts.append(f"{len(failed)} of {len(filled)} not passed")
    elif filled:
        parts.append(f"{passed} of {len(filled)} passed")
    if card.empty:
        parts.append(f"{len(card.empty)} empty (nothing checked)")
    state = "bad" if failed else ("warn" if card.empty or not filled else "ok")
    return f'<span class="badge {state}">verify now: {escape("; ".join(parts))}</span>'


def _attack_badge(r: SeriesReport) -> str:
    filled = _filled(r)
    worst = _max([x["dir"] for x in filled])
    if worst is None:
        return ""
    dsr = _max([x["dsr"] for x in filled]) or 0.0
    state = "warn" if worst > 0 or dsr > 0 else "ok"
    return (f'<span class="badge {state}">attacks: max DIR {worst:.2f}, max DSR '
            f"{dsr:.2f}</span>")


def _theta_terms(m: ModelCard) -> str:
    """Every per-term θ, grouped by value, with the releases that set it when not all did."""
    if not m.theta_overrides:
        return "none: every term has the default θ"
    by_value: dict[float, list[str]] = {}
    for term, values in m.theta_overrides.items():
        for value, periods in values.items():
            where = "" if len(periods) == len(m.periods) else f" ({len(periods)}/{len(m.periods)})"
            by_value.setdefault(value, []).append(escape(term) + where)
    parts = []
    for value in sorted(by_value):
        meaning = (" — no limit: a group may consist only of cases with the term"
                   if value >= 1.0 else "")
        parts.append(f"<b>θ = {value:g}</b>{meaning}: {', '.join(by_value[value])}")
    if any(len(p) < len(m.periods) for values in m.theta_overrides.values()
           for p in values.values()):
        # the frequency rule is resolved per release, so a term's θ can change between them
        parts.append(f'<span class="note">(n/{len(m.periods)}: the term had this θ in n of the '
                     f"{len(m.periods)} releases, the default in the others)</span>")
    return "<br>".join(parts)


def _theta_rule(m: ModelCard) -> str:
    rule = dict(m.theta_rule or {})
    rule.pop("protected", None)  # the caps have their own line (the θ tables record them)
    kind = rule.get("kind")
    if kind == "frequency":
        return (f"the frequency rule (001): θ {rule.get('low')} for rare terms, "
                f"{rule.get('mid')} for common, {rule.get('high')} for frequent ones")
    if kind:
        details = ", ".join(f"{k} {v}" for k, v in rule.items() if k != "kind")
        return f"{kind}" + (f" ({details})" if details else "")
    return "as declared per release"


def _caps(m: ModelCard) -> str:
    if not m.theta_caps:
        return ("none: no term is held below what the θ rule gives it (protect terms with "
                "--protect TERM=CAP, a θ file's caps or the schema's protected_terms)")
    return ", ".join(f"{escape(t)} ≤ {c:g}" for t, c in m.theta_caps.items())


def _unbounded_alert(card) -> str:
    """The card's lead line: the terms some release left at θ = 1, all of them by name."""
    terms, default = card.unbounded, card.default_unbounded
    if not terms and not default:
        return ""
    n = len(card.published)
    parts = []
    if terms:
        named = ", ".join(escape(t) + ("" if len(p) == n else f" ({len(p)}/{n})")
                          for t, p in terms.items())
        latest = card.published[-1] if card.published else ""
        now = sum(latest in p for p in terms.values())
        parts.append(f"<b>θ = 1 — no limit — for {len(terms)} sensitive term(s) in some "
                     f"release, {now} in the latest ({escape(latest)})</b>: {named}.")
    if default:
        parts.append(f"<b>θ = 1 by default</b> in {escape(_span(default))}: every term those "
                     "releases do not list is unbounded.")
    return ('<div class="alert unbounded">' + " ".join(parts)
            + " A group may consist only of cases holding such a term, so publishing the group "
              "discloses the term for every one of them. Cap the terms to protect (--protect "
              "TERM=CAP, a θ file's caps or the schema's protected_terms)."
            + (f' <span class="note">(n/{n}: unbounded in n of the {n} releases)</span>'
               if any(len(p) != n for p in terms.values()) else "")
            + "</div>")


def _model_block(m: ModelCard) -> str:
    if m.model is None:
        return (f"<h4>{escape(_span(m.periods))}: method {escape(m.method)}, no privacy "
                "model</h4>" + '<div class="caveat"><b>Does not protect:</b> anything — the '
                "releases declare no privacy model, so nothing vouches for them.</div>")
    scope = ("per release only" if m.scope == "release"
             else f"across the linked releases (answers {', '.join(m.attacks) or 'no attack'})")
    defaults = ", ".join(f"{d:g}" for d in m.theta_defaults) or "–"
    n_terms = len(m.theta_overrides)
    latest_terms = sum(any(m.periods[-1] in p for p in values.values())
                       for values in m.theta_overrides.values())
    if m.epsilon_per_case is not None:
        epsilon = (f"{escape(m.epsilon_per_case)} per case per release "
                   f"(perturbed QIDs: {escape(', '.join(m.perturbed) or 'none')})")
    elif m.epsilon_nominal is not None:
        epsilon = (f"not differentially private (nominal ε {escape(m.epsilon_nominal)} only "
                   "sets the noise scale)")
    else:
        epsilon = "not differentially private (no ε)"
    if m.scope == "release":
        lifespan = "not applicable: the model considers each release alone"
    elif m.lifespan is None:
        lifespan = "every release (CaseIDs never expire)"
    else:
        lifespan = f"{m.lifespan} period(s): links further apart are not covered"
    facts = [("method", escape(m.method)),
             ("privacy model", f"{escape(m.model)} — {escape(scope)}"),
             ("releases", f"{escape(_span(m.periods))} ({len(m.periods)})"),
             ("k", _fmt(m.k)),
             ("θ", f"default {escape(defaults)}; {n_terms} term(s) with their own θ in some "
                   f"release ({latest_terms} in the latest, {escape(m.periods[-1])}), from "
                   f"{escape(_theta_rule(m))}"),
             ("θ per term", f'<span class="terms">{_theta_terms(m)}</span>'),
             ("protected terms (θ capped)", _caps(m)),
             ("ε", epsilon), ("life span", escape(lifespan))]
    if m.acknowledged:  # the checks the publisher overrode on purpose (medanon release --allow-*)
        facts.append(("overrides given", "; ".join(
            f"{escape(_OVERRIDE_TEXT.get(name, name))} ({escape(_span(found))})"
            for name, found in m.acknowledged.items())))
    return (f"<h4>{escape(_span(m.periods))}: {escape(m.model)}</h4>"
            + "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
            + '<div class="caveat"><b>Does not protect:</b> '
            + (escape(m.does_not_guarantee) if m.does_not_guarantee is not None
               else "unknown: the manifest cannot be read as this model (see verify below)")
            + "</div>"
            + f'<div class="promise"><b>Guarantees</b> (the model of {escape(m.periods[-1])}): '
            + f'{escape(m.guarantee or "")}</div>')


#: what each safety override of ``medanon release`` means, for the summary card
_OVERRIDE_TEXT = {
    "allow_unprotected": "--allow-unprotected: raw records published (method none)",
    "allow_unknown_terms": "--allow-unknown-terms: θ terms the data did not hold were accepted",
    "allow_gap": "--allow-gap: published past a missing or empty period",
    "allow_short_lifespan": "--allow-short-lifespan: the life span is shorter than the data's "
                            "follow-ups",
    "change_policy": "--change-policy: the series policy (method or parameters) was changed "
                     "from this release on (the store's policy history says from what)",
    "allow_tiny_epsilon": "--allow-tiny-epsilon: an ε below 0.01 per QID, where the noise "
                          "swamps the domain, was accepted",
}


def _screening_line(screening: dict | None) -> str:
    """The card's one line on the screening: what it compared (every drug–reaction pair of the
    release against the original data; no rule needed), how many MGPS signals the original
    has, then dedup and stratified MGPS recall and precision and the stratum signals the
    original does not have. A recall is shown only with what it was computed against: with
    no original signal there is nothing to keep, and the line says so instead of a number."""
    if not screening:
        return ("not run (the series publishes no drug or reaction column): no signal was "
                "compared")
    summary = screening["summary"]
    # the dedup scope (each case's latest version) is the headline, as FDA pools FAERS
    dedup, strata = summary["dedup"]["mgps"], summary["stratum"]["mgps"]
    base = dedup.get("signals_original")
    text = ("every drug–reaction pair of the release against the original data (no rule "
            "needed)" + (f", {base:,} MGPS signal(s) in the original each case once"
                         if base is not None else "") + ": ")
    if base == 0:
        text += (f"no recall (the original has no signal to keep); the release has "
                 f"{dedup.get('signals_release', 0):,} signal(s) each case once")
    else:
        text += (f"MGPS (EB05 ≥ 2) recall / precision: each case once "
                 f"{_fmt(dedup['recall'], 2)} / {_fmt(dedup['precision'], 2)}")
    if strata["scopes"]:
        text += (f", strata {_fmt(strata['recall'], 2)} / {_fmt(strata['precision'], 2)}; "
                 f"{strata['spurious']} spurious stratum signal(s)")
    return text


def _ingest_breakdown(r: SeriesReport, dropped: int, demo: int) -> str:
    """The card's ingest line after the arrow: the cases withheld (the only cases lost on the
    way), then the DEMO rows (report versions) that reached no release, by cause."""
    rows = [row for row in r.accounting if row["published"] and row["lost"] is not None]

    def total(key: str) -> int:
        return sum(int(row.get(key) or 0) for row in rows)

    cases, withheld = total("cases"), total("withheld")
    followups = total("reports") - cases
    causes = [(total("superseded"), "superseded versions of a case"),
              (followups, "follow-up reports combined into their case"),
              (total("duplicates"), "duplicates"), (total("deleted"), "deleted by FDA"),
              (total("dropped"), "dropped for missing values"),
              (withheld, "withheld cases")]
    named = ", ".join(f"{n:,} {what}" for n, what in causes if n)
    return (f"cases withheld by the method: {withheld:,} of {cases:,} ({_share(withheld, cases)})"
            f"; DEMO rows (one per report version) that reached no release: {dropped:,} "
            f"({_share(dropped, demo)} of the rows, not of the cases)"
            + (f": {named}" if named else ""))


def _card(r: SeriesReport) -> str:
    card = r.summary_card
    filled = _filled(r)
    kept, lost, spurious = signal_tally(r)
    dropped, demo = card.ingest_dropped
    periods = [("published", f"{len(card.published)}: {escape(_span(card.published))}"),
               ("held back", (escape(", ".join(card.held_back)) + " (ingested, not published)"
                              if card.held_back else "none"))]
    if card.empty:
        periods.append(("empty releases", escape(", ".join(card.empty))
                        + " — published with 0 cases: no metric, nothing checked"))
    numbers = [
        ("ingest", (f"{demo:,} DEMO rows → {demo - dropped:,} released cases; "
                    + _ingest_breakdown(r, dropped, demo) if demo else "no ingest report")
                   + (f"; {missing_sentence(card.missing_dropped)}" if demo else "")),
        ("after the attacks", (f"max DIR {_fmt(_max([x['dir'] for x in filled]), 2)}, "
                               f"max DSR {_fmt(_max([x['dsr'] for x in filled]), 2)}, "
                               f"{sum(x['reidentified'] for x in filled)} case(s) re-identified"
                               if filled else "no case published")),
        ("information loss", (f"mean NIL {_fmt(_mean([x['nil'] for x in filled]))}"
                              if filled else "none (no case published)")),
        ("suppressed terms", (f"{card.suppressed_terms:,} sensitive term(s) removed from "
                              "published cases (operator-only facts kept in the store)"
                              if card.suppressed_terms else "none")),
        ("signal rules", (f"{kept} kept, {lost} lost, {spurious} gained (signal in the "
                          "release only), over rules × releases" if r.rules
                     else "no rules given")),
        ("signal screening", _screening_line(r.evaluation.get("screening"))),
        ("max ε per case", escape(card.max_epsilon) if card.max_epsilon else "not DP"),
    ]
    findings = "".join(f'<li class="{kind}">{escape(text)}</li>' for kind, text in card.findings)
    if card.verify_error:
        findings += f'<li class="bad">verify could not run: {escape(card.verify_error)}</li>'
    changed = [p for p in card.published
               if card.recorded.get(p) and card.verdicts.get(p)
               and card.recorded[p] != card.verdicts[p]]
    if changed:
        findings += (f'<li class="bad">verify now differs from the verdict recorded at '
                     f"publication for {escape(', '.join(changed))}: a later release changed "
                     "what an attacker can link.</li>")
    return (f'<article class="card state-{_card_state(r)}" id="card-{_slug(r.name)}" '
            f'data-series="{escape(r.name, quote=True)}">'
            f"<h3>{escape(r.name)}{_verify_badge(r)}{_attack_badge(r)}</h3>"
            + _unbounded_alert(card)
            + "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in periods + numbers)
            + "</dl>" + "".join(_model_block(m) for m in card.models)
            + (f'<h4>Verify and the attacks</h4><ul class="findings">{findings}</ul>'
               if findings else "")
            + "</article>")


def _summary(reports: Sequence[SeriesReport]) -> str:
    rows = []
    for r in reports:
        rels, filled = r.releases, _filled(r)
        methods = sorted({str(x["method"]) for x in rels})
        kept, lost, spurious = signal_tally(r)
        card = r.summary_card
        bad = [p for p in card.published if p not in card.empty
               and card.verdicts.get(p) != "passed"]
        if card.verify_error:
            gate = '<span class="bad">could not run</span>'
        elif bad:
            gate = f'<span class="bad">{len(bad)} not passed</span>'
        elif not filled:
            gate = '<span class="warn">nothing checked (all empty)</span>'
        elif card.empty:
            gate = (f'<span class="warn">{len(filled)} passed, {len(card.empty)} empty</span>')
        elif any(kind == "warn" for kind, _ in card.findings):
            # passing its own model while the attacks break it is no all-clear (card findings)
            gate = '<span class="warn">passed its own model; the attacks find more</span>'
        else:
            gate = '<span class="ok">all passed</span>'
        rows.append([
            escape(r.name), escape(", ".join(methods)), str(len(rels)),
            str(sum(x["cases"] for x in rels)), _fmt(_mean([x["nil"] for x in filled])),
            _fmt(_max([x["dir"] for x in filled])), _fmt(_max([x["dsr"] for x in filled])),
            _fmt(_max([x["ssgr"] for x in filled])),
            str(sum(x["reidentified"] for x in filled)),
            (f"{kept} kept, {lost} lost, {spurious} gained" if r.rules else "no rules given"),
            (escape(r.ledger.max_epsilon) if r.ledger else "not DP"), gate,
        ])
    apart = ('<p class="note not-compared">Some series here are of different data (see '
             '<a href="#decision">What to publish and why</a>): their rows stand side by side '
             "but do not rank them.</p>" if not_compared(reports) else "")
    return ('<section id="summary"><h2>Summary</h2>'
            + "".join(_card(r) for r in reports)
            + "<h3>The series side by side</h3>" + apart
            + _table(["series", "method", "releases", "cases", "mean NIL", "max DIR", "max DSR",
                      "max SSGR", "re-identified (RR)", "signals", "max ε per case",
                      "verify now"], rows, left=2)
            + '<p class="note">Empty releases (no case) are left out of the means and maxima: '
              "their ratios are 0/0, not 0. DIR and DSR are the attacks' numbers (the "
              "likelihood-weighted attacker's on strict PPMS-DP releases); verify checks what "
              "each release's own model promises, which the cards above reconcile with them. "
              "Every term is explained in the glossary at the end.</p></section>")


# ---------------------------------------------------------------------------------- figures
def _figures(reports: Sequence[SeriesReport]) -> str:
    apart = ('<p class="note not-compared">Series of different data share these axes; each '
             "line is one series' own, or one input's (ingested cases, the original PRR), never "
             "joined across series.</p>" if not_compared(reports) else "")
    parts = ['<section id="figures"><h2>What was published</h2>', apart,
             _img(plots.volume_figure(reports), "cases and groups per period", "volume"),
             _img(plots.nil_figure(reports), "information loss per period", "nil"),
             "</section><section><h2>What an attacker could do</h2>",
             _img(plots.disclosure_figure(reports), "disclosure after the attacks per period",
                  "disclosure"),
             "</section><section><h2>What the release still tells an analyst</h2>"]
    signals = plots.signals_figure(reports)
    screened = [r.name for r in reports if r.evaluation.get("screening")]
    if signals is None and screened:
        # the screening needs no rule: say what it compared, beside the cards' recall
        parts.append('<p class="note">No signal rules were given (<code>--rules FILE</code>), '
                     "so no rule's PRR is drawn here. The screening compared every "
                     "drug–reaction pair of each release against its original data instead "
                     f"({escape(', '.join(screened))}): its MGPS recall is on each summary "
                     "card and its table in each series' section.</p>")
    elif signals is None:
        parts.append('<p class="note">No signal rules were given (<code>--rules FILE</code>) '
                     "and no series publishes a drug and a reaction column to screen, so no "
                     "signal was compared.</p>")
    else:
        parts.append(_img(signals, "PRR original versus release per rule", "signals"))
        parts.append('<p class="note">PRR on a log scale. ▲ on the top edge: PRR infinite (c = '
                     "0, the reaction is never reported without the drug: the strongest "
                     "disproportionality, and a signal when a ≥ 3). ▽ on the bottom edge: fewer "
                     "than 3 reports (a &lt; 3), where 001 sets PRR to 0. An undefined PRR (no "
                     "report without the drug) is not drawn. Nothing is ever drawn at 0.</p>")
    parts.append("</section>")
    return "".join(parts)


# ---------------------------------------------------------------------- per-series details
def _missing_text(missing: dict[str, int | None]) -> str:
    return ", ".join(f"{f} {n:,}" for f, n in missing.items() if n) or "–"


def _duplicates(row: dict) -> str:
    conflicting = row.get("conflicting")
    return _count(row["duplicates"]) + (f" ({_count(conflicting)} conflicting)"
                                        if conflicting else "")


def _accounting(r: SeriesReport) -> str:
    rows = r.accounting
    if not rows:
        return ""
    body = []
    for row in rows:
        dropped = ("none: kept" if row["kept_missing"]
                   else f"{_count(row['dropped'])} (--drop-missing)")
        body.append([escape(row["period"]), _count(row["demo_rows"]), _count(row["superseded"]),
                     _duplicates(row), _count(row["deleted"]), dropped,
                     "<br>".join(map(escape, _missing_text(row["missing"]).split(", "))),
                     _count(row["reports"]),
                     _count(row["cases"]),
                     _count(row["withheld"]) if row["published"] else "–",
                     _count(row["released"]) if row["published"] else "not published",
                     _share(row["lost"], row["demo_rows"])])

    pub = [row for row in rows if row["published"]]

    def total(key: str) -> int | None:
        values = [row[key] for row in pub]
        return None if not values or None in values else sum(values)

    total_row = None
    if pub:
        fields = {f: sum(row["missing"].get(f) or 0 for row in pub)
                  for f in dict.fromkeys(f for row in pub for f in row["missing"])}
        total_row = ["published", _count(total("demo_rows")), _count(total("superseded")),
                     _count(total("duplicates")), _count(total("deleted")),
                     _count(total("dropped")),
                     "<br>".join(map(escape, _missing_text(fields).split(", "))),
                     _count(total("reports")), _count(total("cases")), _count(total("withheld")),
                     _count(total("released")), _share(total("lost"), total("demo_rows"))]
    return ("<h3>Ingest accounting: where the DEMO rows went</h3>"
            # soft hyphens (U+00AD) let the one-word headers break: the table fits 1,000 px
            + _table(["period", "DEMO rows", "super\u00adseded", "dupli\u00adcate",
                      "deleted (FDA)", "dropped: missing values", "missing, by field",
                      "reports in", "cases in", "with\u00adheld", "re\u00adleased",
                      "rows not re\u00adleased"], body, left=1,
                     total=total_row)
            + '<p class="note">DEMO rows → superseded (an older version of a case in the same '
              "quarter) → duplicate (a row repeating a report kept: its report id, or its case "
              "and version under another id; conflicting: with other content) → deleted (on an FDA DELETE "
              "list) → dropped for missing values (a report may miss several fields, so the "
              "by-field counts overlap; implausible ages and weights count as missing) → "
              "reports in → cases in (follow-ups of a quarter combined) → withheld by the method "
              "→ released. Rows not released: share of DEMO rows (report versions, not cases) that "
              "reached no release; superseded versions count there though their case is "
              "released.</p>")


def _metric(x: dict, key: str, digits: int = 3) -> str:
    return "empty" if not x["cases"] else _fmt(x.get(key), digits)


def _period_table(r: SeriesReport) -> str:
    """One row per release, in the glossary's metric names. Columns no release fills (SSGR
    without α, the posterior bound of non-DP releases) are left out, so that the table fits a
    1,000 px page; ``reports in`` is in the ingest accounting above."""
    ingested = {row["period"]: row for row in r.ingested}
    bounds = {p: ((r.manifests[p].get("verification") or {}).get("bound") or {}).get(
        "max_posterior") for p in r.periods}
    show_ssgr = any(x.get("ssgr") is not None for x in r.releases)
    show_bound = any(v is not None for v in bounds.values())
    rows = []
    for x in r.releases:
        period = x["period"]
        now = r.summary_card.verdicts.get(period)
        recorded = (r.manifests[period].get("verification") or {}).get("verdict")
        if not x["cases"]:
            shown = '<span class="warn">empty: nothing checked</span>'
        elif now:
            css = "ok" if now == "passed" else "bad"
            shown = f'<span class="{css}">{escape(now)}</span>'
            if recorded and recorded != now:
                shown += f' <span class="note">(at publication: {escape(recorded)})</span>'
        else:
            shown = escape(recorded) if recorded else "not checked"
        source = ingested.get(period, {})
        attacker = _ATTACKERS.get(x.get("attacker"), "hard-exclusion")
        row = [escape(period), escape(str(x["method"])),
               f'<span class="nw">{_fmt(source.get("n_cases"))} → {x["cases"]}</span>',
               str(x["groups"]),
               _metric(x, "nil"), _metric(x, "nil_star"),
               f'{escape(attacker)} ({escape(x["attacks"])})', _metric(x, "dir"),
               _metric(x, "dir_hard"), _metric(x, "dsr")]
        if show_ssgr:
            row.append(_metric(x, "ssgr"))
        row += [_metric(x, "rr", 4), _metric(x, "ar_rev", 4)]
        if show_bound:
            row.append(_fmt(bounds[period]))
        rows.append(row + [shown])
    header = ["period", "method", "cases in → out", "groups", "NIL", "NIL*",
              "attacker (attacks)", "DIR", "DIR hard", "DSR", *(["SSGR"] if show_ssgr else []),
              "RR", "AR_rev", *(["posterior bound"] if show_bound else []), "verify now"]
    return ("<h3>Per release</h3>"
            + _table(header, rows, left=2)
            + '<p class="note">cases in: after ingest (follow-ups of the quarter combined); '
              "cases out: published. attacker: the DIR, DSR, RR and AR_rev columns are the "
              '"likelihood-weighted" attacker\'s on strict PPMS-DP releases (the posterior '
              'over candidates weighted by their noisy QIDs), the "hard-exclusion" attacker\'s '
              "elsewhere; attacks: B/F/L (and MD where declared). DIR hard: exclusions that "
              "hold for sure, the DIR the verify gate checks."
              + (" Posterior bound: the largest posterior the gate's combined DP bound allows "
                 "(recorded, and enforced only with dp-aware grouping)." if show_bound else "")
              + " verify now: the gate run over the series as it stands; a later release can "
                "break an earlier one. Every column name is in the glossary.</p>")


def _signal_table(r: SeriesReport) -> str:
    rows = []
    for x in r.releases:
        for s in x.get("signals", []):
            o, rel = s["original"], s["release"]
            changed = o["signal"] != rel["signal"]
            flag = (f'<span class="bad">{_fmt(o["signal"])} → {_fmt(rel["signal"])}</span>'
                    if changed else _fmt(o["signal"]))
            rows.append([escape(x["period"]), escape(rule_name(s["rule"])),
                         str(o["count"]), str(rel["count"]),
                         *(escape(format_ratio(side[k], side.get(f"{k}_corrected"), a=side["a"]))
                           for k in ("prr", "ror") for side in (o, rel)),
                         _fmt(o["chi_square"], 1), _fmt(rel["chi_square"], 1), flag])
    if not rows:
        return ""
    tally = [[escape(t["rule"]), str(t["original"]), str(t["kept"]),
              f'<span class="bad">{t["lost"]}</span>' if t["lost"] else "0",
              f'<span class="bad">{t["spurious"]}</span>' if t["spurious"] else "0",
              str(t["infinite"])] for t in rule_tally(r)]
    return ("<h3>Signals per rule: kept and lost</h3>"
            + _table(["rule", "signals (original)", "kept", "lost", "gained",
                      "PRR ∞ (original)"], tally)
            + "<h3>Signals, original versus release</h3>"
            + _table(["period", "rule", "count orig", "count rel", "PRR orig", "PRR rel",
                      "ROR orig", "ROR rel", "χ² orig", "χ² rel", "signal"], rows, left=2)
            + '<p class="note">∞: c = 0 (for ROR: b·c = 0), with the Haldane–Anscombe corrected '
              "value (HA, +0.5 in every cell) beside it; n/a: undefined (no report without the "
              "drug); 0 (a&lt;3): fewer than 3 reports, set to 0 by 001's rule. Signal: a ≥ 3 "
              "and (PRR = ∞ or PRR ≥ 2 and χ² ≥ 4).</p>")


def _screening_table(r: SeriesReport) -> str:
    screening = r.evaluation.get("screening")
    if not screening:
        return ""
    rows = []
    for e in screening["scopes"]:
        st = e["statistics"]
        spurious = st["mgps"]["signals_release"] - st["mgps"]["common"]
        scope = {"dedup": "each case once (dedup)", "pooled": "every row (pooled)"}.get(
            e["scope"], f"up to {e['scope']}" if e["kind"] == "cumulative" else e["scope"])
        rows.append([escape(scope),
                     f'<span class="nw">{e["reports"]["original"]} / {e["reports"]["release"]}</span>',
                     str(e["undecided"]["release"]),
                     *(f'{_fmt(st[s]["recall"], 2)} / {_fmt(st[s]["precision"], 2)}'
                       for s in ("mgps", "bcpnn", "prr")),
                     f'{_fmt(st["mgps"]["spearman"], 2)} / {_fmt(st["bcpnn"]["spearman"], 2)}',
                     f'<span class="bad">{spurious}</span>' if spurious else "0"])
    listed = []
    for e in screening["scopes"]:
        if e["kind"] != "stratum":
            continue
        for s in e["spurious"]["mgps"]:
            listed.append([escape(e["scope"]), escape(s["drug"]), escape(s["reaction"]),
                           str(s["release"]["n"]), _fmt(s["release"]["eb05"]),
                           str(s["original"]["n"]), _fmt(s["original"].get("eb05"))])
    # scopes whose prior did not converge, grouped by why (a long series holds dozens)
    why_scopes: dict[str, list[str]] = {}
    held_flips = 0  # pair decisions that differ under the limit of those held fits (issue 42)
    for e in screening["scopes"]:
        for side in ("original", "release"):
            prior = (e.get("prior") or {}).get(side)
            if prior and not prior.get("converged", True):
                message = prior.get("message", "")
                if "no finite maximum" in message:
                    why = ("no finite maximum (the likelihood rises as a component tends to a "
                           "point mass), held at openEBGM's bound 100")
                    held_flips += (e.get("limit_prior_flips") or {}).get(side, 0)
                elif "at a bound" in message:
                    why = message[message.index("at a bound"):].split("; E binned")[0]
                else:
                    why = message
                why_scopes.setdefault(why, []).append(f"{e['scope']} ({side})")
    unfitted = [f"{escape(why)}: {escape(', '.join(where))}" for why, where in why_scopes.items()]
    if any("no finite maximum" in why for why in why_scopes):
        unfitted.append(f"{held_flips} pair decision(s) of those held scopes differ under the "
                        "limit the fit tends to (column limit_prior_flips of medanon signals): "
                        "read them as undecided" if held_flips else
                        "every decision of those held scopes holds under the limit the fit "
                        "tends to as well")
    planted = ""
    if screening.get("planted_summary"):
        planted = ("<h4>Rules inside their own condition, and manufactured in the opposite "
                   "stratum</h4>"
                   + _table(["statistic", "signals (original)", "kept", "recall",
                             "manufactured (opposite stratum)"],
                            [[name, str(s["signals_original"]), str(s["kept"]),
                              _fmt(s["recall"]), str(s["manufactured_opposite"])]
                             for name, s in screening["planted_summary"].items()]))
    return ("<h3>Signal screening: every drug–reaction pair, original versus release</h3>"
            + _table(["scope", "reports orig / rel", "undecided (rel)",
                      "MGPS recall / precision", "BCPNN recall / precision",
                      "PRR recall / precision", "Spearman EBGM / IC",
                      "spurious (MGPS)"], rows)
            + planted
            + (("<h4>Spurious stratum signals (MGPS EB05 ≥ 2 in the release, not in the "
                "original)</h4>" + _table(["stratum", "drug", "reaction", "n rel", "EB05 rel",
                                           "n orig", "EB05 orig"], listed, left=3))
               if listed else "")
            + (('<p class="note">MGPS prior not converged (used as fitted; a fit at a bound '
                "has no maximum-likelihood prior inside the bounds): " + "; ".join(unfitted)
                + "</p>") if unfitted else "")
            + '<p class="note">Signals: MGPS EB05 ≥ 2 (DuMouchel 1999, FDA), BCPNN IC025 &gt; 0 '
              "(WHO-UMC), PRR by Evans 2001. Each case once: every case by its latest published "
              "row, as FDA pools FAERS; a quarter's scope is that quarter's rows. A stratum "
              "holds the latest rows whose published cell lies wholly inside it; undecided "
              "reports (generalized across the stratum's edge) are left out. The pair tables "
              "are those of <code>medanon signals</code>.</p>")


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
            + (_img(figure, "epsilon ledger", "ledger") if figure is not None else "")
            + _table(["case", "ε per case", "releases"],
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
    if method.get("final") is True:
        lines.append("The series' final release (release --final): grouped as if none of its "
                     "cases went on, so nothing may be published after it.")
    theta = details.pop("theta_table", None)
    if isinstance(theta, dict):
        overrides = theta.get("overrides") or {}
        lines.append(f"θ per sensitive term: default {theta.get('default')}, "
                     f"{len(overrides)} term(s) with their own θ"
                     + (f" ({', '.join(f'{k} {v}' for k, v in overrides.items())})"
                        if overrides else ""))
        if theta.get("caps"):
            lines.append("Protected terms, θ capped: "
                         + ", ".join(f"{k} ≤ {v}" for k, v in theta["caps"].items()) + ".")
    counts = manifest.get("counts") or {}
    if counts.get("suppressed"):
        lines.append(f"{counts['suppressed']} case(s) withheld from the release.")
    if counts.get("suppressed_terms"):
        lines.append(f"{counts['suppressed_terms']} sensitive term(s) removed from published "
                     "cases (one per case and term)"
                     + (f", from {details['cases_with_suppressed_terms']} case(s) that fit no "
                        "group with all their terms" if details.get("cases_with_suppressed_terms")
                        else "") + ".")
    if not counts.get("cases") and "cases" in counts:
        lines.append("The release is empty: it publishes no case.")
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
            profile_rows.append([escape(q.name), escape(q.kind),
                                 f"{q.exact:.0%} {q.specific_label}",
                                 f"{q.generalized:.0%}", f"{q.suppressed:.0%}",
                                 f"{q.missing:.0%}", escape(levels)])
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
            + "<p><b>What was generalized, perturbed or withheld, and why</b></p>" + why
            + _table(["QID", "kind", "most specific (exact or perturbed)", "generalized",
                      "suppressed (*)", "missing (empty)", "levels"], profile_rows, left=2)
            + (_dl([(f"detail {k}", v) for k, v in _flatten(details)]) if details else "")
            + "<details><summary>full manifest (JSON)</summary><pre>"
            + escape(json.dumps(m, indent=2, sort_keys=True, default=str)) + "</pre></details>"
            + "</details>")
    return "".join(parts)


def _anchor(anchor: str) -> str:
    """An empty link target placed just before a heading (the headings keep their plain
    ``<h3>`` form, which other tools and tests search for)."""
    return f'<a class="anchor" id="{escape(anchor, quote=True)}"></a>'


def _series_parts(r: SeriesReport) -> list[tuple[str, str, str]]:
    """The parts of a series' section as ``(anchor, contents entry, html)``; a part with no
    html (no signal rules, no screening) is left out, and so is its contents entry."""
    slug = _slug(r.name)
    parts = [(f"accounting-{slug}", "ingest accounting", _accounting(r)),
             (f"releases-{slug}", "per-release table", _period_table(r)),
             (f"signals-{slug}", "signals", _signal_table(r)),
             (f"screening-{slug}", "screening", _screening_table(r)),
             (f"generalization-{slug}", "generalization",
              _img(plots.generalization_figure(r), f"generalization profile of {r.name}",
                   "generalization")),
             (f"ledger-{slug}", "ledger", _ledger(r)),
             (f"manifests-{slug}", "manifests", _manifests(r))]
    return [part for part in parts if part[2]]


def _series_section(r: SeriesReport, parts: list[tuple[str, str, str]]) -> str:
    return (f'<section id="series-{_slug(r.name)}"><h2>Series {escape(r.name)}</h2>'
            f'<p class="note">store {escape(r.store)}, schema {escape(r.schema)}</p>'
            + "".join(_anchor(anchor) + html for anchor, _, html in parts) + "</section>")


def _decisions(reports: Sequence[SeriesReport]) -> str:
    """The page's first section: per series, what to do and why (:func:`decision`), and with
    several series, which is better on risk and on utility (:func:`comparison`)."""
    blocks = []
    for r in reports:
        d = decision(r)
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in d.reasons)
        blocks.append(f'<div class="decision state-{d.state}" data-series="'
                      f'{escape(r.name, quote=True)}" data-decision="{d.state}">'
                      f'<p class="line"><b>{escape(r.name)}</b> — {escape(d.line)}</p>'
                      f'<ul>{reasons}</ul>'
                      f'<p class="note">details: <a href="#card-{_slug(r.name)}">summary card'
                      f'</a> · <a href="#releases-{_slug(r.name)}">per-release table</a></p>'
                      "</div>")
    compared = comparison(reports)
    # series of different data are told apart plainly, never ranked against each other
    apart = not_compared(reports)
    return ('<section id="decision"><h2>What to publish and why</h2>'
            + "".join(blocks)
            + "".join(f'<p class="alert not-compared">{escape(line)}</p>' for line in apart)
            + (('<ul class="findings compare">' + "".join(f"<li>{escape(c)}</li>"
                                                          for c in compared) + "</ul>")
               if compared else "")
            + '<p class="note">Read from the verify gate, the attacks and the screening below: '
              "<b>Do not publish as is</b> when a release fails verify (or verify cannot run), "
              "no model is declared, or the attacks re-identify a case, narrow a group below k "
              "or push a term above its θ; <b>Publish with care</b> when terms are left at "
              "θ = 1, releases are empty, held back or withhold cases, the gate passes what "
              "the attacks break, or the release keeps fewer than "
              f"{RECALL_CARE:.0%} of the original's MGPS signals (each case once); "
              "<b>Publish</b> otherwise.</p></section>")


def _contents(reports: Sequence[SeriesReport],
              parts: dict[str, list[tuple[str, str, str]]]) -> str:
    """The table of contents: every entry links to an anchor the page holds."""
    cards = "".join(f'<li><a href="#card-{_slug(r.name)}">{escape(r.name)}</a></li>'
                    for r in reports)
    series = "".join(
        f'<li><a href="#series-{_slug(r.name)}">Series {escape(r.name)}</a><ol>'
        + "".join(f'<li><a href="#{anchor}">{escape(entry)}</a></li>'
                  for anchor, entry, _ in parts[r.name]) + "</ol></li>" for r in reports)
    return ('<section id="contents"><nav class="toc"><h2>Contents</h2><ol>'
            '<li><a href="#decision">What to publish and why</a></li>'
            f'<li><a href="#summary">Summary cards</a><ol>{cards}</ol></li>'
            '<li><a href="#figures">Figures: what was published, what an attacker could do, '
            "what an analyst keeps</a></li>"
            + series + '<li><a href="#glossary">Glossary</a></li></ol></nav></section>')


# --------------------------------------------------------------------------------- glossary
def _glossary() -> str:
    return ('<section id="glossary"><h2>Glossary</h2>'
            + _table(["term", "what it means", "JSON key(s)", "better"],
                     [[f"<b>{escape(t.label)}</b>", escape(t.meaning),
                       "; ".join(escape(k) for k in t.keys), escape(t.better)]
                      for t in GLOSSARY], left=4)
            + "</section>")


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
    body = [_decisions(reports), _summary(reports), _figures(reports)]
    step("figures")
    parts = {}
    for r in reports:
        parts[r.name] = _series_parts(r)
        body.append(_series_section(r, parts[r.name]))
        step(r.name)
    body.append(_glossary())
    return head + _contents(reports, parts) + "".join(body) + "</main></body></html>\n"

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
