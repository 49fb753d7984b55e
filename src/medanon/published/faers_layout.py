"""Write a published release in the FAERS 2014Q3+ ASCII layout.

Existing pharmacovigilance pipelines read ``DEMOyyQq.txt``, ``DRUGyyQq.txt``, ``REACyyQq.txt`` and
``INDIyyQq.txt`` unchanged. A release holds one super record per case, so ``primaryid`` equals
``caseid`` and ``caseversion`` is left empty. Generalized values go where the raw ones were: the
``age`` field carries the MeSH age label (``age_cod`` empty, since the label is not a number),
``sex`` the sex label (``*`` when generalized), ``wt`` the weight number or ``[lo-hi]`` interval
with ``wt_cod`` = KG. A ``$`` inside a value (FAERS has drug names such as
``VITAMIN B$12``) is written as a space, so the files stay parseable. Files are ``$``-separated,
Latin-1, CRLF, with the trailing ``$`` FDA writes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..periods import parse_period
from ..errors import StoreError

DEMO_COLUMNS = ("primaryid caseid caseversion i_f_code event_dt mfr_dt init_fda_dt fda_dt rept_cod "
                "auth_num mfr_num mfr_sndr lit_ref age age_cod age_grp sex e_sub wt wt_cod rept_dt "
                "to_mfr occp_cod reporter_country occr_country").split()
DRUG_COLUMNS = ("primaryid caseid drug_seq role_cod drugname prod_ai val_vbm route dose_vbm "
                "cum_dose_chr cum_dose_unit dechal rechal lot_num exp_dt nda_num dose_amt dose_unit "
                "dose_form dose_freq").split()
REAC_COLUMNS = ["primaryid", "caseid", "pt", "drug_rec_act"]
INDI_COLUMNS = ["primaryid", "caseid", "indi_drug_seq", "indi_pt"]
_NEEDED = {"qids": ("age", "sex", "weight"), "multi": ("reactions", "indications", "drugs")}


def _check_schema(columns: pd.Index) -> None:
    missing = [c for group in _NEEDED.values() for c in group if c not in columns]
    if missing:
        raise StoreError("The FAERS layout needs the FAERS schema's columns; this release lacks "
                         f"{', '.join(missing)}. Export it with --format csv or parquet.")


def _write(path: Path, columns: list[str], rows: list[list[str]]) -> int:
    """Write one table; return how many cells had a '$' replaced by a space.

    FAERS itself carries values such as ``VITAMIN B$12`` that break its own layout (the
    embedded-separator defect our reader repairs); we do not reproduce that defect.
    """
    lines = ["$".join(columns) + "$"]
    replaced = 0
    for row in rows:
        if any("$" in cell for cell in row):
            replaced += sum("$" in cell for cell in row)
            row = [cell.replace("$", " ") for cell in row]
        lines.append("$".join(row) + "$")
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("latin-1", errors="replace"))
    return replaced


def write_faers_release(folder: Path, rows: pd.DataFrame, period: str) -> int:
    """Write one release's rows (release-format strings) as FAERS ASCII files into ``folder``.

    Returns:
        The number of cells whose ``$`` had to be replaced by a space. Characters outside
        Latin-1 are written as ``?``.
    """
    _check_schema(rows.columns)
    tag = parse_period(period).faers_tag
    folder.mkdir(parents=True, exist_ok=True)
    demo, drug, reac, indi = [], [], [], []
    for rec in rows.itertuples(index=False):
        case = str(rec.case_id)
        weight = str(rec.weight)
        values = {"primaryid": case, "caseid": case, "age": str(rec.age), "sex": str(rec.sex),
                  "wt": weight, "wt_cod": "KG" if weight not in ("", "*") else ""}
        demo.append([values.get(c, "") for c in DEMO_COLUMNS])
        for seq, name in enumerate(filter(None, str(rec.drugs).split("|")), start=1):
            drug.append([case, case, str(seq), "", name] + [""] * (len(DRUG_COLUMNS) - 5))
        for pt in filter(None, str(rec.reactions).split("|")):
            reac.append([case, case, pt, ""])
        for pt in filter(None, str(rec.indications).split("|")):
            indi.append([case, case, "", pt])
    return (_write(folder / f"DEMO{tag}.txt", DEMO_COLUMNS, demo)
            + _write(folder / f"DRUG{tag}.txt", DRUG_COLUMNS, drug)
            + _write(folder / f"REAC{tag}.txt", REAC_COLUMNS, reac)
            + _write(folder / f"INDI{tag}.txt", INDI_COLUMNS, indi))
