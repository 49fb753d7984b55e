"""Benchmark: spurious stratified signals of the PPMS-DP methods across ε, with and without the
label remedy (``--dp-label-confidence``, ``--dp-label-mechanism``; issue 22, item 5).

Rows: PPMS++ (no noise), then per ε PPMS-DP_num, PPMS-DP_all as in 000, and PPMS-DP_all with
each confidence ``c`` for 000's draw cut to the level (``exp``, shown without a tag) and for
randomized response (``rr``). The default grid (25 releases) takes about 13 minutes on 2 cores.

The flow is the one a steward runs, through the CLI: ``medanon synth faers`` (the default
8 quarters × 3,000 cases, seeded, six planted signals) → ``medanon ingest`` (every report kept)
→ per method, ε and remedy a copy of the ingested store → ``medanon release`` (fixed seed) →
``medanon evaluate --rules FILE --json``. The rules put each planted drug → reaction pair of
:data:`medanon.data.synth.faers.PLANTED_SIGNALS` in its own stratum (``AVANDIA, age > 18``) and
in the opposite one (``AVANDIA, age <= 18``). Printed per setting:

* ``opp rel/orig``: opposite-stratum rule-quarters that are signals (Evans: a >= 3, PRR >= 2,
  χ² >= 4) in the release / in the original (out of 6 rules × quarters);
* ``own``: own-stratum recall, the original's own-stratum signal rule-quarters that are also
  signals in the release;
* ``pool opp``/``pool own``: the same on all quarters' reports pooled (one table per rule);
* ``age ×``/``sex ×``: the share of published labels that contradict the truth (neither the
  original label nor an ancestor or descendant of it; an ancestor is "generalized", not
  contradicting), over the published cases whose original value is known; ``inv``: the share
  of cases with a missing original age that were published with a specific one;
* ``NIL``, ``NIL*``, ``RR`` (likelihood-weighted attacker on strict PPMS-DP): means over the
  quarters of ``evaluate``'s ``nil``, ``nil_star`` and ``rr``;
* ``levels``: the hierarchy level each perturbed categorical QID is published at (remedy).

    python benchmarks/bench_dp_strata.py                         # 8 x 3000, the full grid
    python benchmarks/bench_dp_strata.py --cases 1000 --periods 4 --epsilons 1 10 --confidences 0.99

Each measurement is one function taking the evaluation JSON (or the store) and returning a
dict of columns, so another screening (MGPS, BCPNN) can be added as one more function in
:data:`MEASURES`. Not a test: the figures vary with the seed; the timings with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from medanon.data.synth.faers import PLANTED_SIGNALS
from medanon.metrics.signals import SignalRule, compare_signals
from medanon.published.cells import categorical_codes
from medanon.published.format import original_as_published
from medanon.published.series import load_series
from medanon.report.collect import store_originals
from medanon.store import ReleaseStore

#: the opposite of each planted condition (on the synthetic data's own attributes)
OPPOSITE = {"age > 18": "age <= 18", "age > 60": "age <= 60", "sex = F": "sex = M",
            "sex = M": "sex = F"}


#: short names of the label mechanisms in the printed settings
SHORT = {"exponential": "exp", "randomized-response": "rr"}


@dataclass(frozen=True)
class Setting:
    """One release of the grid: a method, its ε (None for PPMS++) and the remedy: the label
    confidence and the label mechanism (None: the defaults, 000's draw as it is)."""

    method: str
    epsilon: float | None = None
    confidence: float | None = None
    mechanism: str | None = None

    @property
    def name(self) -> str:
        eps = "" if self.epsilon is None else f" e{self.epsilon:g}"
        mech = "" if self.mechanism is None else f" {SHORT[self.mechanism]}"
        conf = "" if self.confidence is None else f" c{self.confidence:g}"
        return f"{self.method}{eps}{mech}{conf}"

    def release_args(self) -> list[str]:
        args = ["--method", self.method]
        if self.epsilon is not None:
            args += ["--epsilon", f"{self.epsilon:g}"]
        if self.confidence is not None:
            args += ["--dp-label-confidence", f"{self.confidence:g}"]
        if self.mechanism is not None:
            args += ["--dp-label-mechanism", self.mechanism]
        return args


# ----------------------------------------------------------------------------------- the flow
def medanon(*args: str, json_out: bool = False) -> dict | None:
    """Run ``python -m medanon ARGS`` (this interpreter, this PYTHONPATH); its JSON if asked."""
    cmd = [sys.executable, "-m", "medanon", *args, *(["--json"] if json_out else [])]
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if json_out else None


def write_rules(path: Path) -> tuple[list[str], list[str]]:
    """The rules file: each planted pair in its own and in the opposite stratum.

    Returns the names of the own-stratum and opposite-stratum rules (as ``evaluate`` names them).
    """
    own, opposite, text = [], [], []
    for r in PLANTED_SIGNALS:
        for condition, names in ((r.condition, own), (OPPOSITE[r.condition], opposite)):
            text.append(f"[[rule]]\ndrug = {json.dumps(r.drug)}\n"
                        f"reaction = {json.dumps(r.reaction)}\n"
                        f"condition = {json.dumps(condition)}\n")
            names.append(f"{r.drug}, {condition} -> {r.reaction}")
    path.write_text("\n".join(text), encoding="utf-8")
    return own, opposite


def ingest_flags() -> list[str]:
    """Keep every report: ``--keep-missing`` where ingest still drops by default."""
    done = subprocess.run([sys.executable, "-m", "medanon", "ingest", "--help"],
                          capture_output=True, text=True, env=os.environ.copy())
    return ["--keep-missing"] if "--keep-missing" in done.stdout else []


def prepare(work: Path, *, periods: int, cases: int, seed: int) -> Path:
    """synth → ingest into ``work/base.duckdb`` (copied for each setting)."""
    medanon("synth", "faers", str(work / "faers"), "--periods", str(periods), "--cases",
            str(cases), "--seed", str(seed))
    base = work / "base.duckdb"
    medanon("ingest", str(work / "faers"), "-s", str(base), *ingest_flags())
    return base


def release(base: Path, work: Path, setting: Setting, *, k: int, theta: str, seed: int) -> Path:
    """A copy of the ingested store with every period released under ``setting``."""
    store = work / f"{setting.name.replace(' ', '-')}.duckdb"
    shutil.copyfile(base, store)
    medanon("release", "-s", str(store), *setting.release_args(), "--k", str(k), "--theta",
            theta, "--on-infeasible", "raise-theta", "--max-withheld", "1", "--seed", str(seed),
            "--allow-seeded")
    return store


# ---------------------------------------------------------------------------- measurements
def signal_counts(evaluation: dict, store: Path, own: list[str], opposite: list[str]) -> dict:
    """Opposite-stratum signals (release and original) and own-stratum recall, per quarter."""
    hits = {"opp_rel": 0, "opp_orig": 0, "own_orig": 0, "own_kept": 0, "opp_n": 0}
    for entry in evaluation["releases"]:
        for s in entry.get("signals", []):
            name = s["rule"]["name"]
            orig, rel = bool(s["original"]["signal"]), bool(s["release"]["signal"])
            if name in opposite:
                hits["opp_n"] += 1
                hits["opp_rel"] += rel
                hits["opp_orig"] += orig
            elif name in own and orig:
                hits["own_orig"] += 1
                hits["own_kept"] += rel
    return {"opp": f"{hits['opp_rel']}/{hits['opp_orig']} of {hits['opp_n']}",
            "own": hits["own_kept"] / hits["own_orig"] if hits["own_orig"] else float("nan")}


def pooled_signals(evaluation: dict, store: Path, own: list[str], opposite: list[str]) -> dict:
    """The same rules on every quarter's reports pooled into one table per rule."""
    rules = [SignalRule(r.drug, r.reaction, c) for r in PLANTED_SIGNALS
             for c in (r.condition, OPPOSITE[r.condition])]
    with ReleaseStore.open(store, read_only=True) as db:
        series = load_series(store=db)
        frames, _ = store_originals(db, series.periods)
        schema = db.schema
        original = pd.concat([original_as_published(frames[p], schema) for p in series.periods],
                             ignore_index=True)
    published = pd.concat([series.releases[p] for p in series.periods], ignore_index=True)
    compared = compare_signals(original, published, rules, hierarchies=series.hierarchies)
    opp = [c for c in compared if c.rule.name in opposite]
    mine = [c for c in compared if c.rule.name in own and c.original.signal]
    return {"pool_opp": f"{sum(c.release.signal for c in opp)}/"
                        f"{sum(c.original.signal for c in opp)}",
            "pool_own": f"{sum(c.release.signal for c in mine)}/{len(mine)}"}


def label_shares(evaluation: dict, store: Path, own: list[str], opposite: list[str]) -> dict:
    """Contradicting published age/sex labels, per case against the original."""
    counts = {q: np.zeros(3, dtype=np.int64) for q in ("age", "sex")}  # contra, known, invented
    missing = {q: 0 for q in counts}
    with ReleaseStore.open(store, read_only=True) as db:
        series = load_series(store=db)
        schema = db.schema
        for p in series.periods:
            frames, _ = store_originals(db, [p])
            original = original_as_published(frames[p], schema).set_index("case_id")
            rows = series.releases[p].set_index("case_id")
            both = rows.index.intersection(original.index)
            for q in counts:
                tax = series.hierarchies[q]
                pub = categorical_codes(rows.loc[both, q].to_numpy(dtype=object), tax,
                                        where=f"release {p}, {q}")
                true = categorical_codes(original.loc[both, q].to_numpy(dtype=object), tax,
                                         where=f"original {p}, {q}")
                comparable = tax.covers_codes(pub, true) | tax.covers_codes(true, pub)
                root = tax.depth_array[true] == 0
                counts[q] += [int((~comparable & ~root).sum()), int((~root).sum()),
                              int((root & (tax.depth_array[pub] > 0)).sum())]
                missing[q] += int(root.sum())
    out = {}
    for q, (contra, known, invented) in counts.items():
        out[f"{q}_x"] = contra / known if known else float("nan")
        out[f"{q}_inv"] = invented / missing[q] if missing[q] else float("nan")
    return out


def cost(evaluation: dict, store: Path, own: list[str], opposite: list[str]) -> dict:
    """NIL, NIL* and RR (means over the quarters), and the published levels (manifest)."""
    releases = evaluation["releases"]
    with ReleaseStore.open(store, read_only=True) as db:
        manifests = load_series(store=db).manifests
    levels = set()
    for m in manifests.values():
        found = (m.get("details") or {}).get("label_levels")
        if found:
            levels.add(",".join(f"{q}:{v}" for q, v in sorted(found.items())))
    return {"nil": float(np.mean([r["nil"] for r in releases])),
            "nil_star": float(np.mean([r["nil_star"] for r in releases])),
            "rr": float(np.mean([r["rr"] for r in releases])),
            "levels": ";".join(sorted(levels)) or "-"}


#: every measurement: (evaluation JSON, store, own rules, opposite rules) -> columns
MEASURES: list[Callable[..., dict]] = [signal_counts, pooled_signals, label_shares, cost]

#: printed columns: (key, header, format); each is as wide as its header or its widest cell
COLUMNS = (("opp", "opp rel/orig", "{}"), ("own", "own", "{:.2f}"),
           ("pool_opp", "pool opp", "{}"), ("pool_own", "pool own", "{}"),
           ("age_x", "age ×", "{:.1%}"), ("age_inv", "inv", "{:.1%}"),
           ("sex_x", "sex ×", "{:.1%}"), ("nil", "NIL", "{:.3f}"),
           ("nil_star", "NIL*", "{:.3f}"), ("rr", "RR", "{:.4f}"),
           ("levels", "levels", "{:>11}"))
WIDTHS = {"opp": 14, "levels": 11}


def grid(epsilons: list[float], confidences: list[float], mechanisms: list[str]) -> list[Setting]:
    """PPMS++ (θ* as given, no noise), then per ε PPMS-DP_num, PPMS-DP_all as in 000, and
    PPMS-DP_all with each label mechanism and confidence."""
    settings = [Setting("ppms++")]
    for eps in epsilons:
        settings.append(Setting("ppms-dp-num", eps))
        settings.append(Setting("ppms-dp-all", eps))
        settings += [Setting("ppms-dp-all", eps, c, None if m == "exponential" else m)
                     for m in mechanisms for c in confidences]
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=8)
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--theta", default="frequency")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 5.0, 10.0])
    parser.add_argument("--confidences", type=float, nargs="*", default=[0.9, 0.99],
                        help="remedy: --dp-label-confidence values (none: no remedy rows)")
    parser.add_argument("--mechanisms", nargs="*", default=["exponential", "randomized-response"],
                        help="remedy: --dp-label-mechanism values")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="keep the stores here")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dp-strata-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    base = prepare(work, periods=args.periods, cases=args.cases, seed=args.seed)
    own, opposite = write_rules(work / "rules.toml")
    print(f"{args.periods} quarters x {args.cases} cases (seed {args.seed}), k={args.k}, "
          f"theta={args.theta}; prepared in {time.perf_counter() - t0:.1f} s; stores in {work}")
    print(f"{'setting':28} " + " ".join(h.rjust(max(len(h), WIDTHS.get(key, 6)))
                                        for key, h, _ in COLUMNS))
    for setting in grid(args.epsilons, args.confidences, args.mechanisms):
        t1 = time.perf_counter()
        store = release(base, work, setting, k=args.k, theta=args.theta, seed=args.seed)
        evaluation = medanon("evaluate", "-s", str(store), "--rules", str(work / "rules.toml"),
                             json_out=True)
        row: dict = {}
        for measure in MEASURES:
            row.update(measure(evaluation, store, own, opposite))
        cells = []
        for key, head, fmt in COLUMNS:
            text = fmt.format(row[key])
            cells.append(text.rjust(max(len(head), WIDTHS.get(key, 6))))
        print(f"{setting.name:28} " + " ".join(cells) + f"  ({time.perf_counter() - t1:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
