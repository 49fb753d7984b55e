"""Benchmark: disproportionality screening of every drug–reaction pair of a FAERS-sized quarter
(:mod:`medanon.metrics.disproportionality`).

Run: python benchmarks/bench_screening.py [--cases 100000] [--rows synth|zipf] [--starts 8]
[--table]

``--rows synth`` (default) writes one synthetic FAERS quarter of ``--cases`` cases (``medanon
synth faers``), reads it as ``medanon ingest --keep-missing`` does, and turns its super records
into published rows (the original side of ``evaluate``: one row per case, every report's drugs
and reactions). The synthetic series draws from a small vocabulary (about 23k distinct pairs per
100k cases); a real quarter lists many more pairs, so ``--rows zipf`` builds ``--cases`` rows
directly instead: 1-7 drugs of 5,000 and 1-5 reactions of 3,000 per report, both Zipf-distributed,
a third of the reactions tied to the report's first drug (about 350k distinct pairs per 100k
rows). Then times, each on its own:

* pair_counts   the drug × reaction table of the rows (``drugs`` × ``reactions``)
* fit           the GPS prior (zero-truncated likelihood, ``--starts`` starts)
* ebgm, eb05    EBGM and its 5th percentile for every pair
* screen        everything :func:`screen` adds given the prior (EB05/EB95, IC/IC025, PRR/ROR/χ²)

and prints the table's size, the prior, whether it converged and how many starts agree, and the
signal counts. Figures on a shared machine are noisy (the load average is printed). Not a test.

``--table`` times the per-pair signal table of ``medanon signals`` instead
(:func:`medanon.metrics.signal_table.signal_table`): the rows as one period (``case_id`` one per
row; zipf rows get random MeSH age and sex labels, a tenth of each blank), stratified by age and
sex, every pair with its adjusted E and both FDR decisions. CPU seconds (``time.process_time``,
all threads) of each step:

* strata        each report's age × sex stratum read from its published cells
* pair_counts   the pair table with the stratum-adjusted E (``pair_counts(strata=...)``)
* fit           the GPS prior (``--starts`` starts)
* table         the whole ``signal_table`` call (the steps above, screening, FDR, assembly)

The goal (issue 32) is at most 15 s of CPU for the table of 100k reports.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd

from medanon.api import Dataset
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.disproportionality import (
    MGPS_LOWER_QUANTILE,
    eb_quantile,
    ebgm,
    fit_gps_prior,
    pair_counts,
    screen,
)
from medanon.data.schema import Schema
from medanon.metrics.signal_table import _strata, signal_table
from medanon.published.format import original_as_published


def _timed(label: str, call):
    started = time.perf_counter()
    result = call()
    print(f"{label:<13}{time.perf_counter() - started:8.2f} s")
    return result


def _cpu(label: str, call):
    started = time.process_time()
    result = call()
    print(f"{label:<13}{time.process_time() - started:8.2f} s CPU")
    return result


#: MeSH age labels drawn for zipf rows (every band, and labels that straddle bands)
_AGES = ("Newborn", "Infant (1-23 months)", "Preschool", "In-school", "Adolescent", "Young Adult",
         "Adult (25-44)", "Middle Aged", "Aged (65-79)", "Aged, 80 and over", "Adult", "Child",
         "Aged", "*")


def _as_period(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The rows as one published period: a case_id per row, and age/sex labels if absent."""
    rng = np.random.default_rng(seed)
    out = rows.copy()
    out["period"] = "2020Q1"
    out["case_id"] = [str(i) for i in range(len(out))]
    if "age" not in out.columns:
        age = rng.choice(np.array(_AGES, dtype=object), len(out))
        age[rng.random(len(out)) < 0.1] = ""
        out["age"] = age
    if "sex" not in out.columns:
        out["sex"] = rng.choice(np.array(["F", "M", ""], dtype=object), len(out), p=[0.5, 0.4, 0.1])
    return out


def _table(rows: pd.DataFrame, args: argparse.Namespace) -> None:
    """Time the per-pair signal table of the rows stratified by age and sex (``--table``)."""
    rows = _as_period(rows, args.seed)
    hierarchies = Schema.default().load_hierarchies()
    strata = _cpu("strata", lambda: _strata(rows, ("age", "sex"), hierarchies))
    print(f"             {len(strata.labels)} strata; unknown {strata.unknown}")
    table = _cpu("pair_counts", lambda: pair_counts(rows, strata=strata.codes))
    print(f"             {len(table)} pairs, n_total {int(table['n_total'].iloc[0])}")
    n, e = table["n"].to_numpy(), table["e"].to_numpy()
    prior = _cpu("fit", lambda: fit_gps_prior(n, e, starts=args.starts, seed=args.seed))
    print(f"             converged {prior.converged}, {prior.agreeing}/{prior.starts} starts agree")
    whole = _cpu("table", lambda: signal_table({"2020Q1": rows}, stratify_by="age,sex",
                                               hierarchies=hierarchies, fdr=0.05))
    print(f"             {len(whole)} rows; signals: "
          + ", ".join(f"{flag} {int(whole[flag].sum())}" for flag in
                      ("signal_mgps", "signal_bcpnn", "signal_prr", "signal_mgps_fdr",
                       "signal_prr_fdr")))


def _synth_rows(cases: int, seed: int) -> pd.DataFrame:
    with tempfile.TemporaryDirectory() as folder:
        write_faers_series(folder, periods=1, cases=cases, seed=seed)
        data = Dataset.from_faers(folder, keep_missing=True)
        return original_as_published(data.super_records(data.periods[0]).frame, data.schema)


def _zipf_rows(cases: int, seed: int, drugs: int = 5000, reactions: int = 3000) -> pd.DataFrame:
    """Reports of 1-7 Zipf-distributed drugs and 1-5 reactions; a third of the reactions come
    from 20 reactions tied to the report's first drug, so that reporting is disproportionate."""
    rng = np.random.default_rng(seed)

    def draw(vocabulary: int, exponent: float, size: int) -> np.ndarray:
        weights = 1.0 / np.arange(1, vocabulary + 1) ** exponent
        return rng.choice(vocabulary, size, p=weights / weights.sum())

    n_drugs, n_reactions = rng.integers(1, 8, cases), rng.integers(1, 6, cases)
    drug = draw(drugs, 1.1, int(n_drugs.sum()))
    reaction = draw(reactions, 1.0, int(n_reactions.sum()))
    tied = rng.integers(0, reactions, (drugs, 20))
    first_drug = np.repeat(drug[np.cumsum(n_drugs) - n_drugs], n_reactions)
    use_tied = rng.random(reaction.size) < 1 / 3
    reaction[use_tied] = tied[first_drug[use_tied], rng.integers(0, 20, int(use_tied.sum()))]

    def cells(codes: np.ndarray, counts: np.ndarray, prefix: str) -> list[str]:
        names = np.array([f"{prefix} {i}" for i in range(codes.max() + 1)], dtype=object)
        ends = np.cumsum(counts)
        return ["|".join(sorted(set(names[codes[end - k:end]]))) for k, end in zip(counts, ends)]

    return pd.DataFrame({"drugs": cells(drug, n_drugs, "DRUG"),
                         "reactions": cells(reaction, n_reactions, "Reaction")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", choices=("synth", "zipf"), default="synth")
    parser.add_argument("--table", action="store_true",
                        help="time the per-pair signal table (stratified by age and sex, FDR)")
    args = parser.parse_args()

    started = time.perf_counter()
    rows = (_synth_rows if args.rows == "synth" else _zipf_rows)(args.cases, args.seed)
    print(f"{args.rows} rows: {len(rows)} in {time.perf_counter() - started:.1f} s; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if args.table:
        _table(rows, args)
        return

    table = _timed("pair_counts", lambda: pair_counts(rows))
    entries = int(table["n"].sum())
    distinct = len(table[["n", "e"]].drop_duplicates())
    print(f"             {len(table)} pairs ({distinct} distinct (n, E)), {entries} "
          f"report-drug-reaction triples, n_total {int(table['n_total'].iloc[0])}")
    n, e = table["n"].to_numpy(), table["e"].to_numpy()
    prior = _timed("fit", lambda: fit_gps_prior(n, e, starts=args.starts, seed=args.seed))
    print(f"             prior (a1, b1, a2, b2, p) = "
          f"({', '.join(f'{v:.4g}' for v in prior.parameters)}), loglik {prior.loglik:.2f}, "
          f"converged {prior.converged}, {prior.agreeing}/{prior.starts} starts agree")
    print(f"             {prior.message}")
    _timed("ebgm", lambda: ebgm(n, e, prior))
    _timed("eb05", lambda: eb_quantile(n, e, prior, MGPS_LOWER_QUANTILE))
    out, _ = _timed("screen", lambda: screen(table, prior=prior))
    print(f"signals: MGPS (EB05 >= 2) {int(out['signal_mgps'].sum())}, BCPNN (IC025 > 0) "
          f"{int(out['signal_bcpnn'].sum())}, PRR (Evans) {int(out['signal_prr'].sum())} of "
          f"{len(out)} pairs")


if __name__ == "__main__":
    main()
