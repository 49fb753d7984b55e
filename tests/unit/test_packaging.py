"""What the wheel ships besides code: the PEP 561 marker, so type checkers read medanon's hints."""

from __future__ import annotations

import tomllib
from importlib import resources

from tests.conftest import ROOT


def test_py_typed_marker_is_in_the_package_and_its_package_data():
    assert resources.files("medanon").joinpath("py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["medanon"]
