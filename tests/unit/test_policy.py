"""The series policy (pipeline/policy.py): one object however it is given, checked by the
method, and resolved against the store's pinned policy."""

from __future__ import annotations

import pytest

from medanon.errors import InputFormatError, ValidationError
from medanon.pipeline.policy import SeriesPolicy, resolve_policy


def _pin(policy: SeriesPolicy) -> dict:
    return {"policy": policy.to_dict(), "pinned_at": "2026-01-01T00:00:00+00:00", "history": []}


def test_one_policy_however_it_is_spelled(tmp_path):
    typed = SeriesPolicy.ppms_plus_plus(k=5, theta="frequency", protect={"Death": 0.3})
    flags = SeriesPolicy.of("ppms++", k=5, theta="frequency", protect=["Death=0.3"],
                            on_infeasible="refuse")
    toml = tmp_path / "release.toml"
    toml.write_text('[policy]\nmethod = "ppms++"\nk = 5\ntheta = "frequency"\n'
                    '[policy.protect]\nDeath = 0.3\n')
    assert typed == flags == SeriesPolicy.from_toml(toml)
    assert typed.differences(flags) == []
    # a default given or left out is one policy; a number as text is the number
    assert SeriesPolicy.of("ppms", k=3, theta="0.4") == SeriesPolicy.ppms(k=3, theta=0.4)
    assert SeriesPolicy.from_dict(typed.to_dict()) == typed
    assert typed.anonymizer().name == "ppms++"
    dp = SeriesPolicy.ppms_dp(k=5, theta=0.4, epsilon=1, perturb="all", on_case_budget="suppress")
    assert dp.method == "ppms-dp-all" and dp.on_case_budget == "suppress"
    assert typed.on_case_budget == "refuse"


def test_the_method_checks_every_value_naming_it(tmp_path):
    with pytest.raises(ValidationError, match="'k' parameter .* >= 2"):
        SeriesPolicy.ppms_plus_plus(k=1, theta=0.4)
    with pytest.raises(ValidationError, match="'alpha'"):
        SeriesPolicy.of("ppms", k=5, theta=0.4, alpha=0.2)
    with pytest.raises(ValidationError, match="takes the parameters"):
        SeriesPolicy.of("ppms", k=5, theta=0.4, kay=3)
    with pytest.raises(ValidationError, match="'perturb'"):
        SeriesPolicy.ppms_dp(k=5, theta=0.4, epsilon=1, perturb="labels")
    with pytest.raises(ValidationError, match="does not exist"):
        SeriesPolicy.of("ppms", k=5, theta=str(tmp_path / "absent.csv"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[release]\nmethod = 'ppms'\n")
    with pytest.raises(InputFormatError, match=r"\[policy\] table"):
        SeriesPolicy.from_toml(bad)
    bad.write_text("[policy\n")
    with pytest.raises(InputFormatError, match="not valid TOML"):
        SeriesPolicy.from_toml(bad)
    with pytest.raises(InputFormatError, match="does not exist"):
        SeriesPolicy.from_toml(tmp_path / "absent.toml")


def test_the_first_release_pins_and_later_ones_reuse_it():
    with pytest.raises(ValidationError, match="--method is required"):
        resolve_policy(None, given=None, flags={}, change_policy=False)
    policy, pin = resolve_policy(None, given=None,
                                 flags={"method": "ppms++", "k": 5, "theta": "frequency",
                                        "lifespan": None}, change_policy=False)
    assert pin["policy"] == policy.to_dict() and pin["history"] == []
    # no flags, or flags that agree: the pinned policy, nothing to pin again
    assert resolve_policy(pin, given=None, flags={}, change_policy=False) == (policy, None)
    assert resolve_policy(pin, given=None, flags={"k": 5}, change_policy=False) == (policy, None)
    # the same method and values again are the pinned policy; a flag left out keeps its
    # pinned value (theta here), it is no change
    assert resolve_policy(pin, given=None, flags={"method": "ppms++", "k": 5,
                                                  "theta": "frequency"},
                          change_policy=False) == (policy, None)
    assert resolve_policy(pin, given=None, flags={"method": "ppms++", "k": 5},
                          change_policy=False) == (policy, None)


def test_a_change_is_refused_unless_asked_for_and_then_recorded():
    pinned = _pin(SeriesPolicy.ppms_plus_plus(k=5, theta="frequency"))
    with pytest.raises(ValidationError, match=r"k: 5 -> 3.*--change-policy"):
        resolve_policy(pinned, given=None, flags={"k": 3}, change_policy=False)
    with pytest.raises(ValidationError, match=r"method: ppms\+\+ -> ms"):
        resolve_policy(pinned, given=None, flags={"method": "ms", "k": 5, "theta": 0.5},
                       change_policy=False)
    policy, pin = resolve_policy(pinned, given=None, flags={"k": 3}, change_policy=True)
    assert policy.parameters["k"] == 3 and policy.parameters["theta"] == "frequency"
    assert pin["history"][-1]["changes"] == ["k: 5 -> 3"]
    assert pin["history"][-1]["policy"] == pinned["policy"]
    # a policy file and flags together: one of them
    with pytest.raises(ValidationError, match="not both"):
        resolve_policy(pinned, given=SeriesPolicy.ppms(k=5, theta=0.4), flags={"k": 5},
                       change_policy=True)


def test_a_flag_not_given_is_no_change_of_the_pinned_policy():
    """Issue 44: repeating the pinned method, k and θ of a policy pinned with protect and
    raise-theta was refused as 'protect: {...} -> null': only the values given that differ
    are changes."""
    policy = SeriesPolicy.ppms_plus_plus(k=5, theta="frequency", protect={"Death": 0.3},
                                         on_infeasible="raise-theta", lifespan=4)
    pinned = _pin(policy)
    # as the CLI passes them: every flag, None when not given; a method in the docs' spelling
    flags = {"method": "PPMS++", "k": 5, "theta": "frequency", "protect": None,
             "on_infeasible": None, "lifespan": None, "alpha": None, "epsilon": None}
    assert resolve_policy(pinned, given=None, flags=flags, change_policy=False) == (policy, None)
    # only a value given that differs is a change, and the change is all that is named
    with pytest.raises(ValidationError) as refused:
        resolve_policy(pinned, given=None, flags={**flags, "k": 3}, change_policy=False)
    assert "(k: 5 -> 3)" in str(refused.value)
    changed, pin = resolve_policy(pinned, given=None, flags={**flags, "protect": ["Death=0.2"]},
                                  change_policy=True)
    assert pin["history"][-1]["changes"] == ['protect: {"Death": 0.3} -> {"Death": 0.2}']
    assert changed.parameters["on_infeasible"] == "raise-theta"
    assert changed.parameters["lifespan"] == 4
    # a file states the whole policy: the way to drop a parameter
    dropped, pin = resolve_policy(pinned, given=SeriesPolicy.ppms_plus_plus(
        k=5, theta="frequency", on_infeasible="raise-theta", lifespan=4), flags={},
        change_policy=True)
    assert "protect" not in dropped.parameters
    assert pin["history"][-1]["changes"] == ['protect: {"Death": 0.3} -> null']


def test_another_method_is_named_as_the_change_before_what_it_lacks():
    """Issue 44: ``release --method ms`` on a pinned PPMS++ series said '--k is required by
    method ms'; the change of method comes first, and the pinned parameters the new method
    takes are kept."""
    pinned = _pin(SeriesPolicy.ppms_plus_plus(k=5, theta="frequency", protect={"Death": 0.3},
                                              lifespan=4))
    with pytest.raises(ValidationError) as refused:
        resolve_policy(pinned, given=None, flags={"method": "ms"}, change_policy=False)
    message = str(refused.value)
    # ms takes no lifespan: that goes with the method, after it
    assert "(method: ppms++ -> ms; lifespan: 4 -> null)" in message
    assert "--change-policy" in message
    assert "required" not in message
    # acknowledged: ms with the pinned k, θ and protect; lifespan, which ms does not take, goes
    policy, pin = resolve_policy(pinned, given=None, flags={"method": "ms"}, change_policy=True)
    assert policy == SeriesPolicy.ms(k=5, theta="frequency", protect={"Death": 0.3})
    assert pin["history"][-1]["changes"] == ["method: ppms++ -> ms", "lifespan: 4 -> null"]
    # a method that needs more than the pinned policy has: the change first, then the need
    with pytest.raises(ValidationError) as refused:
        resolve_policy(pinned, given=None, flags={"method": "ha"}, change_policy=False)
    message = str(refused.value)
    assert message.index("method: ppms++ -> ha") < message.index("'alpha'")
    with pytest.raises(ValidationError, match="'alpha'") as refused:
        resolve_policy(pinned, given=None, flags={"method": "ha"}, change_policy=True)
    assert "method: ppms++ -> ha" not in str(refused.value)   # acknowledged: only the need
    # an unknown name is no change of method, only a bad name
    with pytest.raises(ValidationError, match="must be one of") as refused:
        resolve_policy(pinned, given=None, flags={"method": "mss"}, change_policy=False)
    assert "->" not in str(refused.value)
    # a store published before policies: its method change is named first too
    with pytest.raises(ValidationError, match=r"used ppms\+\+ with k=5.*method: ppms\+\+ -> ms"):
        resolve_policy(None, given=None, flags={"method": "ms"}, change_policy=False,
                       legacy={"name": "ppms++", "parameters": {"k": 5}})


def test_a_theta_file_is_pinned_by_its_content(tmp_path):
    theta = tmp_path / "theta.csv"
    theta.write_text("term,theta\n*,0.5\nDeath,0.3\n")
    pinned = _pin(SeriesPolicy.ppms(k=5, theta=str(theta)))
    assert pinned["policy"]["theta_sha256"]
    assert resolve_policy(pinned, given=None, flags={}, change_policy=False)[1] is None
    theta.write_text("term,theta\n*,0.5\nDeath,0.4\n")
    with pytest.raises(ValidationError, match="has changed since it was pinned"):
        resolve_policy(pinned, given=None, flags={}, change_policy=False)
    with pytest.raises(ValidationError, match="content of theta file"):
        resolve_policy(pinned, given=None, flags={"theta": str(theta)}, change_policy=False)
    policy, pin = resolve_policy(pinned, given=None, flags={"theta": str(theta)},
                                 change_policy=True)
    assert pin["policy"]["theta_sha256"] != pinned["policy"]["theta_sha256"]


def test_a_store_published_before_policies_keeps_its_method_and_k():
    legacy = {"name": "ppms++", "parameters": {"k": 5}}
    with pytest.raises(ValidationError, match=r"method: ppms\+\+ -> ms; k: 5 -> 2"):
        resolve_policy(None, given=None, flags={"method": "ms", "k": 2, "theta": 0.5},
                       change_policy=False, legacy=legacy)
    policy, pin = resolve_policy(None, given=None, flags={"k": 5, "theta": "frequency"},
                                 change_policy=False, legacy=legacy)
    assert policy.method == "ppms++" and pin["history"] == []
    policy, pin = resolve_policy(None, given=None, flags={"method": "ms", "k": 2, "theta": 0.5},
                                 change_policy=True, legacy=legacy)
    assert pin["history"][0]["changes"] == ["method: ppms++ -> ms", "k: 5 -> 2"]


# -- errors in the caller's words (issue 44) ----------------------------------------------------
def test_a_misspelt_or_missing_keyword_is_a_named_validation_error():
    with pytest.raises(ValidationError, match=r"The 'kk' parameter of SeriesPolicy.ppms_plus_plus "
                                              r"does not exist \(did you mean 'k'\?\)"):
        SeriesPolicy.ppms_plus_plus(kk=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="The 'theta' parameter of SeriesPolicy.ha is "
                                              "required"):
        SeriesPolicy.ha(k=5, alpha=0.3)  # type: ignore[call-arg]


def test_values_are_told_as_parameters_of_series_policy_and_k_before_theta():
    with pytest.raises(ValidationError, match="^The 'k' parameter of SeriesPolicy must be an "
                                              "integer >= 2; got -3"):
        SeriesPolicy.of("ppms++", k=-3)
    with pytest.raises(ValidationError, match="^The 'theta' parameter of SeriesPolicy must be"):
        SeriesPolicy.of("PPMS++", k=5, theta=2)
    assert SeriesPolicy.of("PPMS++", k=5, theta=0.2).method == "ppms++"


def test_a_policy_file_is_told_in_its_keys(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('[policy]\nmethod = "ppms++"\nk = 5\ntheta = 2\non_infeasible = "maybe"\n')
    with pytest.raises(ValidationError) as raised:
        SeriesPolicy.from_toml(path)
    assert str(raised.value).startswith(f"The 'theta' key of policy file {str(path)!r}")
    assert "--" not in str(raised.value) and "periodic_method" not in str(raised.value)
    path.write_text('[policy]\nmethod = "ppms++"\nk = 5\ntheta = 0.2\nthetaa = 0.3\n')
    with pytest.raises(ValidationError, match=r"has key\(s\) 'thetaa' it does not take"):
        SeriesPolicy.from_toml(path)
