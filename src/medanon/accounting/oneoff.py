"""The ε one-off releases spend on an input, across runs (issues 33 and 41).

``medanon ipa``, ``dphist`` (``ipa --method dphist``) and ``clinsim`` publish one release of one
input, with no store. Running them again on the same data spends ε again: two ε = 1 releases of
one table are a 2-DP view of it. This ledger remembers, per input, what each run spent, so that
a second run says what the input has spent, and a run that would take it past a budget
(``--budget``) is refused unless acknowledged (``--allow-over-budget``, recorded in the
release's ``method.acknowledged``).

**What "the same input" is.** An input is known by an :class:`InputFingerprint` of its rows
taken as a multiset, so neither the file's bytes nor its row order matter:

* each row is hashed to 64 bits from its values (a keyless mix of a BLAKE2b hash of each
  column's text; the k-th copy of a repeated row is mixed with k, so a table's duplicate rows
  stay distinct elements);
* ``digest`` is the SHA-256 of the sorted row hashes and the row count: the same rows in any
  order give the same digest;
* ``sketch`` is the bottom-:data:`SKETCH_SIZE` of the row hashes (the smallest values; all of
  them for an input with fewer rows), from which the share of rows two inputs have in common is
  estimated (:func:`overlap`).

A run is charged the ε of every recorded release of an input that has the same digest **or
shares at least** :data:`OVERLAP_THRESHOLD` **of its rows** with it (the larger of the two
containments |A ∩ B| / |A| and |A ∩ B| / |B|: a subset, a superset or a partly changed copy of
an earlier input all count). Each release is charged once, to the input it was recorded under;
the relation is not transitive (A overlapping B and B overlapping C does not charge A for C).
Below the threshold the people two inputs share are not accounted for: the ledger is a guard
against re-releasing the same people by accident, not a proof of composition over arbitrary
overlapping inputs. Rows are values, not people: two tables with few distinct rows (few,
coarse columns) share most of their rows whoever they describe and are charged together, the
cautious side (synthetic 2,000-row tables of different seeds share under 1%).

**Error bound.** For two inputs of at most :data:`SKETCH_SIZE` rows each the containments are
exact. Otherwise both sketches are cut at the smaller of their largest hashes, which leaves a
uniform sample of each input at one common hash threshold; the containment estimate is the
shared fraction of that sample, with standard error at most 0.5 / √s for a sample of s rows
(s ≈ :data:`SKETCH_SIZE` = 2048 for inputs of similar size: about ±0.033 at three standard
errors around the threshold). For inputs of very different sizes the smaller input's sample
shrinks in proportion (s ≈ n_small · 2048 / n_large), and the estimate is correspondingly coarser.

**What is stored, and who may read it.** Per input: its digest, its row count, its sketch and
its releases (time, method, ε, output folder). These are functions of the private rows (a row
hash identifies a row whose values are guessed), so the ledger is the operator's file (by
default ``~/.medanon/one-off-ledger.json``, or ``MEDANON_LEDGER``, or ``--ledger``) and nothing
of it is ever published. The ε recorded is the release's nominal ε as its method states it
(IPA's total over its four steps; the DP histogram's; ClinSimRR's per element): the sum is the
basic composition of the runs, no tighter. A ledger written before issue 41 (inputs keyed by the
row-order SHA-256, no sketch) is read: its inputs match only by that key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import BudgetExceeded, InputFormatError, ValidationError

__all__ = ["DEFAULT_LEDGER", "OVERLAP_THRESHOLD", "SKETCH_SIZE", "InputFingerprint",
           "OneOffLedger", "overlap"]

#: where the ledger lives unless ``MEDANON_LEDGER`` or ``--ledger`` says otherwise
DEFAULT_LEDGER = Path("~/.medanon/one-off-ledger.json")
#: how many of the smallest row hashes an input's sketch keeps
SKETCH_SIZE = 2048
#: the shared share of rows from which an earlier input's ε is charged to this one
OVERLAP_THRESHOLD = 0.5
_LEDGER_VERSION = 2

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a keyless bijective mix of 64-bit values (wrapping arithmetic)."""
    x = x.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _column_hashes(values: pd.Series) -> np.ndarray:
    """A 64-bit BLAKE2b hash of each value's text (each distinct value hashed once)."""
    # a missing value is a value of its own (pandas 3 keeps NaN missing through astype(str))
    codes, uniques = pd.factorize(values.astype(str), sort=False, use_na_sentinel=False)
    table = np.fromiter((int.from_bytes(hashlib.blake2b(str(u).encode("utf-8"),
                                                        digest_size=8).digest(), "little")
                         for u in uniques), dtype=np.uint64, count=len(uniques))
    return table[codes]


@dataclass(frozen=True, eq=False)   # an array field: compare digests, not objects
class InputFingerprint:
    """An input's identity for the one-off ledger, independent of its row order (module
    docstring). Operator-only: a function of the private rows.

    Attributes:
        digest: SHA-256 (hex) of the sorted row hashes and the row count.
        rows: The number of rows.
        sketch: The smallest :data:`SKETCH_SIZE` row hashes, ascending (all of them for a
            smaller input).
    """

    digest: str
    rows: int
    sketch: np.ndarray

    @classmethod
    def of_rows(cls, frame: pd.DataFrame) -> InputFingerprint:
        """The fingerprint of ``frame``'s rows as a multiset (column order as given; each value
        read as text).

        Raises:
            ValidationError: ``frame`` has no columns.
        """
        if frame.shape[1] == 0:
            raise ValidationError("The 'frame' parameter of InputFingerprint.of_rows needs at "
                                  "least one column.")
        hashes = np.zeros(len(frame), dtype=np.uint64)
        for j, column in enumerate(frame.columns):
            hashes = _mix(hashes ^ _column_hashes(frame[column]) ^ np.uint64(j + 1))
        # the k-th copy of a repeated row: mixed with k, so copies are distinct elements
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        starts = np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, bool)
        first = np.maximum.accumulate(np.where(starts, np.arange(len(ordered)), 0))
        copy = (np.arange(len(ordered)) - first).astype(np.uint64)
        distinct = np.sort(_mix(ordered ^ _mix(copy + np.uint64(0x9E3779B97F4A7C15))))
        digest = hashlib.sha256(len(distinct).to_bytes(8, "little") + distinct.tobytes())
        return cls(digest.hexdigest(), int(len(distinct)), distinct[:SKETCH_SIZE].copy())

    def to_json(self) -> dict[str, Any]:
        """The stored form: rows and the sketch as base64 of its little-endian uint64s."""
        return {"rows": self.rows, "sketch": base64.b64encode(
            self.sketch.astype("<u8").tobytes()).decode("ascii")}

    @classmethod
    def from_json(cls, digest: str, stored: dict[str, Any]) -> InputFingerprint:
        raw = base64.b64decode(stored["sketch"])
        return cls(digest, int(stored["rows"]), np.frombuffer(raw, dtype="<u8").astype(np.uint64))


def overlap(a: InputFingerprint, b: InputFingerprint) -> float:
    """The larger of the estimated shares |A ∩ B| / |A| and |A ∩ B| / |B| (exact when both
    inputs have at most :data:`SKETCH_SIZE` rows; module docstring for the error bound)."""
    if a.digest == b.digest:
        return 1.0
    if not a.rows or not b.rows or not len(a.sketch) or not len(b.sketch):
        return 0.0
    # both sketches cut at a common hash threshold: each then holds every row hash of its input
    # below it, a uniform sample of that input at the same rate
    cut = min(a.sketch[-1] if a.rows > len(a.sketch) else np.iinfo(np.uint64).max,
              b.sketch[-1] if b.rows > len(b.sketch) else np.iinfo(np.uint64).max)
    left, right = a.sketch[a.sketch <= cut], b.sketch[b.sketch <= cut]
    if not len(left) or not len(right):
        return 0.0
    shared = len(np.intersect1d(left, right, assume_unique=True))
    return max(shared / len(left), shared / len(right))


@dataclass
class OneOffLedger:
    """The ε spent per input by one-off releases (module docstring).

    An input is given as an :class:`InputFingerprint` (same data in any row order, and inputs
    sharing at least :data:`OVERLAP_THRESHOLD` of their rows, are charged together) or as a
    plain key (matched exactly).

    Attributes:
        path: The ledger file (JSON; created at the first record).
    """

    path: Path

    @classmethod
    def default(cls, path: str | Path | None = None) -> OneOffLedger:
        """The ledger at ``path``, else ``$MEDANON_LEDGER``, else :data:`DEFAULT_LEDGER`."""
        chosen = path or os.environ.get("MEDANON_LEDGER") or DEFAULT_LEDGER
        return cls(Path(chosen).expanduser())

    def _read(self) -> dict[str, dict[str, Any]]:
        """Every input: key -> ``{"releases": [...], "rows"?, "sketch"?}``."""
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputFormatError(f"The one-off ledger {str(self.path)!r} is not valid JSON "
                                   f"({exc}); repair or move it.") from None
        if isinstance(data, dict) and data.get("version") == _LEDGER_VERSION \
                and isinstance(data.get("inputs"), dict):
            return data["inputs"]
        if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
            return {k: {"releases": v} for k, v in data.items()}   # before issue 41
        raise InputFormatError(f"The one-off ledger {str(self.path)!r} must map inputs to "
                               f"their releases.")

    @staticmethod
    def _key(fingerprint: InputFingerprint | str) -> str:
        return fingerprint.digest if isinstance(fingerprint, InputFingerprint) else str(fingerprint)

    def related(self, fingerprint: InputFingerprint | str) -> list[str]:
        """The recorded inputs charged to this one: the same digest, or (for a fingerprint) a
        sketch sharing at least :data:`OVERLAP_THRESHOLD` of the rows."""
        key = self._key(fingerprint)
        found = []
        for other, stored in self._read().items():
            if other == key:
                found.append(other)
            elif isinstance(fingerprint, InputFingerprint) and "sketch" in stored:
                share = overlap(fingerprint, InputFingerprint.from_json(other, stored))
                if share >= OVERLAP_THRESHOLD:
                    found.append(other)
        return found

    def entries(self, fingerprint: InputFingerprint | str) -> list[dict[str, Any]]:
        """The runs charged to this input (its own and those of related inputs), oldest first."""
        inputs = self._read()
        runs = [e for k in self.related(fingerprint) for e in inputs[k].get("releases", [])]
        return sorted(runs, key=lambda e: str(e.get("at", "")))

    def spent(self, fingerprint: InputFingerprint | str) -> float:
        """The ε the input's charged runs spent (their sum)."""
        return float(sum(float(e["epsilon"]) for e in self.entries(fingerprint)))

    def check(self, fingerprint: InputFingerprint | str, epsilon: float, *, budget: float | None,
              allow_over_budget: bool = False) -> bool:
        """Whether this run may spend ``epsilon`` on the input; True when it takes the input past
        ``budget`` and that is acknowledged (``allow_over_budget``).

        Raises:
            ValidationError: a bad ``epsilon`` or ``budget``.
            BudgetExceeded: past ``budget`` without ``allow_over_budget``.
        """
        for name, value in (("epsilon", epsilon), ("budget", budget)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value) or value <= 0):
                raise ValidationError(f"The {name!r} parameter of OneOffLedger.check must be a "
                                      f"number > 0; got {value!r}.")
        if budget is None:
            return False
        before = self.spent(fingerprint)
        if before + epsilon <= budget + 1e-12:
            return False
        if allow_over_budget:
            return True
        key = self._key(fingerprint)
        others = [k for k in self.related(fingerprint) if k != key]
        whose = ("This input" if not others else
                 f"This input (the same rows, or {OVERLAP_THRESHOLD:.0%} or more of them, as "
                 f"{len(others)} earlier input(s))")
        raise BudgetExceeded(
            f"{whose} has spent epsilon {before:g} in {len(self.entries(fingerprint))} "
            f"earlier one-off release(s) (ledger {str(self.path)!r}); this release's "
            f"{epsilon:g} would take it to {before + epsilon:g}, past the budget {budget:g}. "
            f"Give --allow-over-budget to publish anyway (recorded in the manifest).")

    def record(self, fingerprint: InputFingerprint | str, *, method: str, epsilon: float,
               out: str | Path) -> None:
        """Add a run under this input (with its sketch; written to a temporary file, then moved
        over the ledger)."""
        inputs = self._read()
        entry = inputs.setdefault(self._key(fingerprint), {"releases": []})
        if isinstance(fingerprint, InputFingerprint):
            entry.update(fingerprint.to_json())
        entry.setdefault("releases", []).append({
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "method": method,
            "epsilon": float(epsilon), "out": str(out)})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps({"version": _LEDGER_VERSION, "inputs": inputs}, indent=1,
                                  sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.path)
