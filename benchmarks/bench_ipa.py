"""Benchmark: IPA and its baselines (paper 004's Figure 6 and its performance goals).

For each table size, synthesizes the patient table (``medanon synth table``'s generator), then runs
IPA (ε = 1, split 0.1/0.3/0.3/0.3, t = 2) with its default node choice on the true data
(``ipa``, selection "utility") and with the paper's (``ipa-paper``), full-domain k-anonymity
(k = 10) and the DP histogram (ε = 1) and prints, per method: the time to anonymize (all 256
lattice nodes scored), the peak resident memory of the process so far, the information loss
IL = NCP + EMD + Rate averaged over ``--runs`` noise draws (and its standard deviation), and the
mean relative error of the four analysis queries of 004 (Q1–Q4). For the paper's selection it
also prints the lattice's best and mean candidate IL: its exponential choice with ε_cand = 0.3
and Δu = 3 is close to uniform, so its IL sits near the lattice mean; for the default selection,
the nodes chosen.

Goals of issue 6: 50k records in <= 3 s; 1.36M records (the paper's NPS sample) in <= 3 minutes
and <= 4 GB on 2 cores. Paper 004 reports IL 0.28 (IPA), 0.43 (k-anonymity), 0.69 (histogram).

    python benchmarks/bench_ipa.py --rows 20000 50000 --runs 5     # the issue-20 comparison
    python benchmarks/bench_ipa.py                    # 50k rows, 3 runs
    python benchmarks/bench_ipa.py --rows 50000 1360000 --runs 1

Not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from medanon.anonymize.dphist import DPHistogram
from medanon.anonymize.ipa import IPA
from medanon.anonymize.kanon import FullDomainKAnonymity
from medanon.data.synth.table import synth_patient_schema_toml, synth_patient_table
from medanon.data.tabular import TableSchema, load_table
from medanon.random import randomness
from medanon.metrics.tabular import evaluate_queries


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[50_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    schema = TableSchema.from_toml_text(synth_patient_schema_toml())
    for rows in args.rows:
        started = time.perf_counter()
        data = load_table(synth_patient_table(rows, seed=1), schema)
        print(f"\n{rows} records: synthesized and encoded in {time.perf_counter() - started:.1f} s")
        print(f"{'method':9} {'seconds':>8} {'peak MB':>8} {'IL':>7} {'(sd)':>7} {'NCP':>7} "
              f"{'EMD':>7} {'Rate':>7}  query errors Q1..Q4")
        methods = [("ipa", IPA(epsilon=args.epsilon)),
                   ("ipa-paper", IPA(epsilon=args.epsilon, selection="paper")),
                   ("kanon", FullDomainKAnonymity(k=args.k)),
                   ("dphist", DPHistogram(epsilon=args.epsilon))]
        for label, method in methods:
            runs = 1 if method.name == "kanon" else args.runs
            losses, seconds, results = [], [], []
            for run in range(runs):
                started = time.perf_counter()
                result = method.anonymize(data, noise=randomness(run))
                seconds.append(time.perf_counter() - started)
                losses.append(result.loss.to_dict())
                results.append(result)
            errors = np.mean([[q.mean_relative_error for q in evaluate_queries(data, r.table)]
                              for r in results], axis=0)
            mean = {k: np.mean([x[k] for x in losses]) for k in losses[0]}
            sd = np.std([x["information_loss"] for x in losses])
            print(f"{label:9} {np.mean(seconds):8.2f} {peak_mb():8.0f} "
                  f"{mean['information_loss']:7.4f} {sd:7.4f} {mean['ncp']:7.4f} "
                  f"{mean['emd']:7.4f} {mean['rate']:7.4f}  " + " ".join(f"{e:.3f}" for e in errors))
            if label == "ipa":
                chosen = sorted({tuple(r.node) for r in results})
                print(f"{'':9} nodes chosen: {chosen}; expected loss of the best node "
                      f"{results[0].details['best_expected_loss']['expected_loss']:.4f} at "
                      f"{results[0].details['best_expected_loss']['node']}")
            if label == "ipa-paper":
                il = np.array([c["information_loss"] for c in results[0].details["candidates"]])
                best = results[0].details["candidates"][int(il.argmin())]["node"]
                print(f"{'':8} lattice of {len(il)} candidates: best IL {il.min():.4f} at node "
                      f"{best}, mean {il.mean():.4f}, worst {il.max():.4f}")


if __name__ == "__main__":
    main()
