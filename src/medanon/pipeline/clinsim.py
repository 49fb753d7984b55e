"""Diagnosis-sequence releases with ClinSimRR or a baseline (paper 003): the pipeline.

:func:`run_clinsim` is the whole evaluation of 003 §5 as a function (split by patient, learn the
dependence graph on the auxiliary part, plan, obfuscate the evaluation part, measure CIL, KL, the
inference attack's MAP and the frequency estimates); :func:`build_release` turns a run into the
published table and manifest; ``medanon clinsim``, the experiment grids and the benchmarks call them.

What may depend on what (the neighbour tests in ``tests/property/test_neighbour_ehr.py`` check it):

- the code tree is the package's ICD-9-CM tree extended with codes of the *auxiliary* split and the
  operator's sensitive-code file only — never with codes of the released (evaluation) patients;
- the sensitive set, the dependence graph, Y_P and the blocks come from that tree, the auxiliary
  split and the operator's choices: a non-private statistic of the auxiliary patients, published as
  such; nothing of them depends on a released patient's codes;
- a released code that is not a leaf of the tree is mapped by
  :func:`~medanon.hierarchies.icd9.place_codes` (nearest known ancestor; a rule reading the tree
  and the sensitive set only) before the mechanism; the metrics compare the mapped input with the
  release;
- released patients' codes reach the output only through the mechanism.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..accounting import Accountant, PrivacyLoss, check_plan, losses_per_unit
from ..anonymize.clinsim import EXTENDING, SCOPE, ProtectionPlan, UMaxRR, UMaxRRExtended
from ..anonymize.dependence import DependenceGraph
from ..attacks.inference import inference_attack
from ..data.ehr import EhrData, load_ehr_csv, load_mimic
from ..errors import InputFormatError, ValidationError
from ..hierarchies.icd9 import CodeTree, icd9_tree, known_category_codes, place_codes, sensitive_preset
from ..mechanisms.noise import NoiseSource
from ..random import Randomness, check_rng
from ..metrics.clinical import clinical_information_loss, kl_divergence, kl_divergence_to_estimate
from .ehr import Pseudonyms, check_time_resolution, ehr_manifest, published_times
from .methods import ehr_method

__all__ = ["COMPARISONS", "ClinSimRun", "build_release", "load_ehr", "placed_codes", "release_codes",
           "release_tree", "run_clinsim"]


#: The baselines shown beside ClinSimRR (evaluated on the same evaluation patients, not published).
COMPARISONS = ("umaxrr-yp", "umaxrr")


@dataclass
class ClinSimRun:
    """One release and its evaluation (what ``--json`` prints, plus the objects behind it).

    ``released`` holds the evaluation patients' events with the *source* identifiers and the
    released codes (:func:`build_release` pseudonymizes them); ``placed`` counts the released
    codes the tree did not hold (mapped before the mechanism) and the auxiliary elements left out
    of the graph; ``comparison`` holds the baselines of :data:`COMPARISONS` (ClinSimRR only).
    """

    plan: ProtectionPlan
    graph: DependenceGraph
    tree: CodeTree
    auxiliary: EhrData
    evaluation: EhrData
    released: pd.DataFrame
    metrics: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    placed: dict[str, Any] = field(default_factory=dict)
    comparison: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    #: what the mechanism reported per released element (empty for suppression)
    privacy_losses: tuple[PrivacyLoss, ...] = ()
    #: the randomness of the run, as the manifest records it (``Randomness.describe``)
    randomness: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        plan = self.plan
        out = {
            "method": plan.method, "parameters": plan.parameters,
            **self.metrics,
            **_plan_summary(plan),
            "patients": {"auxiliary": self.auxiliary.n_patients, "evaluation": self.evaluation.n_patients},
            "elements_released": len(self.released),
            "tree": {"level": self.tree.level, "leaves": self.tree.n_leaves,
                     "extended_with": "codes of the auxiliary split only"},
            "placed": self.placed,
            "graph": {"nodes": len(self.graph.codes), "edges": int(self.graph.weights.nnz),
                      "delta_t_days": self.graph.delta_t_days,
                      "delta_t_checked": self.graph.delta_t_checked},
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "guarantee": plan.guarantee(), "does_not_guarantee": plan.does_not_guarantee(),
        }
        if self.comparison:
            out["comparison"] = self.comparison
        return out


def _plan_summary(plan: ProtectionPlan) -> dict[str, Any]:
    mechanism = plan.mechanism
    return {"sensitive_size": len(plan.sensitive),
            "protected_size": len(plan.protected),
            "added_for_leakage": len(plan.added_for_leakage),
            "added_for_blocking": len(plan.added_for_blocking),
            "block_size": plan.block_size,
            "p_T": mechanism.p_t if mechanism is not None else None,
            "p_S": mechanism.p_s if mechanism is not None else None,
            "expected_cil_objective": plan.expected_cil}


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


def release_tree(level: str, auxiliary: EhrData, sensitive_codes: Sequence[str] = ()) -> CodeTree:
    """The code tree of a release: the package's tree extended with the auxiliary split's codes
    (those whose category the package knows) and the operator's sensitive codes — never with codes
    of the released patients.

    Raises:
        HierarchyError: a sensitive code's category is not in the package.
    """
    extras = (*known_category_codes(auxiliary.codes), *sensitive_codes)
    return icd9_tree(level, extra_codes=extras)


def _resolve_sensitive(sensitive: Sequence[str] | str, tree: CodeTree) -> list[str]:
    if isinstance(sensitive, str):
        return sensitive_preset(sensitive, tree)
    return [str(c) for c in sensitive]


def run_clinsim(data: EhrData, *, method: str, sensitive: Sequence[str] | str = "va-7332",
                epsilon: Any = None, gamma: float = 0.05, alpha: float = 0.5, b_max: int = 16,
                max_path_length: int = 2, delta_t_days: float = 300.0, aux_fraction: float = 0.8,
                rng: Randomness | None = None, split_rng: Randomness | None = None,
                min_predictions: int = 10, compare: bool = False,
                progress: Callable[[str], None] | None = None) -> ClinSimRun:
    """Split, learn the graph, plan, obfuscate the evaluation patients and evaluate (003 §5).

    Args:
        data: The patients (all of them; the split happens here).
        method: One of :data:`~medanon.anonymize.clinsim.METHODS`.
        sensitive: A preset name (resolved on the release tree) or the sensitive codes at the
            data's level (the operator's public choice: the tree is extended with them).
        rng: The run's randomness (:func:`medanon.random.randomness`; secure when None): the
            mechanism draws from its exact bits, the patient split from its generator.
        split_rng: The patient split's randomness when it must differ from ``rng``'s (paired
            experiments: every method of a run on the same patients); default ``rng``.
        compare: For ClinSimRR, also evaluate UMAXRR on the same extended Y_P and UMAXRR on the
            sensitive set (:data:`COMPARISONS`) on the same evaluation patients (not published;
            drawn from ``rng`` after the release).
        progress: Called with the name of each finished stage (graph, plan, obfuscate, evaluate).

    Raises:
        ValidationError: a bad parameter.
        HierarchyError: a sensitive code is not in the tree.
    """
    step = progress or (lambda _name: None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    extending = method in EXTENDING
    algorithm = ehr_method(method, epsilon=None if method == "suppression" else epsilon,
                           gamma=gamma if extending else None, b_max=b_max if extending else None,
                           alpha=alpha, max_path_length=max_path_length)
    if not 0 < aux_fraction < 1:
        raise ValidationError(f"The 'aux_fraction' parameter of run_clinsim must be in (0, 1); "
                              f"got {aux_fraction}.")
    rng = check_rng(rng, owner="run_clinsim")
    randomness = rng.describe()
    if split_rng is not None:
        split_rng = check_rng(split_rng, owner="run_clinsim", name="split_rng")
        randomness["patient_split"] = split_rng.describe()
    noise = NoiseSource(rng)   # the mechanism reads the exact bits only
    auxiliary, evaluation = data.split(aux_fraction, rng=(split_rng or rng).generator)
    tree = release_tree(data.code_level, auxiliary,
                        () if isinstance(sensitive, str) else tuple(sensitive))
    sensitive_codes = _resolve_sensitive(sensitive, tree)
    aux_events = auxiliary.events
    holdable = aux_events["code"].isin(pd.Index(tree.leaves)).to_numpy()
    graph = DependenceGraph.learn(aux_events.loc[holdable], delta_t_days=delta_t_days)
    seconds["graph"] = time.perf_counter() - started
    step("graph")
    plan = algorithm.plan(graph, sensitive_codes, tree)
    seconds["plan"] = time.perf_counter() - started - seconds["graph"]
    step("plan")
    events = evaluation.events
    source_codes = events["code"].to_numpy(dtype=object)
    mapping = place_codes(tree, source_codes, prefer=plan.sensitive)
    original = placed_codes(source_codes, mapping)
    mark = time.perf_counter()
    accountant = Accountant(scope=SCOPE)  # what the mechanism reports, per released element
    released_codes = plan.obfuscate(original, noise, accountant=accountant)
    check_plan(plan.planned_losses(), accountant.charges, owner=f"{method} release")
    seconds["obfuscate"] = time.perf_counter() - mark
    step("obfuscate")
    released = events.assign(code=released_codes)
    evaluate = functools.partial(_evaluate, graph=graph, tree=tree, patients=events["patient"],
                                 original=original, alpha=alpha, max_path_length=max_path_length,
                                 min_predictions=min_predictions)
    metrics = evaluate(plan, released_codes)
    comparison: dict[str, dict[str, Any]] = {}
    if compare and method == "clinsimrr":
        baselines = {"umaxrr-yp": lambda: UMaxRRExtended.from_plan(plan),
                     "umaxrr": lambda: UMaxRR(epsilon=epsilon).plan(graph, plan.sensitive, tree)}
        for name in COMPARISONS:
            other = baselines[name]()
            comparison[name] = {"method": name, **_plan_summary(other),
                                **evaluate(other, other.obfuscate(original, noise))}
    seconds["total"] = time.perf_counter() - started
    step("evaluate")
    placed = {"distinct_codes": len(mapping),
              "elements": int(np.isin(source_codes, np.asarray(list(mapping), dtype=object)).sum())
              if mapping else 0,
              "auxiliary_elements_dropped": int((~holdable).sum())}
    return ClinSimRun(plan, graph, tree, auxiliary, evaluation, released, metrics, seconds, placed,
                      comparison, {"aux_fraction": aux_fraction, "delta_t_days": delta_t_days,
                                   "max_path_length": max_path_length},
                      losses_per_unit(accountant.charges), randomness)


def placed_codes(codes: np.ndarray, mapping: dict[str, str]) -> np.ndarray:
    """``codes`` with each code the tree does not hold replaced as ``mapping`` says."""
    if not mapping:
        return codes
    out = codes.copy()
    hit = np.isin(codes, np.asarray(list(mapping), dtype=object))
    out[hit] = [mapping[c] for c in codes[hit]]
    return out


def release_codes(plan: ProtectionPlan, tree: CodeTree, codes: Any,
                  noise: Randomness | NoiseSource) -> np.ndarray:
    """What the release does to released patients' codes: place the codes the tree does not hold
    (:func:`~medanon.hierarchies.icd9.place_codes`), then report each through the plan's
    mechanism, independently. (:func:`run_clinsim` does exactly this; the statistical neighbour
    test samples one element through it.)"""
    codes = np.asarray(codes, dtype=object)
    return plan.obfuscate(placed_codes(codes, place_codes(tree, codes, prefer=plan.sensitive)), noise)


def _evaluate(plan: ProtectionPlan, released: np.ndarray, *, graph: DependenceGraph,
              tree: CodeTree, patients: pd.Series, original: np.ndarray, alpha: float,
              max_path_length: int, min_predictions: int) -> dict[str, Any]:
    patient_ids = patients.to_numpy(dtype=object)
    is_sensitive = np.isin(original, np.asarray(plan.sensitive, dtype=object))
    with_sensitive = pd.unique(patient_ids[is_sensitive])
    d = functools.partial(tree.dissimilarity_codes, alpha=alpha)
    out: dict[str, Any] = {
        "cil": clinical_information_loss(original, released, patient_ids, dissimilarity=d,
                                         only_patients=with_sensitive) if len(with_sensitive) else None,
        "cil_all_patients": clinical_information_loss(original, released, patient_ids,
                                                      dissimilarity=d),
        "kl": kl_divergence(original, released),
        "patients_with_sensitive": int(len(with_sensitive)),
        "sensitive_elements": int(is_sensitive.sum()),
        "changed_elements": int((original != released).sum()),
    }
    path_prob = graph.path_probability(list(plan.sensitive), max_length=max_path_length)
    frame = pd.DataFrame({"patient": patient_ids, "code": original, "released": released})
    attack_on = functools.partial(
        inference_attack, frame, sensitive=list(plan.sensitive), likelihood=plan.likelihood,
        attacked_outputs=plan.attacked_outputs, path_prob=path_prob, graph_codes=graph.codes,
        frequency=graph.frequency, min_predictions=min_predictions)
    attack = attack_on()
    out["map"] = attack.map
    out["map_undefined_reason"] = attack.map_undefined_reason
    # 003's scoring (issue 31): the same guesses, precision over the obfuscated sensitive elements
    # only (randomized non-sensitive codes that land in Y_P are not counted as false positives).
    paper = attack_on(scored="sensitive-inputs")
    out["map_sensitive_inputs"] = paper.map
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


def build_release(run: ClinSimRun, *, identifiers: Pseudonyms, min_admissions: int = 1,
                  dates_reliable: bool | None = None, time_resolution: str = "day"
                  ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The published table (identifiers pseudonymized, rows sorted, ``time`` floored to
    ``time_resolution``) and the manifest of a run (its ``rng`` entry is the run's own randomness,
    :attr:`ClinSimRun.randomness`).

    Only the published column is coarsened: the run (the dependence graph, learned on the
    auxiliary split, and the metrics) used the exact times.

    Raises:
        ValidationError: ``time_resolution`` is not ``day``, ``hour`` or ``minute``.
    """
    time_resolution = check_time_resolution(time_resolution, owner="build_release")
    split = {"auxiliary_fraction": run.settings.get("aux_fraction"), "by": "patient",
             "auxiliary_patients": run.auxiliary.n_patients,
             "evaluation_patients": run.evaluation.n_patients,
             "published": "evaluation patients only; the auxiliary part only shapes the protected set",
             "min_admissions": min_admissions}
    graph = {"delta_t_days": run.graph.delta_t_days, "delta_t_checked": run.graph.delta_t_checked,
             "max_path_length": run.settings.get("max_path_length"), "nodes": len(run.graph.codes),
             "learned_on": "the auxiliary split"}
    reliable = run.evaluation.dates_reliable if dates_reliable is None else dates_reliable
    manifest = ehr_manifest(run.plan, privacy_losses=run.privacy_losses,
                            released=run.released, code_level=run.tree.level,
                            tree_leaves=run.tree.n_leaves, dates_reliable=reliable, split=split,
                            graph=graph, randomness=run.randomness, identifiers=identifiers,
                            time_resolution=time_resolution)
    table = identifiers.table(run.released)
    table["time"] = published_times(table["time"].to_numpy(dtype=np.float64), time_resolution)
    return table, manifest
