"""The papers' comparison grids, run on Dask (``medanon experiment``).

:func:`run_experiment` runs one grid of :mod:`.grids` (each task one method, parameter set,
period and run) on a LocalCluster or an existing Dask cluster, and writes tables and figures
(:mod:`.outputs`). :func:`regenerate_results` reruns the documented runs behind
``docs/results/`` (:mod:`.documented`).
"""

from .grids import EXPERIMENTS, Setting, grid
from .documented import regenerate_results
from .runner import ExperimentConfig, ExperimentResult, run_experiment

__all__ = ["EXPERIMENTS", "ExperimentConfig", "ExperimentResult", "Setting", "grid",
           "regenerate_results", "run_experiment"]
