"""Tasks of the single-release experiments: 004 (IPA, on a patient table) and 003 (ClinSimRR, on
diagnosis sequences). Each (setting, run) is one task; the period is ``"-"``.

Synthetic data is generated once by the client and handed to the workers by the scheduler; user
data (``--input``) is read by the workers themselves (:mod:`.inputs`, which calls the loaders
here on each worker). Either way a task needs no file of the client's machine.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from ..anonymize.dphist import require_public_domain
from ..pipeline.clinsim import load_ehr, run_clinsim
from ..pipeline.methods import table_method
from ..pipeline.tabular import table_schema_path
from ..data.ehr import EhrData
from ..data.tabular import TableSchema, TabularData, load_table
from ..anonymize.clinsim import EXTENDING
from ..random import randomness
from ..metrics.tabular import evaluate_queries
from .grids import Setting

__all__ = ["EhrInput", "TableInput", "load_ehr_input", "load_table_input", "run_clinsim_task",
           "run_table_task"]

NO_PERIOD = "-"


@dataclass(frozen=True)
class TableInput:
    data: TabularData
    source: str
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class EhrInput:
    """Diagnosis sequences and the sensitive set: ``sensitive`` is a preset's name, resolved in
    each task on the tree of that task's auxiliary split (never on the released patients' codes)."""

    data: EhrData
    sensitive: str
    source: str
    details: dict = field(default_factory=dict)
    split_seed: int = 0


def load_table_input(source: Path | None, schema: Path | None, *, rows: int, seed: int) -> TableInput:
    """A patient table and its schema, or 004-like synthetic data of ``rows`` records.

    The experiment's grid holds the DP-histogram baseline, which needs a public informative
    domain: the synthetic schema declares the generator's code list; a user's schema without
    ``informative_domain`` is refused before any run starts.
    """
    if source is None:
        from ..data.synth.table import synth_patient_schema_toml, synth_patient_table

        # its informative_domain is the generator's full code list, fixed without the data
        table_schema = TableSchema.from_toml_text(synth_patient_schema_toml())
        data = load_table(synth_patient_table(rows, seed=seed), table_schema)
        return TableInput(data, f"synthetic patient table (seed {seed})",
                          {"synthetic": True, "rows": rows, "seed": seed})
    schema_path = table_schema_path(Path(source), schema)
    table_schema = TableSchema.from_toml(schema_path)
    require_public_domain(table_schema, source=f"schema file {str(schema_path)!r}")
    data = load_table(Path(source), table_schema, schema_dir=schema_path.parent)
    return TableInput(data, str(source), {"synthetic": False, "input": str(source),
                                          "schema": str(schema_path)})


def run_table_task(data: TableInput, setting: Setting, run: int, seed: int) -> dict:
    """One release of the table by one method; its information loss and query errors."""
    params = setting.kwargs
    # a parameter the setting lacks is passed as None: table_method's own default
    method = table_method(setting.method, epsilon=setting.number("epsilon"),
                          k=setting.integer("k"), selection=setting.text("selection"))
    started = time.perf_counter()
    result = method.anonymize(data.data, noise=randomness(seed))
    seconds = time.perf_counter() - started
    loss = result.loss.to_dict()
    row = {"method": setting.method, **params, "setting": setting.label, "period": NO_PERIOD,
           "run": run, "il": loss["information_loss"], "ncp": loss["ncp"], "emd": loss["emd"],
           "rate": loss["rate"], "seconds": round(seconds, 4)}
    for query in evaluate_queries(data.data, result.table):
        row[f"error_{query.name}"] = query.mean_relative_error
    return row


def load_ehr_input(diagnoses: Path | None, admissions: Path | None, *, patients: int,
                   seed: int, code_level: str = "category") -> EhrInput:
    """MIMIC-III files (or a long CSV), or synthetic MIMIC-layout data of ``patients`` patients;
    the sensitive codes are the ``va-7332`` preset (``docs/algorithms/clinsim.md``)."""
    details: dict[str, object]
    if diagnoses is None:
        from ..data.synth.ehr import write_synth_ehr

        with tempfile.TemporaryDirectory(prefix="medanon-experiment-") as tmp:
            write_synth_ehr(Path(tmp), patients=patients, seed=seed)
            data = load_ehr(Path(tmp) / "DIAGNOSES_ICD.csv", Path(tmp) / "ADMISSIONS.csv",
                            code_level=code_level)
        source, details = (f"synthetic diagnosis sequences (seed {seed})",
                           {"synthetic": True, "patients": patients, "seed": seed})
    else:
        data = load_ehr(diagnoses, admissions, code_level=code_level)
        source, details = str(diagnoses), {"synthetic": False, "input": str(diagnoses)}
    return EhrInput(data, "va-7332", source, {**details, "code_level": code_level,
                                              "sensitive": "va-7332"}, split_seed=seed)


class _ClinSimOptions(TypedDict, total=False):
    """The options a setting gives :func:`run_clinsim` beyond its defaults."""

    gamma: float


def _nan_if_none(value: float | None) -> float:
    return float("nan") if value is None else value


def run_clinsim_task(data: EhrInput, setting: Setting, run: int, seed: int) -> dict:
    """One obfuscation of the evaluation patients by one method; CIL, KL and the attack's MAP.

    The patient split depends on the run only (``split_seed`` and ``run``), so every method of a
    run is measured on the same evaluation patients (paired comparison); the mechanism's noise
    comes from the task's own ``seed``. ``umaxrr-yp`` is UMAXRR on the protected set ClinSimRR
    chooses with the same ε and γ — in the same run, the very same Y_P — beside ``umaxrr`` on the
    sensitive set. An undefined MAP (too few guesses) is NaN in the tables, with
    ``map_undefined_reason``.
    """
    params = setting.kwargs
    gamma = setting.number("gamma")
    options: _ClinSimOptions = (
        {"gamma": gamma} if setting.method in EXTENDING and gamma is not None else {})
    result = run_clinsim(data.data, method=setting.method, sensitive=data.sensitive,
                         epsilon=params.get("epsilon"),
                         split_rng=randomness((data.split_seed, run)), rng=randomness(seed),
                         **options)
    summary = result.summary()
    return {"method": setting.method, **params, "setting": setting.label, "period": NO_PERIOD,
            "run": run, "cil": summary["cil"], "kl": summary["kl"],
            "kl_estimated": summary["kl_estimated"],
            "map": _nan_if_none(summary["map"]),
            "map_undefined_reason": summary["map_undefined_reason"],
            # 003's scoring: the precision over the obfuscated sensitive elements only
            # (docs/algorithms/clinsim.md, "Why our MAP and CIL differ from 003's")
            "map_sensitive_inputs": _nan_if_none(summary["map_sensitive_inputs"]),
            "protected_size": summary["protected_size"], "block_size": summary["block_size"],
            "seconds": round(summary["seconds"]["total"], 4)}
