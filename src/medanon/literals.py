"""The names and choices a caller writes, as ``Literal`` types: what an editor completes and a
type checker checks in :class:`medanon.Publisher`'s keywords and :class:`SeriesPolicy`'s
constructors. At run time the registries and checks decide (a method's name in any case);
tests/unit/test_api_typed.py keeps each alias equal to the registry or the tuple of choices it
mirrors.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["CaseIdMode", "DpVariant", "EhrMethodName", "Grouping", "IpaSelection",
           "LabelMechanism", "OnInfeasible", "OnUnplaceable", "PeriodicMethodName",
           "TableMethodName", "TimeResolution"]

#: a periodic method's name, as the registry writes it or in capitals (the docs write PPMS++)
PeriodicMethodName = Literal["none", "ms", "ppms", "ppms+", "ppms++", "ha", "ppms-dp-num",
                             "ppms-dp-all", "NONE", "MS", "PPMS", "PPMS+", "PPMS++", "HA",
                             "PPMS-DP-NUM", "PPMS-DP-ALL"]
#: a one-off table method's name (paper 004 and its baselines)
TableMethodName = Literal["ipa", "kanon", "dphist", "IPA", "KANON", "DPHIST"]
#: a diagnosis-sequence method's name (paper 003 and its baselines)
EhrMethodName = Literal["clinsimrr", "umaxrr", "umaxrr-yp", "rr", "suppression", "CLINSIMRR",
                        "UMAXRR", "UMAXRR-YP", "RR", "SUPPRESSION"]
#: what a period whose terms cannot all meet their θ does
OnInfeasible = Literal["refuse", "raise-theta", "suppress-terms"]
#: how the periodic methods group
Grouping = Literal["classes-first", "greedy"]
#: HA: what becomes of a case that fits no group
OnUnplaceable = Literal["suppress-terms", "withhold"]
#: PPMS-DP: the strict (ε-DP) or the paper's variant
DpVariant = Literal["strict", "paper"]
#: PPMS-DP_all: how a perturbed categorical label is drawn
LabelMechanism = Literal["exponential", "randomized-response"]
#: how CaseIDs are published
CaseIdMode = Literal["pseudonym", "real"]
#: the published time's resolution (EHR releases)
TimeResolution = Literal["day", "hour", "minute"]
#: IPA: how its generalization is chosen
IpaSelection = Literal["utility", "paper"]
