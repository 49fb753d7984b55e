"""Issue 33: one vocabulary for every metric, across the CLI tables, the JSON keys, the report's
Glossary and docs/metrics.md.

The CLI tables are read from the source (every ``Table(...)`` call of the CLI modules, its
header arguments evaluated in the module's namespace), so that a header nobody runs in a test
is checked too: it must be a plain label (what a row is about, a count of things) or a name of
the glossary, with at most a side (" orig", " rel") or an aggregate ("max ", "mean ").
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

import medanon.cli.commands
import medanon.cli.tabular
from medanon import vocabulary as V
from medanon.experiments.outputs import METRICS, PARAMS
from medanon.metrics.signal_table import SIGNAL_RULES
from tests.conftest import ROOT

#: headers that name no metric: what a row is (period, rule, ...), settings, counts of things,
#: ids. A header not here must be a glossary name.
PLAIN_LABELS = {
    "#", "period", "era", "method", "model", "policy", "status", "why not", "CPU s", "scope",
    "statistic", "rule", "query", "aggregate", "mechanisms", "prior", "tasks", "cases", "groups",
    "reports", "pairs", "pairs (original)", "reports orig/rel", "follow-ups", "deleted",
    "DEMO rows", "duplicates", "superseded", "dropped (missing)", "repaired lines", "notes",
    "published", "released cases", "input sha256 (operator only)",
    # the experiments' settings (PARAMS) that are no glossary term
    "alpha", "on_unplaceable", "variant", "gamma", "selection",
}
#: the series the demo's table compares, each column "<series> <metric>"
DEMO_SERIES = ("PPMS++ ", "MS ")
#: what the CLI computes at run time, for the header arguments that read it: every experiment's
#: metric columns and settings, the signal rules
RUN_TIME = {"metrics": sorted({m for ms in METRICS.values() for m, _ in ms}), "params": PARAMS,
            "SIGNAL_RULES": SIGNAL_RULES}
#: the CLI modules that print tables (clinsim prints its metrics in sentences)
CLI_MODULES = (medanon.cli.commands, medanon.cli.tabular)


def _table_headers(module) -> list[tuple[str, str]]:
    """(function, header) of every positional argument of every ``Table(...)`` in ``module``."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    namespace = {**vars(module), **RUN_TIME}
    found = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for call in ast.walk(function):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "Table"):
                continue
            for arg in call.args:
                starred = isinstance(arg, ast.Starred)
                code = compile(ast.Expression(arg.value if starred else arg), module.__file__,
                               "eval")
                # the module's own header expression, over its own names
                value = eval(code, namespace)
                for header in (list(value) if starred else [value]):
                    found.append((function.name, header))
    return found


def _metric_name(function: str, header: str) -> V.Term | None:
    if function == "_demo_summary":
        for series in DEMO_SERIES:
            header = header.removeprefix(series)
    return V.resolve_header(header)


@pytest.mark.parametrize("module", CLI_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_cli_table_header_is_a_plain_label_or_a_glossary_name(module):
    headers = _table_headers(module)
    assert headers  # the tables were found (a renamed Table would leave nothing to check)
    unnamed = sorted({f"{f}: {h!r}" for f, h in headers
                      if h not in PLAIN_LABELS and _metric_name(f, h) is None})
    assert unnamed == [], "not in the glossary (medanon/vocabulary.py) nor a plain label"


def test_every_cli_module_with_a_table_is_checked():
    printing = {p.stem for p in (ROOT / "src" / "medanon" / "cli").glob("*.py")
                if "Table(" in p.read_text(encoding="utf-8")}
    assert printing == {m.__name__.rsplit(".", 1)[-1] for m in CLI_MODULES}


def test_the_commands_tables_are_all_read():
    functions = Counter(f for f, _ in _table_headers(medanon.cli.commands))
    # verify, attack, evaluate (+ its signals, screening, first-signal and planted tables),
    # release, ledger, plan, signals, inspect, experiment, demo, synth, ingest
    for name in ("verify", "_attack", "_evaluation_tables", "_screening_tables", "release",
                 "ledger", "plan", "signals", "inspect", "experiment", "_demo_summary"):
        assert functions[name] >= 3, name


#: the report's headers that name no metric
REPORT_PLAIN_LABELS = {
    "series", "method", "releases", "cases", "period", "DEMO rows", "superseded", "duplicate",
    "deleted (FDA)", "dropped: missing values", "missing, by field", "reports in", "cases in",
    "released", "cases in → out", "groups", "rule", "statistic", "case", "scope",
    "reports orig / rel", "stratum", "drug", "reaction", "QID", "kind", "term", "what it means",
    "JSON key(s)", "better",
    # the kinds of published value a QID profile counts ("suppressed (*)" is a glossary term)
    "most specific (exact or perturbed)", "generalized", "missing (empty)", "levels",
}


def _report_headers() -> list[str]:
    """Every string of every header list the report hands ``_table`` (also the lists it builds
    in a variable first, with their optional columns)."""
    import medanon.report.html as html

    tree = ast.parse(Path(html.__file__).read_text(encoding="utf-8"))
    found = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        assigned = {t.id: node.value for node in ast.walk(function) if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name)}
        for call in ast.walk(function):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id == "_table"):
                header = call.args[0]
                header = assigned.get(header.id, header) if isinstance(header, ast.Name) else header
                fstrings = {id(c) for j in ast.walk(header) if isinstance(j, ast.JoinedStr)
                            for c in ast.walk(j)}
                found += [c.value for c in ast.walk(header) if isinstance(c, ast.Constant)
                          and isinstance(c.value, str) and id(c) not in fstrings]
    return found


def _report_column(header: str) -> bool:
    """A glossary name, or two in one column: "MGPS recall / precision" (the first word shared),
    "attacker (attacks)"."""
    if V.resolve_header(header):
        return True
    if " / " in header:
        first, second = header.split(" / ", 1)
        shared = first.rsplit(" ", 1)[0] + " " if " " in first else ""
        return bool(V.resolve_header(first) and V.resolve_header(shared + second))
    if header.endswith(")") and " (" in header:
        outer, inner = header[:-1].split(" (", 1)
        return bool(V.resolve_header(outer) and V.resolve_header(inner))
    return False


def test_every_report_table_header_is_a_plain_label_or_a_glossary_name():
    headers = _report_headers()
    assert {"DIR hard", "verify now", "gained", "max ε per case"} <= set(headers)  # all read
    unnamed = sorted({h for h in headers
                      if h.replace("\u00ad", "") not in REPORT_PLAIN_LABELS
                      and not _report_column(h)})
    assert unnamed == []


def test_a_plain_label_names_no_metric():
    # else a metric could hide in PLAIN_LABELS, away from the glossary
    assert sorted(h for h in PLAIN_LABELS | REPORT_PLAIN_LABELS
                  if V.resolve_header(h) is not None) == []


def test_the_old_headers_now_fail_and_the_qualified_names_resolve():
    # the names the CLI used before issue 33 for a quantity the glossary names otherwise
    for old in ("worst DIR", "EBGM Spearman", "epsilon per case (max)", "planted signals",
                "manufactured in the opposite stratum", "DIR (max)"):
        assert V.resolve_header(old) is None, old
    assert V.resolve_header("max DIR").label == "DIR"
    assert V.resolve_header("count orig").label == "count, n"
    assert V.resolve_header("PRR rel").label == "PRR"
    assert V.resolve_header("signal orig/rel").label == "signal"
    assert V.resolve_header("undecided rel").label == "undecided"
    assert V.resolve_header("mean NIL").label == "NIL"
    assert V.resolve_header("max ε per case").label == "max ε per case"  # its own quantity


def test_one_display_name_one_quantity():
    names = Counter(n for t in V.GLOSSARY for n in t.display_names)
    assert sorted(n for n, count in names.items() if count > 1) == []
    labels = Counter(t.label for t in V.GLOSSARY)
    assert sorted(n for n, count in labels.items() if count > 1) == []


def test_every_display_name_constant_is_a_glossary_name():
    constants = {k: v for k, v in vars(V).items()
                 if k.isupper() and isinstance(v, str) and k != "REPORT_ONLY"}
    assert len(constants) > 30
    assert sorted(k for k, v in constants.items() if V.resolve_header(v) is None) == []
    assert all(V.resolve_header(V.signals_of(r)) for r in SIGNAL_RULES)


def _source_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8")
                     for p in (ROOT / "src" / "medanon").rglob("*.py") if p.name != "vocabulary.py")


def test_every_glossary_entry_names_json_keys_that_the_code_writes():
    source = _source_text()
    report_only = {t.label for t in V.GLOSSARY if t.keys == (V.REPORT_ONLY,)}
    # the two the report computes for itself, and nothing else
    assert report_only == {"rows not released", "suppressed (*)",
                           "Publish / with care / do not publish as is"}
    missing = []
    for term in V.GLOSSARY:
        assert term.keys and all(k.strip() for k in term.keys), term.label
        if term.label in report_only:
            continue
        assert term.key_names, term.label
        for key in term.key_names:
            # a dict key or column ("key"), a dataclass field (key: ...) or a keyword (key=...)
            if not re.search(rf"[\"']{re.escape(key)}[\"']|\b{re.escape(key)}\s*[:=]", source):
                missing.append(f"{term.label}: {key}")
    assert missing == []


def test_every_experiment_metric_column_has_its_glossary_name():
    shown = {m: V.name_for_key(m) for ms in METRICS.values() for m, _ in ms}
    assert all(V.resolve_header(name) for name in shown.values())
    # names pair with keys in order where a term lists as many of each
    assert (shown["ncp"], shown["emd"], shown["rate"], shown["il"]) == ("NCP", "EMD", "Rate", "IL")
    assert (shown["count_bias_abs"], shown["prr_bias_abs"]) == ("|count bias|", "|PRR bias|")
    assert (shown["dir"], shown["dsr_requested"]) == ("DIR", "DSR requested")
    with pytest.raises(KeyError):
        V.name_for_key("no_such_metric")


def test_the_docs_vocabulary_table_is_the_glossary():
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    start = text.index("<!-- vocabulary:start")
    body = text[text.index("\n", start) + 1:text.index("<!-- vocabulary:end -->")]
    assert body == V.glossary_markdown(), (
        "regenerate docs/metrics.md's Vocabulary table from medanon.vocabulary.glossary_markdown()")
    assert body.count("\n") == len(V.GLOSSARY) + 2


def test_the_report_glossary_is_the_same_tuple_with_its_keys():
    from html import escape

    from medanon.report.html import _glossary

    page = _glossary()
    for term in V.GLOSSARY:
        assert f"<b>{escape(term.label)}</b>" in page, term.label
        assert all(escape(k) in page for k in term.keys), term.label
