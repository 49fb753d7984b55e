"""Issue 33's first done-when: in a store, ``release`` of the next quarter with no flags
publishes with the pinned policy; a different method or k without ``--change-policy`` is refused
with the store unchanged; with it, the change is pinned and recorded in the manifest."""

from __future__ import annotations

import json

import pytest

import medanon
from medanon.data.synth.faers import write_faers_series
from medanon.store import ReleaseStore
from tests.conftest import assert_user_error, invoke_cli, snapshot


@pytest.fixture()
def store(tmp_path):
    write_faers_series(tmp_path / "in", periods=3, cases=200, seed=4)
    path = tmp_path / "s.duckdb"
    assert invoke_cli("ingest", tmp_path / "in", "--store", path).returncode == 0
    return path


def _method(store, period) -> dict:
    with ReleaseStore.open(store, read_only=True) as db:
        return db.manifest(period)["method"]


def test_the_next_quarter_publishes_with_the_pinned_policy(store, tmp_path):
    # --max-withheld 0.5 pinned with the policy: the releases draw secure randomness, and at
    # k 3 a grouping may withhold just over the default 10% of 200 cases, which is not what
    # this test is about (pinning and changing the policy)
    first = invoke_cli("release", "2020Q1", "--store", store, "--method", "ppms++", "--k", "5",
                       "--theta", "frequency", "--protect", "Death=0.3",
                       "--on-infeasible", "raise-theta", "--max-withheld", "0.5")
    assert first.returncode == 0, first.stderr
    second = invoke_cli("release", "2020Q2", "--store", store)       # no flags at all
    assert second.returncode == 0, second.stderr
    assert "series policy: ppms++(k=5" in second.stderr
    one, two = _method(store, "2020Q1"), _method(store, "2020Q2")
    assert two["name"] == "ppms++" and two["parameters"]["k"] == 5
    assert two["parameters"]["theta"] == one["parameters"]["theta"]
    assert "acknowledged" not in two
    # another method, or another k: refused, naming the change, the store as it was
    before = snapshot(tmp_path)
    for args, change in ((("--method", "ms", "--k", "5", "--theta", "0.5"),
                          "method: ppms++ -> ms; theta"),
                         (("--k", "3"), "k: 5 -> 3")):
        result = invoke_cli("release", "2020Q3", "--store", store, *args)
        assert_user_error(result, "ValidationError", change)
        assert "--change-policy" in result.stderr
    assert snapshot(tmp_path) == before
    # with --change-policy: published, the new policy pinned with its history, the manifest
    # acknowledging it
    changed = invoke_cli("release", "2020Q3", "--store", store, "--k", "3", "--change-policy")
    assert changed.returncode == 0, changed.stderr
    three = _method(store, "2020Q3")
    assert three["parameters"]["k"] == 3 and three["acknowledged"] == ["change_policy"]
    pinned = json.loads(invoke_cli("inspect", "--store", store, "--json").stdout)["series_policy"]
    assert pinned["policy"]["parameters"]["k"] == 3
    assert pinned["history"][0]["changes"] == ["k: 5 -> 3"]
    assert pinned["policy"]["parameters"]["protect"] == {"Death": 0.3}


def test_the_pinned_flags_repeated_are_no_change_and_another_method_is_named(store, tmp_path):
    """Issue 44: repeating the pinned method, k and θ (not --protect, not --on-infeasible)
    was refused as 'protect: {...} -> null'; ``--method ms`` said '--k is required by method
    ms' instead of naming the change of policy."""
    first = invoke_cli("release", "2020Q1", "--store", store, "--method", "ppms++", "--k", "5",
                       "--theta", "frequency", "--protect", "Death=0.3",
                       "--on-infeasible", "raise-theta")
    assert first.returncode == 0, first.stderr
    # the first release says what it pins, its infeasibility policy included
    assert 'series policy pinned by this release: ppms++(k=5, on_infeasible="raise-theta"' in \
        first.stderr and "(the default)" not in first.stderr
    before = snapshot(tmp_path)
    result = invoke_cli("release", "2020Q2", "--store", store, "--method", "ms")
    assert_user_error(result, "ValidationError", "(method: ppms++ -> ms)")
    assert "--k" not in result.stderr and "--change-policy" in result.stderr
    assert snapshot(tmp_path) == before
    again = invoke_cli("release", "2020Q2", "--store", store, "--method", "PPMS++", "--k", "5",
                       "--theta", "frequency")
    assert again.returncode == 0, again.stderr
    assert "series policy: ppms++(k=5" in again.stderr and "(pinned)" in again.stderr
    two = _method(store, "2020Q2")
    assert two["parameters"]["on_infeasible"] == "raise-theta" and "acknowledged" not in two


def test_a_policy_file_pins_the_series_and_python_uses_the_same_object(store, tmp_path):
    policy = tmp_path / "release.toml"
    policy.write_text('[policy]\nmethod = "ppms"\nk = 4\ntheta = 0.6\n'
                      'on_infeasible = "raise-theta"\n')
    result = invoke_cli("release", "2020Q1", "--store", store, "--policy", policy)
    assert result.returncode == 0, result.stderr
    assert _method(store, "2020Q1")["parameters"]["k"] == 4
    assert_user_error(invoke_cli("release", "2020Q2", "--store", store, "--policy", policy,
                                 "--k", "4"), "ValidationError", "not both")
    assert invoke_cli("release", "2020Q2", "--store", store).returncode == 0
    with ReleaseStore.open(store, read_only=True) as db:
        pinned = medanon.SeriesPolicy.from_dict(db.series_policy()["policy"])
    assert pinned == medanon.SeriesPolicy.from_toml(policy)
    assert pinned == medanon.SeriesPolicy.ppms(k=4, theta=0.6, on_infeasible="raise-theta")
    publisher = medanon.Publisher(pinned, seed=3)
    assert publisher.policy == pinned and publisher.name == "ppms"
