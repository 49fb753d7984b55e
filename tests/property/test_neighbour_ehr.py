"""Neighbour tests of the EHR releases (ClinSimRR and UMAXRR; issue 17 "trust core").

(a) Nothing deterministic that is published may depend on a released patient's codes: the
    manifest's JSON leaves and the release's properties that do not change between two seeds
    must not change when one released patient's codes do (a Hypothesis property over random
    neighbours, at category and full code level).
(b) The output distribution of one released element under A and A' stays within e^ε on the
    protected outputs (binned frequencies, fixed seeds).
(c) The check is not vacuous: a published digest or count of the released patients, or the old
    extension of the code tree with the released patients' codes, is flagged.

The helper is :mod:`tests.neighbours_ehr` (its docstring defines the neighbour and the seeds).
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from medanon.pipeline import clinsim as ehr_pipeline
from medanon.data.ehr import EhrData
from medanon.data.synth.ehr import synth_ehr
from medanon.hierarchies.icd9 import icd9_category, icd9_tree, known_category_codes, sensitive_preset
from medanon.random import randomness
from medanon.pipeline.ehr import Pseudonyms
from tests.conftest import invoke_cli, run_cli
from tests.neighbours_ehr import (SPLIT_SEED, TIME_DEPENDENT, admissions_of, changed,
                                  deterministic_keys, epsilon_violations, max_log_ratio, release,
                                  released_patients, with_codes)

PATIENTS = 150
DATA_SEED = 5
SEED, OTHER_SEED = 11, 12
EPSILON = 1

# Codes a neighbour may hold beyond those of the data: sensitive ones, codes the (auxiliary-only)
# tree does not hold (retired, internal nodes, categories the package lacks, inside a chapter's
# range or outside every chapter).
EXTRA_CODES = {"category": ["303", "042", "304", "043", "019", "V99"],
               "full": ["30390", "042", "V08", "0420", "3040", "250", "2500", "V9999"]}


@dataclass
class Case:
    method: str
    level: str
    data: EhrData
    patients: list[str]
    pool: list[str]
    base: dict
    keys: set[str]

    def release(self, data: EhrData, folder: Path, seed: int = SEED) -> dict:
        return release(data, folder, seed=seed, method=self.method, epsilon=EPSILON)

    def codes_of(self, patient: str) -> list[str]:
        events = self.data.events
        return events.loc[events["patient"] == patient, "code"].tolist()


@functools.lru_cache(maxsize=2)
def base_data(level: str) -> EhrData:
    return synth_ehr(PATIENTS, seed=DATA_SEED, code_level=level)


def make_case(method: str, level: str, folder: Path) -> Case:
    data = base_data(level)
    folder.mkdir(exist_ok=True)
    base = release(data, folder / "a", seed=SEED, method=method, epsilon=EPSILON)
    other = release(data, folder / "b", seed=OTHER_SEED, method=method, epsilon=EPSILON)
    keys = deterministic_keys(base, other)
    pool = sorted(set(data.codes) | set(EXTRA_CODES[level]))
    return Case(method, level, data, released_patients(data), pool, base, keys)


@pytest.fixture(scope="module", params=[("clinsimrr", "category"), ("umaxrr", "category"),
                                        ("clinsimrr", "full"), ("umaxrr", "full")],
                ids=lambda p: "-".join(p))
def case(request, tmp_path_factory):
    return make_case(*request.param, tmp_path_factory.mktemp("neighbour-base"))


def neighbour_codes(draw, case: Case, patient: str) -> list[str]:
    codes: list[str] = []
    for size in admissions_of(case.data, patient):
        codes += draw(st.lists(st.sampled_from(case.pool), min_size=size, max_size=size, unique=True))
    return codes


def first_element_free(data: EhrData, codes: list[str]) -> tuple[str, list[str]]:
    """The first released patient whose first admission holds none of ``codes`` (so its first
    element can become any of them), with its codes."""
    for patient in released_patients(data):
        original = data.events.loc[data.events["patient"] == patient, "code"].tolist()
        if not set(codes) & set(original[:admissions_of(data, patient)[0]]):
            return patient, original
    raise AssertionError("no released patient fits")


# -- (a) deterministic fields ------------------------------------------------------------------

def test_the_deterministic_fields_are_found(case):
    """The classification is what it should be, so (a) compares the fields that matter: Y_P, the
    blocks, the sensitive set, the counts and the record structure are deterministic; the released
    codes, the pseudonyms and the seed are not."""
    keys = case.keys
    for key in ("manifest.sensitive.__len__", "manifest.sensitive[0]", "manifest.protected.codes[0]",
                "manifest.protected.size", "manifest.protected.p_S", "manifest.counts.elements",
                "manifest.codes.tree.leaves", "manifest.privacy.guarantee[0]",
                "manifest.privacy.does_not_guarantee[0]", "manifest.identifiers.key",
                "release.rows", "release.structure.sorted", "release.time.sorted",
                "release.elements_per_patient.sorted"):
        assert key in keys, key
    for key in ("release.code.sorted", "release.code.in_row_order", "release.patient.sorted",
                "release.admission.sorted", "release.admission_rank.in_row_order",
                "manifest.rng.seed", *TIME_DEPENDENT):
        assert key not in keys, key
    if case.method == "clinsimrr":
        assert "manifest.protected.blocks.__keys__" in keys
    assert len(keys) > 50


@given(st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_deterministic_field_depends_on_a_released_patients_codes(case, data):
    patient = data.draw(st.sampled_from(case.patients), label="released patient")
    codes = neighbour_codes(data.draw, case, patient)
    assume(codes != case.codes_of(patient))
    neighbour = with_codes(case.data, patient, codes)
    with tempfile.TemporaryDirectory() as tmp:
        fields = case.release(neighbour, Path(tmp) / "a-prime")
    assert changed(case.base, fields, case.keys) == {}


# -- (b) one element's output distribution within e^ε ------------------------------------------

N_DRAWS = 200_000


@pytest.mark.parametrize("method", ["clinsimrr", "umaxrr"])
def test_one_released_elements_distribution_stays_within_e_epsilon(method, tmp_path):
    data = base_data("category")
    protected = ehr_pipeline.run_clinsim(data, method=method, epsilon=EPSILON,
                                        rng=randomness(SEED),
                                        split_rng=randomness(SPLIT_SEED)).plan.protected
    free = next(c for c in data.codes if c not in protected)     # an unprotected code
    patient, original = first_element_free(data, ["303", free, "042"])
    runs = {}
    for name, first in (("A", "303"), ("A'", free), ("A''", "042")):
        neighbour = with_codes(data, patient, [first, *original[1:]])
        runs[name] = ehr_pipeline.run_clinsim(neighbour, method=method, epsilon=EPSILON,
                                             rng=randomness(SEED),
                                             split_rng=randomness(SPLIT_SEED))
    plan = runs["A"].plan
    for other in runs.values():                    # Y_P and the blocks: the same on neighbours
        assert other.plan.protected == plan.protected == protected
        assert np.array_equal(other.plan.mechanism.blocks, plan.mechanism.blocks)
    assert "303" in protected and "042" in protected

    def sample(name: str, code: str, seed: int) -> np.ndarray:
        run = runs[name]
        return ehr_pipeline.release_codes(run.plan, run.tree, np.full(N_DRAWS, code, dtype=object),
                                         randomness(seed))

    outputs = list(plan.protected)
    a, unprotected, other = sample("A", "303", 1), sample("A'", free, 2), sample("A''", "042", 3)
    assert set(a) <= set(outputs)                  # a protected code stays in Y_P
    for b in (unprotected, other):
        assert epsilon_violations(a, b, outputs, EPSILON) == {}
        # The bound is attained (303's own block against an unprotected input): the test has power.
        assert max_log_ratio(a, b, outputs) == pytest.approx(EPSILON, abs=0.1)
        assert epsilon_violations(a, b, outputs, 0.8 * EPSILON)
    # Outside Y_P there is no ratio bound (documented): an unprotected input is kept as itself
    # with probability 1 − p_S, which a protected input never is.
    kept = float(np.mean(unprotected == free))
    p_s = plan.mechanism.p_s
    assert kept == pytest.approx(1 - p_s, abs=5 * math.sqrt(p_s * (1 - p_s) / N_DRAWS))
    assert epsilon_violations(a, unprotected, [free], EPSILON) == {free: math.inf}


# -- (c) the check catches a leak -------------------------------------------------------------

def leak_neighbour(case: Case, code: str) -> EhrData:
    """A' with ``code`` as the first code of a released patient that does not hold it."""
    patient, original = first_element_free(case.data, [code])
    assert original[0] != code
    return with_codes(case.data, patient, [code, *original[1:]])


def add_digest(build):
    """The leak of issue 17: the manifest carries a hash of the released patients' records."""
    def leaky(run, **kwargs):
        table, manifest = build(run, **kwargs)
        manifest["input_sha256"] = run.evaluation.digest()
        return table, manifest
    return leaky


def add_sensitive_count(build):
    """A count of the released patients' sensitive elements (like ``clipped_to_domain``)."""
    def leaky(run, **kwargs):
        table, manifest = build(run, **kwargs)
        manifest["counts"]["sensitive_elements"] = run.metrics["sensitive_elements"]
        return table, manifest
    return leaky


@pytest.mark.parametrize("leak", [add_digest, add_sensitive_count], ids=["digest", "count"])
def test_the_check_flags_a_manifest_field_derived_from_the_released_patients(leak, monkeypatch,
                                                                            tmp_path):
    honest = make_case("clinsimrr", "category", tmp_path / "honest")
    neighbour = leak_neighbour(honest, "303")
    assert changed(honest.base, honest.release(neighbour, tmp_path / "honest-n"), honest.keys) == {}

    monkeypatch.setattr(ehr_pipeline, "build_release", leak(ehr_pipeline.build_release))
    leaky = make_case("clinsimrr", "category", tmp_path / "leaky")
    name = ("manifest.input_sha256" if leak is add_digest
            else "manifest.counts.sensitive_elements")
    assert name in leaky.keys                       # deterministic under two seeds ...
    found = changed(leaky.base, leaky.release(neighbour, tmp_path / "leaky-n"), leaky.keys)
    assert set(found) == {name}                     # ... and flagged on the neighbour


def test_the_check_flags_the_old_tree_extension_with_released_codes(monkeypatch, tmp_path):
    """Before issue 17 the tree was extended with the codes of *all* patients. At full level a
    released patient's retired HIV code 042.0 then became a leaf, the va-7332 preset marked it,
    and the published sensitive set and Y_P named it."""
    honest = make_case("umaxrr", "full", tmp_path / "honest")
    neighbour = leak_neighbour(honest, "0420")
    assert changed(honest.base, honest.release(neighbour, tmp_path / "honest-n"), honest.keys) == {}

    run_clinsim = ehr_pipeline.run_clinsim

    def old_run_clinsim(data, **kwargs):
        def old_tree(level, auxiliary, sensitive_codes=()):
            return icd9_tree(level, extra_codes=(*known_category_codes(data.codes), *sensitive_codes))
        with monkeypatch.context() as patch:
            patch.setattr(ehr_pipeline, "release_tree", old_tree)
            return run_clinsim(data, **kwargs)

    monkeypatch.setattr(ehr_pipeline, "run_clinsim", old_run_clinsim)
    leaky = make_case("umaxrr", "full", tmp_path / "leaky")
    found = changed(leaky.base, leaky.release(neighbour, tmp_path / "leaky-n"), leaky.keys)
    assert "manifest.sensitive.__len__" in found and "manifest.protected.size" in found
    assert "manifest.codes.tree.leaves" in found
    assert found["manifest.protected.size"][1] == found["manifest.protected.size"][0] + 1
    assert "0420" in sensitive_preset("va-7332", icd9_tree("full", extra_codes=("0420",)))


@pytest.fixture(scope="module")
def digest_leak(tmp_path_factory):
    """A ClinSimRR case whose manifest carries the digest of the released patients' records."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ehr_pipeline, "build_release", add_digest(ehr_pipeline.build_release))
        return make_case("clinsimrr", "category", tmp_path_factory.mktemp("digest-leak"))


@given(st.data())
@settings(max_examples=10, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_every_random_neighbour_exposes_a_published_digest(digest_leak, data):
    """The property of (a), run on the leaky pipeline: every random neighbour is flagged."""
    case = digest_leak
    patient = data.draw(st.sampled_from(case.patients), label="released patient")
    codes = neighbour_codes(data.draw, case, patient)
    assume(codes != case.codes_of(patient))
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(ehr_pipeline, "build_release", add_digest(ehr_pipeline.build_release))
        fields = case.release(with_codes(case.data, patient, codes), Path(tmp) / "a-prime")
    assert set(changed(case.base, fields, case.keys)) == {"manifest.input_sha256"}


# -- the same through the command line ---------------------------------------------------------

def test_the_command_publishes_the_same_manifest_for_a_neighbour(tmp_path):
    """``medanon clinsim --seed 1`` on MIMIC-layout files A and A' (one released patient's code
    changed in DIAGNOSES_ICD.csv): the same seed gives the same split, so the manifests must be
    identical but for the time of publication, and — with one operator key file for both, as a
    seeded run's own key is fresh each time — the release's identifiers and structure too."""
    source = tmp_path / "a"
    assert invoke_cli("synth", "ehr", source, "--patients", 300, "--seed", 2).returncode == 0
    key_file = tmp_path / "keys" / "ehr.key"
    key_file.parent.mkdir()
    args = ["--admissions", source / "ADMISSIONS.csv", "--method", "clinsimrr", "--epsilon", "1",
            "--seed", "1", "--allow-seeded", "--pseudonym-key", key_file, "--json"]
    first = run_cli("clinsim", source / "DIAGNOSES_ICD.csv", *args, "--out", tmp_path / "rel-a")
    assert first.returncode == 0, first.stderr

    # A released patient (found through its pseudonym, which the key file lets us recompute).
    diagnoses = pd.read_csv(source / "DIAGNOSES_ICD.csv", dtype=str, keep_default_na=False)
    released = pd.read_csv(tmp_path / "rel-a" / "release.csv", dtype=str, keep_default_na=False)
    subjects = diagnoses["SUBJECT_ID"].unique()
    pseudonyms = Pseudonyms("key-file", bytes.fromhex(key_file.read_text().strip()))
    by_pseudonym = dict(zip(pseudonyms.patients(subjects), subjects))
    # A neighbour changes the values of a released patient's codes, not how many there are
    # (tests/neighbours_ehr.py): the row changed holds the only code of its category in its
    # admission, and its new category is in none of them. (Which patient comes first in the
    # release follows the fresh pseudonym key: picking a row whose category another code of its
    # admission shares made one element more, a different input size, in some runs.)
    category = diagnoses["ICD9_CODE"].map(icd9_category)
    alone = category.groupby([diagnoses["HADM_ID"], category]).transform("size").eq(1)
    row = next(int(r) for patient in released["patient"].unique()
               for r in diagnoses.index[(diagnoses["SUBJECT_ID"] == by_pseudonym[patient])
                                        & alone].tolist())
    admission = diagnoses.loc[row, "HADM_ID"]
    present = set(category[diagnoses["HADM_ID"] == admission])
    new_code = next(c for c in ("30390", "V08", "0420", "4019") if icd9_category(c) not in present)
    neighbour = tmp_path / "a-prime"
    neighbour.mkdir()
    diagnoses.loc[row, "ICD9_CODE"] = new_code
    diagnoses.to_csv(neighbour / "DIAGNOSES_ICD.csv", index=False)
    second = run_cli("clinsim", neighbour / "DIAGNOSES_ICD.csv", *args, "--out", tmp_path / "rel-b")
    assert second.returncode == 0, second.stderr
    assert json.loads(first.stdout)["input_sha256"] != json.loads(second.stdout)["input_sha256"]

    manifests = [json.loads((tmp_path / r / "manifest.json").read_text()) for r in ("rel-a", "rel-b")]
    for manifest in manifests:
        for key in TIME_DEPENDENT:
            manifest.pop(key.removeprefix("manifest."))
    assert manifests[0] == manifests[1]
    tables = [pd.read_csv(tmp_path / r / "release.csv", dtype=str, keep_default_na=False)
              for r in ("rel-a", "rel-b")]
    structure = ["patient", "admission", "admission_rank", "time", "position"]
    assert tables[0][structure].equals(tables[1][structure])
