"""Synthetic periodic FAERS series in the real FAERS 2014Q3+ ASCII layout.

:func:`write_faers_series` writes ``OUT/<period>/`` folders (``DEMOyyQq.txt``, ``DRUG``, ``REAC``,
``INDI``, ``OUTC`` and, when the quarter withdraws cases, ``DELETE``) that
:func:`medanon.data.loaders.faers.read_faers` ingests like a real extract: ``$``-separated
Latin-1 text, lower-case header, a trailing ``$`` on every line, CRLF line ends.

What the data models (the things privacy attacks and signal metrics rely on):

* follow-ups: a share ``followup_rate`` of each later quarter's cases are follow-ups of cases
  first seen at most ``lifespan`` quarters earlier, chosen with gaps (a case can skip quarters);
  a follow-up keeps the caseid, raises caseversion, keeps the demographics (sometimes a corrected
  weight, or a missing age or weight now filled) and may add reactions and drugs;
* about 2% of a quarter's cases carry two versions in the same quarter;
* cases whose treatment stops (about half of the new ones) never come back and have their
  primary suspect drug (and some others) with ``dechal = Y``;
* heavy-tailed reactions per report (mostly 1-3, a few 10-20), Zipf-like terms and drugs,
  rare reactions seen in only a handful of cases over the whole series;
* planted signals (:data:`PLANTED_SIGNALS`): patients who meet the rule's condition and take
  its drug get its reaction with probability 0.4 on top of the background rate;
* with a profile whose :class:`SynthShape` asks for it (``default``, ``faers-2004``,
  ``faers-2014``, ``faers-current``), FAERS's
  dependence: co-reported drugs given for the primary suspect's indication, reactions drawn
  from that indication (its disease's events and its patients' own rates: confounding by
  indication), from the class effects of the report's drugs and from each drug's own rates
  (log-normal around the background), so that relative reporting ratios vary continuously;
  and surge quarters, where one planted signal's drug is the primary suspect of enough new
  cases for its indication to be in about 20% of the quarter's cases (``docs/data.md``).
  Otherwise (``legacy``) reactions are drawn independently of drugs;
* realistic missingness and correlations (weight with age and sex, prostate terms only for
  men, pregnancy terms only for women aged 15-45).

Everything is vectorised with numpy; the same seed gives byte-identical files.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..._validation import check_int
from ...errors import ValidationError
from ...periods import Period, parse_period
from . import terms
from .profiles import PROFILES, SynthKnobs, SynthProfile, SynthShape, profile_named

__all__ = ["PLANTED_SIGNALS", "PROFILES", "SignalRule", "SynthKnobs", "SynthProfile",
           "SynthShape", "SynthSummary", "write_faers_series"]

_OWNER = "write_faers_series"


# -- model constants (the profiles' rates live in profiles.py) ------------------------------------
DUPLICATE_VERSION_RATE = 0.02     # cases with two versions in one quarter
DELETE_RATE = 0.002               # cases withdrawn per quarter (Poisson mean rate * cases)
STOP_RATE_FOLLOWUP = 0.3          # follow-ups after which treatment stops


@dataclass(frozen=True)
class SignalRule:
    """A planted drug-reaction association that holds under a demographic condition."""

    drug: str
    reaction: str
    condition: str
    attribute: str
    op: str
    value: float | str

    def holds(self, age_years: np.ndarray, sex: np.ndarray) -> np.ndarray:
        """Whether the condition holds, given ages in years and sex codes ``"F"``/``"M"``."""
        if self.attribute == "age":
            values = np.asarray(age_years, dtype=float)
            if self.op == ">":
                return np.nan_to_num(values, nan=-np.inf) > float(self.value)
            return values == float(self.value)
        values = np.asarray(sex, dtype=object)
        if self.op == "=":
            return values == self.value
        raise ValueError(f"unsupported operator {self.op!r} for sex")


@dataclass(frozen=True)
class SynthSummary:
    """What :func:`write_faers_series` wrote (``knobs``: the generator settings used)."""

    out: Path
    periods: tuple[str, ...]
    seed: int
    seeded: bool
    reports: dict[str, int]
    cases: dict[str, int]
    followups: dict[str, int]
    deleted: dict[str, int]
    signals: tuple[SignalRule, ...]
    knobs: SynthKnobs = SynthKnobs()
    profile: str = "default"


PLANTED_SIGNALS: tuple[SignalRule, ...] = (
    SignalRule("AVANDIA", "Myocardial infarction", "age > 18", "age", ">", 18.0),
    SignalRule("ZELNORM", "Cerebrovascular accident", "sex = F", "sex", "=", "F"),
    SignalRule("WARFARIN", "Myocardial infarction", "age > 60", "age", ">", 60.0),
    SignalRule("LEVAQUIN", "Tendon rupture", "age > 60", "age", ">", 60.0),
    SignalRule("ACTOS", "Bladder cancer", "sex = M", "sex", "=", "M"),
    SignalRule("CHANTIX", "Suicidal ideation", "age > 18", "age", ">", 18.0),
)

_DEMO_COLUMNS = ("primaryid", "caseid", "caseversion", "i_f_code", "event_dt", "mfr_dt",
                 "init_fda_dt", "fda_dt", "rept_cod", "auth_num", "mfr_num", "mfr_sndr", "lit_ref",
                 "age", "age_cod", "age_grp", "sex", "e_sub", "wt", "wt_cod", "rept_dt", "to_mfr",
                 "occp_cod", "reporter_country", "occr_country")
_DRUG_COLUMNS = ("primaryid", "caseid", "drug_seq", "role_cod", "drugname", "prod_ai", "val_vbm",
                 "route", "dose_vbm", "cum_dose_chr", "cum_dose_unit", "dechal", "rechal",
                 "lot_num", "exp_dt", "nda_num", "dose_amt", "dose_unit", "dose_form", "dose_freq")
_REAC_COLUMNS = ("primaryid", "caseid", "pt", "drug_rec_act")
_INDI_COLUMNS = ("primaryid", "caseid", "indi_drug_seq", "indi_pt")
_OUTC_COLUMNS = ("primaryid", "caseid", "outc_cod")

_AGE_CODES = ("YR", "DEC", "MON", "WK", "DY")
_AGE_FACTOR = np.array([1.0, 10.0, 1 / 12, 7 / 365.2425, 1 / 365.2425])
_SEX_CODES = ("F", "M", "UNK", "")           # reported sex; latent sex is 0 (F) or 1 (M)
_ROLES = ("PS", "SS", "C", "I")
_DECHAL = ("", "U", "N", "D", "Y")
_RECHAL = ("", "U", "N", "Y")
_OUTCOMES = ("OT", "HO", "DE", "LT", "DS", "RI", "CA")
_OUTCOME_P = np.array([0.42, 0.30, 0.08, 0.07, 0.06, 0.05, 0.02])
_REPT = ("EXP", "PER", "DIR")
_OCCP = ("MD", "CN", "HP", "PH", "LW", "OT")
_OCCP_P = np.array([0.35, 0.33, 0.15, 0.10, 0.03, 0.04])
_RESTRICTION = {"": 0, "M": 1, "F": 2, "FP": 3}
_LBS_PER_KG = 2.2046226218

_TABLES = ("drug", "reac", "indi", "outc")
_SCHEMA: dict[str, dict[str, type[np.integer]]] = {  # table -> column -> dtype
    "drug": {"rep": np.int64, "seq": np.int64, "drug": np.int64, "role": np.int8,
             "dose": np.int8, "val": np.int8, "lot": np.int64},
    "reac": {"rep": np.int64, "pt": np.int64},
    "indi": {"rep": np.int64, "seq": np.int64, "pt": np.int64},
    "outc": {"rep": np.int64, "code": np.int64},
}

# -- term tables as arrays -----------------------------------------------------------------------
_REAC_NAMES = [t for t, _ in terms.REACTIONS] + list(terms.RARE_REACTIONS)
_REAC_RESTR = np.array([_RESTRICTION[r] for _, r in terms.REACTIONS], dtype=np.int8)
_REAC_INDEX = {t: i for i, t in enumerate(_REAC_NAMES)}
_RARE_IDS = np.array([_REAC_INDEX[t] for t in terms.RARE_REACTIONS], dtype=np.int64)
_DEATH_ID = _REAC_INDEX["Death"]
_INDI_NAMES = [t for t, _ in terms.INDICATIONS]
_INDI_RESTR = np.array([_RESTRICTION[r] for _, r in terms.INDICATIONS], dtype=np.int8)
_INDI_INDEX = {t: i for i, t in enumerate(_INDI_NAMES)}
_UNKNOWN_INDICATION = _INDI_INDEX["Product used for unknown indication"]
_DRUG_NAMES = [d[0] for d in terms.DRUGS]
_DRUG_INDEX = {t: i for i, t in enumerate(_DRUG_NAMES)}
_DRUG_RESTR = np.array([_RESTRICTION[d[7]] for d in terms.DRUGS], dtype=np.int8)
_DRUG_INDICATION = np.array([_INDI_INDEX[d[2]] for d in terms.DRUGS], dtype=np.int64)
_N_FREQ = len(terms.DOSE_FREQUENCIES)
_N_REAC = len(terms.REACTIONS)    # the ranked reactions (the rare ones are planted apart)
_DRUG_CLASS = np.zeros(len(_DRUG_NAMES), dtype=np.int64)
for _c, (_name, _drugs, _effects) in enumerate(terms.DRUG_CLASSES):
    _DRUG_CLASS[[_DRUG_INDEX[d] for d in _drugs]] = _c
_CLASS_EFFECTS = [np.array([_REAC_INDEX[t] for t in effects], dtype=np.int64)
                  for _name, _drugs, effects in terms.DRUG_CLASSES]
_DISEASE_EVENTS = [np.zeros(0, dtype=np.int64) for _ in _INDI_NAMES]
for _indications, _events in terms.INDICATION_EVENTS:
    for _i in _indications:
        _DISEASE_EVENTS[_INDI_INDEX[_i]] = np.array([_REAC_INDEX[t] for t in _events], dtype=np.int64)
#: drugs given for the same indication, grouped (for co-medication): members and offsets
_SAME_INDICATION = np.argsort(_DRUG_INDICATION, kind="stable")
_SAME_START = np.searchsorted(_DRUG_INDICATION[_SAME_INDICATION], _DRUG_INDICATION, side="left")
_SAME_COUNT = np.searchsorted(_DRUG_INDICATION[_SAME_INDICATION], _DRUG_INDICATION,
                              side="right") - _SAME_START
#: a surge lasts one quarter, or two with this probability (001: 2006Q1 and 2006Q2 in a row)
SURGE_TWO_QUARTERS = 0.3
#: share of an indication's reaction draws that are its disease's own events (the rest: the
#: background at its patients' rates)
DISEASE_EVENT_SHARE = 0.5
#: half-width of the uniform draw of a surge's target share around ``shape.surge_share``
#: (faers-2004: 0.2 ± 0.0175 of all cases, about 19-23% of the filtered ones; 001: 18.9-22.5%)
SURGE_SPREAD = 0.0175
#: a reaction drawn from a drug's own rates is the primary suspect's with this probability
#: (else any drug of the report, the primary suspect included)
PRIMARY_SUSPECT_REACTIONS = 0.5


def _dose_tables() -> dict[str, np.ndarray]:
    """Per (drug, dose variant) strings; variant 0 = dose unknown, 1.. = a dose frequency."""
    cols: dict[str, list[str]] = {k: [] for k in ("vbm", "amt", "unit", "form", "freq")}
    for _name, _ai, _ind, _route, form, amount, unit, _r in terms.DRUGS:
        cols["vbm"].append("UNK")
        cols["amt"].append("")
        cols["unit"].append("")
        cols["form"].append(form)
        cols["freq"].append("")
        for freq in terms.DOSE_FREQUENCIES:
            cols["vbm"].append(f"{amount} {unit}, {freq}")
            cols["amt"].append(amount)
            cols["unit"].append(unit)
            cols["form"].append(form)
            cols["freq"].append(freq)
    return {k: np.asarray(v, dtype=object) for k, v in cols.items()}


_DOSE = _dose_tables()
# Synthetic application numbers (not real NDA/BLA numbers), fixed per drug.
_NDA = np.asarray([str(20000 + (i * 7919) % 79000) for i in range(len(terms.DRUGS))], dtype=object)


def _objects(values) -> np.ndarray:
    """Lookup array with a trailing "" so that index -1 means an empty field."""
    return np.asarray(list(values) + [""], dtype=object)


# -- small vectorised helpers -------------------------------------------------------------------
def _empty(name: str) -> dict[str, np.ndarray]:
    return {col: np.zeros(0, dtype=dt) for col, dt in _SCHEMA[name].items()}


def _concat(name: str, parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    parts = [p for p in parts if len(p["rep"])]
    if not parts:
        return _empty(name)
    return {col: np.concatenate([p[col] for p in parts]).astype(dt, copy=False)
            for col, dt in _SCHEMA[name].items()}


def _take(table: dict[str, np.ndarray], index: np.ndarray) -> dict[str, np.ndarray]:
    return {col: values[index] for col, values in table.items()}


def _sort(name: str, table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sort rows by report (and drug_seq where there is one), keeping insertion order of ties."""
    if "seq" in table:
        order = np.lexsort((table["seq"], table["rep"]))
    else:
        order = np.argsort(table["rep"], kind="stable")
    return _take(table, order)


def _first_unique(rep: np.ndarray, value: np.ndarray, width: int) -> np.ndarray:
    """Indices (in original order) of the first occurrence of each (rep, value) pair."""
    if len(rep) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(rep.astype(np.int64) * width + value, return_index=True)
    return np.sort(first)


def _rank_within(rep: np.ndarray) -> np.ndarray:
    """0-based position of each row inside its run of equal ``rep`` (``rep`` sorted)."""
    n = len(rep)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, rep[1:] != rep[:-1]])
    counts = np.diff(np.r_[starts, n])
    return np.arange(n) - np.repeat(starts, counts)


def _offsets(rep: np.ndarray, n_reports: int) -> np.ndarray:
    return np.searchsorted(rep, np.arange(n_reports + 1))


def _gather(table: dict[str, np.ndarray], offsets: np.ndarray, src: np.ndarray,
            dst: np.ndarray) -> dict[str, np.ndarray]:
    """Rows of reports ``src`` (table sorted by rep), relabelled as reports ``dst``."""
    starts = offsets[src]
    counts = offsets[src + 1] - starts
    total = int(counts.sum())
    index = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
    out = _take(table, index)
    out["rep"] = np.repeat(dst, counts)
    return out


def _allowed(restriction: np.ndarray, sex: np.ndarray, age: np.ndarray) -> np.ndarray:
    """Whether a term with this restriction code fits a patient (latent sex 0=F, 1=M)."""
    return ((restriction == 0) | ((restriction == 1) & (sex == 1)) | ((restriction == 2) & (sex == 0))
            | ((restriction == 3) & (sex == 0) & (age >= 15) & (age <= 45)))


class _Zipf:
    """Zipf-like sampler over ranked terms that respects sex/age restrictions."""

    def __init__(self, n: int, exponent: float, restriction: np.ndarray):
        weights = 1.0 / np.arange(1, n + 1) ** exponent
        self.n = n
        self.restriction = restriction
        self.cdf = self._cdf(weights)
        self.cdf_free = self._cdf(np.where(restriction == 0, weights, 0.0))

    @staticmethod
    def _cdf(weights: np.ndarray) -> np.ndarray:
        cdf = np.cumsum(weights) / weights.sum()
        cdf[-1] = 1.0
        return cdf

    def sample(self, rng: np.random.Generator, sex: np.ndarray, age: np.ndarray) -> np.ndarray:
        ids = np.minimum(np.searchsorted(self.cdf, rng.random(len(sex)), side="right"), self.n - 1)
        bad = ~_allowed(self.restriction[ids], sex, age)
        if bad.any():
            redraw = np.searchsorted(self.cdf_free, rng.random(int(bad.sum())), side="right")
            ids[bad] = np.minimum(redraw, self.n - 1)
        return ids.astype(np.int64)


def _quarter_days(period: Period) -> tuple[int, int]:
    """(first day as days since 1970-01-01, number of days) of a quarter."""
    def first(p: Period) -> int:
        return int(np.datetime64(f"{p.year:04d}-{3 * (p.quarter - 1) + 1:02d}-01", "D").astype(np.int64))
    start = first(period)
    return start, first(period.shift(1)) - start


def _date_strings(days: np.ndarray) -> np.ndarray:
    """YYYYMMDD strings for day numbers; negative day numbers give ""."""
    d = np.maximum(days, 0).astype("datetime64[D]")
    month_start = d.astype("datetime64[M]")
    year = d.astype("datetime64[Y]").astype(np.int64) + 1970
    month = month_start.astype(np.int64) % 12 + 1
    day = (d - month_start.astype("datetime64[D]")).astype(np.int64) + 1
    text = (year * 10000 + month * 100 + day).astype(str).astype(object)
    text[days < 0] = ""
    return text


def _int_strings(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).astype(str).astype(object)


# -- the series generator -----------------------------------------------------------------------
@dataclass(frozen=True)
class _Quarter:
    """A generated quarter's tables, kept for the follow-ups that copy a case's latest report."""

    tables: dict[str, dict[str, np.ndarray]]  # table name -> column -> values, sorted by report
    offsets: dict[str, np.ndarray]  # table name -> report r's rows are [off[r], off[r + 1])


class _Series:
    """Case state across quarters plus the tables of the quarters a follow-up may copy from."""

    def __init__(self, rng: np.random.Generator, n_periods: int, cases: int, lifespan: int,
                 knobs: SynthKnobs, shape: SynthShape):
        self.rng = rng
        self.cases = cases
        self.lifespan = lifespan
        self.knobs = knobs
        self.shape = shape
        self.followup_rate = knobs.followup_rate
        cap = n_periods * cases
        self.n = 0

        def z(dt: npt.DTypeLike) -> np.ndarray:
            return np.zeros(cap, dtype=dt)

        self.caseid = z(np.int64)
        self.first_p = z(np.int64)
        self.last_p = z(np.int64)
        self.last_rep = z(np.int64)
        self.version = z(np.int64)
        self.stopped = z(bool)
        self.deleted = z(bool)
        self.sex = z(np.int8)          # latent 0 F, 1 M
        self.sex_rep = z(np.int8)      # index into _SEX_CODES
        self.age = z(np.float64)       # years, consistent with (age_cod, age_val)
        self.age_cod = z(np.int8)
        self.age_val = z(np.int64)
        self.age_shown = z(bool)
        self.agegrp_shown = z(bool)
        self.wt = z(np.float64)        # kg
        self.wt_lbs = z(bool)
        self.wt_int = z(bool)
        self.wt_shown = z(bool)
        self.rcountry = z(np.int64)
        self.ocountry = z(np.int64)
        self.occp = z(np.int64)
        self.rept = z(np.int64)
        self.mfr = z(np.int64)         # -1 = FDA (direct report)
        self.lit = z(np.int64)         # -1 = none
        self.auth = z(bool)
        self.event_day = z(np.int64)   # -1 = empty
        self.init_day = z(np.int64)
        self.no_indi = z(bool)
        self.u_rule = np.zeros((cap, len(PLANTED_SIGNALS)), dtype=np.float64)
        self.hist: list[_Quarter | None] = []  # None: a quarter no follow-up can copy from

        span = 89_000_000
        self.next_caseid = 10_000_000 + int(rng.integers(0, 1_000_000))
        self.caseid_step = int(max(1, min(40, (span - 1_000_000) // max(cap, 1))))

        self.drug_zipf = _Zipf(len(terms.DRUGS), shape.drug_zipf, _DRUG_RESTR)
        self.reac_zipf = _Zipf(len(terms.REACTIONS), shape.reaction_zipf, _REAC_RESTR)
        self.indi_zipf = _Zipf(len(terms.INDICATIONS), shape.indication_zipf, _INDI_RESTR)
        self.mfr_cdf = _Zipf._cdf(1.0 / np.arange(1, len(terms.MANUFACTURERS) + 1) ** 0.8)
        self.rule_drug = np.array([_DRUG_INDEX[r.drug] for r in PLANTED_SIGNALS], dtype=np.int64)
        self.rule_reac = np.array([_REAC_INDEX[r.reaction] for r in PLANTED_SIGNALS], dtype=np.int64)

        # Rare reactions: 2-6 cases each over the whole series, spread over random quarters.
        self.rare = np.zeros((n_periods, len(_RARE_IDS)), dtype=np.int64)
        for j in range(len(_RARE_IDS)):
            for p in rng.integers(0, n_periods, size=int(rng.integers(2, 7))):
                self.rare[p, j] += 1
        # drawn only when used: a profile without them keeps its random stream (and its files)
        self.ps_drug = z(np.int64)     # each case's primary suspect drug
        if shape.dependent:
            self._rates(rng)
        self.surge = self._surges(rng, n_periods) if shape.surge_rate > 0 and shape.surge_share > 0 \
            else np.full(n_periods, -1, dtype=np.int64)

    def _rates(self, rng: np.random.Generator) -> None:
        """Each drug's and each indication's reaction distribution, as one stacked CDF table.

        A drug's row mixes the background (the Zipf rank weights, times a log-normal factor
        per reaction: the drug's own reporting rates) with its class's effects (share
        ``class_effects``); an indication's row mixes its disease's events (share
        :data:`DISEASE_EVENT_SHARE`, when it has any) with the background at the rates of its
        patients (another log-normal factor). Rows 0..D-1 are the drugs, D.. the
        indications."""
        shape = self.shape
        spread = shape.drug_spread
        n_drug, n_indi = len(_DRUG_NAMES), len(_INDI_NAMES)
        background = 1.0 / np.arange(1, _N_REAC + 1) ** shape.reaction_zipf
        own = background * np.exp(spread * rng.standard_normal((n_drug, _N_REAC)))
        own /= own.sum(axis=1, keepdims=True)
        effects = np.zeros((n_drug, _N_REAC))
        for d in range(n_drug):
            effects[d, _CLASS_EFFECTS[_DRUG_CLASS[d]]] = 1.0
        effects *= np.exp(spread * rng.standard_normal((n_drug, _N_REAC)))
        effects /= effects.sum(axis=1, keepdims=True)
        drugs = (1.0 - shape.class_effects) * own + shape.class_effects * effects
        events = np.zeros((n_indi, _N_REAC))
        for i, listed in enumerate(_DISEASE_EVENTS):
            events[i, listed] = 1.0
        events *= np.exp(spread * rng.standard_normal((n_indi, _N_REAC)))
        has_events = events.sum(axis=1) > 0
        events[has_events] /= events[has_events].sum(axis=1, keepdims=True)
        # the indication's patients report the background at their own rates too; shared by
        # every drug of a report, so the drugs given for one indication share them (unlike a
        # drug's own rates, which the other drugs of its reports average out)
        context = background * np.exp(spread * rng.standard_normal((n_indi, _N_REAC)))
        context /= context.sum(axis=1, keepdims=True)
        share = np.where(has_events, DISEASE_EVENT_SHARE, 0.0)[:, None]
        disease = share * events + (1.0 - share) * context
        rows = np.vstack([drugs, disease])
        cdf = np.minimum(np.cumsum(rows, axis=1), 1.0)
        cdf[:, -1] = 1.0
        # row r's CDF shifted by r: one sorted array, so one searchsorted samples every row
        self.rate_cdf = (cdf + np.arange(len(rows))[:, None]).ravel()

    def _surges(self, rng: np.random.Generator, n_periods: int) -> np.ndarray:
        """Per quarter, the surge drug (-1: an ordinary quarter).

        Episodes of 1-2 quarters start at gaps drawn uniformly around their mean (so a long
        series has about ``surge_rate`` × quarters surge quarters, never two episodes in a
        row); the drug is one of the planted signals' (publicity follows a known signal, as
        Avandia's 2007 and Chantix's 2008-2010 reports did).
        """
        mean_gap = (1.0 + SURGE_TWO_QUARTERS) / self.shape.surge_rate
        low, high = max(3, int(round(0.6 * mean_gap))), max(4, int(round(1.4 * mean_gap)))
        out = np.full(n_periods, -1, dtype=np.int64)
        t = int(rng.integers(0, max(1, int(round(mean_gap)))))
        while t < n_periods:
            length = 2 if rng.random() < SURGE_TWO_QUARTERS else 1
            out[t:t + length] = self.rule_drug[int(rng.integers(0, len(self.rule_drug)))]
            t += int(rng.integers(low, high + 1))
        return out

    def _surge_cases(self, p: int, cases: int) -> int:
        """How many of quarter ``p``'s cases the surge gives its drug: enough for its indication
        to be in a share drawn uniformly in ``surge_share`` ± 1.75 points of all cases, given
        that term's share b in the latest ordinary quarter (f + (1 - f)·b = share)."""
        drug = int(self.surge[p])
        if drug < 0:
            return 0
        target = self.shape.surge_share + self.rng.uniform(-SURGE_SPREAD, SURGE_SPREAD)
        base = 0.0
        # the term's share in the latest ordinary quarter (the first quarter of a two-quarter
        # episode would count the surge twice)
        ordinary = [q for q in range(p - 1, -1, -1) if self.surge[q] < 0 and self.hist[q] is not None]
        previous = self.hist[ordinary[0]] if ordinary else None
        if previous is not None and len(previous.offsets["drug"]) > 1:
            name = _INDI_NAMES[_DRUG_INDICATION[drug]]
            indi, reac = previous.tables["indi"], previous.tables["reac"]
            holding = indi["rep"][indi["pt"] == _INDI_INDEX[name]]
            if name in _REAC_INDEX:
                holding = np.r_[holding, reac["rep"][reac["pt"] == _REAC_INDEX[name]]]
            base = len(np.unique(holding)) / (len(previous.offsets["drug"]) - 1)
        share = max(0.0, (target - base) / (1.0 - base)) if base < 1 else 0.0
        return int(round(share * cases))

    def _rate_sample(self, row: np.ndarray, sex: np.ndarray, age: np.ndarray) -> np.ndarray:
        """One reaction per entry of ``row`` (a row of the rate table), sex/age restricted."""
        rng = self.rng
        ids = np.searchsorted(self.rate_cdf, row + rng.random(len(row)), side="right") - row * _N_REAC
        ids = np.clip(ids, 0, _N_REAC - 1)
        bad = ~_allowed(_REAC_RESTR[ids], sex, age)
        if bad.any():
            redraw = np.searchsorted(self.reac_zipf.cdf_free, rng.random(int(bad.sum())), side="right")
            ids[bad] = np.minimum(redraw, _N_REAC - 1)
        return ids.astype(np.int64)

    def _dependent_reactions(self, rep: np.ndarray, drug: np.ndarray, ps: np.ndarray,
                             c: np.ndarray) -> np.ndarray:
        """Reactions of rows ``rep`` given a drug of each row's report and its primary suspect:
        from the row of the primary suspect's indication with probability
        ``indication_events``, else from the drug's own row."""
        indication = _DRUG_INDICATION[ps]
        disease = self.rng.random(len(rep)) < self.shape.indication_events
        row = np.where(disease, len(_DRUG_NAMES) + indication, drug)
        return self._rate_sample(row, self.sex[c], self.age[c])

    # -- cases -------------------------------------------------------------------------------
    def _new_cases(self, k: int) -> np.ndarray:
        rng = self.rng
        idx = np.arange(self.n, self.n + k)
        self.n += k
        if k == 0:
            return idx
        ids = self.next_caseid + np.cumsum(rng.integers(1, self.caseid_step + 1, size=k))
        self.next_caseid = int(ids[-1])
        self.caseid[idx] = ids
        sex = (rng.random(k) >= 0.56).astype(np.int8)
        self.sex[idx] = sex
        u = rng.random(k)
        self.sex_rep[idx] = np.where(u < 0.01, 2, np.where(u < 0.02, 3, sex))

        # Age: 4% infants (DY/WK/MON), 8% children (YR 2-17), adults YR (1.5% written in DEC).
        group = rng.random(k)
        cod = np.zeros(k, dtype=np.int8)
        val = np.clip(np.rint(rng.normal(57, 17, k)), 18, 100).astype(np.int64)
        adult = group >= 0.12
        dec = adult & (rng.random(k) < 0.015)
        cod[dec] = 1
        val[dec] = np.clip(np.rint(val[dec] / 10), 2, 10)
        child = (group >= 0.04) & ~adult
        val[child] = rng.integers(2, 18, int(child.sum()))
        infant = group < 0.04
        sub = rng.random(k)
        mon, wk, dy = infant & (sub < 0.7), infant & (sub >= 0.7) & (sub < 0.85), infant & (sub >= 0.85)
        cod[mon], val[mon] = 2, rng.integers(1, 24, int(mon.sum()))
        cod[wk], val[wk] = 3, rng.integers(1, 9, int(wk.sum()))
        cod[dy], val[dy] = 4, rng.integers(1, 28, int(dy.sum()))
        age = val * _AGE_FACTOR[cod]
        self.age_cod[idx], self.age_val[idx], self.age[idx] = cod, val, age
        self.age_shown[idx] = rng.random(k) >= self.knobs.missing_age
        self.agegrp_shown[idx] = rng.random(k) < 0.35

        # Weight in kg, correlated with age and sex.
        adult_kg = np.where(sex == 0, rng.normal(72, 16, k), rng.normal(86, 17, k))
        child_kg = np.where(age < 2, 3.3 + 5.0 * age, 12.0 + 3.2 * (age - 2)) * np.exp(rng.normal(0, 0.12, k))
        kg = np.clip(np.where(age >= 18, adult_kg, child_kg), 0.5, 200.0)
        self.wt[idx] = kg
        self.wt_shown[idx] = rng.random(k) >= self.knobs.missing_weight
        self.wt_int[idx] = (rng.random(k) < 0.6) & (kg >= 5)

        country = np.where(rng.random(k) < 0.62, 0,
                           np.minimum(rng.zipf(1.6, k), len(terms.COUNTRIES) - 1))
        self.rcountry[idx] = country
        moved = rng.random(k) < 0.05
        self.ocountry[idx] = np.where(moved, rng.integers(0, len(terms.COUNTRIES), k), country)
        self.wt_lbs[idx] = (country == 0) & (rng.random(k) < 0.16)
        self.occp[idx] = rng.choice(len(_OCCP), size=k, p=_OCCP_P)
        rept = rng.choice(3, size=k, p=[0.62, 0.28, 0.10])
        self.rept[idx] = rept
        mfr = np.minimum(np.searchsorted(self.mfr_cdf, rng.random(k), side="right"),
                         len(terms.MANUFACTURERS) - 1)
        self.mfr[idx] = np.where(rept == 2, -1, mfr)
        self.lit[idx] = np.where((rept == 0) & (rng.random(k) < 0.03),
                                 rng.integers(0, len(terms.LITERATURE), k), -1)
        self.auth[idx] = (rept == 0) & (country != 0) & (rng.random(k) < 0.3)
        self.stopped[idx] = rng.random(k) < self.knobs.stop_rate_new
        self.no_indi[idx] = rng.random(k) < self.knobs.no_indication
        self.u_rule[idx] = rng.random((k, len(PLANTED_SIGNALS)))
        self.version[idx] = 0
        self.event_day[idx] = -1
        return idx

    # -- table content -----------------------------------------------------------------------
    def _indi_for(self, rep, seq, drug, sex, age):
        rng = self.rng
        shape = self.shape
        take = rng.random(len(rep)) < shape.indication_rate
        pt = _DRUG_INDICATION[drug[take]].copy()
        generic = rng.random(len(pt)) < shape.generic_indication
        if generic.any():
            pt[generic] = self.indi_zipf.sample(rng, sex[take][generic], age[take][generic])
        if shape.unknown_indication > 0:  # no draw otherwise: the legacy profile's stream stays
            pt[rng.random(len(pt)) < shape.unknown_indication] = _UNKNOWN_INDICATION
        return {"rep": rep[take], "seq": seq[take], "pt": pt}

    def _reactions(self, reps: np.ndarray, counts: np.ndarray, cidx: np.ndarray) -> dict[str, np.ndarray]:
        """Reactions added to reports ``reps`` of cases ``cidx`` (follow-ups, second versions):
        drawn from the primary suspect's rates when reactions depend on drugs."""
        rep = np.repeat(reps, counts)
        c = np.repeat(cidx, counts)
        if self.shape.dependent:
            ps = self.ps_drug[c]
            return {"rep": rep, "pt": self._dependent_reactions(rep, ps, ps, c)}
        return {"rep": rep, "pt": self.reac_zipf.sample(self.rng, self.sex[c], self.age[c])}

    def _fresh(self, first_rep: int, cidx: np.ndarray, surge_drug: int = -1,
               surge_cases: int = 0) -> dict[str, dict[str, np.ndarray]]:
        """Brand-new content for the reports ``first_rep .. first_rep+len(cidx)-1`` (with
        ``surge_drug`` >= 0, ``surge_cases`` of them take it as primary suspect)."""
        rng = self.rng
        shape = self.shape
        r = len(cidx)
        local = np.arange(r)
        sex, age = self.sex[cidx], self.age[cidx]

        n_drug = np.minimum(1 + rng.negative_binomial(2, 2 / (2 + 3.7), r), 30)
        drep = np.repeat(local, n_drug)
        dsex, dage = np.repeat(sex, n_drug), np.repeat(age, n_drug)
        drug = self.drug_zipf.sample(rng, dsex, dage)
        first_row = np.cumsum(n_drug) - n_drug
        surged = np.zeros(r, dtype=bool)
        if surge_drug >= 0:
            want = min(r, surge_cases)
            fits = np.flatnonzero(_allowed(_DRUG_RESTR[surge_drug], sex, age))
            surged[rng.choice(fits, size=min(want, len(fits)), replace=False)] = True
            drug[first_row[surged]] = surge_drug
        if shape.comedication > 0:
            # drugs given for the primary suspect's indication
            ps = drug[first_row][drep]
            swap = (rng.random(len(drug)) < shape.comedication) & (np.arange(len(drug)) != first_row[drep])
            within = (rng.random(len(drug)) * _SAME_COUNT[ps]).astype(np.int64)
            pick = _SAME_INDICATION[_SAME_START[ps] + within]
            swap &= _allowed(_DRUG_RESTR[pick], dsex, dage)
            drug = np.where(swap, pick, drug)
        keep = _first_unique(drep, drug, len(terms.DRUGS))
        drep, drug, dsex, dage = drep[keep], drug[keep], dsex[keep], dage[keep]
        seq = _rank_within(drep) + 1
        m = len(drep)
        role = np.where(seq == 1, 0, rng.choice(3, size=m, p=[0.22, 0.75, 0.03]) + 1)
        dose = np.where(rng.random(m) < 0.2, 0, rng.integers(1, _N_FREQ + 1, m))
        drugs = {"rep": drep, "seq": seq, "drug": drug, "role": role, "dose": dose,
                 "val": np.where(rng.random(m) < 0.05, 2, 1),
                 "lot": np.where(rng.random(m) < 0.04, rng.integers(0, 26 * 26 * 100000, m), -1)}

        indi = self._indi_for(drep, seq, drug, dsex, dage)
        none = self.no_indi[cidx]
        keep = ~none[indi["rep"]]
        indi = {k: v[keep] for k, v in indi.items()}
        has = np.zeros(r, dtype=bool)
        has[indi["rep"]] = True
        lacking = np.flatnonzero(~has & ~none)
        first_rows = np.searchsorted(drep, lacking)  # drug_seq 1 of those reports
        indi = {"rep": np.r_[indi["rep"], lacking], "seq": np.r_[indi["seq"], seq[first_rows]],
                "pt": np.r_[indi["pt"], _DRUG_INDICATION[drug[first_rows]]]}
        if surged.any():
            # a surge report names its drug's indication (001's surge terms are indications)
            s_rep = np.flatnonzero(surged)
            drop = surged[indi["rep"]] & (indi["seq"] == 1)
            indi = {k: np.r_[v[~drop], add] for (k, v), add in zip(
                indi.items(), (s_rep, np.ones(len(s_rep), dtype=np.int64),
                               np.full(len(s_rep), _DRUG_INDICATION[surge_drug])))}

        heavy = rng.random(r) < 0.05
        n_reac = np.where(heavy, rng.integers(10, 21, r), np.minimum(rng.geometric(0.32, r), 9))
        if shape.dependent:
            starts = _offsets(drep, r)
            self.ps_drug[cidx] = drug[starts[:-1]]
            rrep = np.repeat(local, n_reac)
            count = starts[1:] - starts[:-1]
            any_drug = starts[rrep] + (rng.random(len(rrep)) * count[rrep]).astype(np.int64)
            chosen = np.where(rng.random(len(rrep)) < PRIMARY_SUSPECT_REACTIONS, starts[rrep], any_drug)
            c = cidx[rrep]
            reac = {"rep": rrep, "pt": self._dependent_reactions(rrep, drug[chosen], self.ps_drug[c], c)}
        else:
            reac = self._reactions(local, n_reac, cidx)

        n_out = rng.choice(4, size=r, p=[0.30, 0.45, 0.18, 0.07])
        orep = np.repeat(local, n_out)
        outc = {"rep": orep, "code": rng.choice(len(_OUTCOMES), size=len(orep), p=_OUTCOME_P)}

        out = {"drug": drugs, "reac": reac, "indi": indi, "outc": outc}
        for table in out.values():
            table["rep"] = table["rep"] + first_rep
        return out

    def _carry(self, cidx: np.ndarray, dst: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        """The latest earlier report's rows of each case, relabelled as reports ``dst``."""
        parts: dict[str, list] = {name: [] for name in _TABLES}
        src_p = self.last_p[cidx]
        for pp in np.unique(src_p):
            m = src_p == pp
            h = self.hist[int(pp)]
            assert h is not None
            for name in _TABLES:
                parts[name].append(_gather(h.tables[name], h.offsets[name], self.last_rep[cidx[m]],
                                           dst[m]))
        return {name: _concat(name, parts[name]) for name in _TABLES}

    def _signals(self, reac: dict, drug: dict, rep_case: np.ndarray) -> dict:
        """Add each rule's reaction to reports meeting its condition with that drug."""
        added = [reac]
        sex = np.asarray(["F", "M"], dtype=object)
        for j, rule in enumerate(PLANTED_SIGNALS):
            reps = np.unique(drug["rep"][drug["drug"] == self.rule_drug[j]])
            c = rep_case[reps]
            lucky = self.u_rule[c, j] < self.knobs.signal_probability
            hit = rule.holds(self.age[c], sex[self.sex[c]]) & lucky
            added.append({"rep": reps[hit], "pt": np.full(int(hit.sum()), self.rule_reac[j])})
        return _concat("reac", added)

    @staticmethod
    def _tidy(tables: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
        """Sort by report, drop duplicate drugs/reactions/outcomes, add DE for a death."""
        out = {}
        drug = _sort("drug", tables["drug"])
        drug = _take(drug, _first_unique(drug["rep"], drug["drug"], len(terms.DRUGS)))
        out["drug"] = drug
        indi = _sort("indi", tables["indi"])
        width = 1 << 16
        known = np.isin(indi["rep"] * width + indi["seq"], drug["rep"] * width + drug["seq"])
        out["indi"] = _take(indi, np.flatnonzero(known))
        reac = _sort("reac", tables["reac"])
        out["reac"] = _take(reac, _first_unique(reac["rep"], reac["pt"], len(_REAC_NAMES)))
        dead = np.unique(out["reac"]["rep"][out["reac"]["pt"] == _DEATH_ID])
        outc = _concat("outc", [tables["outc"], {"rep": dead, "code": np.full(len(dead), 2)}])
        outc = _sort("outc", outc)
        out["outc"] = _take(outc, _first_unique(outc["rep"], outc["code"], len(_OUTCOMES)))
        return out

    # -- one quarter -------------------------------------------------------------------------
    def period(self, p: int, period: Period) -> dict:
        rng = self.rng
        start_day, n_days = _quarter_days(period)

        # 1. follow-ups: earlier cases still in their life span, treatment not stopped, not deleted.
        chosen = np.zeros(0, dtype=np.int64)
        if p > 0 and self.followup_rate > 0:
            n = self.n
            since = p - self.first_p[:n]
            pool = np.flatnonzero(~self.stopped[:n] & ~self.deleted[:n] & (since >= 1)
                                  & (since <= self.lifespan))
            want = min(int(round(self.followup_rate * self.cases)), len(pool))
            if want:
                weight = 1.0 / np.sqrt(p - self.last_p[pool])  # recent cases somewhat likelier
                keys = rng.exponential(size=len(pool)) / weight
                chosen = np.sort(pool[np.argsort(keys, kind="stable")[:want]])
        n_follow = len(chosen)
        new = self._new_cases(self.cases - n_follow)
        cidx = np.r_[chosen, new].astype(np.int64)
        r1 = len(cidx)

        # Follow-up updates: versions, filled-in age/weight, corrected weight, stopping.
        fu = chosen
        self.version[fu] += np.where(rng.random(n_follow) < 0.85, 1, 2)
        self.version[new] = 1
        fill_age = ~self.age_shown[fu] & (rng.random(n_follow) < 0.5)
        self.age_shown[fu[fill_age]] = True
        fill_wt = ~self.wt_shown[fu] & (rng.random(n_follow) < 0.3)
        self.wt_shown[fu[fill_wt]] = True
        fix_wt = self.wt_shown[fu] & (rng.random(n_follow) < 0.06)
        self.wt[fu[fix_wt]] = np.clip(self.wt[fu[fix_wt]] * np.exp(rng.normal(0, 0.08, int(fix_wt.sum()))),
                                      0.5, 200.0)
        self.stopped[fu[rng.random(n_follow) < STOP_RATE_FOLLOWUP]] = True

        # 2. content of one report per case: carried for follow-ups, fresh for new cases.
        carried = self._carry(fu, np.arange(n_follow)) if n_follow else {k: _empty(k) for k in _TABLES}
        fresh = self._fresh(n_follow, new, int(self.surge[p]), self._surge_cases(p, r1))
        parts = {k: [carried[k], fresh[k]] for k in _TABLES}
        if n_follow:
            frep = np.arange(n_follow)
            more = rng.random(n_follow) < 0.45
            parts["reac"].append(self._reactions(frep[more], rng.integers(1, 4, int(more.sum())), fu[more]))
            add = np.flatnonzero(rng.random(n_follow) < 0.15)
            if len(add):
                max_seq = np.zeros(n_follow, dtype=np.int64)
                np.maximum.at(max_seq, carried["drug"]["rep"], carried["drug"]["seq"])
                c = fu[add]
                drug = self.drug_zipf.sample(rng, self.sex[c], self.age[c])
                seq = max_seq[add] + 1
                parts["drug"].append({"rep": add, "seq": seq, "drug": drug,
                                      "role": np.full(len(add), 2),
                                      "dose": rng.integers(0, _N_FREQ + 1, len(add)),
                                      "val": np.ones(len(add)), "lot": np.full(len(add), -1)})
                parts["indi"].append(self._indi_for(add, seq, drug, self.sex[c], self.age[c]))
            oadd = np.flatnonzero(rng.random(n_follow) < 0.15)
            parts["outc"].append({"rep": oadd,
                                  "code": rng.choice(len(_OUTCOMES), size=len(oadd), p=_OUTCOME_P)})
        # Rare reactions on a handful of new cases.
        for j, count in enumerate(self.rare[p]):
            if count and len(new):
                reps = n_follow + rng.choice(len(new), size=min(int(count), len(new)), replace=False)
                parts["reac"].append({"rep": reps, "pt": np.full(len(reps), _RARE_IDS[j])})
        merged = {k: _concat(k, v) for k, v in parts.items()}
        merged["reac"] = self._signals(merged["reac"], merged["drug"], cidx)
        primary = self._tidy(merged)

        # 3. a second version inside the quarter for ~2% of the cases.
        dup = np.flatnonzero(rng.random(r1) < DUPLICATE_VERSION_RATE)
        m = len(dup)
        dst = r1 + np.arange(m)
        second = {k: _gather(primary[k], _offsets(primary[k]["rep"], r1), dup, dst) for k in _TABLES}
        more = rng.random(m) < 0.5
        second["reac"] = _concat("reac", [second["reac"], self._reactions(
            dst[more], rng.integers(1, 3, int(more.sum())), cidx[dup[more]])])
        rep_case = np.r_[cidx, cidx[dup]]
        version = np.r_[self.version[cidx], self.version[cidx[dup]] + 1]
        self.version[cidx[dup]] += 1
        followup = np.r_[np.arange(r1) < n_follow, np.ones(m, dtype=bool)]
        fda = rng.integers(0, n_days, r1)
        fda = np.r_[fda, fda[dup] + rng.integers(0, n_days - fda[dup])]
        tables = self._tidy({k: _concat(k, [primary[k], second[k]]) for k in _TABLES})

        # First-report dates of new cases.
        first_fda = start_day + fda[n_follow:r1]
        has_event = rng.random(len(new)) < 0.75
        self.event_day[new] = np.where(
            has_event, np.maximum(start_day, first_fda - rng.integers(0, 60, len(new))), -1)
        self.init_day[new] = first_fda

        # 4. report order: by caseid then version; relabel the tables.
        order = np.lexsort((version, self.caseid[rep_case]))
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        for name in _TABLES:
            tables[name]["rep"] = position[tables[name]["rep"]]
            tables[name] = _sort(name, tables[name])
        rep_case, version, followup, fda = rep_case[order], version[order], followup[order], fda[order]
        n_rep = len(rep_case)
        self.hist.append(_Quarter(
            tables=dict(tables),
            offsets={name: _offsets(tables[name]["rep"], n_rep) for name in _TABLES}))
        for old in range(0, max(0, p - self.lifespan)):
            self.hist[old] = None
        last_rows = np.flatnonzero(np.r_[rep_case[1:] != rep_case[:-1], True])
        self.last_p[rep_case[last_rows]] = p
        self.last_rep[rep_case[last_rows]] = last_rows
        self.first_p[new] = p

        # 5. deletions: ~0.2% of cases, among everything seen so far.
        n_del = int(rng.poisson(DELETE_RATE * self.cases))
        alive = np.flatnonzero(~self.deleted[: self.n])
        gone = np.sort(rng.choice(alive, size=min(n_del, len(alive)), replace=False)) if n_del else alive[:0]
        self.deleted[gone] = True

        return {"rep_case": rep_case, "version": version, "followup": followup,
                "fda_day": start_day + fda, "start_day": start_day, "tables": tables,
                "deleted": self.caseid[gone], "n_follow": n_follow, "n_cases": r1}

    # -- text ------------------------------------------------------------------------------------
    def render(self, q: dict) -> dict[str, list[list]]:
        """The text columns of every table of one quarter."""
        rng = self.rng
        c = q["rep_case"]
        n = len(c)
        caseid = _int_strings(self.caseid[c])
        version = _int_strings(q["version"])
        primaryid = caseid + version
        fda = q["fda_day"]
        start = q["start_day"]
        rept = self.rept[c]
        mfr_day = np.where(rept == 2, -1, np.maximum(start, fda - rng.integers(0, 15, n)))
        rept_day = np.maximum(start, fda - rng.integers(0, 10, n))

        sex_txt = _objects(_SEX_CODES[:3])
        sex_txt[-1] = ""
        age_shown = self.age_shown[c]
        age = np.where(age_shown, _int_strings(self.age_val[c]), "").astype(object)
        age_cod = np.where(age_shown, _objects(_AGE_CODES)[self.age_cod[c]], "").astype(object)
        years = self.age[c]
        grp = np.select([years < 28 / 365.2425, years < 2, years < 12, years < 18, years < 65],
                        [0, 1, 2, 3, 4], 5)
        age_grp = np.where(age_shown & self.agegrp_shown[c],
                           np.asarray(["N", "I", "C", "T", "A", "E"], dtype=object)[grp], "").astype(object)

        lbs = self.wt_lbs[c]
        shown = self.wt_shown[c]
        value = np.where(lbs, self.wt[c] * _LBS_PER_KG, self.wt[c])
        tenths = np.rint(value * 10).astype(np.int64)
        whole = self.wt_int[c] | lbs
        wt_text = np.where(whole, _int_strings(np.rint(value)),
                           _int_strings(tenths // 10) + "." + _int_strings(tenths % 10)).astype(object)
        wt = np.where(shown, wt_text, "").astype(object)
        wt_cod = np.where(shown, np.where(lbs, "LBS", "KG"), "").astype(object)

        country = np.asarray(terms.COUNTRIES, dtype=object)
        rc = country[self.rcountry[c]]
        senders = np.asarray([m[0] for m in terms.MANUFACTURERS] + [terms.FDA_SENDER], dtype=object)
        codes = np.asarray([m[1] for m in terms.MANUFACTURERS] + [""], dtype=object)
        mfr = self.mfr[c]
        year = (self.init_day[c].astype("datetime64[D]").astype("datetime64[Y]").astype(np.int64) + 1970)
        mfr_num = np.where(mfr >= 0, rc + "-" + codes[mfr] + "-" + _int_strings(year)
                           + _int_strings(100000 + self.caseid[c] % 900000), "").astype(object)
        auth = self.auth[c]
        agency = np.asarray([terms.AUTHORITIES.get(x, "AUTH") for x in terms.COUNTRIES], dtype=object)
        auth_num = np.where(auth, rc + "-" + agency[self.rcountry[c]] + "-"
                            + _int_strings(1000000 + (self.caseid[c] * 7919) % 9000000), "").astype(object)
        demo = [primaryid, caseid, version,
                np.where(q["followup"], "F", "I").astype(object),
                _date_strings(self.event_day[c]), _date_strings(mfr_day), _date_strings(self.init_day[c]),
                _date_strings(fda), np.asarray(_REPT, dtype=object)[rept], auth_num, mfr_num,
                senders[mfr], _objects(terms.LITERATURE)[self.lit[c]], age, age_cod, age_grp,
                sex_txt[self.sex_rep[c]], np.full(n, "Y", dtype=object), wt, wt_cod,
                _date_strings(rept_day), np.where(rept == 2, "N", "").astype(object),
                np.asarray(_OCCP, dtype=object)[self.occp[c]], rc,
                country[self.ocountry[c]]]

        t = q["tables"]
        d = t["drug"]
        rep = d["rep"]
        m = len(rep)
        stop = self.stopped[c][rep]
        other = rng.choice(4, size=m, p=[0.5, 0.3, 0.12, 0.08])
        dechal = np.where(stop & ((d["role"] == 0) | (rng.random(m) < 0.3)), 4, other)
        rechal = rng.choice(4, size=m, p=[0.55, 0.3, 0.13, 0.02])
        combo = d["drug"] * (_N_FREQ + 1) + d["dose"]
        lot = d["lot"]
        has_lot = lot >= 0
        lot_txt = np.full(m, "", dtype=object)
        exp_txt = np.full(m, "", dtype=object)
        if has_lot.any():
            lv = lot[has_lot]
            letters = np.asarray([chr(65 + i) for i in range(26)], dtype=object)
            lot_txt[has_lot] = (letters[lv % 26] + letters[(lv // 26) % 26]
                                + _int_strings(10000 + (lv // 676) % 90000))
            exp_year = _int_strings(year[rep[has_lot]] + 1 + lv % 3)
            exp_txt[has_lot] = np.where(lv % 2 == 0, exp_year + "1231", "")
        cum = rng.random(m) < 0.03
        drug_names = np.asarray(_DRUG_NAMES, dtype=object)
        drug = [primaryid[rep], caseid[rep], _int_strings(d["seq"]),
                np.asarray(_ROLES, dtype=object)[d["role"]], drug_names[d["drug"]],
                np.asarray([x[1] for x in terms.DRUGS], dtype=object)[d["drug"]],
                _int_strings(d["val"]), np.asarray([x[3] for x in terms.DRUGS], dtype=object)[d["drug"]],
                _DOSE["vbm"][combo],
                np.where(cum & (d["dose"] > 0), _DOSE["amt"][combo], "").astype(object),
                np.where(cum & (d["dose"] > 0), _DOSE["unit"][combo], "").astype(object),
                np.asarray(_DECHAL, dtype=object)[dechal], np.asarray(_RECHAL, dtype=object)[rechal],
                lot_txt, exp_txt, _NDA[d["drug"]], _DOSE["amt"][combo], _DOSE["unit"][combo],
                _DOSE["form"][combo], _DOSE["freq"][combo]]

        r = t["reac"]
        reac_names = np.asarray(_REAC_NAMES, dtype=object)
        reac = [primaryid[r["rep"]], caseid[r["rep"]], reac_names[r["pt"]],
                np.full(len(r["rep"]), "", dtype=object)]
        i = t["indi"]
        indi = [primaryid[i["rep"]], caseid[i["rep"]], _int_strings(i["seq"]),
                np.asarray(_INDI_NAMES, dtype=object)[i["pt"]]]
        o = t["outc"]
        outc = [primaryid[o["rep"]], caseid[o["rep"]], np.asarray(_OUTCOMES, dtype=object)[o["code"]]]
        return {"DEMO": demo, "DRUG": drug, "REAC": reac, "INDI": indi, "OUTC": outc}


def _write_table(path: Path, header: tuple[str, ...], columns: list) -> None:
    lists = [np.asarray(col, dtype=object).tolist() for col in columns]
    rows = "$\r\n".join(map("$".join, zip(*lists)))
    text = "$".join(header) + "$\r\n" + (rows + "$\r\n" if lists and lists[0] else "")
    path.write_bytes(text.encode("latin-1"))


def write_faers_series(out: str | Path, *, periods: int = 8, cases: int = 1000,
                       seed: int | None = None, start: str | None = None, lifespan: int = 4,
                       profile: str | SynthProfile = "default",
                       followup_rate: float | None = None, missing_age: float | None = None,
                       missing_weight: float | None = None, no_indication: float | None = None,
                       signal_probability: float | None = None,
                       stop_rate_new: float | None = None,
                       progress: Callable[[int, int], None] | None = None) -> SynthSummary:
    """Write a synthetic periodic FAERS series, one folder per quarter, in the 2014Q3+ layout.

    Args:
        out: folder to write into (created if missing); it must not already hold any of the
            period folders to write.
        periods: number of consecutive quarters.
        cases: distinct case ids per quarter (new cases plus follow-ups).
        seed: random seed; ``None`` draws one from OS entropy (reported in the summary).
        start: first quarter, e.g. ``"2020Q1"``; ``None``: the profile's (``default``: 2020Q1).
        lifespan: how many quarters after its first report a case may still get follow-ups.
        profile: a name in :data:`PROFILES` (``default``, ``legacy``, ``faers-2004``,
            ``faers-2014``, ``faers-current``; calibrations and sources in ``docs/data.md``) or a
            :class:`SynthProfile`. It sets the term distributions, the first quarter and the
            rates below; a rate given explicitly overrides the profile's.
        followup_rate: share of a quarter's cases that are follow-ups of earlier cases (from the
            second quarter on; lower only if too few earlier cases are still in their life span).
            FAERS has about 10% follow-ups of earlier quarters; series much heavier than that
            leave little room to generalize (most cases must cover an earlier release).
        missing_age, missing_weight: share of new cases whose age (weight) is not reported
            (a follow-up may fill it in).
        no_indication: share of new cases reported without any indication.
        signal_probability: extra probability of a planted signal's reaction for a patient who
            meets its condition and takes its drug (0 plants no signal).
        stop_rate_new: share of new cases whose treatment stops (never followed up; HA's
            medication-discontinuation attack targets them).
        progress: called as ``progress(done, total)`` after each quarter.

    Returns:
        A :class:`SynthSummary` with the counts per quarter and the planted signals.

    Raises:
        ValidationError: a parameter out of range, an unknown profile, a bad period label, or
            an ``out`` folder that is a file or already holds one of the quarters.
    """
    periods = check_int(periods, name="periods", owner=_OWNER, minimum=1)
    cases = check_int(cases, name="cases", owner=_OWNER, minimum=1)
    lifespan = check_int(lifespan, name="lifespan", owner=_OWNER, minimum=1)
    chosen = profile_named(profile, owner=_OWNER)
    given = {"followup_rate": followup_rate, "missing_age": missing_age,
             "missing_weight": missing_weight, "no_indication": no_indication,
             "signal_probability": signal_probability, "stop_rate_new": stop_rate_new}
    knobs = replace(chosen.knobs, **{k: v for k, v in given.items() if v is not None}
                    ).checked(_OWNER)
    start = chosen.start if start is None else start
    seeded = seed is not None
    seed = check_int(seed, name="seed", owner=_OWNER, minimum=0) if seeded else secrets.randbits(63)
    if progress is not None and not callable(progress):
        raise ValidationError(f"The 'progress' parameter of {_OWNER} must be a callable or None; "
                              f"got {progress!r}.")
    first = parse_period(start)
    quarters = [first.shift(i) for i in range(periods)]
    labels = tuple(q.label for q in quarters)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValidationError(f"The 'out' parameter of {_OWNER} must be a directory; got "
                              f"{str(out)!r}, which is a file.")
    clash = [label for label in labels if (out / label).exists()]
    if clash:
        raise ValidationError(f"The 'out' parameter of {_OWNER} must not already hold the periods "
                              f"to write; got {str(out)!r}, which has {', '.join(clash)} "
                              "(a series is never overwritten or mixed).")
    out.mkdir(parents=True, exist_ok=True)

    rng = np.random.default_rng(seed)
    series = _Series(rng, periods, cases, lifespan, knobs, chosen.shape)
    reports, case_counts, followups, deleted = {}, {}, {}, {}
    headers = {"DEMO": _DEMO_COLUMNS, "DRUG": _DRUG_COLUMNS, "REAC": _REAC_COLUMNS,
               "INDI": _INDI_COLUMNS, "OUTC": _OUTC_COLUMNS}
    for p, quarter in enumerate(quarters):
        q = series.period(p, quarter)
        folder = out / quarter.label
        folder.mkdir()
        for table, columns in series.render(q).items():
            _write_table(folder / f"{table}{quarter.faers_tag}.txt", headers[table], columns)
        if len(q["deleted"]):
            lines = "".join(f"{cid}$\r\n" for cid in q["deleted"].tolist())
            (folder / f"DELETE{quarter.faers_tag}.txt").write_bytes(lines.encode("latin-1"))
        reports[quarter.label] = len(q["rep_case"])
        case_counts[quarter.label] = q["n_cases"]
        followups[quarter.label] = q["n_follow"]
        deleted[quarter.label] = len(q["deleted"])
        if progress is not None:
            progress(p + 1, periods)
    return SynthSummary(out=out, periods=labels, seed=seed, seeded=seeded, reports=reports,
                        cases=case_counts, followups=followups, deleted=deleted,
                        signals=PLANTED_SIGNALS, knobs=knobs, profile=chosen.name)
