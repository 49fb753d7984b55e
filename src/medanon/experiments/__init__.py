"""The papers' comparison grids, run on Dask (``medanon experiment``).

:func:`run_experiment` runs one grid of :mod:`.grids` (each task one method, parameter set,
period and run) on a LocalCluster or an existing Dask cluster, and writes tables and figures
(:mod:`.outputs`).
"""

from .grids import EXPERIMENTS, Setting, grid
from .runner import ExperimentConfig, ExperimentResult, run_experiment

__all__ = ["EXPERIMENTS", "ExperimentConfig", "ExperimentResult", "Setting", "grid",
           "run_experiment"]
