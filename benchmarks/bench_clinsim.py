"""Benchmark: ClinSimRR and its baselines (paper 003's Figures 4–5 and its performance goal).

Synthesizes diagnosis sequences (``medanon synth ehr``'s generator; 46,000 patients by default,
the size of 003's MIMIC-III cohort), then for each ε runs ClinSimRR, UMAXRR, RR on the sensitive
codes and suppression on the same 80/20 patient split (plus UMAXRR on ClinSimRR's own protected
set, ``umaxrr-yp``, the like-for-like baseline) and prints, per method: the time of the
whole run (graph learning on the auxiliary 80%, planning, obfuscating the evaluation 20%, the
metrics), CIL over patients with a sensitive code, KL (released codes as they are, and the
distribution an analyst estimates from them), MAP of the inference attack, the protected-set size
and the block size. ``--gammas`` adds ClinSimRR rows for other leakage bounds (003 Figure 5).

Goal of issue 7: 46k patients in <= 30 s on 2 cores.

    python benchmarks/bench_clinsim.py
    python benchmarks/bench_clinsim.py --patients 46000 --epsilons 0.1 1 2.5 5 --level full

Not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import resource
import time


from medanon.pipeline.clinsim import run_clinsim
from medanon.data.synth.ehr import synth_ehr
from medanon.random import randomness


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=46_000)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 2.5, 5.0])
    parser.add_argument("--gammas", type=float, nargs="*", default=[])
    parser.add_argument("--gamma", type=float, default=0.05)
    parser.add_argument("--level", choices=["category", "full"], default="category")
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args()

    started = time.perf_counter()
    data = synth_ehr(args.patients, seed=args.seed, code_level=args.level)
    print(f"{data.n_patients} patients, {data.n_admissions} admissions, {data.n_events} elements "
          f"({args.level} level, sensitive codes: va-7332): synthesized in "
          f"{time.perf_counter() - started:.1f} s")
    print(f"{'eps':>5} {'method':<18} {'seconds':>7} {'peakMB':>7} {'CIL':>7} {'KL':>7} {'KL_est':>7} "
          f"{'MAP':>6} {'MAP003':>6} {'|Y_P|':>6} {'b':>3}")
    runs = [("clinsimrr", args.gamma)] + [("clinsimrr", g) for g in args.gammas] \
        + [("umaxrr-yp", args.gamma), ("umaxrr", None), ("rr", None), ("suppression", None)]
    for epsilon in args.epsilons:
        for method, gamma in runs:
            if method == "suppression" and epsilon != args.epsilons[0]:
                continue                                   # not randomized: one row is enough
            t0 = time.perf_counter()
            run = run_clinsim(data, method=method, sensitive="va-7332",
                              epsilon=None if method == "suppression" else epsilon,
                              gamma=gamma if gamma is not None else args.gamma,
                              rng=randomness(args.seed))
            seconds = time.perf_counter() - t0
            s = run.summary()
            label = method if gamma is None else f"{method} g={gamma:g}"
            eps = "-" if method == "suppression" else f"{epsilon:g}"
            map_ = "n/a" if s["map"] is None else f"{s['map']:.3f}"
            map003 = "n/a" if s["map_sensitive_inputs"] is None else f"{s['map_sensitive_inputs']:.3f}"
            print(f"{eps:>5} {label:<18} {seconds:7.2f} {peak_mb():7.0f} {s['cil']:7.4f} {s['kl']:7.4f} "
                  f"{s['kl_estimated']:7.4f} {map_:>6} {map003:>6} {s['protected_size']:6d} "
                  f"{s['block_size']:3d}")


if __name__ == "__main__":
    main()
