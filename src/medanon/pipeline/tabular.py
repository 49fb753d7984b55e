"""Published form of a tabular release (IPA, full-domain k-anonymity, DP histogram).

A folder holding:

- ``release.csv``: header ``group,<dimension columns...>,<informative column>``, one row per
  released record, in random order for the DP methods; counterfeit rows are *not* marked. A
  generalized numeric value is an inclusive interval ``[lo-hi]``, a categorical one a label of its
  hierarchy, a suppressed value ``*`` (the release format of ``design.md``, without the
  ``period``/``case_id`` columns a one-off table does not have);
- ``manifest.json``: method, parameters, chosen node, hierarchies (ARX layout), the privacy
  statement and the ε of every step, the randomness used, the counts that may be published, and
  the verify gate's ``verification`` (:func:`medanon.verify.gate_one_off`, run by
  :class:`medanon.Publisher` on the rows as ``release.csv`` reads back).

For the DP methods the manifest withholds the number of input records, of suppressed and of
counterfeit rows: each would let a reader subtract the noise, so they go only to the operator
(``medanon ipa --json``). No manifest, DP or not, holds a hash of the input: with every other
record known, a reader could test guesses about a target's values against it (the operator's
summary has it as ``input_sha256``).
"""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..anonymize.tabular import TabularResult
from ..data.tabular import TabularData
from ..errors import SchemaError
from ..published.format import write_release_text

__all__ = ["TABULAR_FORMAT", "table_schema_path", "tabular_csv", "tabular_manifest",
           "write_tabular_release"]

TABULAR_FORMAT = "medanon-tabular-release/1"
_WITHHELD = ("withheld: with the released row count it would reveal the noise added by the "
             "differentially private steps")


def tabular_manifest(result: TabularResult, data: TabularData, *,
                     randomness: dict[str, Any]) -> dict[str, Any]:
    """The manifest of a tabular release (see the module docstring for what is withheld);
    ``randomness`` is the run's ``Randomness.describe()`` (kind, seed, ...)."""
    dp = bool(result.privacy_losses)
    schema = data.schema
    counts: dict[str, Any] = {"released_rows": len(result.table), "classes": result.classes}
    if dp:
        counts.update(records=_WITHHELD, suppressed=_WITHHELD, counterfeit=_WITHHELD)
    else:
        counts.update(records=result.records, suppressed=result.suppressed, counterfeit=0)
    method: dict[str, Any] = {"name": result.method, "parameters": result.parameters,
                              "privacy_model": result.privacy_model.name,
                              "model": result.privacy_model.to_manifest()}
    if result.acknowledged:  # operator choices, as a periodic release records them
        method["acknowledged"] = list(result.acknowledged)
    return {
        "format": TABULAR_FORMAT,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": method,
        "node": {name: level for name, level in zip(schema.dimension_names, result.node)},
        "columns": {"group": "equivalence class within this release",
                    "dimensions": [{"name": d.name, "kind": d.kind} for d in schema.dimensions],
                    "informative": schema.informative},
        "hierarchies": {h.name: {"layout": "arx",
                                 "text": "\n".join(";".join(r) for r in h.to_arx_rows()) + "\n"}
                        for h in data.hierarchies},
        "informative_domain": {"public": data.domain_public,
                               "values": list(data.informative_domain) if data.domain_public else None},
        "counts": counts,
        "privacy": {
            "differential_privacy_steps": [p.to_dict() for p in result.privacy_losses],
            "epsilon_total": float(sum(p.epsilon for p in result.privacy_losses)) if dp else None,
            "guarantee": result.guarantee,
            "does_not_guarantee": result.does_not_guarantee,
        },
        "rng": dict(randomness),
        "library": {"name": "medanon", "version": __version__},
    }


def tabular_csv(table) -> str:
    """The text of ``release.csv`` for a tabular release's table (UTF-8 text, ``\n`` line ends)."""
    return table.to_csv(index=False, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)


def write_tabular_release(out: str | Path, result: TabularResult, manifest: dict[str, Any]) -> Path:
    """Write ``release.csv`` and ``manifest.json`` into the new folder ``out``, all or nothing.

    Raises:
        StoreError: ``out`` exists and is not an empty folder, or its parent does not exist.
    """
    return write_release_text(out, tabular_csv(result.table), manifest)


def table_schema_path(table: str | Path, schema: str | Path | None = None) -> Path:
    """The table schema of ``table``: ``schema`` when given, else ``NAME.schema.toml`` beside
    the table (what ``medanon synth table`` writes).

    Raises:
        SchemaError: no ``schema`` and no schema file beside the table.
    """
    if schema is not None:
        return Path(schema)
    table = Path(table)
    guess = table.with_name(table.stem + ".schema.toml")
    if guess.exists():
        return guess
    raise SchemaError(f"The 'schema' parameter is missing and there is no {guess.name} beside "
                      f"{str(table)!r}: name the table's schema TOML.")
