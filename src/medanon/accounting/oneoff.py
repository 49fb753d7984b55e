"""The ε one-off releases spend on an input, across runs (issue 33).

``medanon ipa``, ``dphist`` (``ipa --method dphist``) and ``clinsim`` publish one release of one
input, with no store. Running them again on the same data spends ε again: two ε = 1 releases of
one table are a 2-DP view of it. This ledger remembers, per input, what each run spent, so that
a second run says what the input has spent, and a run that would take it past a budget
(``--budget``) is refused unless acknowledged (``--allow-over-budget``, recorded in the
release's ``method.acknowledged``).

The input is known by an operator-only fingerprint (the SHA-256 of its data, what
``Table.digest``/``EhrRecords.digest`` give): it identifies the private input, so the ledger is
the operator's file (by default ``~/.medanon/one-off-ledger.json``, or ``MEDANON_LEDGER``, or
``--ledger``) and nothing of it is ever published. The ε recorded is the release's nominal ε as
its method states it (IPA's total over its four steps; the DP histogram's; ClinSimRR's per
element): the sum is the basic composition of the runs, no tighter.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import BudgetExceeded, InputFormatError, ValidationError

__all__ = ["DEFAULT_LEDGER", "OneOffLedger"]

#: where the ledger lives unless ``MEDANON_LEDGER`` or ``--ledger`` says otherwise
DEFAULT_LEDGER = Path("~/.medanon/one-off-ledger.json")


@dataclass
class OneOffLedger:
    """The ε spent per input by one-off releases (module docstring).

    Attributes:
        path: The ledger file (JSON; created at the first record).
    """

    path: Path

    @classmethod
    def default(cls, path: str | Path | None = None) -> OneOffLedger:
        """The ledger at ``path``, else ``$MEDANON_LEDGER``, else :data:`DEFAULT_LEDGER`."""
        chosen = path or os.environ.get("MEDANON_LEDGER") or DEFAULT_LEDGER
        return cls(Path(chosen).expanduser())

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputFormatError(f"The one-off ledger {str(self.path)!r} is not valid JSON "
                                   f"({exc}); repair or move it.") from None
        if not isinstance(data, dict):
            raise InputFormatError(f"The one-off ledger {str(self.path)!r} must map inputs to "
                                   f"their releases.")
        return data

    def entries(self, fingerprint: str) -> list[dict[str, Any]]:
        """The runs recorded for one input, oldest first."""
        return list(self._read().get(fingerprint, []))

    def spent(self, fingerprint: str) -> float:
        """The ε the input's recorded runs spent (their sum)."""
        return float(sum(float(e["epsilon"]) for e in self.entries(fingerprint)))

    def check(self, fingerprint: str, epsilon: float, *, budget: float | None,
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
        raise BudgetExceeded(
            f"This input has spent epsilon {before:g} in {len(self.entries(fingerprint))} "
            f"earlier one-off release(s) (ledger {str(self.path)!r}); this release's "
            f"{epsilon:g} would take it to {before + epsilon:g}, past the budget {budget:g}. "
            f"Give --allow-over-budget to publish anyway (recorded in the manifest).")

    def record(self, fingerprint: str, *, method: str, epsilon: float, out: str | Path) -> None:
        """Add a run (written to a temporary file, then moved over the ledger)."""
        data = self._read()
        data.setdefault(fingerprint, []).append({
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "method": method,
            "epsilon": float(epsilon), "out": str(out)})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.path)
