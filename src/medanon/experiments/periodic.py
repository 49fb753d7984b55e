"""Tasks of the periodic experiments (001, 002, 000) on FAERS-like series.

A series is published period by period, because PPMS-family methods read the releases before
them. So the task of (setting, period t, run) takes the *state* returned by the task of period
t − 1 (the releases so far) and returns the state with period t added; Dask chains them. Once a
run's last period is published, one measuring task per (setting, period, run) evaluates that
release with :func:`medanon.metrics.evaluation.evaluate_series` over the whole series: the
attacks see every release, as an adversary reading the published history would.

Nothing here touches a store or the disk: tasks get their inputs from the scheduler and return
plain Python objects, so they run on any worker of a real cluster.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..anonymize import METHODS
from ..data.loaders.faers import read_faers
from ..data.records import SuperRecords, combine_super_records
from ..data.schema import Schema
from ..errors import ValidationError
from ..metrics.evaluation import evaluate_series
from ..metrics.signals import SignalRule as Rule
from ..models import level_wise
from ..random import randomness
from ..published.cells import QidInfo
from ..published.format import original_as_published, to_published_rows
from ..pipeline.publish import build_manifest
from ..published.series import PublishedSeries
from .grids import Setting

__all__ = ["PeriodicData", "LEVEL_WISE_HIGH", "LEVEL_WISE_NONE", "load_periodic_data",
           "measure_period", "release_period"]

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
    """The input of a periodic experiment: super records per period, oldest first."""

    periods: tuple[str, ...]
    supers: dict[str, SuperRecords]
    n_reports: dict[str, int]
    rules: tuple[Rule, ...]
    source: str
    details: dict = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def _schema() -> tuple[Schema, dict]:
    schema = Schema.default()
    return schema, schema.load_hierarchies()


def load_periodic_data(source: Path | None, *, periods: int, cases: int, seed: int,
                       rules: Sequence[Rule] = ()) -> PeriodicData:
    """FAERS quarters from ``source`` (zip, folder, folder of quarters), or a synthetic series.

    The synthetic series (``periods`` quarters of about ``cases`` cases, seeded) comes with its
    planted signals as rules unless ``rules`` are given.
    """
    schema, hierarchies = _schema()
    details: dict = {}
    with tempfile.TemporaryDirectory(prefix="medanon-experiment-") as tmp:
        if source is None:
            from ..data.synth.faers import PLANTED_SIGNALS, write_faers_series

            write_faers_series(Path(tmp) / "faers", periods=periods, cases=cases, seed=seed)
            source_path, label = Path(tmp) / "faers", f"synthetic FAERS-like series (seed {seed})"
            details = {"synthetic": True, "periods": periods, "cases_per_period": cases,
                       "seed": seed}
            if not rules:
                rules = [Rule(s.drug, s.reaction, s.condition) for s in PLANTED_SIGNALS]
        else:
            source_path, label = Path(source), str(source)
            details = {"synthetic": False, "input": str(source)}
        result = read_faers(source_path)
    if not result.quarters:
        raise ValidationError(f"{label} holds no FAERS quarter.")
    supers, reports = {}, {}
    for quarter in result.quarters:
        name = quarter.period.label
        supers[name] = combine_super_records(quarter.records, schema, hierarchies)
        reports[name] = len(quarter.records)
    return PeriodicData(tuple(supers), supers, reports, tuple(rules), label, details)


def case_ids(data: PeriodicData, period: str) -> frozenset[str]:
    """The case ids of one period (HA's ``next_cases``)."""
    frame = data.supers[period].frame
    return frozenset(frame[data.supers[period].schema.case_id].astype(str))


def _method(setting: Setting):
    params = setting.kwargs
    theta = params.get("theta")
    if theta == "level-wise":
        theta = level_wise(list(LEVEL_WISE_HIGH), list(LEVEL_WISE_NONE),
                           source="medanon experiments (LEVEL_WISE_HIGH / LEVEL_WISE_NONE)")
    kwargs = {"k": params["k"], "theta": theta, "on_infeasible": "raise-theta"}
    for name in ("alpha", "epsilon"):
        if name in params:
            kwargs[name] = params[name]
    return METHODS[setting.method](**kwargs)


def release_period(supers: SuperRecords, previous: dict | None, setting: Setting, period: str,
                   n_reports: int, seed: int, next_cases: frozenset[str] | None = None) -> dict:
    """Publish one period given the state of the releases before it; returns the new state.

    ``next_cases``: the case ids of the following period, which HA needs (an md-record is a
    case absent from it); ignored by the other methods.
    """
    schema, hierarchies = _schema()
    state = previous or {"releases": {}, "manifests": {}, "originals": {}, "seconds": {}}
    method = _method(setting)
    rng = randomness(seed)
    started = time.perf_counter()
    extra = {"next_cases": next_cases} if setting.method == "ha" else {}
    result = method.anonymize(supers, list(state["releases"].values()), rng=rng, **extra)
    seconds = time.perf_counter() - started
    rows = to_published_rows(result.table, schema)
    manifest = build_manifest(schema, hierarchies, method, period, rng, result=result, rows=rows,
                              n_reports=n_reports)
    return {"releases": {**state["releases"], period: rows},
            "manifests": {**state["manifests"], period: manifest},
            "originals": {**state["originals"], period: supers.frame},
            "seconds": {**state["seconds"], period: seconds}}


def measure_period(state: dict, setting: Setting, period: str, run: int,
                   rules: Sequence[Rule], md: bool) -> dict:
    """Every metric of one release of a published series, as one flat result row."""
    schema, hierarchies = _schema()
    qids = tuple(QidInfo(q.name, q.kind, hierarchies.get(q.name)) for q in schema.qids)
    series = PublishedSeries(state["releases"], state["manifests"], qids,
                             tuple(schema.sensitive), setting.label)
    originals = state["originals"]
    original_rows = {period: original_as_published(originals[period], schema)}
    entry = evaluate_series(series, originals, original_rows, rules=list(rules), md=md,
                            periods=[period])["releases"][0]
    signals = entry.get("signals", [])
    row = {"method": setting.method, **setting.kwargs, "setting": setting.label,
           "period": period, "run": run, "cases": entry["cases"], "groups": entry["groups"],
           "nil": entry["nil"], "nil_star": entry["nil_star"], "dir": entry["dir"],
           "dsr": entry["dsr"], "ssgr": entry["ssgr"], "rr": entry["rr"],
           "ar_rev": entry["ar_rev"], "reidentified": entry["reidentified"],
           "seconds": round(state["seconds"][period], 4)}
    if signals:
        row.update({
            "count_bias_abs": float(np.mean([abs(s["count_bias"]) for s in signals])),
            "prr_bias_abs": float(np.mean([abs(s["prr_bias"]) for s in signals])),
            "signals_original": sum(s["original"]["signal"] for s in signals),
            "signals_kept": sum(s["original"]["signal"] and s["release"]["signal"] for s in signals),
            "signals_spurious": sum(s["release"]["signal"] and not s["original"]["signal"]
                                    for s in signals),
        })
    return row
