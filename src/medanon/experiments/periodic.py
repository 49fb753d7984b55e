"""Tasks of the periodic experiments (001, 002, 000) on FAERS-like series.

A series is published period by period, because PPMS-family methods read the releases before
them. So the task of (setting, period t, run) takes the *state* returned by the task of period
t − 1 (the series so far) and returns the state with period t added; Dask chains them. Each
task publishes through the public API (:class:`medanon.Publisher`, the library's one publish
loop, verify gate included): experiments evaluate methods whose releases may violate their
model (MS, by design), so they keep such releases (``allow_violations=True``) and measure them.
Once a run's last period is published, one measuring task per (setting, period, run) evaluates
that release with :func:`medanon.metrics.evaluation.evaluate_series` over the whole series: the
attacks see every release, as an adversary reading the published history would.

Nothing here touches a store or the disk: tasks get their input as a :class:`medanon.Dataset`
(scattered by the client, or read by the worker from ``--input``: :mod:`.inputs`) and return
plain Python objects, so they run on any worker of a real cluster.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..anonymize import METHODS
from ..api import Dataset, Publisher, Series
from ..pipeline.case_ids import CaseIds
from ..errors import InternalError
from ..attacks.worst_case import attack_series
from ..metrics.evaluation import evaluate_series
from ..metrics.information_loss import information_loss_star, normalized_information_loss
from ..metrics.signals import Condition, ratio_from_json
from ..metrics.signals import SignalRule as Rule
from ..models import TableTheta, level_wise
from ..models.theta import raised_thetas, requested_theta_table
from ..published.format import original_as_published
from ..published.series import PublishedSeries
from .grids import ParamValue, Setting

__all__ = ["PeriodicData", "LEVEL_WISE_HIGH", "LEVEL_WISE_NONE", "load_periodic_data",
           "measure_period", "nil_all_cases", "release_period", "setting_changes"]

#: 001's level-wise θ* needs lists of highly sensitive and non-sensitive terms, which 001 does
#: not publish. Ours: stigmatizing conditions (mental health, suicide, HIV and hepatitis,
#: reproduction, addiction) are highly sensitive (θ = 0.2); the report-bookkeeping terms that say
#: nothing about a person are not sensitive (θ = 1); every other term gets θ = 0.4.
LEVEL_WISE_HIGH = (
    "Depression", "Suicidal ideation", "Completed suicide", "Suicide attempt", "Schizophrenia",
    "Bipolar disorder", "Hallucination", "Anxiety", "Abnormal behaviour", "Aggression",
    "HIV infection", "Hepatitis C", "Pregnancy", "Contraception", "Abortion spontaneous",
    "Drug abuse", "Drug dependence", "Alcoholism", "Erectile dysfunction",
)
LEVEL_WISE_NONE = ("Drug ineffective", "Off label use", "Product used for unknown indication",
                   "No adverse event", "Product quality issue", "Drug interaction")


@dataclass(frozen=True)
class PeriodicData:
    """The input of a periodic experiment: the records per period (``dataset.periods``, oldest
    first) and the signal rules to measure."""

    dataset: Dataset
    rules: tuple[Rule, ...]
    source: str
    details: dict = field(default_factory=dict)

    @property
    def periods(self) -> tuple[str, ...]:
        return tuple(self.dataset.periods)


def load_periodic_data(source: Path | None, *, periods: int, cases: int, seed: int,
                       rules: Sequence[Rule] = (), profile: str = "default") -> PeriodicData:
    """FAERS quarters from ``source`` (zip, folder, folder of quarters), or a synthetic series.

    The synthetic series (``periods`` quarters of about ``cases`` cases, seeded, shaped by the
    synthetic ``profile``) comes with its planted signals as rules unless ``rules`` are given.
    """
    details: dict = {}
    with tempfile.TemporaryDirectory(prefix="medanon-experiment-") as tmp:
        if source is None:
            from ..data.synth.faers import PLANTED_SIGNALS, write_faers_series

            write_faers_series(Path(tmp) / "faers", periods=periods, cases=cases, seed=seed,
                               profile=profile)
            source_path = Path(tmp) / "faers"
            label = f"synthetic FAERS-like series (profile {profile}, seed {seed})"
            details = {"synthetic": True, "profile": profile, "periods": periods,
                       "cases_per_period": cases, "seed": seed}
            if not rules:
                # the planted conditions are texts (all non-empty): parsed as SignalRule would
                rules = [Rule(s.drug, s.reaction, Condition.parse(s.condition))
                         for s in PLANTED_SIGNALS]
        else:
            source_path, label = Path(source), str(source)
            details = {"synthetic": False, "input": str(source)}
        # The papers' grids: their filter (reports lacking a QID or sensitive value dropped),
        # so that docs/results.md's figures are reproduced; a store input keeps its own choice.
        dataset = Dataset.from_faers(source_path, keep_missing=False)
    return PeriodicData(dataset, tuple(rules), label, details)


def _method(setting: Setting):
    params = setting.kwargs
    # a grid's θ: a number or a rule's name, and 001's level-wise table built here by name
    theta: ParamValue | TableTheta | None = params.get("theta")
    if theta == "level-wise":
        theta = level_wise(list(LEVEL_WISE_HIGH), list(LEVEL_WISE_NONE),
                           source="medanon experiments (LEVEL_WISE_HIGH / LEVEL_WISE_NONE)")
    # The grids measure what each setting withholds (the manifests count it) rather than
    # refuse a period: no bound on the withheld share. Every θ raised and every case withheld
    # is reported per row (measure_period) and marked in the summary (outputs.py).
    # The papers' own greedy, not the faster classes-first grouping: the grids reproduce them.
    kwargs = {"k": params["k"], "theta": theta, "on_infeasible": "raise-theta", "max_withheld": 1.0,
              "grouping": "greedy"}
    # HA's on_unplaceable (suppress terms or withhold, 002 as written) and PPMS-DP's variant
    # (strict or 000's own) are grid axes of their own
    for name in ("alpha", "epsilon", "on_unplaceable", "variant"):
        if name in params:
            kwargs[name] = params[name]
    return METHODS[setting.method](**kwargs)


def release_period(data: Dataset, previous: dict | None, setting: Setting, period: str,
                   seed: int) -> dict:
    """Publish one period given the state of the releases before it; returns the new state.

    The state holds the series so far (``series``, a :class:`medanon.Series` whose gate verdict
    the next period's gate starts from) and the seconds each period's method took. HA takes
    the case ids of the next period from ``data``, which must hold it.
    """
    state = previous or {"series": None, "seconds": {}, "operator": {}}
    # one CaseID key for the whole series, so that its releases link (issue 41)
    key = state.get("case_key")
    publisher = Publisher(_method(setting), seed=seed, **({"case_key": key} if key else {}))
    # The level-wise θ* tables are the papers' and name terms a synthetic series may never
    # hold: that is expected here, so the unknown-terms check is acknowledged (the manifest
    # records it), as a steward would with --allow-unknown-terms.
    series = publisher.publish(data, [period], previous=state["series"], allow_violations=True,
                               allow_unknown_terms=True)
    assert isinstance(series, Series)  # a Dataset is published as a Series (Publisher.publish)
    if not series.releases_published:
        raise InternalError(f"{setting.label} published nothing for {period}: HA needs the next "
                            "period, which the runner always leaves in the data.")
    (release,) = series.releases_published
    # the operator-only facts of each release (withheld counts, ...: not in the manifests,
    # issue 41), kept with the state since a later period's series holds only its own
    return {"series": series, "seconds": {**state["seconds"], period: release.seconds},
            "case_key": publisher.case_ids.key,
            "operator": {**state.get("operator", {}), period: release.operator_manifest}}


def _finite_mean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def setting_changes(series: PublishedSeries, period: str, *, md: bool,
                    dsr: float | None) -> dict:
    """What a release changed of its setting, as result-row columns (``docs/experiments.md``):
    the θ it raised (requested -> effective per term) and the DSR against the requested θ
    table beside the recorded one (``dsr``, the release's effective table)."""
    manifest = series.manifests[period]
    raised = raised_thetas(manifest)
    dsr_requested = dsr
    if raised:  # the same attacks, measured against the θ the setting asked for
        dsr_requested = attack_series(series, periods=[period], md=True if md else None,
                                      theta=requested_theta_table(manifest)).release(period).dsr
    return {"raised_terms": len(raised),
            "theta_raised": json.dumps({t: list(v) for t, v in sorted(raised.items())}),
            "theta_effective_max": max((e for _, e in raised.values()), default=float("nan")),
            "dsr_requested": dsr_requested}


def nil_all_cases(nil_cases: float, published: int, withheld: int) -> float:
    """NIL (001's, or 000's with IL*) over every case of the period, from its mean per
    published case: each published case has its own loss, each withheld case the full loss 1.0
    (nothing of it is published), so that methods that withhold different cases are compared
    on the same case set."""
    total = published + withheld
    return (nil_cases * published + 1.0 * withheld) / total if total else 0.0


def measure_period(data: Dataset, state: dict, setting: Setting, period: str, run: int,
                   rules: Sequence[Rule], md: bool) -> dict:
    """Every metric of one release of a published series, as one flat result row."""
    series = state["series"]
    # the original cases under their published CaseIDs (pseudonyms), to meet their rows
    originals = {period: CaseIds("pseudonym", state["case_key"]).records(
        data.super_records(period).frame, data.schema.case_id)}
    original_rows = {period: original_as_published(originals[period], data.schema)}
    entry = evaluate_series(series, originals, original_rows, rules=list(rules), md=md,
                            periods=[period])["releases"][0]
    signals = entry.get("signals", [])
    # the operator's view (withheld counts are operator-only facts, not in the manifest)
    manifest = state.get("operator", {}).get(period) or series.operator_manifests()[period]
    counts = manifest["counts"]
    cases_all, withheld = len(originals[period]), int(counts.get("suppressed", 0))
    if entry["cases"] + withheld != cases_all:
        raise InternalError(f"{setting.label}, {period}: {entry['cases']} published and "
                            f"{withheld} withheld cases, but the period holds {cases_all}.")
    qid_kinds = [(q.name, q.kind) for q in series.qids]
    rows = series.releases[period]
    nil_cases = normalized_information_loss(rows, qid_kinds, series.hierarchies, per="case")
    # 000's IL* per scored case: the mean of its per-QID losses is Σ_g IL*(g) / (cases·|QID|)
    star = information_loss_star(originals[period], rows, qid_kinds, series.hierarchies)
    nil_star_cases = float(star.per_attribute.mean()) if star.n_records else 0.0
    row = {"method": setting.method, **setting.kwargs, "setting": setting.label,
           "period": period, "run": run, "cases": entry["cases"], "groups": entry["groups"],
           "cases_all": cases_all, "withheld_cases": withheld,
           "withheld_share": withheld / cases_all if cases_all else 0.0,
           "nil": entry["nil"], "nil_cases": round(nil_cases, 6),
           "nil_all": round(nil_all_cases(nil_cases, entry["cases"], withheld), 6),
           "nil_star": entry["nil_star"], "nil_star_cases": round(nil_star_cases, 6),
           "nil_star_all": round(nil_all_cases(nil_star_cases, entry["cases"], withheld), 6),
           "dir": entry["dir"],
           "dsr": entry["dsr"], "ssgr": entry["ssgr"], "rr": entry["rr"],
           "ar_rev": entry["ar_rev"], "reidentified": entry["reidentified"],
           # (case, term) pairs the method removed from this release (manifest counts)
           "suppressed_terms": int(counts.get("suppressed_terms", 0)),
           **setting_changes(series, period, md=md, dsr=entry["dsr"]),
           "gate": (manifest.get("verification") or {}).get("verdict"),
           "seconds": round(state["seconds"][period], 4)}
    if signals:
        row.update({
            "count_bias_abs": float(np.mean([abs(s["count_bias"]) for s in signals])),
            # a bias with an infinite or undefined side (c = 0 on one side) has no size to
            # average; those rules are left out (NaN when none is left)
            "prr_bias_abs": _finite_mean([abs(ratio_from_json(s["prr_bias"]))
                                          for s in signals]),
            "signals_original": sum(s["original"]["signal"] for s in signals),
            "signals_kept": sum(s["original"]["signal"] and s["release"]["signal"] for s in signals),
            "signals_spurious": sum(s["release"]["signal"] and not s["original"]["signal"]
                                    for s in signals),
        })
    return row
