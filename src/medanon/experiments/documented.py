"""The documented runs: the settings behind every table and figure under ``docs/results/``.

``docs/results.md`` quotes numbers from five experiment folders. They were made by hand, one
command each, and went stale as the code moved on (issue 31: a rerun 66 commits later gave
other numbers). Here the settings of those runs are data, and :func:`regenerate_results`
reruns all of them into one folder (``medanon experiment all --out docs/results``), so that
the committed tables are always what the code at that commit produces. The quick variants
(``--quick``: the smoke grids on small inputs) are committed too, under ``docs/results/quick``,
and a slow test reruns them and compares the tables (``tests/system/test_documented_results.py``):
a change that moves a documented number fails until the tables are regenerated.

The periodic experiments run on the synthetic profile shaped like their paper's data
(``docs/data.md``): 001 and 000 on ``faers-2004`` (FAERS 2004Q1-2011Q4), 002 on
``faers-2014`` (FAERS 2014Q3-2017Q4). ``jmir2021-32q`` is 001 at its own length: 32 quarters of
4,000 cases, PPMS, PPMS+ and PPMS++ at the two settings whose NIL gain 001 reports (issue 42).
Each run is written to a folder named by its key here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from ..errors import StoreError, ValidationError
from .runner import ExperimentConfig, ExperimentResult, run_experiment

__all__ = ["DOCUMENTED", "QUICK", "documented_config", "regenerate_results"]

_SEED = 2026

#: the settings of each documented full run (docs/results.md quotes these)
DOCUMENTED: Mapping[str, ExperimentConfig] = MappingProxyType({
    "jmir2021": ExperimentConfig("jmir2021", runs=1, periods=8, cases=1500, profile="faers-2004",
                                 seed=_SEED),
    "plos2021": ExperimentConfig("plos2021", runs=1, periods=8, cases=1500, profile="faers-2014",
                                 seed=_SEED),
    "ppms-dp": ExperimentConfig("ppms-dp", runs=3, periods=8, cases=1000, profile="faers-2004",
                                seed=_SEED),
    "ipa": ExperimentConfig("ipa", runs=3, rows=50_000, seed=_SEED),
    "clinsimrr": ExperimentConfig("clinsimrr", runs=3, patients=10_000, seed=_SEED),
    "jmir2021-32q": ExperimentConfig(
        "jmir2021", runs=1, periods=32, cases=4000, profile="faers-2004", seed=_SEED,
        only=tuple(f"{method} k={k} theta={theta}" for k, theta in ((5, 0.2), (10, 0.4))
                   for method in ("ppms", "ppms+", "ppms++"))),
})

#: the quick runs the slow test repeats: each paper's smoke grid on a small input
QUICK: Mapping[str, ExperimentConfig] = MappingProxyType({
    "jmir2021": ExperimentConfig("jmir2021", quick=True, runs=1, periods=3, cases=300,
                                 profile="faers-2004", seed=_SEED),
    "plos2021": ExperimentConfig("plos2021", quick=True, runs=1, periods=3, cases=300,
                                 profile="faers-2014", seed=_SEED),
    "ppms-dp": ExperimentConfig("ppms-dp", quick=True, runs=1, periods=2, cases=200,
                                profile="faers-2004", seed=_SEED),
    "ipa": ExperimentConfig("ipa", quick=True, runs=1, rows=2000, seed=_SEED),
    "clinsimrr": ExperimentConfig("clinsimrr", quick=True, runs=1, patients=800, seed=_SEED),
})


def documented_config(experiment: str, *, quick: bool = False, scheduler: str | None = None,
                      workers: int | None = None) -> ExperimentConfig:
    """The documented run named ``experiment`` (a key of :data:`DOCUMENTED`, or of
    :data:`QUICK` with ``quick``), to run on the given Dask scheduler or a LocalCluster of
    ``workers`` processes."""
    configs = QUICK if quick else DOCUMENTED
    if experiment not in configs:
        raise ValidationError(f"The 'experiment' parameter of documented_config must be one of "
                              f"{', '.join(configs)}; got {experiment!r}.")
    return replace(configs[experiment], scheduler=scheduler, workers=workers)


def regenerate_results(out: str | Path, *, quick: bool = False, scheduler: str | None = None,
                       workers: int | None = None, experiments: tuple[str, ...] | None = None,
                       on_run: Callable[[str, ExperimentConfig], None] | None = None,
                       ) -> dict[str, ExperimentResult]:
    """Rerun the documented runs, each into ``out/<name>`` (replacing it).

    Each run is written to a temporary folder beside ``out`` first and moved in place only once
    every run has finished, so a failed regeneration leaves ``out`` as it was.

    Args:
        out: The results folder (``docs/results``, or ``docs/results/quick`` with ``quick``).
        quick: Run the :data:`QUICK` settings instead of :data:`DOCUMENTED`.
        scheduler, workers: Where to run (as ``medanon experiment``).
        experiments: Which documented runs, by name (default: all of :data:`DOCUMENTED`, or
            of :data:`QUICK` with ``quick``).
        on_run: Called with each run's name and settings before it runs.

    Returns:
        Each experiment's result.

    Raises:
        ValidationError: an unknown experiment name.
        StoreError: ``out`` exists and is not a folder.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise StoreError(f"The 'out' parameter of regenerate_results must be a folder; {out} "
                         "is a file.")
    names = tuple(QUICK if quick else DOCUMENTED) if experiments is None else tuple(experiments)
    configs = {name: documented_config(name, quick=quick, scheduler=scheduler, workers=workers)
               for name in names}
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, ExperimentResult] = {}
    with tempfile.TemporaryDirectory(prefix=".regenerate-", dir=out) as tmp:
        for name, config in configs.items():
            if on_run is not None:
                on_run(name, config)
            results[name] = run_experiment(config, out=Path(tmp) / name)
        for name in configs:
            target = out / name
            if target.exists():
                shutil.rmtree(target)
            shutil.move(str(Path(tmp) / name), str(target))
    return {name: replace(result, out=out / name) for name, result in results.items()}
