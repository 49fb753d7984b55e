"""Research: why our ClinSimRR MAP and CIL differ from paper 003's (issue 31).

Two measurements on synthetic diagnosis sequences (``synth_ehr``; every method of a run on the
same 80/20 patient split, each run with its own noise; values are means over the runs):

``map``  MAP of the inference attack (003 Eq. 3) under each difference between our evaluation and
         003's, one at a time: which guesses are scored (every output in Y_P, ours, or only the
         obfuscated sensitive elements, 003's reading), the attacker's prior (plain sum over the
         observed neighbours, ours, or weighted by their frequency, spec §4.8), the minimum number
         of guesses before a code's precision counts (10, ours, or 1), the patients (all, or those
         with two or more admissions, as 003), and the sensitive set (8 ICD-9 categories; at full
         level the 45 codes closest to 003's: the 16 va-7332 codes the generator uses plus the
         next 29 of the preset; or all 127 preset codes); last, an intermediate reading (every
         output in Y_P of the patients who hold a sensitive code).
``cil``  CIL of ClinSimRR and UMAXRR split by where the loss falls (the sensitive elements, the
         codes ClinSimRR adds to Y_P, the unprotected codes that p_S replaces), with p_S, |Y_P| and
         b, for γ and L that do or do not extend Y_P.

    python benchmarks/bench_clinsim_causes.py map --patients 10000 --runs 3
    python benchmarks/bench_clinsim_causes.py map --level full --sensitive-count 45
    python benchmarks/bench_clinsim_causes.py cil --patients 10000 --runs 3

Not a test: it prints tables for ``docs/algorithms/clinsim.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medanon.attacks.inference import inference_attack
from medanon.data.synth.ehr import SENSITIVE_CODES, synth_ehr
from medanon.hierarchies.icd9 import icd9_tree, place_codes, sensitive_preset
from medanon.pipeline.clinsim import ClinSimRun, placed_codes, run_clinsim
from medanon.random import randomness


def sensitive_set(level: str, count: int) -> str | list[str]:
    """The preset, or (full level) ``count`` preset codes, the generator's own ones first."""
    if level == "category" or count <= 0:
        return "va-7332"
    preset = sensitive_preset("va-7332", icd9_tree("full"))
    used = [c for c in preset if c in SENSITIVE_CODES]
    return used + [c for c in preset if c not in used][: max(count - len(used), 0)]


def frame_of(run: ClinSimRun) -> pd.DataFrame:
    events = run.evaluation.events
    source = events["code"].to_numpy(dtype=object)
    original = placed_codes(source, place_codes(run.tree, source, prefer=run.plan.sensitive))
    return pd.DataFrame({"patient": events["patient"].to_numpy(), "code": original,
                         "released": run.released["code"].to_numpy(dtype=object)})


def attack_variants(run: ClinSimRun) -> dict[str, float]:
    plan, graph = run.plan, run.graph
    frame = frame_of(run)
    common = dict(sensitive=list(plan.sensitive), likelihood=plan.likelihood,
                  attacked_outputs=plan.attacked_outputs, graph_codes=graph.codes,
                  frequency=graph.frequency,
                  path_prob=graph.path_probability(list(plan.sensitive), max_length=2))
    variants = {
        "ours (Y_P outputs, plain prior, >=10)": {},
        "weighted prior": {"weight_neighbours": True},
        ">=1 guess": {"min_predictions": 1},
        "003: sensitive inputs": {"scored": "sensitive-inputs"},
        "003 + weighted prior": {"scored": "sensitive-inputs", "weight_neighbours": True},
        "003 + >=1 guess": {"scored": "sensitive-inputs", "min_predictions": 1},
    }
    out = {}
    for name, options in variants.items():
        result = inference_attack(frame, **{"min_predictions": 10, **common, **options})
        out[name] = np.nan if result.map is None else result.map
    # An intermediate reading: every output in Y_P of the patients who have a sensitive code.
    holders = frame.loc[frame["code"].isin(plan.sensitive), "patient"].unique()
    result = inference_attack(frame[frame["patient"].isin(holders)], min_predictions=10, **common)
    out["outputs of patients with a sensitive code"] = np.nan if result.map is None else result.map
    return out


def run_map(args: argparse.Namespace) -> None:
    data = synth_ehr(args.patients, seed=args.data_seed, code_level=args.level)
    if args.min_admissions > 1:
        data = data.with_min_admissions(args.min_admissions)
    sensitive = sensitive_set(args.level, args.sensitive_count)
    n_sensitive = 8 if isinstance(sensitive, str) and args.level == "category" else \
        len(sensitive) if not isinstance(sensitive, str) else "preset"
    print(f"{data.n_patients} patients, {args.level} level, sensitive: {n_sensitive}, "
          f"{args.runs} runs, gamma {args.gamma:g}, L {args.max_path_length}")
    for method in args.methods:
        for epsilon in (args.epsilons if method != "suppression" else [None]):
            rows: dict[str, list[float]] = {}
            for r in range(args.runs):
                run = run_clinsim(data, method=method, sensitive=sensitive, epsilon=epsilon,
                                  gamma=args.gamma, max_path_length=args.max_path_length,
                                  rng=randomness(args.seed + r),
                                  split_rng=randomness(args.seed + 1000 + r))
                for name, value in attack_variants(run).items():
                    rows.setdefault(name, []).append(value)
            s = run.summary()
            eps = "-" if epsilon is None else f"{epsilon:g}"
            print(f"{method} eps={eps}: |Y_P| {s['protected_size']}, b {s['block_size']}, "
                  f"sensitive elements {s['sensitive_elements']}, attacked outputs "
                  f"{s['attack']['attacked_outputs']} (last run)")
            for name, values in rows.items():
                shown = ", ".join("n/a" if np.isnan(v) else f"{v:.3f}" for v in values)
                mean = "n/a" if np.all(np.isnan(values)) else f"{np.nanmean(values):.3f}"
                print(f"    {name:<40} {mean:>6}   [{shown}]")


def cil_parts(run: ClinSimRun, alpha: float = 0.5) -> dict[str, float]:
    """CIL over the patients with a sensitive element, split by the kind of element."""
    plan, frame = run.plan, frame_of(run)
    d = run.tree.dissimilarity_codes(frame["code"].to_numpy(dtype=object),
                                     frame["released"].to_numpy(dtype=object), alpha=alpha)
    sensitive = frame["code"].isin(plan.sensitive).to_numpy()
    protected = frame["code"].isin(plan.protected).to_numpy()
    keep = pd.Series(sensitive).groupby(frame["patient"].to_numpy()).transform("any").to_numpy()
    kinds = {"sensitive": sensitive, "added": protected & ~sensitive, "unprotected": ~protected}
    patients = frame["patient"].to_numpy()[keep]
    n = pd.Series(1.0, index=patients).groupby(level=0).sum()
    out = {name: float(pd.Series(d[keep] * mask[keep], index=patients).groupby(level=0).sum()
                       .div(n).mean()) for name, mask in kinds.items()}
    out["added share"] = float(kinds["added"][keep].mean())
    return out


def show_leakage(run: ClinSimRun) -> None:
    """What the leakage step added (first run, γ = 0.05, L = 2) and the strongest predictors."""
    leak, graph = run.plan.leakage, run.graph
    path = graph.path_probability(list(run.plan.sensitive), max_length=2)
    print("leakage step (gamma 0.05, L 2, first run): Leak(s) before -> after: "
          + ", ".join(f"{k} {v:.3f}->{leak.leak_after[k]:.3f}" for k, v in leak.leak_before.items()))

    def describe(codes: Sequence[str]) -> str:
        rows = [graph.codes.index(c) for c in codes]
        return ", ".join(f"{c} (Pr {graph.frequency[i]:.4f}, max P {path[i].max():.2f})"
                         for c, i in zip(codes, rows))
    print(f"  added: {describe(leak.added) or 'none'}")
    strongest = [graph.codes[i] for i in np.argsort(-path.max(axis=1))
                 if graph.codes[i] not in run.plan.sensitive][:7]
    print(f"  strongest predictors (largest P(c ~> s)): {describe(strongest)}")


def run_cil(args: argparse.Namespace) -> None:
    data = synth_ehr(args.patients, seed=args.data_seed, code_level=args.level)
    sensitive = sensitive_set(args.level, args.sensitive_count)
    print(f"{data.n_patients} patients, {args.level} level, {args.runs} runs; CIL over patients "
          f"with a sensitive element = sensitive + added + unprotected parts")
    settings: Sequence[tuple[str, float, int]] = (
        ("clinsimrr", 0.05, 2), ("clinsimrr", 0.05, 1), ("clinsimrr", 0.1, 2), ("clinsimrr", 1.0, 2),
        ("umaxrr-yp", 0.05, 2), ("umaxrr", 0.05, 2))
    first = run_clinsim(data, method="clinsimrr", sensitive=sensitive, epsilon=args.epsilons[0],
                        gamma=0.05, rng=randomness(args.seed),
                        split_rng=randomness(args.seed + 1000))
    show_leakage(first)
    for epsilon in args.epsilons:
        for method, gamma, length in settings:
            acc = []
            for r in range(args.runs):
                run = run_clinsim(data, method=method, sensitive=sensitive, epsilon=epsilon,
                                  gamma=gamma, max_path_length=length,
                                  rng=randomness(args.seed + r),
                                  split_rng=randomness(args.seed + 1000 + r))
                s, parts = run.summary(), cil_parts(run)
                acc.append([s["cil"], parts["sensitive"], parts["added"], parts["unprotected"],
                            parts["added share"], s["p_S"], s["protected_size"],
                            s["added_for_leakage"], s["block_size"]])
            a = np.mean(acc, axis=0)
            label = method if method == "umaxrr" else f"{method} g={gamma:g} L={length}"
            print(f"eps={epsilon:<4g} {label:<24} CIL {a[0]:.3f} = {a[1]:.3f} + {a[2]:.3f} + "
                  f"{a[3]:.3f} | added codes hold {a[4]:.0%} of the elements | p_S {a[5]:.3f} "
                  f"|Y_P| {a[6]:.1f} (leakage +{a[7]:.1f}) b {a[8]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["map", "cil"])
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--level", choices=["category", "full"], default="category")
    parser.add_argument("--sensitive-count", type=int, default=0,
                        help="full level: this many preset codes (0: all 127)")
    parser.add_argument("--min-admissions", type=int, default=1)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.5, 5.0])
    parser.add_argument("--methods", nargs="+", default=["clinsimrr", "umaxrr", "suppression"])
    parser.add_argument("--gamma", type=float, default=0.05, help="map: ClinSimRR's gamma")
    parser.add_argument("--max-path-length", type=int, default=2, help="map: ClinSimRR's L")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-seed", type=int, default=7)
    args = parser.parse_args()
    (run_map if args.what == "map" else run_cil)(args)


if __name__ == "__main__":
    main()
