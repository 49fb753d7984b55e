"""``medanon clinsim``: release diagnosis sequences with ClinSimRR or a baseline (paper 003).

:func:`run_clinsim` is the whole evaluation of 003 §5 as a function (split by patient, learn the
dependence graph on the auxiliary part, plan, obfuscate the evaluation part, measure CIL, KL, the
inference attack's MAP and the frequency estimates); :func:`build_release` turns a run into the
published table and manifest; the command wraps both with loading, options and the release
folder. Benchmarks and experiment grids call :func:`run_clinsim` directly.

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
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..accounting import Accountant, PrivacyLoss, check_plan, losses_per_unit
from ..anonymize.clinsim import (EXTENDING, METHODS, SCOPE, ProtectionPlan, UMaxRR, UMaxRRExtended,
                                 make_method)
from ..anonymize.dependence import DependenceGraph
from ..attacks.inference import inference_attack
from ..data.ehr import EhrData, load_ehr_csv, load_mimic
from ..data.synth.ehr import write_synth_ehr
from ..errors import InputFormatError, ValidationError
from ..hierarchies.icd9 import (SENSITIVE_PRESETS, CodeTree, icd9_tree, known_category_codes,
                                place_codes, sensitive_file_codes, sensitive_preset)
from ..mechanisms.noise import NoiseSource
from ..random import refuse_seeded_release
from ..metrics.clinical import clinical_information_loss, kl_divergence, kl_divergence_to_estimate
from ..release.ehr import Pseudonyms, ehr_manifest, write_ehr_release
from ..release.format import check_new_folder, write_new_folder
from . import console as ui
from .console import print_json, progress_bar

__all__ = ["ClinSimRun", "build_release", "clinsim", "load_ehr", "release_codes", "release_tree",
           "run_clinsim"]

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
                split_rng: np.random.Generator | None = None, noise: NoiseSource | None = None,
                min_predictions: int = 10, compare: bool = False,
                progress: Callable[[str], None] | None = None) -> ClinSimRun:
    """Split, learn the graph, plan, obfuscate the evaluation patients and evaluate (003 §5).

    Args:
        data: The patients (all of them; the split happens here).
        method: One of :data:`~medanon.anonymize.clinsim.METHODS`.
        sensitive: A preset name (resolved on the release tree) or the sensitive codes at the
            data's level (the operator's public choice: the tree is extended with them).
        split_rng: The patient split's generator (a fresh OS-seeded one when None).
        noise: The mechanism's noise source (a secure one when None).
        compare: For ClinSimRR, also evaluate UMAXRR on the same extended Y_P and UMAXRR on the
            sensitive set (:data:`COMPARISONS`) on the same evaluation patients (not published;
            drawn from ``noise`` after the release).
        progress: Called with the name of each finished stage (graph, plan, obfuscate, evaluate).

    Raises:
        ValidationError: a bad parameter.
        HierarchyError: a sensitive code is not in the tree.
    """
    step = progress or (lambda _name: None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    options = {"gamma": gamma, "alpha": alpha, "b_max": b_max, "max_path_length": max_path_length} \
        if method in EXTENDING else {}
    algorithm = make_method(method, epsilon=epsilon, **options)
    if not 0 < aux_fraction < 1:
        raise ValidationError(f"The auxiliary fraction must be in (0, 1); got {aux_fraction}.")
    noise = noise if noise is not None else NoiseSource.secure()
    rng = split_rng if split_rng is not None else np.random.default_rng(secrets.randbits(128))
    auxiliary, evaluation = data.split(aux_fraction, rng=rng)
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
                      losses_per_unit(accountant.charges))


def placed_codes(codes: np.ndarray, mapping: dict[str, str]) -> np.ndarray:
    """``codes`` with each code the tree does not hold replaced as ``mapping`` says."""
    if not mapping:
        return codes
    out = codes.copy()
    hit = np.isin(codes, np.asarray(list(mapping), dtype=object))
    out[hit] = [mapping[c] for c in codes[hit]]
    return out


def release_codes(plan: ProtectionPlan, tree: CodeTree, codes: Any, noise: NoiseSource) -> np.ndarray:
    """What the release does to released patients' codes: place the codes the tree does not hold
    (:func:`~medanon.hierarchies.icd9.place_codes`), then report each through the plan's
    mechanism, independently. (:func:`run_clinsim` does exactly this; the statistical neighbour
    test samples one element through it.)"""
    codes = np.asarray(codes, dtype=object)
    return plan.obfuscate(placed_codes(codes, place_codes(tree, codes, prefer=plan.sensitive)), noise)


def _evaluate(plan: ProtectionPlan, released: np.ndarray, *, graph: DependenceGraph,
              tree: CodeTree, patients: pd.Series, original: np.ndarray, alpha: float,
              max_path_length: int, min_predictions: int) -> dict[str, Any]:
    patients = patients.to_numpy(dtype=object)
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
    out["map_undefined_reason"] = attack.map_undefined_reason
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


def build_release(run: ClinSimRun, *, identifiers: Pseudonyms, seed: int | None,
                  randomness: dict[str, Any], min_admissions: int = 1,
                  dates_reliable: bool | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The published table (identifiers pseudonymized, rows sorted) and the manifest of a run."""
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
                            graph=graph, randomness=randomness, seed=seed, identifiers=identifiers)
    return identifiers.table(run.released), manifest


# -- the commands -----------------------------------------------------------------------------

def synth_ehr(out: Path, *, patients: int, seed: int, as_json: bool) -> None:
    write_new_folder(out, lambda folder: write_synth_ehr(folder, patients=patients, seed=seed),
                     what="Folder")
    files = sorted(str(p) for p in out.iterdir())
    if as_json:
        print_json({"out": str(out), "files": files, "patients": patients, "seed": seed})
    else:
        ui.out.print(f"Wrote synthetic diagnosis sequences of {patients} patients to {out}.")



def resolve_sensitive(level: str, *, sensitive_file: Path | None,
                      preset: str | None) -> list[str] | str:
    """The operator's sensitive codes (from a file, normalized) or a preset's name."""
    if sensitive_file is not None and preset is not None:
        raise ValidationError("Give either --sensitive FILE or --sensitive-preset NAME, not both.")
    if sensitive_file is not None:
        return sensitive_file_codes(sensitive_file, level)
    name = preset or "va-7332"
    if name not in SENSITIVE_PRESETS:
        raise ValidationError(f"Unknown sensitive-code preset {name!r}; known presets: "
                              f"{', '.join(sorted(SENSITIVE_PRESETS))}.")
    return name


def resolve_identifiers(*, pseudonym_key: Path | None, keep_ids: bool, seed: int | None,
                        out: Path) -> tuple[Pseudonyms, bool]:
    """How the identifiers are published: ``(pseudonyms, key file to create)``.

    Raises:
        ValidationError: ``--keep-ids`` with ``--pseudonym-key``, a key file inside ``--out``, or
            an unusable key file.
    """
    if keep_ids and pseudonym_key is not None:
        raise ValidationError("Give either --pseudonym-key FILE or --keep-ids, not both.")
    if keep_ids:
        return Pseudonyms.raw(), False
    if pseudonym_key is not None:
        key, out_dir = Path(pseudonym_key).resolve(), Path(out).resolve()
        if key == out_dir or out_dir in key.parents:
            raise ValidationError(f"The --pseudonym-key file {str(pseudonym_key)!r} must not be in "
                                  f"the output folder {str(out)!r}: the key never leaves the operator.")
        return Pseudonyms.from_key_file(pseudonym_key)
    if seed is not None:
        return Pseudonyms.from_seed(seed), False
    return Pseudonyms.fresh(), False


def clinsim(diagnoses: Path, *, admissions: Path | None, method: str, epsilon: str | None,
            gamma: float | None, alpha: float, b_max: int | None, sensitive_file: Path | None,
            preset: str | None, code_level: str, min_admissions: int, aux_fraction: float,
            delta_t_days: float, max_path_length: int, min_predictions: int, seed: int | None,
            allow_seeded: bool, out: Path, as_json: bool, pseudonym_key: Path | None = None,
            keep_ids: bool = False) -> None:
    if method not in METHODS:
        raise ValidationError(f"--method must be one of {', '.join(METHODS)}; got {method!r}.")
    if method not in EXTENDING:
        for option, value in (("--gamma", gamma), ("--b-max", b_max)):
            if value is not None:
                raise ValidationError(f"{option} does not apply to --method {method}: only "
                                      f"{' and '.join(EXTENDING)} extend the protected set.")
    if method == "suppression" and epsilon is not None:
        raise ValidationError("--epsilon does not apply to --method suppression: it is not randomized.")
    if method != "suppression" and epsilon is None:
        raise ValidationError(f"--method {method} needs --epsilon (per released element, e.g. 1).")
    if code_level not in ("category", "full"):
        raise ValidationError(f"--code-level must be category or full; got {code_level!r}.")
    refuse_seeded_release(seed is not None and method != "suppression", allow_seeded)
    check_new_folder(out)
    identifiers, new_key = resolve_identifiers(pseudonym_key=pseudonym_key, keep_ids=keep_ids,
                                               seed=seed, out=out)
    sensitive = resolve_sensitive(code_level, sensitive_file=sensitive_file, preset=preset)
    data = load_ehr(diagnoses, admissions, code_level=code_level)
    if min_admissions > 1:
        data = data.with_min_admissions(min_admissions)
    split_seed = secrets.randbits(128) if seed is None else seed
    noise = NoiseSource.secure() if seed is None else NoiseSource.seeded(seed)
    with progress_bar(f"{method}: graph, plan, obfuscate, evaluate", 4) as step:
        run = run_clinsim(data, method=method, sensitive=sensitive, epsilon=epsilon,
                          gamma=0.05 if gamma is None else gamma, alpha=alpha,
                          b_max=16 if b_max is None else b_max, delta_t_days=delta_t_days,
                          max_path_length=max_path_length, min_predictions=min_predictions,
                          aux_fraction=aux_fraction, split_rng=np.random.default_rng(split_seed),
                          noise=noise, compare=True, progress=step)
    table, manifest = build_release(run, identifiers=identifiers, seed=seed,
                                    randomness=noise.describe(), min_admissions=min_admissions,
                                    dates_reliable=data.dates_reliable)
    if new_key:
        identifiers.save_key(pseudonym_key)
    try:
        write_ehr_release(out, table, manifest)
    except BaseException:
        if new_key:                          # the key of a release that was not written
            Path(pseudonym_key).unlink(missing_ok=True)
        raise
    # Operator-facing only (stdout, never the published folder): the input's digest lets the
    # operator check which file was released; the manifest holds no function of the input.
    summary = {**run.summary(), "out": str(out), "input_sha256": data.digest(),
               "dates_reliable": data.dates_reliable, "identifiers": identifiers.describe(),
               "guarantee": manifest["privacy"]["guarantee"],
               "does_not_guarantee": manifest["privacy"]["does_not_guarantee"]}
    if new_key:
        summary["pseudonym_key_created"] = str(pseudonym_key)
    if as_json:
        print_json(summary)
        return
    _print_summary(summary)


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _print_summary(s: dict[str, Any]) -> None:
    ui.out.print(f"[bold]{s['method']}[/bold] released {s['elements_released']} elements of "
                 f"{s['patients']['evaluation']} patients to {s['out']}.")
    ui.out.print(f"Protected set: {s['protected_size']} codes ({s['sensitive_size']} sensitive, "
                 f"{s['added_for_leakage']} added for leakage, {s['added_for_blocking']} for blocking); "
                 f"block size {s['block_size']}.")
    ui.out.print(f"CIL {_fmt(s['cil'])} (patients with a sensitive code), KL {s['kl']:.4f}, "
                 f"MAP {_fmt(s['map'])}, frequency L1 on sensitive codes "
                 f"{s['frequency_l1_sensitive']:.4f}")
    if s["map"] is None:
        ui.out.print(f"MAP undefined: {s['map_undefined_reason']}.")
    for name, other in s.get("comparison", {}).items():
        label = ("UMAXRR on the same extended Y_P" if name == "umaxrr-yp"
                 else "UMAXRR on the sensitive set")
        ui.out.print(f"  {label} ({other['protected_size']} codes, not published): "
                     f"CIL {_fmt(other['cil'])}, KL {other['kl']:.4f}, MAP {_fmt(other['map'])}")
    ids = s["identifiers"]
    ui.out.print("Identifiers: " + (f"pseudonymized ({ids['key']})" if ids["pseudonymized"]
                                    else "raw SUBJECT_ID and HADM_ID (--keep-ids)"))
    ui.out.print(f"Guarantee: {s['guarantee']}")
    ui.out.print(f"Not guaranteed: {s['does_not_guarantee']}")
