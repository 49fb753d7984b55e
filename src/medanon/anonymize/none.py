"""``--method none``: publish super records with identifiers removed and nothing else changed.

This is plumbing, not anonymization: it gives NO privacy guarantee. It exists so that the whole
flow (ingest, release, store, export) can be run and tested before any privacy method, and as the
"original data" reference that utility metrics compare releases against. What it does: combine a
case's reports into one super record (QIDs of follow-ups reconciled to their least upper bound,
sets united), drop the identifier and private columns, and number equivalence classes (cases
with identical QID values share a group).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from ..data.records import SuperRecords
from ..random import Randomness
from .base import AnonymizationResult, Anonymizer


class DropIdentifiers(Anonymizer):
    """Remove identifiers only. Privacy guarantee: none."""

    name = "none"
    privacy_model = None
    guarantee = ("None: identifiers and private columns are removed, quasi-identifiers and "
                 "sensitive values are published unchanged.")

    def parameters(self) -> dict[str, object]:
        return {}

    def anonymize(self, data: SuperRecords, previous: Sequence[pd.DataFrame] = (), *,
                  rng: Randomness, next_cases: Collection[str] | None = None) -> AnonymizationResult:
        schema = data.schema
        frame = data.frame
        table = pd.DataFrame({"period": frame[schema.period].to_numpy(),
                              "case_id": frame[schema.case_id].to_numpy()})
        # Equivalence classes: identical (generalized) QID tuples, compared by their text so
        # that intervals compare by value and a missing cell groups with missing cells.
        columns = [frame[name].to_numpy(dtype=object) for name in schema.qid_names]
        key = ["\x1f".join(map(str, values)) for values in zip(*columns)]
        codes, uniques = pd.factorize(pd.Series(key, dtype=object), sort=True)
        table["group"] = (codes + 1).astype(str)
        for name in schema.published:
            table[name] = frame[name].to_numpy()
        return AnonymizationResult(table=table, n_groups=len(uniques))
