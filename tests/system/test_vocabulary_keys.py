"""Issue 33: the JSON keys the glossary names for ``release``, ``verify``, ``attack`` and
``evaluate`` are keys those commands' ``--json`` really print (on a small synthetic store).

tests/unit/test_vocabulary.py checks the display names; this checks the other half of each
glossary row, where a key the glossary invents or misspells would send a reader nowhere.
"""

from __future__ import annotations

import json

import pytest

from medanon.cli.commands import _write_planted_rules
from medanon.data.synth.faers import write_faers_series
from medanon.vocabulary import GLOSSARY, REPORT_ONLY
from tests.conftest import invoke_cli

COMMANDS = ("release", "verify", "attack", "evaluate")


def _keys(value, out: set[str]) -> set[str]:
    """Every key of every object in a JSON value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            out.add(str(key))
            _keys(inner, out)
    elif isinstance(value, list):
        for inner in value:
            _keys(inner, out)
    return out


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, set[str]]:
    folder = tmp_path_factory.mktemp("vocabulary")
    # the legacy generator (the default until issue 42): on it these small quarters publish at
    # k 3 with the frequency θ (the FAERS-like default's rarer terms get θ 0.2, η 0 at k 3)
    write_faers_series(folder / "in", periods=3, cases=200, seed=4, profile="legacy")
    store = folder / "s.duckdb"
    rules = _write_planted_rules(folder / "rules.toml")
    runs = {
        "ingest": ("ingest", folder / "in", "--store", store),
        "release": ("release", "--store", store, "--method", "ppms++", "--k", "3", "--theta",
                    "frequency", "--on-infeasible", "raise-theta", "--seed", "2",
                    "--allow-seeded", "--json"),
        "verify": ("verify", "--store", store, "--json"),
        "attack": ("attack", "--store", store, "--json"),
        "evaluate": ("evaluate", "--store", store, "--rules", rules, "--cumulative", "--json"),
    }
    out = {}
    for name, args in runs.items():
        result = invoke_cli(*args)
        assert result.returncode == 0, (name, result.stderr)
        if name != "ingest":
            out[name] = _keys(json.loads(result.stdout), set())
    return out


def _claimed(command: str) -> list[tuple[str, str]]:
    """(term, key) of every glossary key said to be in ``command --json``."""
    claims = []
    for term in GLOSSARY:
        for key in term.keys:
            if key == REPORT_ONLY:
                continue
            bare, _, where = key.partition(" (")
            if f"{command} --json" in where:
                claims += [(term.label, part.rsplit(".", 1)[-1]) for part in bare.split(", ")]
    return claims


@pytest.mark.parametrize("command", COMMANDS)
def test_every_key_the_glossary_names_is_in_the_commands_json(printed, command):
    claims = _claimed(command)
    assert claims  # the glossary names keys of every one of these commands
    # printed only for releases with DP noise (an ε to account, a posterior to bound); this
    # PPMS++ store has none
    dp_only = {"epsilon_per_case", "nominal_epsilon_per_case", "series_max_epsilon_per_case",
               "max_posterior"}
    missing = [f"{term}: {key}" for term, key in claims
               if key not in printed[command] and key not in dp_only]
    assert missing == []
