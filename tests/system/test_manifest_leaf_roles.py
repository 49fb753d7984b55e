"""Every manifest leaf has a role (issue 41; ``medanon.published.manifest_roles``).

Each method publishes small inputs that reach the optional branches (raise-theta,
suppress-terms, withheld cases, protected caps, DP-aware grouping, the final HA release); every
leaf of every manifest must have a role other than ``operator``. Leaves of role ``recomputed``
are recomputed from the published rows where that is cheap, leaves of role ``declared`` must be
listed by the declared model's ``input_dependence``, and the guarantee texts are the model's
own (rebuilt from the manifest) and hold no input count.
"""

from __future__ import annotations

import re

import pytest

import medanon
from medanon.models import model_from_manifest
from medanon.pipeline.methods import periodic_method, table_method
from medanon.published.manifest_roles import (MANIFEST_FACTS, leaf_paths, leaf_role,
                                              pattern_matches, unroled_leaves)

#: (label, method, parameters): every periodic method, with the branches that add leaves
PERIODIC = [
    ("ms", "ms", dict(k=4, theta=0.3, on_infeasible="raise-theta", max_withheld=1.0)),
    ("ppms-frequency-cap", "ppms", dict(k=3, theta="frequency", protect=["Death=0.1"],
                                        on_infeasible="raise-theta", max_withheld=1.0)),
    ("ppms+-suppress", "ppms+", dict(k=4, theta=0.3, on_infeasible="suppress-terms",
                                     max_withheld=1.0)),
    ("ppms++-raise", "ppms++", dict(k=5, theta=0.3, on_infeasible="raise-theta",
                                    max_withheld=1.0)),
    ("ha-suppress", "ha", dict(k=3, theta=0.4, alpha=0.3, on_infeasible="suppress-terms")),
    ("ha-withhold", "ha", dict(k=3, theta=0.4, alpha=0.3, on_infeasible="raise-theta",
                               on_unplaceable="withhold", max_withheld=1.0)),
    ("ppms-dp-num-aware", "ppms-dp-num", dict(k=3, theta=0.6, epsilon="0.1",
                                              on_infeasible="raise-theta", max_withheld=1.0,
                                              dp_aware_grouping=True, protect=["Death=0.5"])),
    ("ppms-dp-all", "ppms-dp-all", dict(k=5, theta=0.3, epsilon="1", max_withheld=1.0,
                                        on_infeasible="raise-theta")),
    ("ppms-dp-all-paper", "ppms-dp-all", dict(k=3, theta=0.4, epsilon="1", dp_variant="paper",
                                              on_infeasible="raise-theta", max_withheld=1.0)),
]


@pytest.fixture(scope="module")
def faers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("leaves") / "faers"
    return medanon.Dataset.synthetic_faers(folder, periods=3, cases=120, seed=8282)


def _publish(data, method, parameters):
    publisher = medanon.Publisher(periodic_method(method, **parameters), seed=11)
    return publisher.publish(data, allow_violations=True, allow_unknown_terms=True)


def _check_manifest(manifest, rows=None):
    assert unroled_leaves(manifest) == []
    family = str(manifest["format"]).split("/")[0]
    model = model_from_manifest(manifest, str(manifest.get("period") or "release"))
    declared = getattr(model, "input_dependence", {}) if model is not None else {}
    for path, empty in leaf_paths(manifest):
        if leaf_role(path, empty=empty, family=family) == "declared":
            assert any(pattern_matches(p, path, empty=empty) for p in declared), path
    if model is not None and "guarantee" in manifest.get("method", {}):
        # the texts are the model's, rebuilt from the manifest: no count typed per release
        assert manifest["method"]["guarantee"] == model.guarantee


@pytest.mark.slow
@pytest.mark.parametrize("label, method, parameters", PERIODIC, ids=[p[0] for p in PERIODIC])
def test_every_periodic_manifest_leaf_has_a_role(faers, label, method, parameters):
    series = _publish(faers, method, parameters)
    assert series.releases_published
    for release in series.releases_published:
        manifest, rows = release.manifest, release.rows
        _check_manifest(manifest, rows)
        # role "recomputed": from the published rows
        assert manifest["counts"]["cases"] == len(rows)
        assert manifest["counts"]["groups"] == rows["group"].nunique()
        assert manifest["details"]["groups"] == rows["group"].nunique()
        assert manifest["counts"]["counterfeit"] == 0
        # the operator-only facts went to the store's side, not away
        facts = {tuple(p): v for p, v in release.operator["private_details"][MANIFEST_FACTS]}
        assert ("counts", "reports") in facts and ("details", "cases") in facts
        assert release.operator_manifest["counts"]["suppressed"] == facts[("counts", "suppressed")]
        # raised θs are grid points, listed only for terms a published row holds
        held = {t for c in faers.schema.sensitive for cell in rows[c] for t in cell.split("|")
                if t}
        for term, entry in (manifest["details"].get("raised_theta") or {}).items():
            assert term in held and "count" not in entry
            assert entry["raised_to"] == pytest.approx(round(entry["raised_to"] / 0.05) * 0.05)
        overrides = manifest["details"]["theta_table"]["overrides"]
        named = set(manifest["details"]["theta_table"].get("caps") or {})
        assert set(overrides) <= held | named


def test_withheld_counts_are_not_in_the_guarantee_text(faers):
    """The issue's example: no input count (N, a term's count, c/N) in the published texts."""
    series = _publish(faers, "ppms-dp-all", dict(k=5, theta=0.3, epsilon="1", max_withheld=1.0,
                                                 on_infeasible="raise-theta"))
    for release in series.releases_published:
        facts = {tuple(p): v for p, v in release.operator["private_details"][MANIFEST_FACTS]}
        counts = {str(v) for p, v in facts.items() if isinstance(v, int) and v > 9}
        texts = " ".join([release.manifest["method"]["guarantee"],
                          release.manifest["privacy_spent"]["guarantee"]])
        numbers = set(re.findall(r"\d+", texts))
        assert not numbers & counts
        # the strict claim names its neighbour relation in its first sentence
        assert texts.startswith("The epsilon-DP claim is for neighbouring inputs that hold the "
                                "same cases") and "adding or removing a case is NOT covered" in texts


def test_one_off_manifest_leaves_have_roles():
    table = medanon.Table.synthetic(600, seed=3)
    for method, parameters in (("ipa", dict(epsilon="1")), ("kanon", dict(k=5)),
                               ("dphist", dict(epsilon="1"))):
        release = medanon.Publisher(table_method(method, **parameters),
                                    seed=4).publish(table)
        _check_manifest(release.manifest)
        counts = release.manifest["counts"]
        assert counts["released_rows"] == len(release.rows)
        assert counts["classes"] == release.rows["group"].nunique()
        if method == "kanon":   # every record published, suppressed ones in class '*'
            assert counts["records"] == len(release.rows)
    ehr = medanon.EhrRecords.synthetic(300, seed=1)
    release = medanon.Publisher("clinsimrr", seed=4, epsilon="1").publish(ehr)
    _check_manifest(release.manifest)
    assert release.manifest["counts"]["patients"] == release.rows["patient"].nunique()


def test_a_leaf_without_a_role_is_named():
    assert unroled_leaves({"format": "medanon-release/1", "counts": {"reports": 3},
                           "details": {"new_thing": 1}}) == ["counts.reports (operator)",
                                                             "details.new_thing"]
