"""Synthetic longitudinal EHR diagnosis data in the MIMIC-III layout: the test bed of ClinSimRR.

Paper 003 (Bonomi, Gousheh and Fan, CIKM 2023) evaluates ClinSimRR on MIMIC-III diagnosis
sequences, protecting the sensitive conditions of 38 U.S.C. §7332 (alcohol and drug abuse, HIV,
sickle cell anemia; about 6% of its patients), and motivates its dependence graph by
non-sensitive codes that betray a sensitive one recorded later. :func:`synth_ehr` draws patients
with that structure; :func:`write_synth_ehr` writes them as MIMIC-III ``DIAGNOSES_ICD.csv`` and
``ADMISSIONS.csv`` that :func:`medanon.data.ehr.load_mimic` reads back to the same events. Nothing
in it comes from real records; every code is a real ICD-9-CM (v32) diagnosis code.

What the data models:

* admissions: 1-8 per patient (mostly 2-4; at least 2 for the alcohol, drug and HIV patients),
  stays of a few days (log-normal, median 4 days), gaps between a discharge and the next
  admission from days to years (log-normal, median 150 days, at most 2,500). ADMITTIME and
  DISCHTIME are ISO timestamps within the years 2100-2200, like MIMIC's shifted dates;
* codes: 3-15 per admission (more for frail patients). Chronic conditions are patient traits,
  correlated through a latent frailty and recorded in about 80% of the patient's admissions
  (hypertension 4019, hyperlipidemia 2724, CAD 41401, AFib 42731, diabetes 25000, CHF 4280,
  GERD 53081, CKD 5859, COPD 496, hypothyroidism 2449, depression 311, long-term anticoagulants
  V5861). The other codes are acute draws from a mixture over the ICD-9-CM chapters; each patient
  has its own chapter weights (Dirichlet around the global ones) and codes within a chapter have
  fixed weights, the common ones first (sepsis 0389, pneumonia 486, acute kidney failure 5849,
  acute respiratory failure 51881...). SEQ_NUM puts acute codes first more often than chronic ones;
* sensitive conditions (:data:`SENSITIVE_CODES`, §7332): about 6% of the patients have one:
  alcohol (2.6%: dependence 30390/30391/30300, else abuse 30500; withdrawal delirium 2910 in a
  quarter of them), drugs (1.8%: 30400/30470/30490, else abuse 30560/30590; 2920 sometimes),
  HIV (1.1%: 042, or V08) and sickle cell disease (0.5%: 28260/28262/28269, usually from the first
  admission). The condition first appears at an "onset" admission and recurs in 60% of the later
  ones. No other patient carries a code of a sensitive category;
* planted dependencies (:data:`PLANTED_DEPENDENCIES`): most alcohol, drug and HIV patients have a
  predictor code in the admission just before the onset, at most 280 days earlier (alcoholic
  liver disease 5711/5712, portal hypertension 5723 or acute pancreatitis 5770 before alcohol
  dependence; opioid poisoning 96500/96501/96509 or chronic hepatitis C 07054 before drug
  dependence; pneumocystis pneumonia 1363 or oral candidiasis 1120 before HIV). The predictor
  categories are otherwise rare (0.05-0.2% of the other patients, with non-alcoholic cirrhosis,
  acetaminophen poisoning, hepatitis B...), so δ(predictor, sensitive) of 003 (§3: the share of
  the patients with the predictor who have the sensitive code later, within ΔT = 300 days) is
  high.

The δ values are below the share of condition patients given a predictor because of the
background uses and because some condition patients get the other sensitive category of their
condition (305 abuse instead of 303 dependence, V08 instead of 042).

Everything is vectorised with numpy (46,000 patients, about 1.1 million code rows, take one to
two seconds); the same seed gives identical data, hence byte-identical files.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..._validation import check_choice, check_int
from ...errors import ValidationError
from ..ehr import CODE_LEVELS, EhrData, _assemble, _finish

__all__ = ["PLANTED_DEPENDENCIES", "SENSITIVE_CATEGORIES", "SENSITIVE_CODES", "synth_ehr",
           "write_synth_ehr"]

# (predictor category, sensitive category, approximate δ within 300 days) measured on 200,000
# generated patients; sampling noise moves them by a few points on small data sets.
PLANTED_DEPENDENCIES: list[tuple[str, str, float]] = [
    ("571", "303", 0.82),     # acute alcoholic hepatitis 5711 / alcoholic cirrhosis 5712
    ("572", "303", 0.74),     # portal hypertension 5723
    ("577", "303", 0.73),     # acute pancreatitis 5770
    ("965", "304", 0.76),     # poisoning by opium / heroin / other opiates 96500 96501 96509
    ("070", "304", 0.71),     # chronic hepatitis C 07054
    ("136", "042", 0.73),     # pneumocystosis 1363
    ("112", "042", 0.69),     # candidiasis of mouth 1120
]

# -- sensitive conditions (38 U.S.C. §7332) ------------------------------------------------------
# name -> (share of patients, P(planted predictor), onset codes with weights, companion code,
#          predictor codes with weights)
_CONDITIONS: dict[str, tuple[float, float, tuple[tuple[str, float], ...], str | None,
                             tuple[tuple[str, float], ...]]] = {
    "alcohol": (0.026, 0.85,
                (("30390", 0.45), ("30391", 0.2), ("30300", 0.25), ("30500", 0.1)), "2910",
                (("5711", 0.25), ("5712", 0.35), ("5723", 0.15), ("5770", 0.25))),
    "drug": (0.018, 0.8,
             (("30400", 0.4), ("30470", 0.2), ("30490", 0.28), ("30560", 0.07), ("30590", 0.05)),
             "2920",
             (("96500", 0.15), ("96501", 0.2), ("96509", 0.2), ("07054", 0.45))),
    "hiv": (0.011, 0.8, (("042", 0.8), ("V08", 0.2)), None,
            (("1363", 0.5), ("1120", 0.5))),
    "sickle": (0.005, 0.0, (("28260", 0.35), ("28262", 0.35), ("28269", 0.3)), None, ()),
}
_COMPANION_RATE = 0.25          # withdrawal delirium 2910 / drug withdrawal 2920 at the onset
_RECUR_RATE = 0.6               # the sensitive code in each admission after the onset
_PREDICTOR_RECUR_RATE = 0.4     # the predictor again at the onset admission
_SICKLE_FIRST = 0.7             # sickle cell disease recorded from the first admission
SENSITIVE_CODES: tuple[str, ...] = tuple(sorted(
    {c for _s, _q, onset, comp, _p in _CONDITIONS.values() for c, _w in onset}
    | {comp for _s, _q, _o, comp, _p in _CONDITIONS.values() if comp}))
SENSITIVE_CATEGORIES: tuple[str, ...] = tuple(sorted({c[:3] for c in SENSITIVE_CODES}))

# Background use of the predictor categories by the other patients: (category, share, codes).
_PREDICTOR_BACKGROUND: tuple[tuple[str, float, tuple[str, ...]], ...] = (
    ("571", 0.0015, ("5715", "5718", "57140")),     # non-alcoholic cirrhosis, fatty liver...
    ("572", 0.0008, ("5722", "5728", "5723")),
    ("577", 0.0015, ("5770", "5771")),
    ("965", 0.0012, ("9654", "96509")),             # acetaminophen poisoning, opiates
    ("070", 0.0015, ("07032", "07070", "07054")),   # hepatitis B, hepatitis C
    ("136", 0.0003, ("1363",)),
    ("112", 0.0008, ("1121", "1122", "1125", "1120")),
)

# -- chronic conditions: code, base prevalence -------------------------------------------------
_CHRONIC: tuple[tuple[str, float], ...] = (
    ("4019", 0.34), ("2724", 0.22), ("41401", 0.17), ("42731", 0.17), ("25000", 0.15),
    ("4280", 0.13), ("53081", 0.10), ("5859", 0.07), ("496", 0.06), ("2449", 0.07),
    ("311", 0.06), ("V5861", 0.07),
)
_CHRONIC_FRAILTY = 0.9          # logit slope of chronic prevalence on the latent frailty
_CHRONIC_RECORDED = 0.8         # share of a chronic patient's admissions that record it

# -- acute codes: chapter -> (global weight, ((code, weight), ...)) -----------------------------
_CHAPTERS: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] = (
    ("infectious", 0.07, (("0389", 10), ("00845", 4), ("0417", 2), ("04111", 2), ("04104", 1.5),
                          ("03842", 1.5), ("0413", 1.5), ("03811", 1.5), ("0088", 1),
                          ("0539", 0.8), ("1179", 0.5))),
    ("neoplasms", 0.06, (("1985", 3), ("1977", 3), ("1970", 2.5), ("1983", 2), ("1629", 3),
                         ("1628", 1), ("185", 2), ("1749", 1.5), ("1539", 1.5), ("1579", 1),
                         ("1570", 0.5), ("1550", 1), ("20300", 1), ("20280", 1), ("1890", 1),
                         ("1541", 1), ("2113", 1), ("1991", 1))),
    ("endocrine", 0.12, (("2761", 5), ("2762", 5), ("2768", 3), ("2767", 3), ("27651", 2.5),
                         ("2720", 3), ("2760", 2), ("27800", 2), ("27801", 1.5), ("2639", 1.5),
                         ("2749", 1.5), ("2763", 1), ("2752", 1), ("27541", 1), ("25060", 1),
                         ("25040", 1), ("25001", 1))),
    ("blood", 0.08, (("2851", 6), ("2859", 6), ("2875", 4), ("28529", 2), ("2867", 2),
                     ("28521", 1.5), ("28860", 1.5), ("2809", 1.5), ("2800", 1), ("2866", 1))),
    ("mental", 0.05, (("30000", 4), ("2930", 3), ("29410", 1.5), ("2948", 1.5), ("2900", 1),
                      ("29620", 1), ("29680", 1), ("2989", 1), ("29590", 0.8), ("30981", 0.8),
                      ("3089", 0.5))),
    ("nervous", 0.05, (("34982", 2), ("3572", 2), ("34590", 2), ("32723", 2), ("3481", 1.5),
                       ("3485", 1.5), ("34830", 1.5), ("3310", 1.5), ("3320", 1.5), ("3484", 1),
                       ("33829", 1), ("3659", 0.8), ("3899", 0.8))),
    ("circulatory", 0.18, (("41071", 4), ("4241", 3), ("4589", 3), ("40390", 3), ("412", 2.5),
                           ("4240", 2), ("42832", 2), ("42833", 2), ("42823", 2), ("4275", 2),
                           ("4271", 2), ("4254", 2), ("4439", 2), ("43491", 2), ("431", 2),
                           ("42789", 1.5), ("4111", 1.5), ("4168", 1.5), ("45829", 1.5),
                           ("40391", 1.5), ("41519", 1.5), ("430", 1.5), ("45340", 1),
                           ("4160", 1), ("4321", 1), ("4510", 0.5), ("4414", 0.5))),
    ("respiratory", 0.10, (("486", 8), ("51881", 8), ("5070", 4), ("5119", 3), ("49121", 2),
                           ("5180", 2), ("49390", 2), ("4820", 1), ("48241", 1), ("51851", 1),
                           ("5184", 1), ("4928", 1), ("4660", 1), ("5121", 0.8))),
    ("digestive", 0.07, (("5789", 3), ("5781", 1.5), ("5609", 1.5), ("5601", 1.5),
                         ("56210", 1.5), ("5533", 1.5), ("56400", 1.5), ("5589", 1.5),
                         ("5750", 1), ("57400", 1), ("5693", 1), ("5680", 0.8), ("5679", 0.8),
                         ("5409", 0.5))),
    ("genitourinary", 0.07, (("5849", 8), ("5990", 6), ("5856", 2), ("5845", 2), ("60000", 2),
                             ("5853", 1.5), ("5854", 1), ("5920", 1), ("591", 1),
                             ("59970", 1))),
    ("skin", 0.02, (("6826", 2), ("70703", 1.5), ("6827", 1), ("6829", 1), ("7078", 1))),
    ("musculoskeletal", 0.02, (("71590", 2), ("73300", 2), ("7140", 1.5), ("7242", 1.5),
                               ("72888", 1.5), ("7100", 0.5))),
    ("congenital", 0.005, (("7455", 1), ("7464", 0.6))),
    ("symptoms", 0.05, (("78552", 4), ("78551", 2), ("78039", 2), ("7802", 2), ("7907", 2),
                        ("78097", 1.5), ("78820", 1.5), ("78060", 1.5), ("78650", 1.5),
                        ("7994", 1), ("78791", 1), ("78959", 1), ("7991", 1))),
    ("injury", 0.06, (("99592", 4), ("99591", 2), ("9971", 2), ("99811", 1.5), ("99859", 1.5),
                      ("99662", 1.5), ("99731", 1), ("82021", 1), ("85220", 1), ("99702", 1),
                      ("80701", 1), ("99812", 1), ("9584", 0.5))),
    ("supplementary", 0.07, (("V4581", 3), ("V1582", 3), ("V5867", 3), ("V4582", 2),
                             ("V4986", 2), ("V4501", 1.5), ("V5866", 1.5), ("V1046", 1),
                             ("V1251", 1), ("V4611", 1), ("V1254", 1), ("V433", 1),
                             ("V1005", 1))),
    ("external", 0.03, (("E8798", 2), ("E8788", 1.5), ("E8497", 1.5), ("E8859", 1.5),
                        ("E9342", 1.5), ("E8490", 1), ("E8889", 1), ("E9320", 1),
                        ("E8120", 0.5), ("E9352", 0.5))),
)
_CHAPTER_CONCENTRATION = 25.0   # Dirichlet concentration of a patient's chapter weights

# -- admissions and stays ----------------------------------------------------------------------
_ADMISSION_COUNT_P = (0.14, 0.30, 0.22, 0.13, 0.09, 0.06, 0.04, 0.02)    # 1..8 admissions
_LOS_MEDIAN, _LOS_SIGMA, _LOS_RANGE = 4.0, 0.7, (0.2, 40.0)              # days
_GAP_MEDIAN, _GAP_SIGMA, _GAP_RANGE = 150.0, 1.5, (1.0, 2500.0)          # days
_ONSET_GAP = (1.0, 250.0)       # gap (days) between the predictor's discharge and the onset
_ONSET_LOS_MAX = 30.0           # stay of the predictor admission: onset within 280 days
_CODES_BASE, _CODES_MEAN, _CODES_RANGE = 3, 4.5, (3, 15)
_EXTRA_DRAWS = 5                # acute draws beyond the target, so duplicates can be skipped
_ADMISSION_TYPES = ("EMERGENCY", "ELECTIVE", "URGENT")
_ADMISSION_TYPE_P = (0.8, 0.15, 0.05)
_EPOCH = np.datetime64("2100-01-01T00:00", "m")
_HORIZON_MINUTES = int((np.datetime64("2199-12-31T23:59", "m") - _EPOCH).astype(np.int64))
_MINUTES_PER_DAY = 1440


@dataclass(frozen=True)
class _Vocabulary:
    codes: np.ndarray                 # every code the generator can emit
    index: dict[str, int]
    chapter_weight: np.ndarray        # (C,) global chapter weights
    acute_cum: np.ndarray             # cumulative weights: chapter c spans (c, c + 1]
    acute_code: np.ndarray            # vocabulary index of each acute code, in that order
    chronic: np.ndarray               # vocabulary index of each chronic code
    chronic_base: np.ndarray          # base prevalence of each chronic code


def _vocabulary() -> _Vocabulary:
    codes: list[str] = []
    index: dict[str, int] = {}

    def add(code: str) -> int:
        if code not in index:
            index[code] = len(codes)
            codes.append(code)
        return index[code]

    cum: list[float] = []
    acute: list[int] = []
    weights = []
    for c, (_name, weight, entries) in enumerate(_CHAPTERS):
        weights.append(weight)
        w = np.asarray([e[1] for e in entries], dtype=float)
        cum.extend((c + np.cumsum(w) / w.sum()).tolist())
        acute.extend(add(code) for code, _w in entries)
    cum[-1] = float(len(_CHAPTERS))
    chronic = [add(code) for code, _p in _CHRONIC]
    for _s, _q, onset, companion, predictors in _CONDITIONS.values():
        for code, _w in (*onset, *predictors):
            add(code)
        if companion:
            add(companion)
    for _cat, _rate, pool in _PREDICTOR_BACKGROUND:
        for code in pool:
            add(code)
    chapter_weight = np.asarray(weights, dtype=float)
    return _Vocabulary(codes=np.asarray(codes, dtype=object), index=index,
                       chapter_weight=chapter_weight / chapter_weight.sum(),
                       acute_cum=np.asarray(cum, dtype=float),
                       acute_code=np.asarray(acute, dtype=np.int64),
                       chronic=np.asarray(chronic, dtype=np.int64),
                       chronic_base=np.asarray([p for _c, p in _CHRONIC], dtype=float))


_VOCABULARY = _vocabulary()


@dataclass(frozen=True)
class _Draw:
    subject: np.ndarray        # (n,) SUBJECT_ID, increasing
    adm_patient: np.ndarray    # (A,) patient index of each admission, admissions in time order
    hadm: np.ndarray           # (A,) HADM_ID
    admit: np.ndarray          # (A,) ADMITTIME in minutes since 2100-01-01
    los: np.ndarray            # (A,) stay in minutes
    adm_type: np.ndarray       # (A,) index into _ADMISSION_TYPES
    dx_adm: np.ndarray         # (E,) admission index of each diagnosis, sorted with SEQ_NUM
    dx_seq: np.ndarray         # (E,) SEQ_NUM (1-based)
    dx_code: np.ndarray        # (E,) vocabulary index


def _offsets(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start of each group, 0-based index within the group of each element)."""
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
    return starts, within


def _runs(sorted_keys: np.ndarray) -> np.ndarray:
    """0-based index of each element within its run of equal (sorted) keys."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(len(sorted_keys), dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    idx = np.arange(len(sorted_keys), dtype=np.int64)
    return idx - np.maximum.accumulate(np.where(start, idx, 0))


def _choose(rng: np.random.Generator, entries: tuple[tuple[str, float], ...], size: int
            ) -> np.ndarray:
    """``size`` vocabulary indices drawn from weighted ``(code, weight)`` entries."""
    w = np.asarray([e[1] for e in entries], dtype=float)
    idx = np.asarray([_VOCABULARY.index[e[0]] for e in entries], dtype=np.int64)
    return idx[rng.choice(len(entries), size=size, p=w / w.sum())]


def _draw(n: int, seed: int) -> _Draw:
    rng = np.random.default_rng(seed)
    voc = _VOCABULARY
    frailty = rng.standard_normal(n)

    # -- conditions and admission counts -----------------------------------------------------
    names = list(_CONDITIONS)
    shares = np.asarray([_CONDITIONS[k][0] for k in names])
    condition = rng.choice(len(names) + 1, size=n, p=np.concatenate(([1 - shares.sum()], shares)))
    condition -= 1                                        # -1: none, else index into names
    n_adm = rng.choice(len(_ADMISSION_COUNT_P), size=n, p=_ADMISSION_COUNT_P) + 1
    needs_two = np.isin(condition, [names.index(k) for k in names if _CONDITIONS[k][1] > 0])
    n_adm = np.where(needs_two, np.maximum(n_adm, 2), n_adm)
    first, adm_index = _offsets(n_adm)
    adm_patient = np.repeat(np.arange(n), n_adm)
    n_total = int(n_adm.sum())

    has_condition = condition >= 0
    q = np.asarray([_CONDITIONS[k][1] for k in names])
    planted = has_condition & (rng.random(n) < q[np.maximum(condition, 0)])
    onset = np.where(planted, 1 + np.floor(rng.random(n) * (n_adm - 1)),
                     np.floor(rng.random(n) * n_adm)).astype(np.int64)
    sickle = condition == names.index("sickle")
    onset = np.where(sickle & (rng.random(n) < _SICKLE_FIRST), 0, onset)

    # -- times ---------------------------------------------------------------------------------
    los_days = np.clip(np.exp(np.log(_LOS_MEDIAN) + _LOS_SIGMA * rng.standard_normal(n_total)),
                       *_LOS_RANGE)
    gap_days = np.clip(np.exp(np.log(_GAP_MEDIAN) + _GAP_SIGMA * rng.standard_normal(n_total)),
                       *_GAP_RANGE)
    before_onset = first[planted] + onset[planted] - 1            # the predictor's admission
    los_days[before_onset] = np.minimum(los_days[before_onset], _ONSET_LOS_MAX)
    gap_days[before_onset] = rng.uniform(*_ONSET_GAP, size=len(before_onset))
    los = np.rint(los_days * _MINUTES_PER_DAY).astype(np.int64)
    gap = np.rint(gap_days * _MINUTES_PER_DAY).astype(np.int64)
    last = first + n_adm - 1
    step = los + gap
    step[last] = 0
    cum = np.cumsum(step) - step
    offset = cum - np.repeat(cum[first], n_adm)                   # minutes since first admission
    span = offset[last] + los[last]
    start = np.floor(rng.random(n) * np.maximum(_HORIZON_MINUTES - span, 1)).astype(np.int64)
    admit = np.repeat(start, n_adm) + offset

    # -- candidate codes: (admission, vocabulary index, priority) --------------------------------
    parts_adm: list[np.ndarray] = []
    parts_code: list[np.ndarray] = []
    parts_priority: list[np.ndarray] = []
    parts_lead: list[np.ndarray] = []               # SEQ_NUM sort key offset (lower: earlier)

    def emit(adm: np.ndarray, code: np.ndarray, priority: int, lead: float) -> None:
        parts_adm.append(np.asarray(adm, dtype=np.int64))
        parts_code.append(np.asarray(code, dtype=np.int64))
        parts_priority.append(np.full(len(adm), priority, dtype=np.int64))
        parts_lead.append(np.full(len(adm), lead))

    # sensitive codes: onset, companion, recurrences; planted predictors
    for c, key in enumerate(names):
        _share, _q, onset_codes, companion, predictors = _CONDITIONS[key]
        who = np.flatnonzero(condition == c)
        if len(who) == 0:
            continue
        code = _choose(rng, onset_codes, len(who))
        at = first[who] + onset[who]
        emit(at, code, 0, 0.1)
        if companion:
            with_companion = rng.random(len(who)) < _COMPANION_RATE
            emit(at[with_companion], np.full(int(with_companion.sum()), voc.index[companion]),
                 0, 0.2)
        after = n_adm[who] - onset[who] - 1
        rep_patient = np.repeat(np.arange(len(who)), after)
        _s, rep_within = _offsets(after)
        rep_adm = at[rep_patient] + 1 + rep_within
        recur = rng.random(len(rep_adm)) < _RECUR_RATE
        emit(rep_adm[recur], code[rep_patient[recur]], 0, 0.3)
        if predictors:
            with_pred = planted[who]
            pred_code = _choose(rng, predictors, int(with_pred.sum()))
            emit(at[with_pred] - 1, pred_code, 0, 0.0)
            again = rng.random(len(pred_code)) < _PREDICTOR_RECUR_RATE
            emit(at[with_pred][again], pred_code[again], 0, 0.3)

    # background use of the predictor categories by the other patients
    others = np.flatnonzero(~has_condition)
    for _cat, rate, pool in _PREDICTOR_BACKGROUND:
        who = others[rng.random(len(others)) < rate]
        at = first[who] + np.floor(rng.random(len(who)) * n_adm[who]).astype(np.int64)
        code = np.asarray([voc.index[p] for p in pool])[rng.integers(0, len(pool), len(who))]
        emit(at, code, 0, 0.2)

    # chronic conditions: patient traits, recorded in most admissions
    logit = np.log(voc.chronic_base / (1 - voc.chronic_base))
    p_chronic = 1.0 / (1.0 + np.exp(-(logit[None, :] + _CHRONIC_FRAILTY * frailty[:, None])))
    chronic = rng.random(p_chronic.shape) < p_chronic
    recorded = chronic[adm_patient] & (rng.random((n_total, len(voc.chronic))) < _CHRONIC_RECORDED)
    rec_adm, rec_which = np.nonzero(recorded)
    emit(rec_adm, voc.chronic[rec_which], 1, 0.4)

    # acute codes: a patient-specific chapter mixture
    n_codes = np.clip(_CODES_BASE + rng.poisson(_CODES_MEAN * np.exp(0.25 * frailty[adm_patient])),
                      *_CODES_RANGE)
    draws = n_codes + _EXTRA_DRAWS
    draw_adm = np.repeat(np.arange(n_total), draws)
    alpha = _CHAPTER_CONCENTRATION * voc.chapter_weight
    chapter_w = rng.gamma(alpha[None, :], size=(n, len(alpha)))
    chapter_cdf = np.cumsum(chapter_w, axis=1)
    chapter_cdf /= chapter_cdf[:, -1:]
    chapter_cdf += np.arange(n)[:, None]              # patient p's row spans (p, p + 1]
    chapter_cdf[:, -1] = np.arange(1, n + 1)
    u = adm_patient[draw_adm] + rng.random(len(draw_adm))
    cell = np.searchsorted(chapter_cdf.ravel(), u, side="left")
    chapter = np.minimum(cell, n * len(alpha) - 1) % len(alpha)
    pos = np.searchsorted(voc.acute_cum, chapter + rng.random(len(draw_adm)), side="left")
    emit(draw_adm, voc.acute_code[np.minimum(pos, len(voc.acute_code) - 1)], 2, 0.0)

    # -- keep distinct codes, n_codes per admission (all forced ones), then order them ---------
    # The parts were emitted in priority order (forced, chronic, acute), each of the last two
    # sorted by admission, so array order is the preference order: no global sort is needed.
    cand_adm = np.concatenate(parts_adm)
    cand_code = np.concatenate(parts_code)
    cand_priority = np.concatenate(parts_priority)
    cand_lead = np.concatenate(parts_lead)
    first_seen = ~pd.Series(cand_adm * len(voc.codes) + cand_code).duplicated().to_numpy()
    keep = first_seen & (cand_priority == 0)
    used = np.bincount(cand_adm[keep], minlength=n_total)
    for priority in (1, 2):
        part = np.flatnonzero(first_seen & (cand_priority == priority))
        part_adm = cand_adm[part]
        ok = used[part_adm] + _runs(part_adm) < n_codes[part_adm]
        keep[part[ok]] = True
        used += np.bincount(part_adm[ok], minlength=n_total)
    cand_adm, cand_code, cand_lead = cand_adm[keep], cand_code[keep], cand_lead[keep]
    seq_key = cand_adm + (cand_lead + rng.random(len(cand_adm))) / 1.5   # within [adm, adm + 1)
    order = np.argsort(seq_key, kind="stable")
    dx_adm, dx_code = cand_adm[order], cand_code[order]
    _s, seq = _offsets(np.bincount(dx_adm, minlength=n_total))

    # -- identifiers -----------------------------------------------------------------------------
    subject = 10_000 + np.cumsum(rng.integers(1, 4, size=n))
    id_pool = max(900_000, 4 * n_total)
    hadm = 100_000 + rng.choice(id_pool, size=n_total, replace=False)
    adm_type = rng.choice(len(_ADMISSION_TYPES), size=n_total, p=_ADMISSION_TYPE_P)
    return _Draw(subject=subject, adm_patient=adm_patient, hadm=hadm, admit=admit, los=los,
                 adm_type=adm_type, dx_adm=dx_adm, dx_seq=seq + 1, dx_code=dx_code)


def _check(owner: str, patients: object, seed: object) -> tuple[int, int]:
    return (check_int(patients, name="patients", owner=owner, minimum=1),
            check_int(seed, name="seed", owner=owner, minimum=0))


# -- public API ----------------------------------------------------------------------------------
def synth_ehr(patients: int = 2000, *, seed: int, code_level: str = "category") -> EhrData:
    """Draw synthetic diagnosis sequences (see the module docstring for the model).

    The result equals what :func:`medanon.data.ehr.load_mimic` returns for the files that
    :func:`write_synth_ehr` writes with the same arguments (same events, same digest).

    Args:
        patients: number of patients (>= 1).
        seed: random seed (>= 0); the same seed gives the same data.
        code_level: ``"category"`` (3-character ICD-9 categories, as 003) or ``"full"``.

    Raises:
        ValidationError: an argument out of range.
    """
    owner = "synth_ehr"
    patients, seed = _check(owner, patients, seed)
    code_level = check_choice(code_level, name="code_level", owner=owner, choices=CODE_LEVELS)
    d = _draw(patients, seed)
    seconds = ((d.admit + int(_EPOCH.astype(np.int64))) * 60).astype(float)
    dropped: dict[str, int] = {}
    events = _assemble(
        patient=(d.adm_patient[d.dx_adm], d.subject.astype(str).astype(object)),
        admission=(d.dx_adm, d.hadm.astype(str).astype(object)),
        code=(d.dx_code, _VOCABULARY.codes),
        adm_key=(d.dx_adm + 1).astype(float), adm_seconds=seconds[d.dx_adm],
        within_keys=(d.dx_seq.astype(float),), code_level=code_level, dropped=dropped)
    source = {"format": "synthetic", "generator": "medanon.data.synth.ehr.synth_ehr",
              "patients": patients, "seed": seed, "rows_read": int(len(d.dx_adm)),
              "admission_order": "ADMITTIME, then ADMISSIONS.ROW_ID, then HADM_ID",
              "dates": "synthetic ADMITTIME (years 2100-2200): time in days",
              "rows_dropped": dropped}
    return _finish(events, code_level, True, source)


def _timestamps(minutes: np.ndarray) -> np.ndarray:
    stamps = np.datetime_as_string(_EPOCH + minutes.astype("timedelta64[m]"), unit="s")
    return np.char.replace(stamps.astype(str), "T", " ").astype(object)


def write_synth_ehr(out_dir: str | Path, patients: int = 2000, *, seed: int) -> dict[str, Path]:
    """Write synthetic MIMIC-III ``DIAGNOSES_ICD.csv`` and ``ADMISSIONS.csv`` into ``out_dir``.

    DIAGNOSES_ICD has ROW_ID, SUBJECT_ID, HADM_ID, SEQ_NUM, ICD9_CODE (full 3-5 character
    ICD-9-CM codes without a dot); ADMISSIONS has ROW_ID, SUBJECT_ID, HADM_ID, ADMITTIME,
    DISCHTIME (``YYYY-MM-DD HH:MM:SS`` within 2100-2200) and ADMISSION_TYPE. ROW_IDs follow
    (SUBJECT_ID, ADMITTIME, SEQ_NUM). ``out_dir`` is created when missing; existing files of
    these names are replaced. Each file is written to a temporary name first, then renamed.

    Args:
        out_dir: the output folder.
        patients: number of patients (>= 1).
        seed: random seed (>= 0); the same seed gives byte-identical files.

    Returns:
        ``{"diagnoses": path, "admissions": path}``.

    Raises:
        ValidationError: an argument out of range, or ``out_dir`` is an existing file.
    """
    owner = "write_synth_ehr"
    patients, seed = _check(owner, patients, seed)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValidationError(f"The 'out_dir' parameter of {owner} must be a folder; got "
                              f"{str(out_dir)!r}, which is a file.")
    out_dir.mkdir(parents=True, exist_ok=True)
    d = _draw(patients, seed)
    n_adm = len(d.hadm)
    admissions = pd.DataFrame({
        "ROW_ID": np.arange(1, n_adm + 1),
        "SUBJECT_ID": d.subject[d.adm_patient],
        "HADM_ID": d.hadm,
        "ADMITTIME": _timestamps(d.admit),
        "DISCHTIME": _timestamps(d.admit + d.los),
        "ADMISSION_TYPE": np.asarray(_ADMISSION_TYPES, dtype=object)[d.adm_type],
    })
    diagnoses = pd.DataFrame({
        "ROW_ID": np.arange(1, len(d.dx_adm) + 1),
        "SUBJECT_ID": d.subject[d.adm_patient[d.dx_adm]],
        "HADM_ID": d.hadm[d.dx_adm],
        "SEQ_NUM": d.dx_seq,
        "ICD9_CODE": _VOCABULARY.codes[d.dx_code],
    })
    paths = {"diagnoses": out_dir / "DIAGNOSES_ICD.csv", "admissions": out_dir / "ADMISSIONS.csv"}
    frames = {"diagnoses": diagnoses, "admissions": admissions}
    tag = f"{os.getpid()}.{secrets.token_hex(4)}.tmp"
    temporaries: list[Path] = []
    try:
        for key, path in paths.items():
            tmp = out_dir / f".{path.name}.{tag}"
            temporaries.append(tmp)
            with tmp.open("x", encoding="utf-8", newline="") as fh:
                frames[key].to_csv(fh, index=False, lineterminator="\n")
        for path in paths.values():
            os.replace(out_dir / f".{path.name}.{tag}", path)
    except BaseException:
        for tmp in temporaries:
            tmp.unlink(missing_ok=True)
        raise
    return paths
