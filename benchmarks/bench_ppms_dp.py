"""Benchmark: PPMS-DP_num and PPMS-DP_all against PPMS++ on a synthetic series (000's figures).

Publishes one synthetic FAERS-like series with PPMS++ and with both PPMS-DP algorithms in both
variants (``paper``: 000's local sensitivity; ``strict``: ε-DP per case) for each ε, then prints
per method the mean over the quarters of NIL with IL* (000 §V.A), RR and AR_rev (000's record
and attribute disclosure risk, after the B/F/L-attacks), and the time to anonymize. 000 reports
RR and AR_rev of PPMS-DP below PPMS++'s, and NIL(PPMS-DP_all) < NIL(PPMS-DP_num).

    python benchmarks/bench_ppms_dp.py                       # 4 quarters x 2000 cases
    python benchmarks/bench_ppms_dp.py --cases 5000 --epsilons 0.1 1 10 --k 10

Not a test: the timings are noisy, and the figures vary with the noise (seeded here).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from medanon.anonymize import METHODS
from medanon.data.loaders.faers import read_faers
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.disclosure import linkage_risk
from medanon.metrics.information_loss import information_loss_star
from medanon.random import randomness
from medanon.published.cells import QidInfo
from medanon.published.format import to_published_rows
from medanon.pipeline.publish import build_manifest
from medanon.published.series import PublishedSeries


def publish(method, quarters, schema, tax, seed):
    rng = randomness(seed)
    releases, manifests, originals = {}, {}, {}
    seconds = 0.0
    for quarter in quarters:
        label = getattr(quarter.period, "label", quarter.period)
        supers = combine_super_records(quarter.records, schema, tax)
        t0 = time.perf_counter()
        result = method.anonymize(supers, list(releases.values()), rng=rng)
        seconds += time.perf_counter() - t0
        rows = to_published_rows(result.table, schema)
        releases[label] = rows
        manifests[label] = build_manifest(schema, tax, method, label, rng, result=result, rows=rows,
                                          n_reports=len(quarter.records))
        originals[label] = supers.frame
    qids = tuple(QidInfo(q.name, q.kind, tax.get(q.name)) for q in schema.qids)
    series = PublishedSeries(releases, manifests, qids, tuple(schema.sensitive), method.name)
    return series, originals, seconds


def measure(series, originals, schema, tax):
    kinds = [(q.name, q.kind) for q in schema.qids]
    nil, rr, ar = [], [], []
    views: dict = {}
    for label in series.periods:
        nil.append(information_loss_star(originals[label], series.releases[label], kinds, tax).nil)
        risk = linkage_risk(series, label, originals[label], views=views)
        rr.append(risk.rr)
        ar.append(risk.ar_rev)
    return float(np.mean(nil)), float(np.mean(rr)), float(np.mean(ar))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=4)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--theta", default="0.4")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3,
                        help="noise draws per setting (seeds seed..seed+runs-1), averaged")
    args = parser.parse_args()
    schema = Schema.default()
    tax = schema.load_hierarchies()
    folder = Path(tempfile.mkdtemp(prefix="bench-ppms-dp-"))
    write_faers_series(folder, periods=args.periods, cases=args.cases, seed=args.seed)
    quarters = read_faers(folder).quarters
    common = {"k": args.k, "theta": float(args.theta) if args.theta[0].isdigit() else args.theta,
              "on_infeasible": "raise-theta"}
    runs = [("ppms++", None, None)]
    for eps in args.epsilons:
        for variant in ("paper", "strict"):
            runs += [("ppms-dp-num", eps, variant), ("ppms-dp-all", eps, variant)]
    print(f"{args.periods} quarters x ~{args.cases} cases, k={args.k}, theta={args.theta}; "
          f"means over the quarters and {args.runs} noise draws")
    print(f"{'method':12} {'variant':7} {'eps':>5} {'NIL*':>7} {'RR':>8} {'AR_rev':>8} "
          f"{'anon s':>7}")
    for name, eps, variant in runs:
        params = dict(common)
        if eps is not None:
            params.update(epsilon=eps, variant=variant)
        method = METHODS[name](**params)
        figures = []
        for run in range(args.runs if eps is not None else 1):
            series, originals, seconds = publish(method, quarters, schema, tax, args.seed + run)
            figures.append((*measure(series, originals, schema, tax), seconds))
        nil, rr, ar, seconds = np.mean(figures, axis=0)
        print(f"{name:12} {variant or '-':7} {eps if eps is not None else '-':>5} {nil:>7.4f} "
              f"{rr:>8.5f} {ar:>8.5f} {seconds:>7.2f}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
