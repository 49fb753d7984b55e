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
from pathlib import Path

import numpy as np

import medanon
from medanon.anonymize import METHODS
from medanon.metrics.disclosure import linkage_risk
from medanon.metrics.information_loss import information_loss_star


def publish(method, data, seed):
    """The series (violating releases kept: the table measures them) and its seconds."""
    series = medanon.Publisher(method, seed=seed).publish(data, allow_violations=True)
    return series, sum(r.seconds for r in series.releases_published)


def measure(series, data):
    kinds = [(q.name, q.kind) for q in data.schema.qids]
    tax = data.schema.load_hierarchies()
    nil, rr, ar = [], [], []
    views: dict = {}
    for label in series.periods:
        original = data.super_records(label).frame
        nil.append(information_loss_star(original, series.releases[label], kinds, tax).nil)
        risk = linkage_risk(series, label, original, views=views)
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
    folder = Path(tempfile.mkdtemp(prefix="bench-ppms-dp-"))
    data = medanon.Dataset.synthetic_faers(folder / "faers", periods=args.periods,
                                           cases=args.cases, seed=args.seed)
    common = {"k": args.k, "theta": float(args.theta) if args.theta[0].isdigit() else args.theta,
              "on_infeasible": "raise-theta", "max_withheld": 1.0}
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
            series, seconds = publish(method, data, args.seed + run)
            figures.append((*measure(series, data), seconds))
        nil, rr, ar, seconds = np.mean(figures, axis=0)
        print(f"{name:12} {variant or '-':7} {eps if eps is not None else '-':>5} {nil:>7.4f} "
              f"{rr:>8.5f} {ar:>8.5f} {seconds:>7.2f}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
