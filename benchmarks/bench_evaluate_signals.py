"""Benchmark: ``medanon evaluate`` and ``medanon signals`` on a long published series (issue 43).

Each command runs in a fresh child process (``python -m medanon``), measured from its own
rusage (:func:`bench_faers_scale.run_stage`): CPU time (user + system), wall time and peak RSS.
CPU time is the figure to read on a shared machine; the wall time moves with the load.

The series is either built here (``medanon synth faers`` with follow-ups, ``ingest``, ``release``
PPMS++ k 5, θ frequency, suppress-terms, seeded) or given (``--store``, a published store; it is
only read). The commands timed:

* ``evaluate --store S --rules R --json`` (R: the synthetic series' planted signals);
* ``signals --store S --side release`` (the default scope, dedup);
* with ``--all-scopes``, ``signals ... --scope dedup,pooled,quarter,cumulative --stratify-by
  age,sex`` too.

With ``--baseline-src DIR`` (a ``src`` folder of another checkout, e.g. ``git archive main src``)
every command runs a second time on that code, and the script says whether each output
(evaluate's JSON, the signals CSV and its sidecar) is the same, byte for byte.

    python benchmarks/bench_evaluate_signals.py                       # 24 quarters x 20k cases
    python benchmarks/bench_evaluate_signals.py --periods 4 --cases 2000
    python benchmarks/bench_evaluate_signals.py --store /tmp/h43e/published.duckdb \\
        --baseline-src /tmp/h43e/base/src

Goal (issue 43), 24 x 20k: evaluate <= 20 s CPU; signals <= 5 s CPU and <= 500 MB, both
reading the series a release at a time. Not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import sys
import tempfile
from pathlib import Path

# benchmarks/ is no package: run as a script, this file's folder is sys.path[0]
from bench_faers_scale import (Measure, bytecode_note, format_table, machine, medanon_info,
                               release_flags, run_stage, write_rules)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=24)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--store", type=Path, help="a published store to read (not built)")
    parser.add_argument("--all-scopes", action="store_true",
                        help="also time signals over every scope, stratified by age and sex")
    parser.add_argument("--baseline-src", type=Path,
                        help="run every command on this src folder too and compare outputs")
    parser.add_argument("--workdir", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--cold-bytecode", action="store_true",
                        help="do not compile medanon's bytecode (both sides) before timing")
    return parser.parse_args(argv)


def build_store(work: Path, args: argparse.Namespace, logs: Path) -> list[Measure]:
    """Synthesize, ingest and release the series into ``work``/s.duckdb."""
    medanon = [sys.executable, "-m", "medanon"]
    steps = [
        ("synth", ["synth", "faers", work / "faers", "--periods", args.periods, "--cases",
                   args.cases, "--follow-up-rate", "0.1", "--seed", args.seed, "--json"]),
        ("ingest", ["ingest", work / "faers", "--store", work / "s.duckdb", "--json"]),
        ("release", ["release", "--store", work / "s.duckdb",
                     *release_flags("ppms++", k=5, alpha=0.5, epsilon="1", seed=args.seed)]),
    ]
    out = []
    for label, argv in steps:
        print(f"... {label}", file=sys.stderr, flush=True)
        out.append(run_stage(label, [*medanon, *map(str, argv)], logs)[0])
    return out


def commands(store: Path, rules: Path, out: Path, all_scopes: bool) -> list[tuple[str, list, list]]:
    """(label, arguments, the files it writes) of each command timed."""
    runs = [("evaluate", ["evaluate", "--store", store, "--rules", rules, "--json"], []),
            ("signals", ["signals", "--store", store, "--side", "release", "--out",
                         out / "signals.csv"], [out / "signals.csv", out / "signals.csv.json"])]
    if all_scopes:
        runs.append(("signals all scopes",
                     ["signals", "--store", store, "--side", "release", "--scope",
                      "dedup,pooled,quarter,cumulative", "--stratify-by", "age,sex", "--out",
                      out / "signals-all.csv"],
                     [out / "signals-all.csv", out / "signals-all.csv.json"]))
    return runs


def timed(label: str, argv: list, logs: Path, src: Path | None) -> tuple[Measure, str]:
    """One command in a child, on ``src`` (None: the medanon this Python imports)."""
    print(f"... {label}{' (baseline)' if src else ''}", file=sys.stderr, flush=True)
    before = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = str(src)  # the child inherits this process's environment
    try:
        return run_stage(label + (" base" if src else ""),
                         [sys.executable, "-m", "medanon", *map(str, argv)], logs)
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = medanon_info()
    work = Path(tempfile.mkdtemp(prefix="bench-eval-signals-", dir=args.workdir))
    logs = work / "logs"
    logs.mkdir()
    built: list[Measure] = []
    store = args.store
    if store is None:
        built = build_store(work, args, logs)
        store = work / "s.duckdb"
    rules = write_rules(work / "rules.toml", info["rules"])
    notes = [bytecode_note(info["path"], args.cold_bytecode)]
    if args.baseline_src is not None and not args.cold_bytecode:
        notes.append(bytecode_note(args.baseline_src / "medanon", False) + " (baseline)")
    measures, compared = [], []
    for side, src in (("new", None), ("base", args.baseline_src)):
        if side == "base" and src is None:
            continue
        out = work / side
        out.mkdir()
        for label, command, files in commands(store, rules, out, args.all_scopes):
            measure, stdout = timed(label, command, logs, src)
            measures.append(measure)
            if label == "evaluate":
                (out / "evaluate.json").write_text(stdout, encoding="utf-8")
                files = [out / "evaluate.json"]
            if side == "base":
                for path in files:
                    mine = work / "new" / path.name
                    compared.append((path.name, filecmp.cmp(mine, path, shallow=False)))
    print(f"medanon {info['version']} ({info['path']}); store {store}")
    print(f"machine: {machine()}")
    print("\n".join(notes))
    print(format_table(built + measures))
    for name, same in compared:
        print(f"{name}: {'identical' if same else 'DIFFERENT'} to the baseline's")
    print(f"work folder: {work}")
    return 0 if all(same for _, same in compared) else 1


if __name__ == "__main__":
    raise SystemExit(main())
