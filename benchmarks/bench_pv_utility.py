"""Pharmacovigilance utility of every method, measured as an analyst screens FAERS.

Writes the default synthetic series (``medanon synth faers``: 8 quarters × 3,000 cases, six
planted signals), ingests it once (every report kept, the default), and for each configuration
releases a copy of the store and runs ``medanon evaluate --json --rules <planted>``. Printed per
configuration (``docs/metrics.md``, "Signal screening"):

* pooled: MGPS (EB05 ≥ 2) and PRR (Evans) recall / precision against the original, EBGM Spearman;
* strata (age ≤ 18, 19-64, ≥ 65, F, M; pooled over quarters): MGPS recall / precision and the
  number of spurious stratum signals;
* planted rules inside their own condition: MGPS recall; ``manuf.``: rules that signal in the
  opposite stratum of the release but not of the original (MGPS / BCPNN / PRR);
* mean NIL and mean RR over the releases.

Usage::

    python benchmarks/bench_pv_utility.py [--cases 3000] [--periods 8] [--seed 11]
        [--config NAME=ARGS ...] [--json OUT]

A ``--config`` is a name and the ``medanon release`` arguments separated by ``::``, e.g.
``--config "DP_all ε=1::--method ppms-dp-all --k 5 --theta frequency --epsilon 1"``.
Every release is seeded (``--seed``, recorded in its manifest): a research run, not a
publication.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medanon.data.synth.faers import PLANTED_SIGNALS

DEFAULT_CONFIGS = {
    "none": "--method none --allow-unprotected",
    "MS k=5": "--method ms --k 5 --theta frequency",
    "PPMS k=5": "--method ppms --k 5 --theta frequency",
    "PPMS+ k=5": "--method ppms+ --k 5 --theta frequency",
    "PPMS++ k=5 θ*=freq": "--method ppms++ --k 5 --theta frequency",
    "PPMS++ k=5 θ*=0.4": "--method ppms++ --k 5 --theta 0.4 --on-infeasible raise-theta --max-withheld 1",
    "HA k=5": "--method ha --k 5 --theta frequency --alpha 0.5",
    "DP_num ε=1": "--method ppms-dp-num --k 5 --theta frequency --epsilon 1",
    **{f"DP_all ε={e}": f"--method ppms-dp-all --k 5 --theta frequency --epsilon {e}"
       for e in ("0.5", "1", "5", "10")},
}


def _medanon(*args: object) -> str:
    done = subprocess.run([sys.executable, "-m", "medanon", *map(str, args)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"medanon {' '.join(map(str, args))} failed:\n{done.stderr}")
    return done.stdout


def _summary(result: dict) -> dict:
    s = result["screening"]
    pooled = s["scopes"][0]["statistics"]
    strata = s["summary"]["stratum"]
    releases = result["releases"]
    return {
        "pooled_mgps_recall": pooled["mgps"]["recall"],
        "pooled_mgps_precision": pooled["mgps"]["precision"],
        "pooled_prr_recall": pooled["prr"]["recall"],
        "pooled_prr_precision": pooled["prr"]["precision"],
        "pooled_ebgm_spearman": pooled["mgps"]["spearman"],
        "strata_mgps_recall": strata["mgps"]["recall"],
        "strata_mgps_precision": strata["mgps"]["precision"],
        "strata_mgps_spurious": strata["mgps"]["spurious"],
        "strata_ic025_spurious": strata["bcpnn"]["spurious"],
        "strata_bcpnn_signals": (strata["bcpnn"]["signals_original"],
                                 strata["bcpnn"]["signals_release"]),
        "strata_bcpnn_recall": strata["bcpnn"]["recall"],
        "strata_bcpnn_precision": strata["bcpnn"]["precision"],
        "strata_mgps_signals": (strata["mgps"]["signals_original"],
                                strata["mgps"]["signals_release"]),
        "planted_mgps_recall": s["planted_summary"]["mgps"]["recall"],
        "planted_prr_recall": s["planted_summary"]["prr"]["recall"],
        "manufactured": {k: v["manufactured_opposite"] for k, v in s["planted_summary"].items()},
        "nil": sum(r["nil"] for r in releases) / len(releases),
        "rr": sum(r["rr"] for r in releases) / len(releases),
        "spurious_strata_listed": [
            {"stratum": e["scope"], "drug": x["drug"], "reaction": x["reaction"],
             "eb05": x["release"]["eb05"], "n": x["release"]["n"]}
            for e in s["scopes"] if e["kind"] == "stratum" for x in e["spurious"]["mgps"]][:10],
    }


def _fmt(x: object) -> str:
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--periods", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--config", action="append", default=[],
                        help="NAME::RELEASE ARGS (repeatable; default: every method)")
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    args = parser.parse_args()
    configs = (dict(c.split("::", 1) for c in args.config) if args.config
               else DEFAULT_CONFIGS)
    work = Path(tempfile.mkdtemp(prefix="pv_utility_"))
    try:
        _medanon("synth", "faers", work / "in", "--periods", args.periods, "--cases", args.cases,
                 "--seed", args.seed)
        base = work / "base.duckdb"
        _medanon("ingest", work / "in", "--store", base)
        rules = work / "planted.csv"
        rules.write_text("drug,condition,reaction\n" + "".join(
            f'{r.drug},"{r.condition}",{r.reaction}\n' for r in PLANTED_SIGNALS))
        print(f"synthetic series: {args.periods} quarters x {args.cases} cases, seed {args.seed}; "
              f"every report kept")
        header = ("config", "pooled MGPS R/P", "pooled PRR R/P", "EBGM ρ", "strata MGPS R/P",
                  "spurious strata (MGPS/IC025)", "planted R (MGPS/PRR)",
                  "manuf. (MGPS/BCPNN/PRR)", "NIL", "RR", "s")
        print(" | ".join(header))
        results = {}
        for name, release_args in configs.items():
            store = work / "s.duckdb"
            shutil.copy(base, store)
            t0 = time.perf_counter()
            _medanon("release", "--store", store, *shlex.split(release_args), "--seed", args.seed,
                     "--allow-seeded")
            evaluation = json.loads(_medanon("evaluate", "--store", store, "--json",
                                             "--rules", rules))
            seconds = time.perf_counter() - t0
            r = results[name] = {"release_args": release_args, **_summary(evaluation),
                                 "seconds": round(seconds, 1)}
            m = r["manufactured"]
            print(" | ".join([
                name, f"{_fmt(r['pooled_mgps_recall'])}/{_fmt(r['pooled_mgps_precision'])}",
                f"{_fmt(r['pooled_prr_recall'])}/{_fmt(r['pooled_prr_precision'])}",
                _fmt(r["pooled_ebgm_spearman"]),
                f"{_fmt(r['strata_mgps_recall'])}/{_fmt(r['strata_mgps_precision'])}",
                f"{r['strata_mgps_spurious']}/{r['strata_ic025_spurious']}",
                f"{_fmt(r['planted_mgps_recall'])}/{_fmt(r['planted_prr_recall'])}",
                f"{m['mgps']}/{m['bcpnn']}/{m['prr']}", _fmt(r["nil"]), _fmt(r["rr"]),
                f"{seconds:.0f}"]), flush=True)
            store.unlink()
        if args.json:
            args.json.write_text(json.dumps({"cases": args.cases, "periods": args.periods,
                                             "seed": args.seed, "results": results}, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
