"""A synthetic hospital-patient table: the embedded default data set of IPA (paper 004).

Lee and Chung (BMC Med Inform Decis Mak 2020) evaluated IPA on a national patient sample: one
record per patient with age, sex, length of stay, surgery status, region of residence and the
main diagnosis. :func:`synth_patient_table` draws a table with the same columns and the same kind
of structure, so that the generalization lattice, the information loss and the utility queries
Q1-Q4 (stroke patients and their mean stay per 5-year age group, for men and for women without
surgery) behave as on the real data. Nothing in it comes from real records.

What the data models:

* age (0-99): the age profile of hospital patients, bimodal-ish: many newborns and infants, a
  trough at 10-15, then rising to a peak at 70-79 and falling off after 85;
* sex given age: boys slightly more frequent among children, women among patients aged 20-40
  (childbirth) and among the very old;
* diagnosis given age and sex: a little over 300 ICD-10-like codes (``"I63.9"``, ``"I64"``...) in
  clinical groups. Each group has an age curve and a male/female ratio (strokes and cardiac
  disease rise steeply with age, pediatric infections and respiratory infections fall with it,
  appendicitis peaks in the young, fractures are bimodal); within a group the codes have a Zipf
  profile (the first listed is the most frequent), so the whole list is Zipf-like. Hard rules:
  pregnancy and childbirth (chapter O) only for women aged 15-49, perinatal codes (chapter P)
  and ``Z38.0`` only at age 0, prostate and other male-organ codes only for men, female-organ
  codes only for women;
* surgery given the diagnosis: each group has a surgery probability, with code exceptions
  (fractures, appendicitis, cataract and caesarean sections mostly ``Y``, strokes about 10%,
  medical conditions nearly never), somewhat lower at 85+;
* length of stay: log-normal around a median that depends on the diagnosis (stroke, psychiatric,
  hip fracture and preterm-birth stays are long), longer for older and for surgical patients;
  values above 400 days are redrawn between 250 and 400, so most stays are 1-10 days, some 30+,
  a few over 100 and a handful near 300-400 in a large table;
* region: 16 codes (``"11"`` the capital, ``"21"``-``"26"`` metropolitan cities, ``"31"``-``"39"``
  provinces) with unequal weights, the capital the largest; the capital is a bit younger and
  the provinces a bit older.

Everything is vectorised with numpy; the same seed gives an identical frame, and therefore a
byte-identical CSV. :func:`synth_patient_schema_toml` gives the matching table schema (dimension
hierarchies, the public diagnosis list and the paper's queries Q1-Q4), and
:func:`write_synth_table` writes both files.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from ..._validation import check_int
from ...errors import ValidationError

__all__ = ["COLUMNS", "REGIONS", "diagnosis_codes", "synth_patient_schema_toml",
           "synth_patient_table", "write_synth_table"]

COLUMNS = ("age", "sex", "los", "surgery", "region", "diagnosis")
MAX_AGE = 99
MAX_LOS = 400
ZIPF_EXPONENT = 1.0             # within-group rank profile of the codes
LOS_SIGMA = 0.7                 # log-scale spread of the length of stay
LOS_SURGERY = 0.45              # log-scale lengthening of a surgical stay
LOS_AGE = 0.01                  # log-scale lengthening per year of age above 50
LOS_REDRAW = (250, 400)         # where stays longer than MAX_LOS are redrawn (inclusive)
OLD_SURGERY_FACTOR = 0.8        # surgery probability multiplier at age >= 85

# -- region -------------------------------------------------------------------------------------
# code -> (level-1 area, level-2 area, relative population weight, age tilt)
_REGION_TABLE = {
    "11": ("Capital", "Capital", 21.0, -0.45),
    "21": ("Metropolitan", "Non-capital", 6.8, 0.05),
    "22": ("Metropolitan", "Non-capital", 4.8, 0.0),
    "23": ("Metropolitan", "Non-capital", 5.6, -0.15),
    "24": ("Metropolitan", "Non-capital", 2.9, -0.1),
    "25": ("Metropolitan", "Non-capital", 3.0, -0.1),
    "26": ("Metropolitan", "Non-capital", 2.3, -0.2),
    "31": ("Provinces", "Non-capital", 19.5, -0.2),
    "32": ("Provinces", "Non-capital", 3.1, 0.35),
    "33": ("Provinces", "Non-capital", 3.2, 0.3),
    "34": ("Provinces", "Non-capital", 4.2, 0.25),
    "35": ("Provinces", "Non-capital", 3.7, 0.4),
    "36": ("Provinces", "Non-capital", 3.8, 0.5),
    "37": ("Provinces", "Non-capital", 5.4, 0.4),
    "38": ("Provinces", "Non-capital", 6.6, 0.15),
    "39": ("Provinces", "Non-capital", 1.3, 0.1),
}
REGIONS: tuple[str, ...] = tuple(_REGION_TABLE)

# -- age and sex ---------------------------------------------------------------------------------
# relative number of patients of each age (piecewise linear between the knots)
_AGE_KNOTS = np.array([0, 1, 3, 7, 12, 17, 22, 27, 32, 37, 42, 47, 52, 57, 62, 67, 72, 77, 82,
                       87, 92, 99], dtype=float)
_AGE_WEIGHTS = np.array([4.0, 2.2, 1.8, 0.8, 0.45, 0.5, 0.7, 0.9, 1.1, 1.0, 1.05, 1.15, 1.25,
                         1.3, 1.35, 1.45, 1.6, 1.6, 1.15, 0.6, 0.22, 0.04])
# P(male | age)
_MALE_KNOTS = np.array([0, 14, 20, 28, 38, 50, 65, 80, 99], dtype=float)
_MALE_SHARE = np.array([0.54, 0.55, 0.44, 0.36, 0.40, 0.50, 0.51, 0.42, 0.30])


# -- age curves of the diagnosis groups ------------------------------------------------------------
def _decay(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.exp(-a / scale)


def _rise(mid: float, scale: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: 1.0 / (1.0 + np.exp(-(a - mid) / scale))


def _bump(mu: float, sd: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.exp(-0.5 * ((a - mu) / sd) ** 2)


def _mix(*parts: tuple[float, Callable[[np.ndarray], np.ndarray] | None]
         ) -> Callable[[np.ndarray], np.ndarray]:
    """Sum of weighted curves; a ``None`` curve is a constant."""
    def curve(a: np.ndarray) -> np.ndarray:
        total = np.zeros_like(a, dtype=float)
        for weight, part in parts:
            total = total + weight * (1.0 if part is None else part(a))
        return total
    return curve


@dataclass(frozen=True)
class _Group:
    """Codes sharing an age curve, a sex ratio, a surgery probability and a typical stay.

    ``codes`` lists the codes most frequent first; a ``/R`` suffix restricts a code to a
    population: ``M`` men, ``F`` women, ``FR`` women aged 15-49, ``N`` newborns (age 0).
    """

    name: str
    weight: float
    curve: Callable[[np.ndarray], np.ndarray]
    male: float                       # rate of men relative to women
    surgery: float                    # default P(surgery)
    los: float                        # default median stay (days)
    codes: str
    only: str = ""                    # restriction for every code of the group
    surgery_of: dict[str, float] = field(default_factory=dict)
    los_of: dict[str, float] = field(default_factory=dict)
    male_of: dict[str, float] = field(default_factory=dict)   # extra male/female ratio per code


_GROUPS: tuple[_Group, ...] = (
    _Group("enteric infections", 3.0, _mix((1.0, _decay(4)), (0.05, None)), 1.1, 0.0, 3,
           "A09.9 A08.0 A09.0 A04.9 A08.4 A02.0"),
    _Group("pediatric infections", 2.2, _mix((1.0, _decay(5)), (0.02, None)), 1.15, 0.0, 4,
           "B34.9 B08.4 R56.0 B01.9 A87.9 A38 B26.9"),
    _Group("adult infections", 0.35, _mix((1.0, _rise(62, 12)), (0.08, None)), 1.1, 0.02, 9,
           "A41.9 B02.9 A46 A49.9 A15.0 B18.1 A40.9",
           los_of={"A15.0": 14, "B02.9": 6, "A46": 7}),
    _Group("pediatric respiratory", 4.5, _mix((1.0, _decay(4)), (0.03, None)), 1.15, 0.0, 4,
           "J18.0 J06.9 J21.9 J20.9 J03.9 J12.1 J02.9 J05.0"),
    _Group("lower respiratory", 0.9, _mix((1.0, _rise(66, 10)), (0.04, None)), 1.35, 0.03, 9,
           "J18.9 J44.1 J69.0 J15.9 J44.9 J84.1 J96.0",
           los_of={"J69.0": 14, "J96.0": 12, "J84.1": 12}),
    _Group("other respiratory", 0.25, _mix((0.5, None), (0.6, _decay(15)), (0.3, _bump(45, 18))),
           1.1, 0.05, 4, "J45.9 J32.9 J34.2 J35.3 J93.1 J35.0 J10.1 J33.9",
           surgery_of={"J34.2": 0.95, "J35.3": 0.9, "J35.0": 0.85, "J32.9": 0.6, "J33.9": 0.9,
                       "J93.1": 0.5},
           male_of={"J93.1": 4.0, "J34.2": 2.0}),
    _Group("stroke", 0.9, _mix((1.0, _rise(73, 7)), (0.004, None)), 1.2, 0.06, 14,
           "I63.9 I63.5 I61.9 I63.4 I63.3 I64 I69.3 I60.9 I61.0 I62.0 I65.2 I67.9 I69.4",
           surgery_of={"I60.9": 0.5, "I62.0": 0.55, "I61.9": 0.15, "I61.0": 0.15, "I65.2": 0.25},
           los_of={"I69.3": 30, "I69.4": 30, "I60.9": 18, "I65.2": 6, "I67.9": 8}),
    _Group("cardiac", 0.6, _mix((1.0, _rise(64, 9)), (0.005, None)), 1.45, 0.05, 6,
           "I20.9 I21.9 I50.9 I48.9 I25.1 I10 I20.0 I21.4 I35.0 I44.2",
           surgery_of={"I20.0": 0.35, "I20.9": 0.2, "I21.9": 0.4, "I21.4": 0.4, "I25.1": 0.3,
                       "I44.2": 0.8, "I35.0": 0.35, "I10": 0.0, "I50.9": 0.02},
           los_of={"I50.9": 10, "I10": 4, "I20.9": 4},
           male_of={"I10": 0.8}),
    _Group("vascular", 0.12, _mix((1.0, _rise(56, 12)), (0.05, None)), 1.0, 0.4, 6,
           "I83.9 I80.2 I70.2 I71.4 I74.3 I73.9",
           surgery_of={"I83.9": 0.9, "I71.4": 0.6, "I80.2": 0.05},
           male_of={"I83.9": 0.5, "I71.4": 3.0, "I70.2": 2.0}),
    _Group("malignant neoplasms", 0.75, _mix((1.0, _rise(58, 10)), (0.01, None)), 1.2, 0.3, 9,
           "C16.9 C34.9 C18.9 C22.0 C50.9/F C73 C61/M C20 C25.9 C67.9 C15.9 C56/F C53.9/F "
           "C92.0 C90.0 C64",
           surgery_of={"C50.9": 0.7, "C73": 0.9, "C16.9": 0.45, "C18.9": 0.55, "C20": 0.5,
                       "C34.9": 0.25, "C22.0": 0.2, "C25.9": 0.15, "C61": 0.35, "C67.9": 0.6,
                       "C64": 0.6, "C56": 0.5, "C92.0": 0.0, "C90.0": 0.0},
           los_of={"C92.0": 25, "C73": 4, "C25.9": 12},
           male_of={"C73": 0.25, "C34.9": 2.2, "C22.0": 2.5, "C15.9": 5.0, "C16.9": 1.8,
                    "C67.9": 3.0}),
    _Group("pediatric neoplasms", 0.06, _mix((1.0, _bump(5, 5)), (0.3, _bump(18, 6))), 1.2, 0.1,
           12, "C91.0 C74.9 C40.2 C81.9", surgery_of={"C40.2": 0.5, "C74.9": 0.4}),
    _Group("oncology care", 0.5, _rise(58, 10), 1.15, 0.0, 3, "Z51.1 Z51.0 Z51.5",
           los_of={"Z51.5": 18}),
    _Group("benign neoplasms", 0.2, _mix((1.0, _bump(45, 14)), (0.1, None)), 0.6, 0.75, 4,
           "D25.9/F D12.6 D24/F D17.9 D27/F D32.9 D34 D06.9/F",
           surgery_of={"D06.9": 0.8, "D12.6": 0.9}, los_of={"D32.9": 10, "D12.6": 2}),
    _Group("blood", 0.08, _mix((1.0, _rise(62, 12)), (0.25, None)), 0.9, 0.02, 6,
           "D50.9 D64.9 D69.6 D61.9 D69.3"),
    _Group("endocrine", 0.25, _mix((0.3, _decay(5)), (1.0, _rise(57, 12)), (0.1, None)), 1.0,
           0.05, 7, "E11.9 E86 E87.1 E11.7 E05.0 E03.9 E04.2 E11.5",
           surgery_of={"E04.2": 0.8, "E05.0": 0.15, "E11.5": 0.4},
           los_of={"E11.5": 20, "E86": 3},
           male_of={"E05.0": 0.3, "E04.2": 0.25, "E03.9": 0.25}),
    _Group("mental", 0.22, _mix((1.0, _bump(44, 15)), (0.05, None)), 1.1, 0.0, 22,
           "F10.2 F20.9 F32.9 F33.9 F31.9 F41.9 F43.2 F25.9",
           los_of={"F20.9": 40, "F25.9": 35, "F10.2": 26, "F31.9": 28, "F41.9": 9, "F43.2": 10},
           male_of={"F10.2": 5.0, "F32.9": 0.55, "F33.9": 0.5}),
    _Group("dementia", 0.18, _rise(80, 5), 0.6, 0.0, 28, "F00.9 F03 F05.9 G30.9",
           los_of={"F05.9": 10}),
    _Group("child development", 0.03, _bump(9, 4), 2.5, 0.0, 14, "F90.0 F84.0 F98.0"),
    _Group("nervous system", 0.2, _mix((0.5, None), (1.0, _rise(62, 12)), (0.6, _decay(6))),
           1.0, 0.05, 7, "G40.9 G45.9 G20 G56.0 G43.9 G51.0 G35 G47.3 G03.9 G91.9",
           surgery_of={"G56.0": 0.9, "G91.9": 0.7, "G47.3": 0.3},
           los_of={"G20": 14, "G03.9": 8, "G56.0": 2},
           male_of={"G56.0": 0.3, "G43.9": 0.35, "G35": 0.4, "G47.3": 3.0}),
    _Group("eye", 0.25, _mix((1.0, _rise(60, 9)), (0.12, None)), 0.8, 0.85, 2,
           "H25.9 H33.0 H26.9 H40.9 H35.3 H50.0 H10.9",
           surgery_of={"H10.9": 0.0, "H35.3": 0.3, "H40.9": 0.5}, los_of={"H33.0": 5}),
    _Group("ear", 0.1, _mix((0.6, _decay(5)), (0.5, None)), 0.9, 0.2, 4,
           "H81.1 H65.9 H91.2 H81.0 H72.9 H71",
           surgery_of={"H72.9": 0.9, "H71": 0.95}, los_of={"H91.2": 7}),
    _Group("appendicitis", 0.35, _mix((1.0, _bump(20, 13)), (0.15, None)), 1.15, 0.93, 4,
           "K35.8 K35.9 K35.3 K37", surgery_of={"K37": 0.6}),
    _Group("biliary and pancreas", 0.14, _mix((1.0, _rise(55, 12)), (0.04, None)), 1.0, 0.5, 7,
           "K80.2 K81.0 K85.9 K80.0 K80.5 K86.1",
           surgery_of={"K85.9": 0.05, "K86.1": 0.05, "K80.5": 0.3},
           male_of={"K86.1": 4.0, "K80.2": 0.8}),
    _Group("hernia and anorectal", 0.12, _mix((0.4, _decay(3)), (1.0, _bump(50, 20))), 1.4, 0.9,
           3, "K40.9 K64.9 K60.3 K61.0 K42.9 K43.9 K40.3",
           male_of={"K40.9": 5.0, "K40.3": 5.0, "K42.9": 1.5}),
    _Group("other digestive", 0.5, _mix((0.4, None), (1.0, _rise(55, 13)), (0.3, _decay(4))),
           1.15, 0.08, 6,
           "K29.7 K52.9 K92.2 K21.0 K63.5 K25.9 K56.6 K59.0 K57.3 K70.3 K74.6 K50.9",
           surgery_of={"K63.5": 0.85, "K56.6": 0.3, "K57.3": 0.2},
           los_of={"K70.3": 14, "K74.6": 14, "K63.5": 2, "K52.9": 4, "K50.9": 9},
           male_of={"K70.3": 4.0, "K74.6": 2.0, "K59.0": 0.6}),
    _Group("oral", 0.04, _mix((1.0, _bump(30, 15)), (0.1, None)), 1.1, 0.7, 2,
           "K01.1 K07.6 K04.6 K12.2", surgery_of={"K01.1": 0.95}),
    _Group("skin", 0.22, _mix((0.6, None), (0.5, _rise(70, 8))), 1.1, 0.3, 6,
           "L03.1 L02.4 L03.0 L72.1 L89.9 L60.0 L05.9 L50.9",
           surgery_of={"L72.1": 0.9, "L60.0": 0.9, "L05.9": 0.9, "L02.4": 0.5, "L89.9": 0.3,
                       "L50.9": 0.0},
           los_of={"L89.9": 25, "L50.9": 3}, male_of={"L05.9": 3.0}),
    _Group("degenerative musculoskeletal", 0.75, _mix((1.0, _rise(55, 10)), (0.06, None)), 0.7,
           0.45, 10, "M17.9 M48.0 M51.2 M54.5 M16.9 M51.1 M75.1 M23.2 M65.3 M81.9 M80.9 M17.1",
           surgery_of={"M54.5": 0.05, "M81.9": 0.0, "M80.9": 0.35, "M17.9": 0.6, "M17.1": 0.7,
                       "M16.9": 0.7, "M65.3": 0.9, "M75.1": 0.7, "M23.2": 0.85},
           los_of={"M17.9": 14, "M17.1": 16, "M16.9": 16, "M65.3": 2, "M54.5": 8},
           male_of={"M81.9": 0.1, "M80.9": 0.15, "M17.9": 0.35, "M17.1": 0.35, "M65.3": 0.5,
                    "M48.0": 0.8}),
    _Group("inflammatory musculoskeletal", 0.08, _mix((1.0, _bump(50, 20)), (0.2, None)), 1.0,
           0.1, 10, "M06.9 M10.9 M86.9 M32.9 M45 M00.9",
           surgery_of={"M86.9": 0.6, "M00.9": 0.6}, los_of={"M86.9": 20, "M10.9": 6},
           male_of={"M06.9": 0.35, "M10.9": 6.0, "M32.9": 0.12, "M45": 3.0}),
    _Group("fractures of the young", 0.35, _mix((1.0, _bump(10, 5)), (0.6, _bump(30, 12))), 2.0,
           0.75, 6, "S42.4 S52.5 S42.0 S52.2 S62.6 S82.2 S92.3 S02.3",
           surgery_of={"S02.3": 0.6}, los_of={"S82.2": 10}),
    _Group("fractures of the old", 0.6, _mix((1.0, _rise(70, 8)), (0.1, _bump(45, 15))), 0.5,
           0.65, 18, "S72.0 S72.1 S32.0 S22.3 S42.2 S82.6 S22.0 S72.2",
           surgery_of={"S72.0": 0.9, "S72.1": 0.92, "S72.2": 0.9, "S32.0": 0.35, "S22.3": 0.1,
                       "S22.0": 0.3},
           los_of={"S72.0": 18, "S72.1": 18, "S72.2": 16, "S22.3": 9, "S82.6": 10}),
    _Group("other injuries", 0.4, _mix((0.6, None), (0.5, _bump(35, 15)), (0.3, _rise(70, 8))),
           1.6, 0.25, 7, "S06.0 S13.4 S33.5 S83.5 S06.5 S83.2 S00.9 S06.6 S61.0",
           surgery_of={"S83.5": 0.9, "S83.2": 0.85, "S06.5": 0.5, "S06.6": 0.2, "S61.0": 0.6,
                       "S06.0": 0.0, "S13.4": 0.0, "S33.5": 0.0, "S00.9": 0.0},
           los_of={"S06.5": 15, "S06.6": 15, "S13.4": 9, "S33.5": 9, "S06.0": 4, "S00.9": 3,
                   "S83.5": 8}),
    _Group("burns and poisoning", 0.08, _mix((1.0, _bump(42, 20)), (0.5, _decay(3))), 1.3, 0.05,
           3, "T42.4 T51.0 T60.0 T78.4 T63.4 T22.2 T23.2",
           surgery_of={"T22.2": 0.3, "T23.2": 0.35},
           los_of={"T22.2": 14, "T23.2": 14, "T60.0": 6},
           male_of={"T51.0": 3.0, "T60.0": 1.8, "T42.4": 0.6}),
    _Group("complications", 0.07, _mix((1.0, _rise(55, 12)), (0.05, None)), 1.0, 0.5, 14,
           "T81.4 T84.5 T81.0 T82.8", surgery_of={"T81.0": 0.4}),
    _Group("urinary", 0.3, _mix((0.3, _decay(3)), (0.3, None), (1.0, _rise(62, 12))), 0.9, 0.15,
           7, "N39.0 N10 N20.0 N17.9 N18.5 N13.3 N20.1 N35.9",
           surgery_of={"N20.0": 0.5, "N20.1": 0.6, "N13.3": 0.3, "N35.9": 0.8, "N39.0": 0.0,
                       "N10": 0.02},
           los_of={"N18.5": 10, "N17.9": 10, "N20.0": 4, "N20.1": 4},
           male_of={"N39.0": 0.35, "N10": 0.25, "N20.0": 2.0, "N35.9": 5.0}),
    _Group("prostate", 0.15, _rise(63, 8), 1.0, 0.45, 5, "N40 N41.0 N42.9", only="M",
           surgery_of={"N41.0": 0.05, "N42.9": 0.2}),
    _Group("male genital", 0.06, _mix((0.7, _decay(5)), (0.5, _bump(20, 8)), (0.1, None)), 1.0,
           0.8, 2, "N47 N43.3 N44 N45.9 N48.1", only="M",
           surgery_of={"N45.9": 0.05, "N48.1": 0.1}),
    _Group("female genital", 0.35, _mix((1.0, _bump(42, 12)), (0.3, _rise(62, 8))), 1.0, 0.6, 4,
           "N83.2 N80.9 N81.2 N84.0 N92.0 N70.9 N95.0", only="F",
           surgery_of={"N92.0": 0.3, "N70.9": 0.1, "N95.0": 0.4}),
    _Group("infertility and sterilization", 0.08, _bump(33, 5), 1.0, 0.6, 2,
           "N97.9 Z30.2 N97.1", only="FR", surgery_of={"Z30.2": 0.95, "N97.1": 0.4}),
    _Group("pregnancy and childbirth", 6.0, _mix((1.0, _bump(32, 5)), (0.1, None)), 1.0, 0.1, 3,
           "O80.0 O82.1 O34.2 O82.0 O02.1 O47.0 O60.0 O03.9 O42.0 O21.0 O24.4 O14.1 O00.9 "
           "O44.1 O32.1",
           only="FR",
           surgery_of={"O82.0": 0.98, "O82.1": 0.98, "O34.2": 0.95, "O32.1": 0.9, "O44.1": 0.85,
                       "O00.9": 0.85, "O02.1": 0.7, "O03.9": 0.5, "O80.0": 0.0, "O47.0": 0.0,
                       "O21.0": 0.0, "O24.4": 0.05},
           los_of={"O82.0": 6, "O82.1": 6, "O34.2": 6, "O32.1": 6, "O14.1": 7, "O60.0": 6,
                   "O44.1": 8, "O47.0": 2, "O02.1": 1, "O03.9": 1, "O00.9": 4}),
    _Group("newborn", 30.0, _decay(0.5), 1.1, 0.02, 5,
           "Z38.0 P59.9 P07.3 P22.1 P07.1 P22.0 P36.9 P70.4 P92.9 P05.1",
           only="N",
           los_of={"Z38.0": 3, "P59.9": 4, "P07.1": 25, "P07.3": 14, "P22.0": 18, "P36.9": 12,
                   "P92.9": 4, "P70.4": 4}),
    _Group("congenital", 0.25, _mix((1.0, _decay(4)), (0.04, None)), 1.2, 0.7, 6,
           "Q21.0 Q53.1/M Q38.1 Q21.1 Q25.0 Q54.9/M Q65.0 Q90.9",
           surgery_of={"Q90.9": 0.0, "Q21.1": 0.5, "Q25.0": 0.5, "Q65.0": 0.4, "Q38.1": 0.95},
           los_of={"Q21.0": 10, "Q90.9": 10, "Q38.1": 1, "Q53.1": 2, "Q54.9": 3}),
    _Group("symptoms", 0.5, _mix((0.5, None), (1.0, _rise(60, 15)), (0.3, _decay(5))), 1.0, 0.02,
           4, "R10.4 R50.9 R07.4 R55 R51 R42 R11 R06.0 R33 R41.0",
           los_of={"R41.0": 10}, male_of={"R33": 4.0}),
    _Group("other health services", 0.2, _mix((0.5, None), (0.6, _rise(50, 15))), 1.1, 0.3, 3,
           "Z47.0 Z03.9 Z49.1 Z48.0 Z45.0 Z09.8",
           surgery_of={"Z47.0": 0.95, "Z48.0": 0.1, "Z03.9": 0.0, "Z49.1": 0.05, "Z09.8": 0.0,
                       "Z45.0": 0.4},
           los_of={"Z49.1": 8}),
)


# -- the code table ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _CodeTable:
    codes: np.ndarray          # (m,) object: the code strings, in group order
    cdf: np.ndarray            # (200, m): P(code <= j | sex, age), cell = sex * 100 + age
    surgery: np.ndarray        # (m,) P(surgery | code)
    log_los: np.ndarray        # (m,) log of the median stay


def _restriction_mask(only: str, sex: np.ndarray, age: np.ndarray) -> np.ndarray:
    if only == "":
        return np.ones(len(age), dtype=bool)
    if only == "M":
        return sex == 1
    if only == "F":
        return sex == 0
    if only == "FR":
        return (sex == 0) & (age >= 15) & (age <= 49)
    if only == "N":
        return age == 0
    raise ValueError(f"unknown code restriction {only!r}")


@lru_cache(maxsize=1)
def _code_table() -> _CodeTable:
    ages = np.arange(MAX_AGE + 1, dtype=float)
    sex = np.repeat(np.array([0, 1]), MAX_AGE + 1)          # cell -> sex (0 F, 1 M)
    age = np.tile(ages, 2)                                    # cell -> age
    codes: list[str] = []
    columns: list[np.ndarray] = []
    surgery: list[float] = []
    log_los: list[float] = []
    for group in _GROUPS:
        tokens = group.codes.split()
        names = {t.partition("/")[0] for t in tokens}
        stray = (set(group.surgery_of) | set(group.los_of) | set(group.male_of)) - names
        if stray:
            raise ValueError(f"group {group.name!r}: overrides for codes it lacks: {sorted(stray)}")
        rank_weight = 1.0 / np.arange(1, len(tokens) + 1) ** ZIPF_EXPONENT
        rank_weight /= rank_weight.sum()
        base = group.weight * group.curve(age) * np.where(sex == 1, group.male, 1.0)
        for token, share in zip(tokens, rank_weight):
            code, _, only = token.partition("/")
            allowed = _restriction_mask(group.only, sex, age) & _restriction_mask(only, sex, age)
            tilt = np.where(sex == 1, group.male_of.get(code, 1.0), 1.0)
            columns.append(np.where(allowed, base * share * tilt, 0.0))
            codes.append(code)
            surgery.append(group.surgery_of.get(code, group.surgery))
            log_los.append(float(np.log(group.los_of.get(code, group.los))))
    weights = np.column_stack(columns)
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]                  # the last entry is exactly 1.0; zero weights stay flat
    return _CodeTable(codes=np.asarray(codes, dtype=object), cdf=cdf,
                      surgery=np.asarray(surgery, dtype=float), log_los=np.asarray(log_los))


def diagnosis_codes() -> tuple[str, ...]:
    """Every diagnosis code the generator can produce, sorted (the public informative domain)."""
    return tuple(sorted(_code_table().codes.tolist()))


# -- sampling helpers ----------------------------------------------------------------------------
def _piecewise(knots: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.interp(np.arange(MAX_AGE + 1, dtype=float), knots, values)


def _sample_by_cell(u: np.ndarray, cell: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling with a different CDF per cell: ``cdf[cell[i]]`` for row ``i``.

    Rows are visited cell by cell (a stable sort), so a cell's rows get their categories with one
    ``searchsorted``. A category of zero probability in a cell is never drawn there: its CDF
    entry equals the previous one, so no ``u`` in [0, 1) can land on it.
    """
    out = np.empty(len(u), dtype=np.int64)
    order = np.argsort(cell, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(cell, minlength=len(cdf)))))
    for c in np.flatnonzero(bounds[1:] > bounds[:-1]):
        rows = order[bounds[c]:bounds[c + 1]]
        out[rows] = np.searchsorted(cdf[c], u[rows], side="right")
    return out


def _region_cdf() -> np.ndarray:
    """(100, 16) P(region <= j | age): population weights tilted by age."""
    weight = np.array([v[2] for v in _REGION_TABLE.values()])
    tilt = np.array([v[3] for v in _REGION_TABLE.values()])
    ages = np.arange(MAX_AGE + 1, dtype=float)
    table = weight[None, :] * np.exp(tilt[None, :] * (ages[:, None] - 45.0) / 45.0)
    cdf = np.cumsum(table, axis=1)
    return cdf / cdf[:, -1:]


# -- public API ----------------------------------------------------------------------------------
def synth_patient_table(rows: int, *, seed: int) -> pd.DataFrame:
    """Draw a synthetic hospital-patient table (one record per patient).

    Args:
        rows: number of patients (>= 1).
        seed: random seed (>= 0); the same seed gives the same table.

    Returns:
        A DataFrame with the columns ``age`` (int64, 0-99), ``sex`` (``"F"``/``"M"``), ``los``
        (int64 days, 1-400), ``surgery`` (``"Y"``/``"N"``), ``region`` (one of :data:`REGIONS`)
        and ``diagnosis`` (an ICD-10-like code from :func:`diagnosis_codes`); the text columns
        hold Python ``str`` (object dtype).

    Raises:
        ValidationError: ``rows`` or ``seed`` is not an integer in range.
    """
    owner = "synth_patient_table"
    rows = check_int(rows, name="rows", owner=owner, minimum=1)
    seed = check_int(seed, name="seed", owner=owner, minimum=0)
    return _draw(rows, seed)


def _draw(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    table = _code_table()

    age_p = _piecewise(_AGE_KNOTS, _AGE_WEIGHTS)
    age = rng.choice(MAX_AGE + 1, size=n, p=age_p / age_p.sum()).astype(np.int64)
    male = rng.random(n) < _piecewise(_MALE_KNOTS, _MALE_SHARE)[age]
    sex = male.astype(np.int64)

    code = _sample_by_cell(rng.random(n), sex * (MAX_AGE + 1) + age, table.cdf)

    p_surgery = table.surgery[code] * np.where(age >= 85, OLD_SURGERY_FACTOR, 1.0)
    surgery = rng.random(n) < p_surgery

    log_los = (table.log_los[code] + LOS_SURGERY * surgery
               + LOS_AGE * np.maximum(age - 50, 0) + LOS_SIGMA * rng.standard_normal(n))
    los = np.maximum(np.rint(np.exp(np.minimum(log_los, 20.0))), 1).astype(np.int64)
    redraw = rng.integers(LOS_REDRAW[0], LOS_REDRAW[1] + 1, size=n)
    los = np.where(los > MAX_LOS, redraw, los).astype(np.int64)

    region = _sample_by_cell(rng.random(n), age, _region_cdf())

    return pd.DataFrame({
        "age": age,
        "sex": _text(("F", "M"), sex),
        "los": los,
        "surgery": _text(("N", "Y"), surgery.astype(np.int64)),
        "region": _text(REGIONS, region),
        "diagnosis": _text(table.codes, code),
    }, columns=list(COLUMNS))


def _text(labels, index: np.ndarray) -> pd.Series:
    """``labels[index]`` as an object column of Python ``str`` (not pandas' string dtype)."""
    return pd.Series(np.asarray(labels, dtype=object)[index], dtype=object)


def _toml_strings(values: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def synth_patient_schema_toml() -> str:
    """The table schema (TOML text) of :func:`synth_patient_table`'s output.

    It declares ``diagnosis`` as the informative attribute with the generator's full code list
    as its public domain, the five dimensions with their generalization levels (age decades then
    [0-29]/[30-59]/[60-99]; sex and surgery flat; length of stay {1}/[2-4]/[5-9]/[10-29]/[30-400]
    then {1}/[2-400]; region by area then capital/non-capital) and the paper's queries Q1-Q4.
    """
    codes = diagnosis_codes()
    lines = ['[table]', 'name = "synthetic-patients"', 'informative = "diagnosis"',
             'informative_domain = [']
    for start in range(0, len(codes), 10):
        lines.append(f"    {_toml_strings(codes[start:start + 10])},")
    lines += [']', '',
              '[[table.dimension]]', 'name = "age"', 'kind = "numeric"',
              f'domain = [0, {MAX_AGE}]', 'levels = [{ width = 10 }, { cuts = [0, 30, 60] }]', '',
              '[[table.dimension]]', 'name = "sex"', 'kind = "categorical"',
              'values = ["F", "M"]', '',
              '[[table.dimension]]', 'name = "los"', 'kind = "numeric"',
              f'domain = [1, {MAX_LOS}]',
              'levels = [{ cuts = [1, 2, 5, 10, 30] }, { cuts = [1, 2] }]', '',
              '[[table.dimension]]', 'name = "surgery"', 'kind = "categorical"',
              'values = ["N", "Y"]', '',
              '[[table.dimension]]', 'name = "region"', 'kind = "categorical"', 'hierarchy = [']
    for region, (area, zone, _w, _t) in _REGION_TABLE.items():
        lines.append(f"    [{_toml_strings([region, area, zone, '*'])}],")
    lines.append(']')
    queries = [("Q1", "count", "M"), ("Q2", "count", "F"), ("Q3", "mean", "M"), ("Q4", "mean", "F")]
    for name, aggregate, sex in queries:
        lines += ['', '[[table.query]]', f'name = "{name}"', f'aggregate = "{aggregate}"']
        if aggregate == "mean":
            lines.append('of = "los"')
        lines += ['group_by = "age"', 'bin = 5', f'where = {{ sex = "{sex}", surgery = "N" }}',
                  'informative_prefix = ["I6"]']
    return "\n".join(lines) + "\n"


def _write_new(path: Path, write: Callable[[TextIO], object]) -> None:
    """Create ``path`` (it must not exist; default permissions) and fill it with ``write(fh)``."""
    with path.open("x", encoding="utf-8", newline="") as fh:
        write(fh)


def write_synth_table(out_csv: str | Path, *, rows: int, seed: int) -> tuple[Path, Path]:
    """Write a synthetic patient table as CSV and its schema beside it.

    The CSV is UTF-8 with a header and no index; the schema goes to ``<stem>.schema.toml`` in
    the same folder. Both are written to temporary files first and then renamed, so a failure
    leaves neither behind.

    Args:
        out_csv: the CSV path; its folder must exist.
        rows: number of patients (>= 1).
        seed: random seed (>= 0).

    Returns:
        ``(csv_path, schema_path)``.

    Raises:
        ValidationError: ``rows``/``seed`` out of range, or ``out_csv`` is a folder or lies in a
            folder that does not exist.
    """
    owner = "write_synth_table"
    rows = check_int(rows, name="rows", owner=owner, minimum=1)
    seed = check_int(seed, name="seed", owner=owner, minimum=0)
    out_csv = Path(out_csv)
    if out_csv.is_dir():
        raise ValidationError(f"The 'out_csv' parameter of {owner} must be a file path; got "
                              f"{str(out_csv)!r}, which is a folder.")
    folder = out_csv.parent
    if not folder.is_dir():
        raise ValidationError(f"The 'out_csv' parameter of {owner} must be in an existing folder; "
                              f"got {str(out_csv)!r}, whose folder does not exist.")
    schema_path = out_csv.with_name(f"{out_csv.stem}.schema.toml")
    frame = _draw(rows, seed)
    schema = synth_patient_schema_toml()
    tag = f"{os.getpid()}.{secrets.token_hex(4)}.tmp"
    tmp_csv = folder / f".{out_csv.name}.{tag}"
    tmp_schema = folder / f".{schema_path.name}.{tag}"
    temporaries: list[Path] = []
    placed: list[Path] = []
    try:
        temporaries.append(tmp_csv)
        _write_new(tmp_csv, lambda fh: frame.to_csv(fh, index=False, lineterminator="\n"))
        temporaries.append(tmp_schema)
        _write_new(tmp_schema, lambda fh: fh.write(schema))
        os.replace(tmp_csv, out_csv)
        placed.append(out_csv)
        os.replace(tmp_schema, schema_path)
        placed.append(schema_path)
    except BaseException:
        for path in temporaries + placed:
            path.unlink(missing_ok=True)
        raise
    return out_csv, schema_path
