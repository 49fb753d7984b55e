"""medanon: publish medical microdata without giving away the people in it.

The public API (:mod:`medanon.api`) is imported on first use, so ``import medanon`` and the
command line's ``--version`` stay cheap::

    import medanon
    data = medanon.Dataset.from_faers("faers_ascii_2022Q4.zip")
    # theta = 1 (no limit) for the most frequent terms, unless capped: protect the sensitive ones
    series = medanon.Publisher("ppms++", k=5, theta="frequency",
                               protect={"Death": 0.3, "Depression": 0.3}).publish(data)
    series.verify().ok, series.unbounded_terms()
"""

# Keep this module light: every ``medanon`` command imports it, ``--version`` included. Public
# names that need pandas, DuckDB or matplotlib belong behind a module ``__getattr__`` (as in
# medanon.store and medanon.report); tests/system/test_cli_startup.py checks the module set.
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported lazily by :func:`__getattr__`).
_PUBLIC = {
    "Dataset": "medanon.api", "Publisher": "medanon.api", "Release": "medanon.api",
    "Series": "medanon.api", "Table": "medanon.api", "TableRelease": "medanon.api",
    "EhrRecords": "medanon.api", "EhrRelease": "medanon.api", "signals": "medanon.api",
    "SeriesPublisher": "medanon.api", "TablePublisher": "medanon.api",
    "EhrPublisher": "medanon.api", "UnboundedTermsWarning": "medanon.api",
    "Pseudonyms": "medanon.pipeline.ehr", "SeriesPolicy": "medanon.pipeline.policy",
    "TableSchema": "medanon.data.tabular", "Schema": "medanon.data.schema",
    "randomness": "medanon.random", "Randomness": "medanon.random", "ReleaseStore": "medanon.store",
    "verify_series": "medanon.verify", "MedanonError": "medanon.errors",
    "PrivacyViolation": "medanon.errors", "ValidationError": "medanon.errors",
}

__all__ = ["__version__", *_PUBLIC]

# A type checker reads __init__.pyi beside this file: the same names, imported at once, so
# that ``medanon.Publisher(...)`` is checked against Publisher's overloads rather than read as
# the Any of a module __getattr__ (tests/unit/test_api_typed.py keeps the two equal). A stub,
# not an ``if TYPE_CHECKING`` import here: every module imports this one, and the import
# contracts would read such an import as the package importing its top layers.


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'medanon' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
