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

from .background import BackgroundKnowledge, KnowledgeRule, read_background
from .likelihood import LikelihoodAttacker, hard_series
from .target import Target, TargetAttack, attack_target, parse_target

__all__ = ["BackgroundKnowledge", "KnowledgeRule", "LikelihoodAttacker", "Target", "TargetAttack",
           "attack_target", "hard_series", "parse_target", "read_background"]
