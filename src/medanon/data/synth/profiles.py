"""Named settings of the synthetic FAERS generator, calibrated to the data of the papers.

A :class:`SynthProfile` bundles the generator's rates (:class:`SynthKnobs`, each also a
parameter of :func:`~medanon.data.synth.faers.write_faers_series`) with the shape of its term
distributions (:class:`SynthShape`), a first quarter and, per number, where it comes from.
``docs/data.md`` explains every calibration; :data:`PROFILES` holds:

* ``default``: FAERS as a user knows it: ``faers-2004``'s calibrated shape and rates (reactions
  that depend on indications and drug classes, top term 7-12% of an ordinary quarter's cases,
  surge quarters) from 2020Q1 (issue 42: the generator's own shape, a 40% top term, is no
  FAERS anyone would recognise);
* ``legacy``: the generator as it was before issue 42 (byte-identical output for a seed; the
  default until then): reactions independent of drugs, top term in about 40% of cases;
* ``faers-2004``: 001's FAERS 2004Q1-2011Q4 under the papers' filter: reactions that depend on
  indications and drug classes, top term 7-12% of an ordinary quarter's cases and about 4
  surge quarters in 32 with one term in 19-22.5% (001's 2007Q1 and 2010Q3);
* ``faers-2014``: 002's FAERS 2014Q3-2017Q4 (002 states no shape figure: 001's shape);
* ``faers-current``: today's FAERS, calibrated on the real 2022Q4 subset in ``../shared``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Mapping

from ..._validation import check_fraction
from ...errors import ValidationError
from ...periods import parse_period

__all__ = ["PROFILES", "SynthKnobs", "SynthProfile", "SynthShape", "profile_named"]

# -- the legacy generator's settings (the default before issue 42) -------------------------------
FOLLOWUP_RATE = 0.18              # share of a later quarter's cases that follow up earlier ones
SIGNAL_PROBABILITY = 0.4          # extra P(reaction) for a patient meeting a rule's condition
STOP_RATE_NEW = 0.5               # new cases whose treatment stops (never followed up)
MISSING_AGE = 0.08
MISSING_WEIGHT = 0.20
NO_INDICATION = 0.03


@dataclass(frozen=True)
class SynthKnobs:
    """The generator settings a researcher varies (defaults: the ``legacy`` profile's)."""

    followup_rate: float = FOLLOWUP_RATE
    missing_age: float = MISSING_AGE
    missing_weight: float = MISSING_WEIGHT
    no_indication: float = NO_INDICATION
    signal_probability: float = SIGNAL_PROBABILITY
    stop_rate_new: float = STOP_RATE_NEW

    def as_dict(self) -> dict[str, float]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def checked(self, owner: str) -> "SynthKnobs":
        """These knobs as floats, or a ValidationError naming the first one out of range."""
        values = {name: check_fraction(value, name=name, owner=owner, low_open=False,
                                       high=0.9 if name == "followup_rate" else 1.0)
                  for name, value in self.as_dict().items()}
        return SynthKnobs(**values)


@dataclass(frozen=True)
class SynthShape:
    """How concentrated the term distributions are (defaults: the ``legacy`` profile's).

    Attributes:
        drug_zipf: Zipf exponent of the drug ranks; a drug's own indication follows its
            drug, so this mostly sets how common the top indications are.
        reaction_zipf: Zipf exponent of the reaction ranks (0 = all equally likely).
        indication_zipf: Zipf exponent of the drug-independent indication draw.
        indication_rate: share of a report's drugs that get an indication row.
        generic_indication: share of indication rows drawn from the drug-independent list
            instead of being the drug's own indication.
        unknown_indication: share of indication rows replaced by "Product used for unknown
            indication" (0 leaves the draw as it was: the legacy profile never draws it).
        indication_events: probability that a reaction is one of the disease's own events
            (:data:`~medanon.data.synth.terms.INDICATION_EVENTS` of the primary suspect drug's
            indication): confounding by indication. 0 with ``class_effects`` and
            ``drug_spread`` 0 draws reactions independently of drugs, as the ``independent``
            profile does.
        class_effects: share of a drug's own reaction draws that are its class's effects
            (:data:`~medanon.data.synth.terms.DRUG_CLASSES`), shared by the drugs of a class.
        drug_spread: standard deviation of a log-normal factor on each (drug, reaction) and
            (indication, event) rate: every drug reports the background terms at its own
            rates, so relative reporting ratios vary continuously around 1.
        comedication: probability that a co-reported drug is one given for the primary
            suspect's indication (instead of a drug drawn from the whole list).
        surge_rate: expected share of quarters with a surge (stimulated reporting after
            publicity: one planted signal's drug is the primary suspect of ``surge_share`` of
            the quarter's cases, each with the drug's indication); surges come in episodes of
            1-2 quarters, spaced so that a series has about ``surge_rate`` × quarters of them.
        surge_share: share of a surge quarter's cases given the surge drug (0.5 at most).
    """

    drug_zipf: float = 0.7
    reaction_zipf: float = 0.9
    indication_zipf: float = 1.0
    indication_rate: float = 0.66
    generic_indication: float = 0.25
    unknown_indication: float = 0.0
    indication_events: float = 0.0
    class_effects: float = 0.0
    drug_spread: float = 0.0
    comedication: float = 0.0
    surge_rate: float = 0.0
    surge_share: float = 0.0

    @property
    def dependent(self) -> bool:
        """Whether reactions depend on the drugs and indications (else drawn independently)."""
        return self.indication_events > 0 or self.class_effects > 0 or self.drug_spread > 0

    def checked(self, owner: str) -> "SynthShape":
        for name in ("drug_zipf", "reaction_zipf", "indication_zipf", "drug_spread"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or not 0 <= value <= 5:
                raise ValidationError(f"The 'shape.{name}' parameter of {owner} must be a number "
                                      f"in [0, 5]; got {value!r}.")
        for name in ("indication_rate", "generic_indication", "unknown_indication",
                     "indication_events", "class_effects", "comedication", "surge_rate"):
            check_fraction(getattr(self, name), name=f"shape.{name}", owner=owner, low_open=False)
        # a surge drug in more than half of a quarter's cases would leave no ordinary quarter
        check_fraction(self.surge_share, name="shape.surge_share", owner=owner, low_open=False,
                       high=0.5)
        return self


@dataclass(frozen=True)
class SynthProfile:
    """A named, sourced setting of the generator.

    Attributes:
        name: what ``--profile`` / ``profile=`` calls it.
        summary: one line on what it models.
        start: the first quarter written when the caller gives none.
        knobs: the rates (a caller's explicit rate overrides the profile's).
        shape: the term distributions.
        sources: per knob or shape field, where its value comes from (``docs/data.md``
            has the full account).
    """

    name: str
    summary: str
    start: str = "2020Q1"
    knobs: SynthKnobs = SynthKnobs()
    shape: SynthShape = SynthShape()
    sources: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        owner = f"SynthProfile {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(f"The 'name' parameter of SynthProfile must be a non-empty "
                                  f"string; got {self.name!r}.")
        parse_period(self.start)
        if not isinstance(self.knobs, SynthKnobs) or not isinstance(self.shape, SynthShape):
            raise ValidationError(f"The 'knobs' and 'shape' parameters of {owner} must be a "
                                  "SynthKnobs and a SynthShape.")
        self.knobs.checked(owner)
        self.shape.checked(owner)
        known = {f.name for f in fields(SynthKnobs)} | {f.name for f in fields(SynthShape)}
        unknown = sorted(set(self.sources) - known - {"start"})
        if unknown:
            raise ValidationError(f"The 'sources' parameter of {owner} names no knob: "
                                  f"{', '.join(unknown)}.")
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))


# Shared sources (each number's full account: docs/data.md).
_PAPER_001 = "001 (JMIR 2021), Experiments"
_FILTER = "the papers drop reports lacking a QID or SA value and state no missing rate; kept default"
_FOLLOWUP_001 = (f"{_PAPER_001}: 2007Q1 has 20,467 filtered cases of which 18,462 new, "
                 "so 1 - 18,462/20,467 = 9.8% follow-ups")
# Flat term distributions so that an ordinary quarter's top term (INDI_PT or PT, share of its
# filtered cases) is 7-12%: 001 names 8.1% (2006Q4) and 9.1% (2010Q1) as maxima "relatively
# smaller" than other releases'; its surge quarters reach 18.94% (2007Q1) and 22.51% (2010Q3).
# Reactions depend on indications and drug classes so that the MGPS prior of a quarter has a
# finite maximum (issue 42). Tuned by measuring (docs/data.md, benchmarks/bench_synth_structure.py).
_SHAPE_2004 = SynthShape(drug_zipf=0.0, reaction_zipf=0.3, indication_zipf=0.35,
                         indication_rate=0.28, generic_indication=0.5,
                         indication_events=0.6, class_effects=0.4, drug_spread=1.5,
                         comedication=0.5, surge_rate=0.125, surge_share=0.2)
_SHAPE_2004_SOURCE = (f"tuned so an ordinary quarter's top term is 7-12% of filtered cases "
                      f"({_PAPER_001}: 8.1% in 2006Q4 and 9.1% in 2010Q1, lower than other "
                      "releases')")
_STRUCTURE_SOURCE = ("not stated by 001; chosen so that the MGPS prior of 8 x 3,000 quarters "
                     "has a finite maximum (issue 42) while the term shares stay 001's")
_STRUCTURE_FIELDS = ("indication_events", "class_effects", "drug_spread", "comedication")
_SURGE_FIELDS = ("surge_rate", "surge_share")
_SURGE_SOURCE = (f"{_PAPER_001}: 4 of 32 quarters fail θ*=0.2 on one frequent term (2006Q1, "
                 "2006Q2, 2007Q1: 18.94% of cases, 21.00% of new cases; 2010Q3: 22.51%)")

PROFILES: Mapping[str, SynthProfile] = MappingProxyType({p.name: p for p in (
    SynthProfile(
        name="default",
        summary="FAERS as a user knows it: faers-2004's shape and rates (drug- and "
                "indication-dependent reactions, top term 7-12%, surge quarters) from 2020Q1",
        knobs=SynthKnobs(followup_rate=0.10),
        shape=_SHAPE_2004,
        sources={"start": "the generator's first quarter (a recent year, no paper's)",
                 "followup_rate": _FOLLOWUP_001,
                 "missing_age": _FILTER, "missing_weight": _FILTER,
                 **{f.name: "faers-2004's: " + _SHAPE_2004_SOURCE
                    for f in fields(SynthShape) if f.name not in _STRUCTURE_FIELDS + _SURGE_FIELDS},
                 **dict.fromkeys(_STRUCTURE_FIELDS, "faers-2004's: " + _STRUCTURE_SOURCE),
                 **dict.fromkeys(_SURGE_FIELDS, "faers-2004's: " + _SURGE_SOURCE)}),
    SynthProfile(
        name="legacy",
        summary="the generator before issue 42 (reactions independent of drugs, top term in "
                "about 40% of cases); byte-identical output for a seed",
        sources={"followup_rate": "generator constant (FAERS has about 0.1)"}),
    SynthProfile(
        name="faers-2004",
        summary="001's FAERS 2004Q1-2011Q4 under the papers' filter: drug- and "
                "indication-dependent reactions, top term 7-12%, ~4 surge quarters in 32 at 19-22.5%",
        start="2004Q1",
        knobs=SynthKnobs(followup_rate=0.10),
        shape=_SHAPE_2004,
        sources={"start": f"{_PAPER_001}: quarters 2004Q1-2011Q4",
                 "followup_rate": _FOLLOWUP_001,
                 "missing_age": _FILTER, "missing_weight": _FILTER,
                 **{f.name: _SHAPE_2004_SOURCE for f in fields(SynthShape)},
                 **dict.fromkeys(_STRUCTURE_FIELDS, _STRUCTURE_SOURCE),
                 **dict.fromkeys(_SURGE_FIELDS, _SURGE_SOURCE)}),
    SynthProfile(
        name="faers-2014",
        summary="002's FAERS 2014Q3-2017Q4 (002 gives no shape figure: 001's shape)",
        start="2014Q3",
        knobs=SynthKnobs(followup_rate=0.10),
        shape=_SHAPE_2004,
        sources={"start": "002 (PLoS ONE 2021), Section 5: quarters 2014Q3-2017Q4",
                 "followup_rate": "002 states none; 001's 9.8% (its QIDs, SAs and filter are "
                                  "001's)",
                 "missing_age": _FILTER, "missing_weight": _FILTER,
                 **{f.name: "002 states no term frequency; 001's calibrated shape"
                    for f in fields(SynthShape)}}),
    SynthProfile(
        name="faers-current",
        summary="today's FAERS (2022Q4 subset): 22% ages and 63% weights missing, 39% of "
                "reports with an indication say 'Product used for unknown indication'",
        start="2022Q4",
        knobs=SynthKnobs(followup_rate=0.10, missing_age=0.22, missing_weight=0.63),
        shape=SynthShape(unknown_indication=0.17, indication_events=0.6, class_effects=0.4,
                         drug_spread=1.5, comedication=0.5),
        sources={"start": "the real 2022Q4 subset's quarter",
                 "followup_rate": "not measurable on the subset (its head holds only old "
                                  "cases); 001's 9.8%",
                 "missing_age": "2022Q4 subset: 57 of 258 DEMO rows have no age",
                 "missing_weight": "2022Q4 subset: 162 of 258 DEMO rows have no weight",
                 "unknown_indication": "2022Q4 subset: 38 of the 97 reports in the INDI "
                                       "head (39.2%) have it; 0.17 of the drawn rows gives "
                                       "38.0-39.6% of reports",
                 **dict.fromkeys(("indication_events", "class_effects", "drug_spread",
                                  "comedication"),
                                 "not measurable on the subset (its DRUG head covers 16 "
                                 "reports); faers-2004's: " + _STRUCTURE_SOURCE)}),
)})


def profile_named(profile: "str | SynthProfile", *, owner: str) -> SynthProfile:
    """The profile called ``profile`` (or ``profile`` itself when it is a SynthProfile).

    Args:
        profile: a name in :data:`PROFILES` or a :class:`SynthProfile`.
        owner: the function whose parameter it is (named in the error).

    Raises:
        ValidationError: an unknown name, naming the 'profile' parameter and the known ones.
    """
    if isinstance(profile, SynthProfile):
        return profile
    if isinstance(profile, str) and profile in PROFILES:
        return PROFILES[profile]
    raise ValidationError(f"The 'profile' parameter of {owner} must be one of "
                          f"{', '.join(PROFILES)}; got {profile!r}.")
