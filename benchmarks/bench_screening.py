"""Benchmark: disproportionality screening of every drug–reaction pair of a FAERS-sized quarter
(:mod:`medanon.metrics.disproportionality`).

Run: python benchmarks/bench_screening.py [--cases 100000] [--rows synth|zipf] [--starts 8]

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
from medanon.published.format import original_as_published


def _timed(label: str, call):
    started = time.perf_counter()
    result = call()
    print(f"{label:<13}{time.perf_counter() - started:8.2f} s")
    return result


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
    args = parser.parse_args()

    started = time.perf_counter()
    rows = (_synth_rows if args.rows == "synth" else _zipf_rows)(args.cases, args.seed)
    print(f"{args.rows} rows: {len(rows)} in {time.perf_counter() - started:.1f} s; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

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
