"""Attacks on published series: what an adversary can do with the releases alone.

* :mod:`.links` — linking CaseIDs across releases (what each other release says about a case);
* :mod:`.target` — 001's B-, F-, L-attacks and 002's MD-attack on one known target;
* :mod:`.worst_case` — the worst case over all targets of every group, per release, with
  002's SS-attack (:mod:`.ss`) and medical background knowledge (:mod:`.background`, 000 §E).

Attacks read published strings only; they never import an algorithm (``design.md``).
"""

from .background import BackgroundKnowledge, KnowledgeRule, read_background
from .target import Target, TargetAttack, attack_target, parse_target

__all__ = ["BackgroundKnowledge", "KnowledgeRule", "Target", "TargetAttack", "attack_target",
           "parse_target", "read_background"]
