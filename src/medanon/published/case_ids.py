"""What a published CaseID tells, read from the published files alone (issue 41).

A manifest says how its release publishes CaseIDs (``case_ids.mode``):

* ``pseudonym``: keyed pseudonyms (:mod:`medanon.pipeline.case_ids`). They link the releases of
  one series (the B-, F-, L- and MD-attacks read that linkage) and carry no order and no time:
  the adversary learns nothing from their values.
* ``real``: the holder's real CaseIDs. FAERS numbers cases in order of receipt, so their order
  is adversary knowledge: an L-adversary who knows the target is first reported in period P
  knows its CaseID exceeds every CaseID published before P, so a case first published in P
  whose CaseID sorts below one published before P is not the target (it was received before P:
  withheld earlier, or reported before the series). :func:`order_excluded` flags those cases;
  the checker treats them as old (not new), as the B- and L-attacks treat a linked case.

A manifest written before CaseID modes existed published real CaseIDs (:func:`case_id_mode`).

The order is numeric when every CaseID involved is a decimal integer (FAERS caseids), otherwise
the order of the text; a holder whose identifiers sort otherwise is covered as long as receipt
order is one of those two (the rule excludes more, never fewer, than it needs to under either).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

__all__ = ["CASE_ID_MODES", "PSEUDONYM_DIGITS", "case_id_mode", "case_id_role", "case_ids_entry",
           "highest_case_id", "order_excluded"]

CASE_ID_MODES = ("pseudonym", "real")
#: digits of a published pseudonym (a decimal integer in [10^15, 10^16))
PSEUDONYM_DIGITS = 16
_DECIMAL = re.compile(r"[0-9]+")


def case_ids_entry(mode: str, highest_earlier: str | None = None) -> dict:
    """The manifest's ``case_ids`` entry: the mode and what the column reveals.

    Under ``real``, ``highest_earlier`` is the highest CaseID published in the series before this
    release (None: none was), a value ``medanon verify`` recomputes from the published rows.
    """
    if mode == "pseudonym":
        return {"mode": "pseudonym",
                "reveals": "linkage only: the same case has the same CaseID in every release of "
                           "the series; the values are keyed pseudonyms (HMAC-SHA256 under a "
                           "secret key kept by the holder) and carry no order and no time"}
    return {"mode": "real", "order": "numeric when every CaseID is a decimal integer, else text",
            "highest_earlier": highest_earlier,
            "reveals": "linkage and receipt order: a case first published here whose CaseID is "
                       "below one published earlier was received before this period, and the "
                       "gate, verify and attack exclude it from the L-attack's candidates"}


def case_id_mode(manifest: Mapping | None) -> str:
    """``pseudonym`` or ``real``: how a release publishes CaseIDs (a manifest without the entry,
    written before pseudonyms existed, published the real ones)."""
    entry = (manifest or {}).get("case_ids")
    mode = entry.get("mode") if isinstance(entry, Mapping) else None
    return mode if mode in CASE_ID_MODES else "real"


def case_id_role(mode: str) -> dict[str, str]:
    """The ``case_id`` column's role in ``columns.roles``."""
    if mode == "pseudonym":
        return {"role": "adversary-knowledge",
                "holds": "a keyed pseudonym of FDA's CaseID, stable within the series: the B-, "
                         "F-, L- and MD-attacks link releases by it; it carries no order or time"}
    return {"role": "adversary-knowledge",
            "holds": "FDA's CaseID as received: the B-, F-, L- and MD-attacks link releases by "
                     "it, and its order (FAERS numbers cases in receipt order) tells the "
                     "L-attack which cases were received before the period"}


def _numeric(ids: Iterable[str]) -> bool:
    return all(_DECIMAL.fullmatch(c) for c in ids)


def highest_case_id(ids: Iterable[object]) -> str | None:
    """The highest of ``ids`` in CaseID order (numeric for decimal integers), or None."""
    values = [str(c).strip() for c in ids]
    values = [c for c in values if c]
    if not values:
        return None
    if _numeric(values):
        return max(values, key=int)
    return max(values)


def order_excluded(case: np.ndarray, new: np.ndarray, earlier: Iterable[object]) -> np.ndarray:
    """Cases of a release the CaseID-order rule excludes: new to the series (``new``) and with a
    CaseID below the highest of ``earlier`` (every CaseID published before the release, or the
    manifest's ``case_ids.highest_earlier``).

    Args:
        case: The release's CaseIDs (text), in row order.
        new: Which rows are not linked to an earlier release.
        earlier: CaseIDs published before the release.
    """
    out = np.zeros(len(case), dtype=bool)
    top = highest_case_id(earlier)
    if top is None or not len(case):
        return out
    ids = [str(c).strip() for c in case]
    if _numeric([*ids, top]):
        limit = int(top)
        below = np.fromiter((int(c) < limit for c in ids), dtype=bool, count=len(ids))
    else:
        below = np.asarray([c < top for c in ids], dtype=bool)
    return below & np.asarray(new, dtype=bool)
