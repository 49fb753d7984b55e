"""Benchmark: what --dp-aware-grouping costs, and what it buys, against plain PPMS-DP (strict).

For each ε (per perturbed QID) and each algorithm, publishes one synthetic FAERS-like series
plainly and with ``dp_aware_grouping`` (groups of k' = 1 + (k-1)e^{2ε_case} new cases, terms
within θ' = θ/(θ + (1-θ)e^{2ε_case}); ε_case = ε × perturbed QIDs: ε for PPMS-DP_num, 3ε for
PPMS-DP_all on the default schema), then prints per setting the means over the quarters of:

* NIL with IL* (000 §V.A) and 001's NIL (from the published rows), groups and withheld cases;
* the likelihood-weighted attacker's DIR (some candidate's posterior > 1/k) and RR (mean
  posterior of the true record), and the largest combined bound verify records;
* quarters refused because they hold fewer than k' new cases ("refused"; the others are
  published and linked as usual).

The dp-aware grouping here designs for this release's ε_case (the per-release bound). The gate
runs, but releases it finds violating are kept (``allow_violations``), so follow-ups do not stop
a series as they would in ``medanon release`` without ``--case-budget``.

    python benchmarks/bench_dp_aware.py                      # 4 quarters x 2000 cases, k = 5
    python benchmarks/bench_dp_aware.py --cases 5000 --epsilons 0.5 1 2

Not a test: the figures vary with the noise (seeded here) and the timings with the machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import medanon
from medanon.anonymize import METHODS
from medanon.attacks.likelihood import LikelihoodAttacker
from medanon.attacks.worst_case import attack_series
from medanon.errors import InfeasibleError
from medanon.metrics.disclosure import linkage_risk
from medanon.metrics.information_loss import information_loss_star, normalized_information_loss
from medanon.verify import verify_series


def publish(method, data, seed):
    """The series of the quarters the method does not refuse (None if it refuses every one),
    and how many it refused."""
    publisher = medanon.Publisher(method, seed=seed)
    series, refused = None, 0
    for label in data.periods:
        # one quarter at a time, so a refused quarter leaves the series going on without it
        try:
            series = publisher.publish(data, [label], previous=series, allow_violations=True)
        except InfeasibleError:
            refused += 1
    return series, refused


def measure(series, data) -> dict:
    kinds = [(q.name, q.kind) for q in data.schema.qids]
    tax = data.schema.load_hierarchies()
    attacker = LikelihoodAttacker(series)
    worst = attack_series(series, attacker=attacker)
    verdict = verify_series(series)
    out = {"nil_star": [], "nil": [], "groups": [], "withheld": [], "dir": [], "rr": [],
           "bound": []}
    for label in series.periods:
        rows = series.releases[label]
        original = data.super_records(label).frame
        out["nil_star"].append(information_loss_star(original, rows, kinds, tax).nil)
        out["nil"].append(normalized_information_loss(rows, kinds, tax))
        out["groups"].append(rows["group"].nunique())
        out["withheld"].append(series.manifests[label]["counts"].get("suppressed", 0))
        out["dir"].append(worst.release(label).dir_posterior)
        out["rr"].append(linkage_risk(series, label, original, attacker=attacker).rr)
        out["bound"].append(verdict.release(label).bound["max_posterior"])
    return {k: (max(v) if k == "bound" else float(np.mean(v))) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=4)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--theta", type=float, default=0.4)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-dp-aware-"))
    data = medanon.Dataset.synthetic_faers(folder / "faers", periods=args.periods,
                                           cases=args.cases, seed=args.seed)
    print(f"{args.periods} quarters x ~{args.cases} cases, k={args.k}, theta={args.theta}; "
          f"means over the quarters (bound: the largest)")
    print(f"{'method':12} {'eps':>4} {'aware':>5} {'k_grp':>6} {'NIL*':>6} {'NIL':>6} "
          f"{'groups':>7} {'withheld':>8} {'DIR post':>8} {'RR post':>8} {'bound':>6} "
          f"{'refused':>7} {'s':>6}")
    for eps in args.epsilons:
        for name in ("ppms-dp-num", "ppms-dp-all"):
            for aware in (False, True):
                method = METHODS[name](k=args.k, theta=args.theta, epsilon=eps,
                                       on_infeasible="raise-theta", dp_aware_grouping=aware,
                                       max_withheld=1.0)
                per_case = eps * (1 if name == "ppms-dp-num" else 3)
                k_group = (1 + (args.k - 1) * np.exp(2 * per_case)) if aware else args.k
                t0 = time.perf_counter()
                series, refused = publish(method, data, args.seed)
                head = (f"{name:12} {eps:>4g} {'yes' if aware else 'no':>5} "
                        f"{int(np.ceil(k_group - 1e-9)):>6}")
                if series is None:
                    print(f"{head} {'-':>6} {'-':>6} {'-':>7} {'-':>8} {'-':>8} {'-':>8} "
                          f"{'-':>6} {refused:>7} {time.perf_counter() - t0:>6.1f}", flush=True)
                    continue
                m = measure(series, data)
                print(f"{head} {m['nil_star']:>6.3f} {m['nil']:>6.3f} {m['groups']:>7.1f} "
                      f"{m['withheld']:>8.1f} {m['dir']:>8.3f} {m['rr']:>8.4f} "
                      f"{m['bound']:>6.3f} {refused:>7} {time.perf_counter() - t0:>6.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
