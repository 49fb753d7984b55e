"""Attacks on published series: what an adversary can do with the releases alone.

* :mod:`medanon.published.links` — linking CaseIDs across releases (what each other release says
  about a case), shared with the models;
* :mod:`.likelihood` — the two readings of perturbed QIDs: hard exclusions only (a noisy value
  never excludes anyone for sure) and the likelihood-weighted attacker (posterior over the
  candidates from the mechanisms' likelihoods, issue 17);
* :mod:`.target` — 001's B-, F-, L-attacks and 002's MD-attack on one known target;
* :mod:`.worst_case` — the worst case over all targets of every group, per release, with
  002's SS-attack (:mod:`.ss`) and medical background knowledge (:mod:`.background`, 000 §E).

Attacks read published strings only; they never import an algorithm (``design.md``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .background import BackgroundKnowledge, KnowledgeRule, read_background
    from .likelihood import LikelihoodAttacker, hard_series
    from .target import Target, TargetAttack, attack_target, parse_target

# The names below are loaded on first use (PEP 562): importing one attack module, such as
# :mod:`.ss` for HA's ss-rule when a release is configured, must not load the others (issue 30).
_LAZY = {"BackgroundKnowledge": "background", "KnowledgeRule": "background",
         "read_background": "background", "LikelihoodAttacker": "likelihood",
         "hard_series": "likelihood", "Target": "target", "TargetAttack": "target",
         "attack_target": "target", "parse_target": "target"}

__all__ = ["BackgroundKnowledge", "KnowledgeRule", "LikelihoodAttacker", "Target", "TargetAttack",
           "attack_target", "hard_series", "parse_target", "read_background"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
