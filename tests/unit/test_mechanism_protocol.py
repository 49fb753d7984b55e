"""One mechanism protocol, and the ledger written from what the mechanisms that ran reported.

Design rule 4: every DP step reports its own privacy loss; the accountant sums what the
mechanisms report; ``planned_losses`` is only the budget pre-check, and a plan that differs from
what ran is an InternalError.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.accounting import (Accountant, Budget, PrivacyLoss, check_plan, format_epsilon,
                                losses_per_unit, unit_counts)
from medanon.anonymize import PPMSDPAll, PPMSDPNum
from medanon.anonymize.dphist import DPHistogram
from medanon.anonymize.ipa import IPA, STEPS
from medanon.anonymize.none import DropIdentifiers
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.errors import BudgetExceeded, InternalError, ValidationError
from medanon.mechanisms import (BlockRandomizedResponse, DiscreteLaplaceMechanism,
                                ExponentialMechanism, LaplaceMechanism, Mechanism,
                                RandomizedResponse)
from medanon.random import randomness
from medanon.pipeline.publish import prepare_release
from medanon.published.series import empty_series

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ppms_dp import records
from test_tabular_methods import small_data

SCHEMA = Schema.papers()


def every_mechanism() -> list[Mechanism]:
    return [LaplaceMechanism(epsilon="0.5", sensitivity=2),
            DiscreteLaplaceMechanism(epsilon="0.5", sensitivity=2),
            ExponentialMechanism(epsilon="0.5", sensitivity=2),
            RandomizedResponse(epsilon="0.5", categories=["a", "b", "c"]),
            BlockRandomizedResponse(epsilon="0.5", blocks=np.array([[0, 1], [1, 0], [2, 0]]))]


# ------------------------------------------------------------------------------ the protocol
def test_every_mechanism_shares_the_base_accessors_and_defines_none_itself():
    shared = ("epsilon", "delta", "sensitivity", "describe", "privacy_loss", "report", "__repr__")
    for mech in every_mechanism():
        assert isinstance(mech, Mechanism)
        assert [name for name in shared if name in type(mech).__dict__] == []
        assert mech.epsilon == Fraction(1, 2) and isinstance(mech.epsilon, Fraction)
        assert mech.delta == 0
        info = mech.describe()
        assert info["name"] == mech.name and info["epsilon"] == "1/2"
        assert info["epsilon_float"] == 0.5 and info["sampler"] == type(mech).sampler
        assert repr(mech).startswith(f"{type(mech).__name__}(epsilon=1/2")
    with_sensitivity = [m for m in every_mechanism() if m.sensitivity is not None]
    assert [type(m).__name__ for m in with_sensitivity] == [
        "LaplaceMechanism", "DiscreteLaplaceMechanism", "ExponentialMechanism"]
    assert all(m.sensitivity == 2 and m.describe()["sensitivity"] == "2" for m in with_sensitivity)


@pytest.mark.parametrize("build, message", [
    (lambda: DiscreteLaplaceMechanism(epsilon=0, sensitivity=1),
     "The 'epsilon' parameter of DiscreteLaplaceMechanism must be a positive number; got 0."),
    (lambda: DiscreteLaplaceMechanism(epsilon=1, sensitivity=0),
     "The 'sensitivity' parameter of DiscreteLaplaceMechanism must be a positive number; got 0."),
    (lambda: ExponentialMechanism(epsilon=1, sensitivity=-1),
     "The 'sensitivity' parameter of ExponentialMechanism must be a positive number; got -1."),
    (lambda: BlockRandomizedResponse(epsilon="x", blocks=[[0]]),
     "The 'epsilon' parameter of BlockRandomizedResponse must be a positive number, as an int"),
])
def test_epsilon_and_sensitivity_are_validated_at_construction_naming_the_parameter(build, message):
    with pytest.raises(ValidationError) as info:
        build()
    assert str(info.value).startswith(message)


def test_the_privacy_map_is_the_mechanisms_own_loss():
    for mech in every_mechanism():
        loss = mech.privacy_loss(target="weight", scope="record")
        assert loss == PrivacyLoss(epsilon=Fraction(1, 2), mechanism=mech.name, target="weight",
                                   scope="record")
        assert mech.privacy_loss(target="weight", scope="record") is loss  # built once
    assert {m.name for m in every_mechanism()} == {
        "laplace", "discrete-laplace", "exponential", "randomized-response",
        "block-randomized-response"}


def test_each_sampling_verb_reports_in_the_accountants_scope():
    noise = randomness(1)
    accountant = Accountant(scope="element")
    laplace, counts, expo, rr, block = every_mechanism()
    laplace.randomise([1.0, 2.0], noise, accountant=accountant, target="a")
    counts.randomise([1, 2], noise, accountant=accountant, target="b")
    expo.select([0.0, 1.0], noise, accountant=accountant, target="c")
    rr.randomise(["a", "c"], noise, accountant=accountant, target="d")
    block.randomise([0, -1], noise, accountant=accountant, target="e")
    counts.pool(noise, accountant=accountant, target="f").take(3)
    assert [(loss.mechanism, loss.target, loss.scope) for loss in accountant.losses] == [
        ("laplace", "a", "element"), ("discrete-laplace", "b", "element"),
        ("exponential", "c", "element"), ("randomized-response", "d", "element"),
        ("block-randomized-response", "e", "element"), ("discrete-laplace", "f", "element")]
    assert accountant.spent == Budget.of(3)  # six reports of 1/2, each on every unit


def test_without_an_accountant_nothing_is_reported_and_the_draws_are_the_same():
    laplace = LaplaceMechanism(epsilon=1, sensitivity=1)
    plain = laplace.randomise(np.arange(5.0), randomness(4))
    reported = laplace.randomise(np.arange(5.0), randomness(4),
                                 accountant=Accountant(units=5), target="x", units=[4, 3, 2, 1, 0])
    assert plain.tolist() == reported.tolist()


def test_a_refused_report_draws_no_noise():
    expo = ExponentialMechanism(epsilon=1, sensitivity=1)
    noise = randomness(9)
    accountant = Accountant(budget=Budget.of("1.5"))
    expo.select([0.0, 1.0, 2.0], noise, accountant=accountant)
    with pytest.raises(BudgetExceeded, match="requested ε=1, remaining ε=0.5, difference ε=0.5"):
        expo.select([0.0, 1.0, 2.0], noise, accountant=accountant)
    # the refused call consumed no random bits: the next draw is the second draw of the stream
    fresh = randomness(9)
    expo.select([0.0, 1.0, 2.0], fresh)
    assert noise.bits.randbits(64) == fresh.bits.randbits(64)
    assert len(accountant.losses) == 1


def test_units_must_name_one_unit_per_input():
    laplace = LaplaceMechanism(epsilon=1, sensitivity=1)
    with pytest.raises(ValidationError, match=r"'units' parameter of LaplaceMechanism.report must "
                                              r"be one unit per input \(3\); got '2 unit\(s\)'"):
        laplace.randomise([1.0, 2.0, 3.0], randomness(1), accountant=Accountant(units=5),
                          units=[0, 1])
    with pytest.raises(ValidationError, match="'accountant' parameter of LaplaceMechanism.report"):
        laplace.randomise([1.0], randomness(1), accountant=Budget.of(1))


# ------------------------------------------------------------------------------ the accountant
def test_a_mechanism_that_runs_twice_on_a_case_charges_it_twice():
    laplace = LaplaceMechanism(epsilon="0.25", sensitivity=1)
    accountant = Accountant(scope="case", units=4)
    laplace.randomise([1.0, 2.0, 3.0, 4.0], randomness(1), accountant=accountant,
                      target="weight")                      # parallel: each case once
    laplace.randomise([5.0, 6.0], randomness(2), accountant=accountant,
                      target="weight", units=[2, 0])        # again on cases 0 and 2
    (loss, counts), = unit_counts(accountant.charges, 4)
    assert loss == laplace.privacy_loss(target="weight") and counts.tolist() == [2, 1, 2, 1]
    assert accountant.spent == Budget.of("0.5")             # the worst case, not the sum of all
    assert losses_per_unit(accountant.charges) == (loss, loss)
    check_plan([loss, loss], accountant.charges, units=4, exact=False)
    with pytest.raises(InternalError, match=r"for 2 case\(s\); case #1 incurred \[laplace:weight "
                                            r"ε=0.25\] but the plan"):
        check_plan([loss, loss], accountant.charges, units=4)


def test_a_per_unit_budget_refuses_only_what_takes_a_unit_over():
    laplace = LaplaceMechanism(epsilon="0.5", sensitivity=1)
    accountant = Accountant(units=3, budget=Budget.of(1))
    for case in range(3):       # three disjoint reports: parallel, each case spends 0.5
        laplace.randomise([1.0], randomness(case), accountant=accountant, units=case)
    laplace.randomise([1.0], randomness(5), accountant=accountant, units=[1])
    assert accountant.spent == Budget.of(1) and accountant.remaining == Budget.zero()
    with pytest.raises(BudgetExceeded, match="per case"):
        laplace.randomise([1.0, 1.0], randomness(6), accountant=accountant, units=[0, 1])
    assert len(accountant.charges) == 4  # nothing recorded


@pytest.mark.parametrize("units, fragment", [
    ([0, 0], "distinct unit numbers"), ([3], r"unit numbers in 0\.\.2"), ([-1], "unit numbers"),
    ([[0]], "a 1-D sequence"), (["a"], "a 1-D sequence"), (True, "a 1-D sequence")])
def test_the_accountant_checks_the_units_named(units, fragment):
    loss = PrivacyLoss(epsilon=1, mechanism="laplace")
    with pytest.raises(ValidationError, match=f"'units' parameter of Accountant.spend must be "
                                              f"{fragment}"):
        Accountant(units=3).spend(loss, units=units)


def test_the_accountant_refuses_other_scopes_and_units_it_does_not_count():
    with pytest.raises(ValidationError, match="a loss per 'record'"):
        Accountant(scope="record").spend(PrivacyLoss(epsilon=1, mechanism="laplace"))
    with pytest.raises(ValidationError, match="None for an accountant built without 'units'"):
        Accountant().spend(PrivacyLoss(epsilon=1, mechanism="laplace"), units=[0])
    for kwargs, name in [({"scope": ""}, "scope"), ({"units": -1}, "units"),
                         ({"units": 2.0}, "units")]:
        with pytest.raises(ValidationError, match=f"'{name}' parameter of Accountant"):
            Accountant(**kwargs)


# --------------------------------------------------------------- the ledger: what ran, per case
class FakeNoise(Mechanism):
    """A mechanism that adds nothing and reports like any other (for the accounting only)."""

    name = "fake-noise"
    sampler = "none (a test double)"

    def __init__(self, *, epsilon):
        super().__init__(epsilon=epsilon, sensitivity=1)

    def randomise(self, values, *, accountant, target):
        self.report(accountant, target=target, inputs=len(values))
        return np.asarray(values)


class RunsTwice(DropIdentifiers):
    """Publishes as ``none`` after running :class:`FakeNoise` over every case ``runs`` times;
    plans ``planned`` runs."""

    name = "runs-twice"

    def __init__(self, *, runs: int = 2, planned: int = 2):
        self.runs, self.planned = runs, planned
        self.mechanism = FakeNoise(epsilon="0.1")

    def planned_losses(self, schema):
        return (self.mechanism.privacy_loss(target="weight"),) * self.planned

    def anonymize(self, data, previous=(), *, rng, next_cases=None):
        result = super().anonymize(data, previous, rng=rng, next_cases=next_cases)
        accountant = Accountant(scope="case", units=len(data.frame))
        for _ in range(self.runs):
            self.mechanism.randomise(data.frame["weight"].to_numpy(), accountant=accountant,
                                     target="weight")
        return dataclasses.replace(result, privacy_charges=accountant.charges)


def publish(method, frame):
    return prepare_release(SCHEMA, method, str(frame["period"].iloc[0]), frame,
                           randomness(1), series=empty_series(SCHEMA))


def case_ids(frame) -> pd.Series:
    """The case ids in the order of the super records the method is given (its units):
    prepare_release shuffles them with the first draw of the release's generator (issue 41),
    here ``randomness(1)`` as in :func:`publish`."""
    from medanon.pipeline.publish import _unordered

    supers = combine_super_records(frame, SCHEMA, SCHEMA.load_hierarchies())
    return _unordered(supers, frame, SCHEMA, randomness(1)).frame[SCHEMA.case_id]


def reported(charges, ids) -> Counter:
    """(case, mechanism:target, exact ε) once per report naming the case, report by report."""
    ids = list(ids.astype(str))
    out = Counter()
    for charge in charges:
        units = range(len(ids)) if charge.units is None else charge.units.tolist()
        label = f"{charge.loss.mechanism}:{charge.loss.target}"
        out.update((ids[u], label, format_epsilon(charge.loss.epsilon)) for u in units)
    return out


def rows(ledger) -> Counter:
    return Counter(zip(ledger["case_id"], ledger["mechanism"], ledger["epsilon_exact"]))


def test_the_ledger_charges_a_case_once_per_run_of_a_mechanism():
    frame = records(12)
    prepared = publish(RunsTwice(runs=2, planned=2), frame)
    ledger = prepared.ledger
    assert len(ledger) == 24
    assert ledger.groupby("case_id").size().to_dict() == {str(i): 2 for i in range(12)}
    assert set(ledger["mechanism"]) == {"fake-noise:weight"}
    assert set(ledger["epsilon_exact"]) == {"0.1"} and ledger["dp"].all()
    assert prepared.result.privacy_losses == (prepared.result.privacy_losses[0],) * 2


@pytest.mark.parametrize("runs, planned", [(2, 1), (1, 2), (0, 1)])
def test_a_plan_that_differs_from_what_ran_is_an_internal_error(runs, planned):
    with pytest.raises(InternalError, match=r"runs-twice on period 2020Q1: the mechanisms that ran "
                                            r"do not equal the plan for 12 case\(s\)"):
        publish(RunsTwice(runs=runs, planned=planned), records(12))


def test_strict_ppms_dp_ledger_rows_equal_the_mechanisms_reports():
    frame = records(300)
    method = PPMSDPAll(k=5, theta=0.5, epsilon="0.5", on_infeasible="suppress-terms")
    prepared = publish(method, frame)
    charges = prepared.result.privacy_charges
    # the Laplace noise on every weight is one report; the exponential draws, one per case
    assert sum(c.units is None for c in charges) == 1 and len(charges) == 1 + 2 * 300
    assert rows(prepared.ledger) == reported(charges, case_ids(frame))
    per_case = prepared.ledger.groupby("case_id")["mechanism"].apply(sorted)
    assert (per_case.map(tuple) == ("exponential:age", "exponential:sex", "laplace:weight")).all()
    assert prepared.ledger["dp"].all() and set(prepared.ledger["epsilon_exact"]) == {"0.5"}
    spent = prepared.manifest["privacy_spent"]
    assert spent["epsilon_per_case"] == "1.5"
    assert [m["target"] for m in spent["mechanisms"]] == ["age", "sex", "weight"]


def test_a_strict_plan_that_leaves_out_a_perturbed_qid_is_an_internal_error():
    class Underplanned(PPMSDPAll):
        def planned_losses(self, schema):
            return super().planned_losses(schema)[1:]  # forgets age

    with pytest.raises(InternalError, match=r"case #0 incurred \[exponential:age ε=0.1, "
                                            r"exponential:sex ε=0.1, laplace:weight ε=0.1\]"):
        publish(Underplanned(k=5, theta=0.5, epsilon="0.1", on_infeasible="suppress-terms"),
                records(100))


def test_paper_ppms_dp_charges_only_the_cases_a_draw_read_and_marks_them_not_dp():
    frame = records(300)
    method = PPMSDPAll(k=5, theta=0.5, epsilon="0.5", variant="paper",
                       on_infeasible="suppress-terms")
    prepared = publish(method, frame)
    ledger = prepared.ledger
    assert not ledger["dp"].any()
    assert rows(ledger) == reported(prepared.result.privacy_charges, case_ids(frame))
    # the numeric QID gets noise in every group (a group's spread may be 0: scale γ/ε)
    assert (ledger["mechanism"] == "laplace:weight").sum() == 300
    # a group whose values coincide publishes them without a draw: no charge, value exact
    table = prepared.result.table.set_index("case_id")
    for qid in ("age", "sex"):
        charged = set(ledger.loc[ledger["mechanism"] == f"exponential:{qid}", "case_id"])
        uncharged = [c for c in table.index if c not in charged]
        assert 0 < len(uncharged) < 300
        truth = frame.set_index("case_id").loc[uncharged, qid]
        assert (table.loc[uncharged, qid] == truth).all()
    # privacy_spent states the nominal epsilon, a noise-scale parameter
    assert prepared.manifest["privacy_spent"]["epsilon_per_case"] == "1.5"


def test_a_paper_case_charged_beyond_the_plan_is_an_internal_error():
    class Overcharging(PPMSDPNum):
        def planned_losses(self, schema):
            return ()

    with pytest.raises(InternalError, match="do not stay within the plan for 100 case"):
        publish(Overcharging(k=5, theta=0.5, epsilon="0.1", variant="paper"), records(100))


# ----------------------------------------------------------------- tables: IPA and DP histogram
def test_ipa_and_dphist_report_what_their_steps_mechanisms_did():
    data = small_data(400, 1)
    ipa = IPA(epsilon="0.7", threshold=3, selection="paper")
    result = ipa.anonymize(data, noise=randomness(2))
    assert result.privacy_losses == ipa.planned_losses()
    assert [(p.mechanism, p.target, p.epsilon) for p in result.privacy_losses] == [
        ("discrete-laplace", "suppression", Fraction(7, 100)),
        ("discrete-laplace", "insertion", Fraction(21, 100)),
        ("exponential", "value", Fraction(21, 100)), ("exponential", "candidates", Fraction(21, 100))]
    assert [p.target for p in result.privacy_losses] == list(STEPS)
    assert ipa.mechanisms["suppression"].sensitivity == 2
    chooser = IPA(epsilon="0.7", threshold=3)  # selection "utility": a noisy count, then the choice
    chosen = chooser.anonymize(data, noise=randomness(2))
    assert chosen.privacy_losses == chooser.planned_losses()
    assert [(p.mechanism, p.target, p.epsilon) for p in chosen.privacy_losses] == [
        ("discrete-laplace", "suppression", Fraction(7, 100)),
        ("discrete-laplace", "insertion", Fraction(21, 100)),
        ("exponential", "value", Fraction(21, 100)),
        ("discrete-laplace", "records", Fraction(21, 1000)),
        ("exponential", "candidates", Fraction(189, 1000))]
    hist = DPHistogram(epsilon="0.4").anonymize(data, noise=randomness(2))
    assert [(p.mechanism, p.target, p.epsilon, p.scope) for p in hist.privacy_losses] == [
        ("discrete-laplace", "histogram", Fraction(2, 5), "record")]


def test_an_ipa_step_that_does_not_report_is_an_internal_error():
    class Silent(IPA):
        def _pools(self, noise, accountant=None):
            return super()._pools(noise, None)  # the threshold and count noise go unreported

    with pytest.raises(InternalError, match=r"IPA: .* incurred \[exponential:value ε=0.3, "
                                            r"exponential:candidates ε=0.3\]"):
        Silent(epsilon=1, selection="paper").anonymize(small_data(200, 1), noise=randomness(1))
    with pytest.raises(InternalError, match=r"IPA: .* incurred \[exponential:value ε=0.3, "
                                            r"discrete-laplace:records ε=0.03, "
                                            r"exponential:candidates ε=0.27\]"):
        Silent(epsilon=1).anonymize(small_data(200, 1), noise=randomness(1))


# ------------------------------------------------------------------------------- EHR: ClinSimRR
@pytest.mark.parametrize("method, epsilon, expected", [("umaxrr", "0.5", "0.5"),
                                                       ("suppression", None, None)])
def test_the_ehr_manifest_states_what_the_mechanism_reported(method, epsilon, expected):
    from medanon.pipeline.clinsim import build_release, run_clinsim
    from medanon.data.synth.ehr import synth_ehr
    from medanon.pipeline.ehr import Pseudonyms

    run = run_clinsim(synth_ehr(300, seed=2), method=method, epsilon=epsilon,
                      rng=randomness(2))
    _, manifest = build_release(run, identifiers=Pseudonyms.fresh())
    privacy = manifest["privacy"]
    assert privacy["epsilon_per_element"] == expected
    if expected is None:
        assert privacy["mechanisms"] == [] and run.privacy_losses == ()
    else:
        assert run.privacy_losses == run.plan.planned_losses()
        assert [(m["mechanism"], m["target"], m["scope"], m["epsilon_exact"])
                for m in privacy["mechanisms"]] == [
            ("block-randomized-response", "code", "element", "0.5")]
