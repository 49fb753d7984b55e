"""End to end: ``medanon synth ehr`` and ``medanon clinsim`` with ClinSimRR and its baselines (003).

The synthetic data (6,000 patients) is written once per module with ``medanon synth ehr``; every
method runs once on it through the command line (``python -m medanon``, as a user would). The
MIMIC-III demo in ``../shared`` is used when present and skipped otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medanon.cli.app import main
from medanon.pipeline.clinsim import run_clinsim
from medanon.data.ehr import load_ehr_csv, load_mimic
from medanon.random import randomness
from medanon.pipeline.ehr import Pseudonyms
from tests.conftest import (MIMIC_DEMO, assert_user_error, invoke_cli, needs_mimic_demo, run_cli,
                            snapshot)

PATIENTS = 6000
DATA_SEED = 1
SEEDED = ["--seed", "1", "--allow-seeded"]
METHODS = ("clinsimrr", "umaxrr", "umaxrr-yp", "rr", "suppression")
RELEASE_HEADER = "patient,admission,admission_rank,time,position,code"
KEYS = ["patient", "admission", "position"]
#: the operator key the test holds (``--pseudonym-key``), so that it can join released rows to
#: their input rows; a seeded run's own key is fresh each time and nobody can recompute it
TEST_KEY = bytes(range(32))
TEST_PSEUDONYMS = Pseudonyms("key-file", TEST_KEY)


def run_json(*args, runner=run_cli):
    result = runner(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def method_args(method):
    return ["--method", method, *([] if method == "suppression" else ["--epsilon", "1"]), *SEEDED]


def read_release(folder):
    return pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)


def all_keys(value):
    """Every key of a nested JSON value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from all_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from all_keys(inner)


def pseudonymized(data, pseudonyms: Pseudonyms):
    """The input events with the identifiers a release made with ``pseudonyms`` publishes."""
    events = data.events
    return events.assign(
        admission=pseudonyms.admissions(events["patient"], events["admission"]),
        patient=pseudonyms.patients(events["patient"]))


def joined(released: pd.DataFrame, data, pseudonyms: Pseudonyms = TEST_PSEUDONYMS) -> pd.DataFrame:
    """Each released row next to its input row (matched on patient, admission, position; the
    release's pseudonyms are recomputed from the key the test holds)."""
    events = pseudonymized(data, pseudonyms)
    original = events.assign(position=events["position"].astype(str))
    original = original.rename(columns={"code": "original", "admission_rank": "original_rank",
                                        "time": "original_time"})
    merged = released.merge(original[[*KEYS, "original", "original_rank", "original_time"]],
                            on=KEYS, how="left", validate="one_to_one")
    assert merged["original"].notna().all(), "a released row has no input row"
    return merged


# -- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ehr") / "synthetic"
    summary = run_json("synth", "ehr", folder, "--patients", PATIENTS, "--seed", DATA_SEED)
    return folder, summary


@pytest.fixture(scope="module")
def inputs(synth):
    folder, _ = synth
    return folder / "DIAGNOSES_ICD.csv", folder / "ADMISSIONS.csv"


@pytest.fixture(scope="module")
def data(inputs):
    return load_mimic(*inputs, code_level="category")


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    """:data:`TEST_KEY` in an operator key file (mode 0600, outside every release folder)."""
    path = tmp_path_factory.mktemp("keys") / "ehr.key"
    path.write_text(TEST_KEY.hex() + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def runs(inputs, key_file, tmp_path_factory):
    diagnoses, admissions = inputs
    out = tmp_path_factory.mktemp("clinsim")
    return {m: (run_json("clinsim", diagnoses, "--admissions", admissions, *method_args(m),
                         "--pseudonym-key", key_file, "--out", out / m), out / m)
            for m in METHODS}


# -- 1. synth ehr ----------------------------------------------------------------------------------

def test_synth_ehr_writes_mimic_files(synth, data):
    folder, summary = synth
    assert summary["patients"] == PATIENTS and summary["seed"] == DATA_SEED
    assert sorted(Path(p).name for p in summary["files"]) == ["ADMISSIONS.csv", "DIAGNOSES_ICD.csv"]
    assert sorted(p.name for p in folder.iterdir()) == ["ADMISSIONS.csv", "DIAGNOSES_ICD.csv"]
    diagnoses = pd.read_csv(folder / "DIAGNOSES_ICD.csv", dtype=str, nrows=5)
    assert {"SUBJECT_ID", "HADM_ID", "SEQ_NUM", "ICD9_CODE"} <= set(diagnoses.columns)
    admissions = pd.read_csv(folder / "ADMISSIONS.csv", dtype=str, nrows=5)
    assert {"SUBJECT_ID", "HADM_ID", "ADMITTIME", "DISCHTIME"} <= set(admissions.columns)
    assert data.n_patients == PATIENTS and data.dates_reliable


def test_synth_ehr_refuses_a_non_empty_folder(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    result = invoke_cli("synth", "ehr", taken, "--patients", "50", "--seed", "1", "--json")
    assert_user_error(result, "StoreError", "already exists")
    assert result.stdout == ""
    assert snapshot(taken) == {"keep.txt": b"mine"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no staging folder left


# -- 2. each method: JSON, release folder, manifest -------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_release_folder_json_and_manifest(runs, data, method):
    summary, folder = runs[method]
    assert summary["method"] == method
    for key in ("cil", "kl", "kl_estimated", "map"):
        assert isinstance(summary[key], float) and math.isfinite(summary[key]), key
        assert summary[key] >= 0, key
    assert summary["map"] <= 1 and summary["map_undefined_reason"] is None
    assert isinstance(summary["protected_size"], int) and summary["protected_size"] >= 8
    if method == "clinsimrr":
        assert 1 <= summary["block_size"] <= 16  # default --b-max
    else:
        assert summary["block_size"] == (0 if method == "suppression" else 1)
    assert summary["guarantee"] and all(isinstance(g, str) for g in summary["guarantee"])
    assert summary["dates_reliable"] is True

    assert (folder / "release.csv").read_text().split("\n", 1)[0] == RELEASE_HEADER
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "release.csv"]
    released = read_release(folder)
    assert len(released) == summary["elements_released"]

    # Only the evaluation patients (about 20%) are published, each with all of its elements, under
    # pseudonyms (here under the test's key file), rows sorted by pseudonym.
    patients = released["patient"].unique()
    assert len(patients) == summary["patients"]["evaluation"]
    assert summary["patients"]["evaluation"] + summary["patients"]["auxiliary"] == PATIENTS
    assert abs(len(patients) - 0.2 * PATIENTS) <= 0.01 * PATIENTS
    events = pseudonymized(data, TEST_PSEUDONYMS)
    assert set(patients) <= set(events["patient"])
    assert not set(patients) & set(data.events["patient"])        # no source ID is published
    assert not set(released["admission"]) & set(data.events["admission"])
    in_input = events.loc[events["patient"].isin(patients)]
    assert len(in_input) == len(released)
    order = released.assign(rank=released["admission_rank"].astype(int),
                            pos=released["position"].astype(int))
    assert order.equals(order.sort_values(["patient", "rank", "pos"], kind="stable"))

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "medanon-ehr-release/1"
    assert manifest["method"]["name"] == method
    assert manifest["protected"]["codes"] and len(manifest["protected"]["codes"]) == \
        summary["protected_size"]
    assert set(manifest["sensitive"]) <= set(manifest["protected"]["codes"])
    assert "input_sha256" not in set(all_keys(manifest))
    assert summary["input_sha256"] not in (folder / "manifest.json").read_text()  # nor its value
    assert manifest["counts"]["elements"] == len(released)
    assert manifest["counts"]["patients"] == len(patients)
    assert manifest["split"]["evaluation_patients"] == len(patients)
    assert manifest["rng"]["seed"] == 1
    assert manifest["identifiers"]["pseudonymized"] is True
    assert manifest["identifiers"]["key"] == "operator-held key file (not published)"
    assert manifest["time"]["resolution"] == "day" and summary["time_resolution"] == "day"
    assert manifest["codes"]["tree"]["extended_with"] == "codes of the auxiliary split only"
    assert manifest["privacy"]["guarantee"] == summary["guarantee"]
    if method != "suppression":
        assert "epsilon = 1" in manifest["privacy"]["guarantee"][0]
    if method in ("clinsimrr", "umaxrr-yp"):
        statement = " ".join(manifest["privacy"]["does_not_guarantee"])
        assert "non-private statistic of the auxiliary patients" in statement
        assert "gamma = 0.05" in statement
    assert any("extended only with codes of the auxiliary split" in g
               for g in manifest["privacy"]["guarantee"])

    # A released code outside the protected set is the true code; a protected input is always
    # released inside the protected set. Unprotected inputs are replaced (by a protected code)
    # only by the utility-optimized mechanisms (p_S > 0); rr and suppression keep them.
    merged = joined(released, data)
    assert (merged["admission_rank"] == merged["original_rank"].astype(str)).all()
    # time: whole days since the patient's first admission, the input's time floored
    np.testing.assert_array_equal(merged["time"].astype(float), np.floor(merged["original_time"]))
    codes = manifest["protected"]["codes"]
    out_of_protected = ~merged["code"].isin([*codes, "*"])
    assert (merged.loc[out_of_protected, "code"] == merged.loc[out_of_protected, "original"]).all()
    protected_input = merged["original"].isin(codes)
    unprotected_changed = ~protected_input & (merged["code"] != merged["original"])
    if method == "suppression":
        assert summary["p_S"] is None
    else:
        assert merged.loc[protected_input, "code"].isin(codes).all()
        assert (summary["p_S"] > 0) == (method in ("clinsimrr", "umaxrr", "umaxrr-yp"))
    assert unprotected_changed.any() == (method in ("clinsimrr", "umaxrr", "umaxrr-yp"))
    assert merged.loc[unprotected_changed, "code"].isin(codes).all()
    assert summary["changed_elements"] == int((merged["code"] != merged["original"]).sum())


def test_suppression_stars_exactly_the_sensitive_elements(runs, data):
    summary, folder = runs["suppression"]
    manifest = json.loads((folder / "manifest.json").read_text())
    merged = joined(read_release(folder), data)
    star = merged["code"] == "*"
    sensitive = merged["original"].isin(manifest["sensitive"])
    assert ((merged["code"] == merged["original"]) | star).all()
    assert (star == sensitive).all()
    assert star.sum() == summary["sensitive_elements"] > 0
    assert manifest["sensitive"] == ["042", "282", "291", "292", "303", "304", "305", "V08"]


# -- 3. the "done when" directions ----------------------------------------------------------

def test_clinsimrr_beats_umaxrr_on_cil_and_suppression_on_map(runs):
    clinsimrr, umaxrr, suppression = (runs[m][0] for m in ("clinsimrr", "umaxrr", "suppression"))
    assert clinsimrr["parameters"]["gamma"] == 0.05
    assert clinsimrr["cil"] < umaxrr["cil"]
    assert clinsimrr["map"] < suppression["map"]


def test_clinsimrr_summary_shows_umaxrr_on_the_same_and_on_the_preset_protected_set(runs):
    """ClinSimRR's CIL beside UMAXRR on the very same Y_P (the like-for-like baseline) and UMAXRR
    on the sensitive set (003's baseline); evaluated on the same patients, not published."""
    clinsimrr, published_ext = runs["clinsimrr"][0], runs["umaxrr-yp"][0]
    comparison = clinsimrr["comparison"]
    assert set(comparison) == {"umaxrr-yp", "umaxrr"}
    same, preset = comparison["umaxrr-yp"], comparison["umaxrr"]
    assert same["protected_size"] == clinsimrr["protected_size"] == published_ext["protected_size"]
    assert same["block_size"] == preset["block_size"] == 1
    assert preset["protected_size"] == clinsimrr["sensitive_size"] == 8
    for other in (same, preset):
        assert 0 <= other["cil"] <= 1 and (other["map"] is None or 0 <= other["map"] <= 1)
    # Blocks are what ClinSimRR adds over uRR on the same codes: a lower loss.
    assert clinsimrr["cil"] < same["cil"]
    assert "comparison" not in runs["umaxrr"][0]
    manifest = json.loads((runs["clinsimrr"][1] / "manifest.json").read_text())
    assert "comparison" not in manifest and "umaxrr-yp" not in json.dumps(manifest)


def test_summary_reports_the_map_scored_as_003_states_it(runs):
    """Issue 31: beside our MAP (every output in Y_P scored) the summary gives 003's reading (only
    the obfuscated sensitive elements scored); the same for suppression, far higher for ClinSimRR,
    whose p_S sends most unprotected codes into Y_P."""
    clinsimrr, suppression = runs["clinsimrr"][0], runs["suppression"][0]
    assert suppression["map_sensitive_inputs"] == suppression["map"]
    assert clinsimrr["map_sensitive_inputs"] is not None
    assert clinsimrr["map"] < clinsimrr["map_sensitive_inputs"] <= 1
    assert clinsimrr["attack"]["attacked_outputs"] > 10 * clinsimrr["sensitive_elements"]


@pytest.mark.parametrize("seed", [2, 3])
def test_directions_hold_for_other_seeds(data, seed):
    def metrics(method):
        return run_clinsim(data, method=method, sensitive="va-7332",
                           epsilon=None if method == "suppression" else 1,
                           rng=randomness(seed)).metrics

    clinsimrr, umaxrr, suppression = (metrics(m) for m in ("clinsimrr", "umaxrr", "suppression"))
    assert clinsimrr["cil"] < umaxrr["cil"]
    assert clinsimrr["map"] < suppression["map"]


# -- 4. γ ----------------------------------------------------------------------------------------

def test_larger_gamma_protects_no_more_codes(data):
    sizes = []
    for gamma in (0.01, 0.05, 0.2):
        run = run_clinsim(data, method="clinsimrr", sensitive="va-7332", epsilon=1, gamma=gamma,
                          rng=randomness(1))
        sizes.append(run.summary()["protected_size"])
    assert sizes[0] >= sizes[1] >= sizes[2] >= 8


# -- 5. the MIMIC-III demo -------------------------------------------------------------------------

@needs_mimic_demo
def test_mimic_demo(tmp_path):
    diagnoses, admissions = MIMIC_DEMO / "DIAGNOSES_ICD.csv", MIMIC_DEMO / "ADMISSIONS.csv"
    before = snapshot(MIMIC_DEMO)
    summaries = {}
    for method in ("clinsimrr", "umaxrr"):
        out = tmp_path / method
        summary = run_json("clinsim", diagnoses, "--admissions", admissions, "--method", method,
                           "--epsilon", "1", *SEEDED, "--map-min-predictions", "1", "--out", out)
        assert summary["dates_reliable"] is False
        assert summary["patients"]["evaluation"] + summary["patients"]["auxiliary"] == 100
        released = read_release(out)
        assert len(released) == summary["elements_released"]
        assert released["patient"].nunique() == summary["patients"]["evaluation"]
        assert (released["time"] == "").all()  # unusable dates are not published
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["dates_reliable"] is False and manifest["time"]["empty"] is True
        # Issue 29: the manifest publishes the seed; the key it once derived from it mapped every
        # released demo patient back to its SUBJECT_ID. The key is fresh now: it maps none.
        assert manifest["rng"]["seed"] == 1
        subjects = pd.read_csv(diagnoses, dtype=str)["SUBJECT_ID"].unique()
        assert seed_derived_pseudonyms(1, subjects).isdisjoint(released["patient"])
        assert not set(released["patient"]) & set(subjects)
        summaries[method] = summary
    assert summaries["clinsimrr"]["cil"] < summaries["umaxrr"]["cil"]
    assert snapshot(MIMIC_DEMO) == before


@needs_mimic_demo
@pytest.mark.parametrize("method", ["rr", "suppression"])
def test_mimic_demo_map_is_undefined_not_zero(tmp_path, method):
    """About 20 released patients: rr and suppression attack only the few sensitive elements, so
    no sensitive code gets the default 10 guesses and the MAP is undefined — JSON null with a
    reason, "n/a" in the text — never 0.0."""
    diagnoses, admissions = MIMIC_DEMO / "DIAGNOSES_ICD.csv", MIMIC_DEMO / "ADMISSIONS.csv"
    args = ["clinsim", diagnoses, "--admissions", admissions, *method_args(method)]
    summary = run_json(*args, "--out", tmp_path / "json", runner=invoke_cli)
    assert summary["map"] is None
    assert "at least 10 times" in summary["map_undefined_reason"]
    assert summary["attack"]["attacked_outputs"] < 10
    text = invoke_cli(*args, "--out", tmp_path / "text")
    assert text.returncode == 0, text.stderr
    assert "MAP n/a" in text.stdout and "MAP undefined: no sensitive code" in text.stdout
    assert "MAP 0.0000" not in text.stdout
    # With a threshold the data can meet, the same run has a MAP.
    defined = run_json(*args, "--map-min-predictions", "1", "--out", tmp_path / "one", runner=invoke_cli)
    assert 0 <= defined["map"] <= 1 and defined["map_undefined_reason"] is None


# -- 6. errors -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bad_inputs(inputs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    sensitive = folder / "sensitive.txt"
    sensitive.write_text("303\n000\n")
    no_code = folder / "DIAGNOSES_ICD.csv"
    pd.read_csv(inputs[0], dtype=str).drop(columns="ICD9_CODE").to_csv(no_code, index=False)
    return {"sensitive": sensitive, "no_code": no_code}


@pytest.mark.parametrize("args, error, fragment", [
    (["--method", "clinsimrr"], "ValidationError", "--epsilon is required"),
    (["--method", "suppression", "--epsilon", "1"], "ValidationError", "--epsilon does not apply"),
    (["--method", "umaxrr", "--epsilon", "1", "--gamma", "0.1"], "ValidationError",
     "--gamma does not apply"),
    (["--method", "clinsimrr", "--epsilon", "1", "--seed", "3"], "ValidationError", "--allow-seeded"),
    (["--method", "magic", "--epsilon", "1"], "ValidationError", "--method"),
    (["--method", "clinsimrr", "--epsilon", "1", "--sensitive-preset", "nope"], "ValidationError",
     "'nope'"),
    (["--method", "clinsimrr", "--epsilon", "1", "--time-resolution", "second"], "ValidationError",
     "--time-resolution must be one of 'day', 'hour', 'minute'; got 'second'."),
    (["--method", "clinsimrr", "--epsilon", "1", "--sensitive", "{sensitive}"], "HierarchyError",
     "'000'"),
    (["--method", "clinsimrr", "--epsilon", "1", "--diagnoses", "{no_code}"], "InputFormatError",
     "ICD9_CODE"),
])
def test_bad_options_and_inputs_are_refused(synth, inputs, bad_inputs, tmp_path, args, error,
                                            fragment):
    diagnoses, admissions = inputs
    args = [a.format(**bad_inputs) for a in args]
    if "--diagnoses" in args:  # replaces the positional DIAGNOSES file
        at = args.index("--diagnoses")
        diagnoses = args[at + 1]
        del args[at:at + 2]
    out = tmp_path / "out"
    before = snapshot(synth[0])
    result = invoke_cli("clinsim", diagnoses, "--admissions", admissions, *args, "--out", out)
    assert_user_error(result, error, fragment)
    assert result.stdout == ""
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no staging folder either
    assert snapshot(synth[0]) == before


def test_non_empty_out_is_never_overwritten(inputs, tmp_path):
    diagnoses, admissions = inputs
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = invoke_cli("clinsim", diagnoses, "--admissions", admissions, *method_args("umaxrr"),
                        "--out", out)
    assert_user_error(result, "StoreError", "never overwrite")
    assert snapshot(out) == {"keep.txt": b"mine"}


# -- 7. long-format input --------------------------------------------------------------------------

def test_long_format_csv_with_umaxrr(inputs, key_file, tmp_path):
    full = load_mimic(*inputs, code_level="full").events
    long_csv = tmp_path / "events.csv"
    full[["patient", "admission", "time", "code"]].to_csv(long_csv, index=False)
    out = tmp_path / "release"
    summary = run_json("clinsim", long_csv, *method_args("umaxrr"), "--pseudonym-key", key_file,
                       "--out", out, runner=invoke_cli)
    expected = load_ehr_csv(long_csv, code_level="category")
    assert summary["dates_reliable"] is True
    # The digest of the whole input is operator-facing (stdout) only: it identifies the file that
    # was released; the published folder holds neither the key nor the value.
    assert summary["input_sha256"] == expected.digest()
    for path in out.iterdir():
        assert expected.digest() not in path.read_text() and "input_sha256" not in path.read_text()
    assert summary["patients"]["auxiliary"] + summary["patients"]["evaluation"] == PATIENTS
    released = read_release(out)
    assert (out / "release.csv").read_text().split("\n", 1)[0] == RELEASE_HEADER
    assert len(released) == summary["elements_released"]
    assert released["patient"].nunique() == summary["patients"]["evaluation"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "medanon-ehr-release/1"
    merged = joined(released, expected)
    assert manifest["protected"]["codes"] == manifest["sensitive"]  # UMAXRR: Y_P = X_S
    sensitive = merged["original"].isin(manifest["sensitive"])
    assert merged.loc[sensitive, "code"].isin(manifest["sensitive"]).all()
    truthful = ~merged["code"].isin(manifest["sensitive"])
    assert (merged.loc[truthful, "code"] == merged.loc[truthful, "original"]).all()
    assert summary["changed_elements"] == int((merged["code"] != merged["original"]).sum())


# -- 8. identifiers: keyed pseudonyms by default, an operator key file, or raw IDs ---------------

def seed_derived_pseudonyms(seed: int, subjects) -> set[str]:
    """The patient pseudonyms an adversary computes from the manifest's ``rng.seed`` with the key
    derivation medanon used before issue 29 (SHA-256 of a fixed context and the seed)."""
    key = hashlib.sha256(b"medanon/ehr-pseudonym-key/v1\x00" + str(seed).encode()).digest()
    return {"p" + hmac.new(key, b"patient\x00" + str(s).encode(), hashlib.sha256).hexdigest()[:16]
            for s in subjects}


def records(released: pd.DataFrame) -> list[tuple]:
    """Each patient's rows without the identifiers, the patients sorted."""
    columns = ["admission_rank", "time", "position", "code"]
    return sorted(tuple(map(tuple, group[columns].to_numpy().tolist()))
                  for _, group in released.groupby("patient", sort=False))


def test_a_seeded_release_draws_a_fresh_pseudonym_key(inputs, data, tmp_path):
    """``--seed`` (published in the manifest) reproduces the released records, not the pseudonyms:
    two runs with the same seed share no pseudonym, and the key once derived from the seed
    recovers none (issue 29: it re-identified every released patient)."""
    diagnoses, admissions = inputs
    for i in range(2):
        run_json("clinsim", diagnoses, "--admissions", admissions, *method_args("umaxrr"),
                 "--out", tmp_path / f"r{i}", runner=invoke_cli)
    first, second = (read_release(tmp_path / f"r{i}") for i in range(2))
    assert records(first) == records(second)
    for column in ("patient", "admission"):
        assert set(first[column]).isdisjoint(second[column])
    assert seed_derived_pseudonyms(1, data.events["patient"].unique()).isdisjoint(first["patient"])
    manifests = [json.loads((tmp_path / f"r{i}" / "manifest.json").read_text()) for i in range(2)]
    for manifest in manifests:
        assert manifest["rng"]["seed"] == 1
        assert manifest["identifiers"]["key"].startswith("fresh per release, from OS entropy")
        manifest.pop("published_at")
    assert manifests[0] == manifests[1]


def test_time_resolution_minute_publishes_the_input_times(inputs, data, key_file, tmp_path):
    diagnoses, admissions = inputs
    folders = {}
    for resolution in ("minute", "hour"):
        folders[resolution] = tmp_path / resolution
        summary = run_json("clinsim", diagnoses, "--admissions", admissions, *method_args("rr"),
                           "--pseudonym-key", key_file, "--time-resolution", resolution,
                           "--out", folders[resolution], runner=invoke_cli)
        assert summary["time_resolution"] == resolution
        manifest = json.loads((folders[resolution] / "manifest.json").read_text())
        assert manifest["time"]["resolution"] == resolution
        assert any(f"time_resolution = {resolution}" in s
                   for s in manifest["privacy"]["does_not_guarantee"])
    minute = joined(read_release(folders["minute"]), data)
    assert (minute["time"] == minute["original_time"].map("{:.10g}".format)).all()
    assert (minute["original_time"] != np.floor(minute["original_time"])).any()
    hours = joined(read_release(folders["hour"]), data)["time"].astype(float) * 24
    np.testing.assert_allclose(hours, np.round(hours), atol=1e-6)


def published_ids(folder):
    released = read_release(folder)
    return set(released["patient"]), set(released["admission"])


def test_default_pseudonyms_use_a_fresh_key_per_release(inputs, data, tmp_path):
    diagnoses, admissions = inputs
    runs = [run_json("clinsim", diagnoses, "--admissions", admissions, "--method", "umaxrr",
                     "--epsilon", "1", "--out", tmp_path / f"r{i}", runner=invoke_cli)
            for i in range(2)]
    first, second = (published_ids(tmp_path / f"r{i}")[0] for i in range(2))
    assert all(p.startswith("p") and len(p) == 17 for p in first | second)
    # Two releases of (largely overlapping) patients share no pseudonym: unlinkable.
    assert len(first) == runs[0]["patients"]["evaluation"] and not first & second
    assert not (first | second) & set(data.events["patient"])
    for i in range(2):
        manifest = json.loads((tmp_path / f"r{i}" / "manifest.json").read_text())
        ids = manifest["identifiers"]
        assert ids["pseudonymized"] is True and ids["linkable_across_releases"] is False
        assert ids["key"].startswith("fresh per release") and "HMAC-SHA256" in ids["method"]
        assert manifest["rng"] == {**manifest["rng"], "kind": "secure", "seed": None}
        assert sorted(p.name for p in (tmp_path / f"r{i}").iterdir()) == ["manifest.json",
                                                                          "release.csv"]


def test_pseudonym_key_file_is_created_0600_outside_out_and_links_releases(inputs, data, tmp_path):
    diagnoses, admissions = inputs
    keys = tmp_path / "keys"
    keys.mkdir()
    key_file = keys / "ehr.key"
    first = run_json("clinsim", diagnoses, "--admissions", admissions, "--method", "umaxrr",
                     "--epsilon", "1", "--pseudonym-key", key_file, "--out", tmp_path / "r1",
                     runner=invoke_cli)
    assert first["pseudonym_key_created"] == str(key_file)
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    key_hex = key_file.read_text().strip()
    second = run_json("clinsim", diagnoses, "--admissions", admissions, "--method", "umaxrr",
                      "--epsilon", "1", "--pseudonym-key", key_file, "--out", tmp_path / "r2",
                      runner=invoke_cli)
    assert "pseudonym_key_created" not in second and key_file.read_text().strip() == key_hex
    # The same key gives the same pseudonyms: recompute them from the source IDs.
    pseudonyms = Pseudonyms("key-file", bytes.fromhex(key_hex))
    expected = dict(zip(data.events["patient"], pseudonyms.patients(data.events["patient"])))
    for folder in ("r1", "r2"):
        patients, _ = published_ids(tmp_path / folder)
        assert patients <= set(expected.values())
        text = "".join(p.read_text() for p in (tmp_path / folder).iterdir())
        assert key_hex not in text and str(key_file) not in text and "ehr.key" not in text
        manifest = json.loads((tmp_path / folder / "manifest.json").read_text())
        assert manifest["identifiers"]["linkable_across_releases"] is True
        assert manifest["identifiers"]["key"] == "operator-held key file (not published)"
    linked = published_ids(tmp_path / "r1")[0] & published_ids(tmp_path / "r2")[0]
    assert linked  # about 4% of the patients are released twice, under the same pseudonym
    joined(read_release(tmp_path / "r1"), data, pseudonyms)   # every row matches its input row


def test_keep_ids_publishes_raw_ids_and_says_so(inputs, data, tmp_path):
    diagnoses, admissions = inputs
    out = tmp_path / "raw"
    run_json("clinsim", diagnoses, "--admissions", admissions, *method_args("rr"), "--keep-ids",
             "--out", out, runner=invoke_cli)
    patients, _ = published_ids(out)
    assert patients <= set(data.events["patient"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["identifiers"]["pseudonymized"] is False
    assert manifest["identifiers"]["patient"] == "raw SUBJECT_ID"
    assert any("SUBJECT_ID and HADM_ID are published unchanged" in s
               for s in manifest["privacy"]["does_not_guarantee"])
    merged = joined(read_release(out), data, Pseudonyms.raw())
    assert (merged["admission_rank"] == merged["original_rank"].astype(str)).all()


@pytest.mark.parametrize("case, fragment", [
    ("both", "not both"),
    ("inside_out", "must not be in the output folder"),
    ("readable", "chmod 600"),
    ("not_a_key", "hexadecimal digits"),
])
def test_bad_pseudonym_options_are_refused(inputs, tmp_path, case, fragment):
    diagnoses, admissions = inputs
    out = tmp_path / "out"
    key = tmp_path / "k.key"
    extra = ["--pseudonym-key", key]
    if case == "both":
        extra.append("--keep-ids")
    elif case == "inside_out":
        extra = ["--pseudonym-key", out / "k.key"]
    elif case == "readable":
        key.write_text("ab" * 32 + "\n")
        key.chmod(0o644)
    else:
        key.write_text("not a key\n")
        key.chmod(0o600)
    before = snapshot(tmp_path)
    result = invoke_cli("clinsim", diagnoses, "--admissions", admissions, *method_args("umaxrr"),
                        *extra, "--out", out)
    assert_user_error(result, "ValidationError", fragment)
    assert result.stdout == "" and not out.exists()
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("method, model", [("clinsimrr", "(Y_P, epsilon)-utility-optimized LDP"),
                                           ("rr", "epsilon-LDP"), ("suppression", None)])
def test_verify_reads_the_ehr_release_model(runs, method, model, capsys):
    folder = runs[method][1]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["method"]["privacy_model"] == model
    code = main(["verify", str(folder), "--json"])
    verdict = json.loads(capsys.readouterr().out)["releases"][0]
    if model is None:   # suppression claims no model: nothing vouches for it
        assert code == 1 and verdict["verdict"] == "no-model"
    else:
        assert code == 0 and verdict["model"] == model
        assert manifest["method"]["model"]["guarantee"].startswith(
            "; ".join(manifest["privacy"]["guarantee"][:1]))


def test_two_digit_year_dates_publish_time_empty_and_say_why(inputs, tmp_path):
    """MIMIC's ADMITTIME with two-digit years cannot be placed in a century: ``time`` is
    published empty, and the steward is told why, with examples (issue 44)."""
    diagnoses, admissions = inputs
    frame = pd.read_csv(admissions, dtype=str, keep_default_na=False)
    frame["ADMITTIME"] = pd.to_datetime(frame["ADMITTIME"]).dt.strftime("%m/%d/%y %H:%M")
    damaged = tmp_path / "ADMISSIONS.csv"
    frame.to_csv(damaged, index=False)
    out = tmp_path / "out"
    result = invoke_cli("clinsim", diagnoses, "--admissions", damaged, *method_args("umaxrr"),
                        "--out", out)
    assert result.returncode == 0, result.stderr
    assert "note: time is published empty:" in result.stderr
    assert "four-digit year" in result.stderr and frame["ADMITTIME"].iloc[0] in result.stderr
    assert "Time: empty, the input's dates were unusable:" in result.stdout
    assert (read_release(out)["time"] == "").all()
