"""An ε below the floor (0.01 per mechanism) is refused unless acknowledged (issue 29):
PPMS-DP per perturbed QID, IPA per step, the DP histogram; the acknowledgement is recorded in
the manifest's ``method.acknowledged``. ClinSimRR takes any ε (its output size does not grow)."""

from __future__ import annotations

from fractions import Fraction

import pytest

import medanon
from medanon.accounting import EPSILON_FLOOR, check_epsilon_floor
from medanon.anonymize import PPMSDPAll, PPMSDPNum
from medanon.anonymize.dphist import DPHistogram
from medanon.anonymize.ipa import IPA
from medanon.errors import ValidationError
from medanon.pipeline.methods import ehr_method, periodic_method, table_method
from medanon.pipeline.tabular import tabular_manifest
from medanon.random import randomness
from tests.unit.test_tabular_methods import small_data

DP = {"k": 3, "theta": 0.6, "on_infeasible": "raise-theta"}


def test_the_floor_is_one_hundredth() -> None:
    assert EPSILON_FLOOR == Fraction(1, 100)


@pytest.mark.parametrize("cls", [PPMSDPNum, PPMSDPAll])
@pytest.mark.parametrize("variant", ["strict", "paper"])
def test_ppms_dp_refuses_a_tiny_epsilon_per_qid(cls, variant) -> None:
    with pytest.raises(ValidationError) as caught:
        cls(k=3, theta=0.6, epsilon="1e-300", variant=variant)
    message = str(caught.value)
    assert message.startswith(f"The 'epsilon' parameter of {cls.__name__} gives 1e-300 per "
                              f"perturbed QID, below the floor of 0.01")
    assert "'allow_tiny_epsilon' parameter" in message and "swamps the domain" in message
    method = cls(k=3, theta=0.6, epsilon="1e-300", variant=variant, allow_tiny_epsilon=True)
    assert method.acknowledged == ("allow_tiny_epsilon",)
    assert cls(k=3, theta=0.6, epsilon=Fraction(1, 100), variant=variant).acknowledged == ()
    assert cls(k=3, theta=0.6, epsilon=0.01, variant=variant).acknowledged == ()


def test_the_acknowledgement_must_be_a_bool() -> None:
    with pytest.raises(ValidationError, match="The 'allow_tiny_epsilon' parameter of X must be "
                                              "True or False; got 'yes'"):
        check_epsilon_floor(Fraction(1), owner="X", allow_tiny_epsilon="yes", what="", consequence="")


def test_periodic_method_refuses_it_for_methods_without_epsilon() -> None:
    with pytest.raises(ValidationError, match="The 'epsilon' parameter of periodic_method|"
                                              "The 'epsilon' parameter of PPMSDPNum gives 0.001"):
        periodic_method("ppms-dp-num", epsilon=0.001, **DP)
    assert periodic_method("ppms-dp-num", epsilon=0.001, allow_tiny_epsilon=True,
                           **DP).acknowledged == ("allow_tiny_epsilon",)
    with pytest.raises(ValidationError, match="The 'allow_tiny_epsilon' parameter of "
                                              "periodic_method applies to methods ppms-dp-num"):
        periodic_method("ppms++", allow_tiny_epsilon=True, **DP)


def test_publisher_records_the_acknowledgement_in_each_manifest(tmp_path) -> None:
    data = medanon.Dataset.synthetic_faers(tmp_path / "faers", periods=1, cases=80, seed=2)
    with pytest.raises(ValidationError, match="below the floor of 0.01"):
        medanon.Publisher("ppms-dp-num", epsilon="1/1000", seed=1, **DP)
    series = medanon.Publisher("ppms-dp-num", epsilon="1/1000", allow_tiny_epsilon=True, seed=1,
                               **DP).publish(data)
    (release,) = series.releases_published
    assert release.manifest["method"]["acknowledged"] == ["allow_tiny_epsilon"]
    assert release.manifest["privacy_spent"]["epsilon_per_case"] == "0.001"
    series = medanon.Publisher("ppms-dp-num", epsilon=1, seed=1, **DP).publish(data)
    assert "acknowledged" not in series.releases_published[0].manifest["method"]


def test_ipa_checks_every_step_of_its_split() -> None:
    with pytest.raises(ValidationError, match=r"The 'epsilon' parameter of IPA gives 0.005 to its "
                                              r"suppression step \(0.1 of 0.05\), below the floor"):
        IPA(epsilon="0.05")
    assert IPA(epsilon="0.1").acknowledged == ()  # the smallest step is 0.01
    with pytest.raises(ValidationError, match="to its insertion step"):
        IPA(epsilon=1, budget_split=(0.5, 0.005, 0.25, 0.245))
    assert IPA(epsilon="0.05", allow_tiny_epsilon=True).acknowledged == ("allow_tiny_epsilon",)
    with pytest.raises(ValidationError, match="table_method|allow_tiny_epsilon"):
        table_method("ipa", epsilon="0.01")
    assert table_method("ipa", epsilon="0.01", allow_tiny_epsilon=True).acknowledged


def test_dp_histogram_records_the_acknowledgement_in_its_manifest() -> None:
    with pytest.raises(ValidationError, match="The 'epsilon' parameter of DPHistogram gives "
                                              "0.005 to its histogram, below the floor of 0.01"):
        DPHistogram(epsilon="0.005")
    data = small_data(200, 3)
    result = DPHistogram(epsilon="0.5", allow_tiny_epsilon=True).anonymize(
        data, noise=randomness(1))
    assert result.acknowledged == ("allow_tiny_epsilon",)
    manifest = tabular_manifest(result, data, randomness=randomness(1).describe())
    assert manifest["method"]["acknowledged"] == ["allow_tiny_epsilon"]
    plain = DPHistogram(epsilon="0.5").anonymize(data, noise=randomness(1))
    assert "acknowledged" not in tabular_manifest(plain, data, randomness={})["method"]
    with pytest.raises(ValidationError, match="'allow_tiny_epsilon' parameter of table_method "
                                              "does not apply to method 'kanon'"):
        table_method("kanon", allow_tiny_epsilon=True)


def test_clinsim_takes_any_epsilon() -> None:
    # one released code per element whatever epsilon: no blow-up, so no floor (docs/errors.md)
    assert ehr_method("clinsimrr", epsilon="1e-300").epsilon == Fraction(1, 10 ** 300)
