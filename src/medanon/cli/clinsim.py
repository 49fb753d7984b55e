"""``medanon clinsim``: release diagnosis sequences with ClinSimRR or a baseline (paper 003).

:func:`run_clinsim` is the whole evaluation of 003 §5 as a function (split by patient, learn the
dependence graph on the auxiliary part, plan, obfuscate the evaluation part, measure CIL, KL, the
inference attack's MAP and the frequency estimates); the command wraps it with loading, options
and the release folder. Benchmarks and experiment grids call :func:`run_clinsim` directly.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..anonymize.clinsim import METHODS, ProtectionPlan, make_method
from ..anonymize.dependence import DependenceGraph
from ..attacks.inference import inference_attack
from ..data.ehr import EhrData, load_ehr_csv, load_mimic
from ..data.synth.ehr import write_synth_ehr
from ..errors import InputFormatError, ValidationError
from ..hierarchies.icd9 import CodeTree, icd9_tree, read_sensitive_file, sensitive_preset
from ..mechanisms.noise import NoiseSource
from ..random import refuse_seeded_release
from ..metrics.clinical import clinical_information_loss, kl_divergence, kl_divergence_to_estimate
from ..release.ehr import ehr_manifest, write_ehr_release
from ..release.format import check_new_folder, write_new_folder
from . import console as ui
from .console import print_json, progress_bar

__all__ = ["ClinSimRun", "run_clinsim", "load_ehr", "clinsim"]


@dataclass
class ClinSimRun:
    """One release and its evaluation (what ``--json`` prints, plus the objects behind it)."""

    plan: ProtectionPlan
    graph: DependenceGraph
    tree: CodeTree
    auxiliary: EhrData
    evaluation: EhrData
    released: pd.DataFrame
    metrics: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        plan = self.plan
        mechanism = plan.mechanism
        return {
            "method": plan.method, "parameters": plan.parameters,
            **self.metrics,
            "sensitive_size": len(plan.sensitive),
            "protected_size": len(plan.protected),
            "added_for_leakage": len(plan.added_for_leakage),
            "added_for_blocking": len(plan.added_for_blocking),
            "block_size": plan.block_size,
            "p_T": mechanism.p_t if mechanism is not None else None,
            "p_S": mechanism.p_s if mechanism is not None else None,
            "expected_cil_objective": plan.expected_cil,
            "patients": {"auxiliary": self.auxiliary.n_patients, "evaluation": self.evaluation.n_patients},
            "elements_released": len(self.released),
            "graph": {"nodes": len(self.graph.codes), "edges": int(self.graph.weights.nnz),
                      "delta_t_days": self.graph.delta_t_days,
                      "delta_t_checked": self.graph.delta_t_checked},
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "guarantee": plan.guarantee(), "does_not_guarantee": plan.does_not_guarantee(),
        }


def load_ehr(diagnoses: Path, admissions: Path | None = None, *, code_level: str = "category") -> EhrData:
    """MIMIC-III ``DIAGNOSES_ICD`` (+ ``ADMISSIONS``) or a long CSV (patient, admission, time, code)."""
    if admissions is not None:
        return load_mimic(diagnoses, admissions, code_level=code_level)
    try:
        with open(diagnoses, encoding="utf-8-sig") as handle:
            header = handle.readline().lower()
    except OSError as exc:
        raise InputFormatError(f"Cannot read {str(diagnoses)!r}: {exc.strerror or exc}.") from None
    if "icd9_code" in header:
        return load_mimic(diagnoses, None, code_level=code_level)
    return load_ehr_csv(diagnoses, code_level=code_level)


def run_clinsim(data: EhrData, *, method: str, sensitive: list[str], epsilon: Any = None,
                gamma: float = 0.05, alpha: float = 0.5, b_max: int = 16, max_path_length: int = 2,
                delta_t_days: float = 300.0, aux_fraction: float = 0.8,
                split_rng: np.random.Generator | None = None, noise: NoiseSource | None = None,
                tree: CodeTree | None = None, min_predictions: int = 10,
                progress: Callable[[str], None] | None = None) -> ClinSimRun:
    """Split, learn the graph, plan, obfuscate the evaluation patients and evaluate (003 §5).

    ``sensitive``: codes at the data's level (resolve presets with :func:`sensitive_preset`).
    ``split_rng``: the patient split's generator (a fresh OS-seeded one when None).
    ``progress``: called with the name of each finished stage (graph, plan, obfuscate, evaluate).
    """
    step = progress or (lambda _name: None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    options = {"gamma": gamma, "alpha": alpha, "b_max": b_max, "max_path_length": max_path_length} \
        if method == "clinsimrr" else {}
    algorithm = make_method(method, epsilon=epsilon, **options)
    if not 0 < aux_fraction < 1:
        raise ValidationError(f"The auxiliary fraction must be in (0, 1); got {aux_fraction}.")
    tree = tree if tree is not None else icd9_tree(data.code_level, extra_codes=tuple(data.codes))
    rng = split_rng if split_rng is not None else np.random.default_rng(secrets.randbits(128))
    auxiliary, evaluation = data.split(aux_fraction, rng=rng)
    graph = DependenceGraph.learn(auxiliary.events, delta_t_days=delta_t_days)
    seconds["graph"] = time.perf_counter() - started
    step("graph")
    plan = algorithm.plan(graph, sensitive, tree)
    seconds["plan"] = time.perf_counter() - started - seconds["graph"]
    step("plan")
    events = evaluation.events
    original = events["code"].to_numpy(dtype=object)
    mark = time.perf_counter()
    released_codes = plan.obfuscate(original, noise if noise is not None else NoiseSource.secure())
    seconds["obfuscate"] = time.perf_counter() - mark
    step("obfuscate")
    released = events.assign(code=released_codes)
    metrics = _evaluate(plan, graph, tree, events, released_codes, alpha=alpha,
                        max_path_length=max_path_length, min_predictions=min_predictions)
    seconds["total"] = time.perf_counter() - started
    step("evaluate")
    return ClinSimRun(plan, graph, tree, auxiliary, evaluation, released, metrics, seconds)


def _evaluate(plan: ProtectionPlan, graph: DependenceGraph, tree: CodeTree, events: pd.DataFrame,
              released: np.ndarray, *, alpha: float, max_path_length: int,
              min_predictions: int) -> dict[str, Any]:
    original = events["code"].to_numpy(dtype=object)
    patients = events["patient"].to_numpy(dtype=object)
    is_sensitive = np.isin(original, np.asarray(plan.sensitive, dtype=object))
    with_sensitive = pd.unique(patients[is_sensitive])
    d = functools.partial(tree.dissimilarity_codes, alpha=alpha)
    out: dict[str, Any] = {
        "cil": clinical_information_loss(original, released, patients, dissimilarity=d,
                                         only_patients=with_sensitive) if len(with_sensitive) else None,
        "cil_all_patients": clinical_information_loss(original, released, patients, dissimilarity=d),
        "kl": kl_divergence(original, released),
        "patients_with_sensitive": int(len(with_sensitive)),
        "sensitive_elements": int(is_sensitive.sum()),
        "changed_elements": int((original != released).sum()),
    }
    path_prob = graph.path_probability(list(plan.sensitive), max_length=max_path_length)
    frame = pd.DataFrame({"patient": patients, "code": original, "released": released})
    attack = inference_attack(frame, sensitive=list(plan.sensitive), likelihood=plan.likelihood,
                              attacked_outputs=plan.attacked_outputs, path_prob=path_prob,
                              graph_codes=graph.codes, frequency=graph.frequency,
                              min_predictions=min_predictions)
    out["map"] = attack.map
    out["attack"] = {"attacked_outputs": attack.attacked,
                     "predictions": sum(attack.predictions.values()),
                     "correct": sum(attack.correct.values()),
                     "min_predictions": min_predictions, "qualified": attack.qualified,
                     "map_code": attack.map_code,
                     "map_code_predictions": attack.predictions.get(attack.map_code, 0)
                     if attack.map_code is not None else 0}
    # Frequency estimation (003 §4.2): how far the estimated shares of the sensitive codes are.
    estimate = plan.estimate_frequencies(released)
    truth = pd.Series(original).value_counts(normalize=True)
    codes = list(plan.sensitive)
    out["frequency_l1_sensitive"] = float(np.abs(estimate.reindex(codes, fill_value=0.0).to_numpy()
                                                 - truth.reindex(codes, fill_value=0.0).to_numpy()).sum())
    out["kl_estimated"] = kl_divergence_to_estimate(original, estimate, len(released))
    return out


# -- the commands -----------------------------------------------------------------------------

def synth_ehr(out: Path, *, patients: int, seed: int, as_json: bool) -> None:
    write_new_folder(out, lambda folder: write_synth_ehr(folder, patients=patients, seed=seed),
                     what="Folder")
    files = sorted(str(p) for p in out.iterdir())
    if as_json:
        print_json({"out": str(out), "files": files, "patients": patients, "seed": seed})
    else:
        ui.out.print(f"Wrote synthetic diagnosis sequences of {patients} patients to {out}.")



def resolve_sensitive(tree: CodeTree, *, sensitive_file: Path | None, preset: str | None) -> list[str]:
    if sensitive_file is not None and preset is not None:
        raise ValidationError("Give either --sensitive FILE or --sensitive-preset NAME, not both.")
    if sensitive_file is not None:
        return read_sensitive_file(sensitive_file, tree)
    return sensitive_preset(preset or "va-7332", tree)


def clinsim(diagnoses: Path, *, admissions: Path | None, method: str, epsilon: str | None,
            gamma: float | None, alpha: float, b_max: int | None, sensitive_file: Path | None,
            preset: str | None, code_level: str, min_admissions: int, aux_fraction: float,
            delta_t_days: float, max_path_length: int, min_predictions: int, seed: int | None,
            allow_seeded: bool, out: Path, as_json: bool) -> None:
    if method not in METHODS:
        raise ValidationError(f"--method must be one of {', '.join(METHODS)}; got {method!r}.")
    if method != "clinsimrr":
        for option, value in (("--gamma", gamma), ("--b-max", b_max)):
            if value is not None:
                raise ValidationError(f"{option} does not apply to --method {method}: only clinsimrr "
                                      "extends the protected set and builds blocks.")
    if method == "suppression" and epsilon is not None:
        raise ValidationError("--epsilon does not apply to --method suppression: it is not randomized.")
    if method != "suppression" and epsilon is None:
        raise ValidationError(f"--method {method} needs --epsilon (per released element, e.g. 1).")
    if code_level not in ("category", "full"):
        raise ValidationError(f"--code-level must be category or full; got {code_level!r}.")
    refuse_seeded_release(seed is not None and method != "suppression", allow_seeded)
    check_new_folder(out)
    data = load_ehr(diagnoses, admissions, code_level=code_level)
    if min_admissions > 1:
        data = data.with_min_admissions(min_admissions)
    tree = icd9_tree(code_level, extra_codes=tuple(data.codes))
    sensitive = resolve_sensitive(tree, sensitive_file=sensitive_file, preset=preset)
    split_seed = secrets.randbits(128) if seed is None else seed
    noise = NoiseSource.secure() if seed is None else NoiseSource.seeded(seed)
    with progress_bar(f"{method}: graph, plan, obfuscate, evaluate", 4) as step:
        run = run_clinsim(data, method=method, sensitive=sensitive, epsilon=epsilon,
                          gamma=0.05 if gamma is None else gamma, alpha=alpha,
                          b_max=16 if b_max is None else b_max, delta_t_days=delta_t_days,
                          max_path_length=max_path_length, min_predictions=min_predictions,
                          aux_fraction=aux_fraction, split_rng=np.random.default_rng(split_seed),
                          noise=noise, tree=tree, progress=step)
    split = {"auxiliary_fraction": aux_fraction, "by": "patient",
             "auxiliary_patients": run.auxiliary.n_patients,
             "evaluation_patients": run.evaluation.n_patients,
             "published": "evaluation patients only; the auxiliary part only shapes the protected set",
             "min_admissions": min_admissions}
    graph = {"delta_t_days": delta_t_days, "delta_t_checked": run.graph.delta_t_checked,
             "max_path_length": max_path_length, "nodes": len(run.graph.codes)}
    manifest = ehr_manifest(run.plan, released=run.released, code_level=code_level,
                            dates_reliable=data.dates_reliable, split=split, graph=graph,
                            randomness=noise.describe(), seed=seed)
    write_ehr_release(out, run.released, manifest)
    summary = {**run.summary(), "out": str(out), "input_sha256": data.digest(),
               "dates_reliable": data.dates_reliable}
    if as_json:
        print_json(summary)
        return
    _print_summary(summary)


def _print_summary(s: dict[str, Any]) -> None:
    ui.out.print(f"[bold]{s['method']}[/bold] released {s['elements_released']} elements of "
                 f"{s['patients']['evaluation']} patients to {s['out']}.")
    ui.out.print(f"Protected set: {s['protected_size']} codes ({s['sensitive_size']} sensitive, "
                 f"{s['added_for_leakage']} added for leakage, {s['added_for_blocking']} for blocking); "
                 f"block size {s['block_size']}.")
    cil = "n/a" if s["cil"] is None else f"{s['cil']:.4f}"
    ui.out.print(f"CIL {cil} (patients with a sensitive code), KL {s['kl']:.4f}, "
                 f"MAP {s['map']:.4f}, frequency L1 on sensitive codes {s['frequency_l1_sensitive']:.4f}")
    ui.out.print(f"Guarantee: {s['guarantee']}")
    ui.out.print(f"Not guaranteed: {s['does_not_guarantee']}")
