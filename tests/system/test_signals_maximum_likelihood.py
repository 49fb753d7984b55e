"""Issue 32's done-when: on an 8 × 3,000 synthetic series, the EB05 >= 2 decisions of
``medanon signals`` are those of a maximum-likelihood MGPS prior, fitted here with bounds that
cannot bind (1e7), without the point-mass guard and with twice the starts (where the likelihood
has no finite maximum, that fit goes as near its supremum as 1e7 allows and the table's prior
must say it was held); and ``--stratify-by age,sex`` gives the stratified E of the formula,
counted here from the rows by hand."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from medanon.api import Dataset
from medanon.data.synth.faers import write_faers_series
from medanon.metrics import disproportionality as dp
from medanon.metrics.disproportionality import MGPS_LOWER_QUANTILE, eb_quantile, fit_gps_prior
from medanon.metrics.signal_table import signal_table
from medanon.metrics.signals import INSIDE, Condition
from medanon.published.format import original_as_published

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ml")
    write_faers_series(folder, periods=8, cases=3000, seed=1)
    data = Dataset.from_faers(folder, keep_missing=True)
    rows = {p: original_as_published(data.super_records(p).frame, data.schema)
            for p in data.periods}
    return rows, data.schema.load_hierarchies()


def test_eb05_decisions_agree_with_a_maximum_likelihood_prior(series, monkeypatch):
    rows, hierarchies = series
    table = signal_table(rows, scopes="dedup,pooled", hierarchies=hierarchies)
    # the supremum of each scope's likelihood, or as near it as bounds of 1e7 let a fit come:
    # no first stage at 100, no point-mass guard, twice the starts
    monkeypatch.setattr(dp, "STAGE_LIMIT", 1e7)
    for entry in table.attrs["signals"]["scopes"]:
        prior = entry["prior"]
        scope = table[table["scope"] == entry["scope"]]
        n, e = scope["n"].to_numpy(), scope["e"].to_numpy()
        wide = fit_gps_prior(n, e, starts=16, param_limit=1e7)
        if prior["converged"]:   # a finite maximum: the table's prior is it
            assert prior["loglik"] >= wide.loglik - 1e-3, entry["scope"]
        else:                    # none: held, and said so; the supremum lies above
            assert "no finite maximum" in prior["message"], prior["message"]
            assert wide.loglik > prior["loglik"]
        decided = eb_quantile(n, e, wide, MGPS_LOWER_QUANTILE) >= 2
        assert decided.sum() > 0
        assert np.array_equal(scope["signal_mgps"].to_numpy(bool), decided), entry["scope"]


def test_stratified_e_by_age_and_sex_is_the_formula(series):
    rows, hierarchies = series
    last = list(rows)[-1]
    table = signal_table({last: rows[last]}, scopes="quarter", stratify_by="age,sex",
                         hierarchies=hierarchies)
    frame = rows[last]
    bands = [Condition.parse(t) for t in ("age <= 18", "age in [19-64]", "age >= 65")]
    inside = [b.classify(frame["age"], hierarchies["age"]) == INSIDE for b in bands]
    drug_sets = [{t.casefold() for t in c.split("|") if t and t != "*"} for c in frame["drugs"]]
    reaction_sets = [{t.casefold() for t in c.split("|") if t and t != "*"}
                     for c in frame["reactions"]]
    by_drug: dict[tuple, int] = defaultdict(int)
    by_reaction: dict[tuple, int] = defaultdict(int)
    size: dict[tuple, int] = defaultdict(int)
    for i, (drugs, reactions) in enumerate(zip(drug_sets, reaction_sets)):
        if not drugs or not reactions:
            continue   # not screened
        band = next((b.text for b, mask in zip(bands, inside) if mask[i]), "unknown")
        sex = frame["sex"].iloc[i] if frame["sex"].iloc[i] in ("F", "M") else "unknown"
        stratum = (band, sex)
        size[stratum] += 1
        for d in drugs:
            by_drug[d, stratum] += 1
        for r in reactions:
            by_reaction[r, stratum] += 1
    expected = [sum(by_drug[d.casefold(), s] * by_reaction[r.casefold(), s] / size[s]
                    for s in size) for d, r in zip(table["drug"], table["reaction"])]
    np.testing.assert_allclose(table["e"].to_numpy(), expected, rtol=1e-12)
    # the adjustment moved E (the strata differ), and the crude E is the unstratified one
    assert not np.allclose(table["e"], table["e_crude"])
    assert table.attrs["signals"]["scopes"][0]["strata"] == len(size)
