"""Run an experiment grid on Dask: a ``LocalCluster`` by default, or an existing cluster given
its scheduler address.

Every task is one (method, parameters, period, run). Periodic releases of one run chain through
Dask dependencies (period t waits for t − 1); measuring tasks wait for the run's last release;
all other tasks are independent, so the scheduler spreads them over the workers. The inputs are
loaded once by the client and scattered to the cluster: workers need medanon installed, not the
client's files.

Randomness: each task draws from its own seeded generator, derived from the experiment's base
seed and the task's name, so a grid reproduces exactly given ``--seed`` (and the base seed drawn
from OS entropy is recorded in ``experiment.json`` when none is given). Experiments are research
runs, not publications: nothing they produce is a release.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import MedanonError, ValidationError
from ..published.format import check_new_folder, write_new_folder
from . import outputs, periodic, single
from .grids import EXPERIMENTS, Setting, grid

__all__ = ["ExperimentConfig", "ExperimentResult", "run_experiment", "task_seed"]


@dataclass(frozen=True)
class ExperimentConfig:
    """What to run (``medanon experiment`` options).

    Attributes:
        experiment: One of :data:`EXPERIMENTS`.
        quick: The smoke grid (one or two values per axis).
        runs: Repetitions of every setting (noise draws, patient splits).
        periods, cases: Size of the synthetic FAERS-like series (periodic experiments).
        rows: Records of the synthetic patient table (``ipa``).
        patients: Patients of the synthetic diagnosis data (``clinsimrr``).
        seed: Base seed; None draws one from OS entropy (recorded).
        input: User data instead of synthetic (FAERS source, table CSV, or DIAGNOSES_ICD).
        admissions: MIMIC ADMISSIONS file (``clinsimrr``).
        schema: Table schema TOML (``ipa``).
        rules: Signal rules (periodic experiments on user data).
        scheduler: Address of a running Dask scheduler; None starts a LocalCluster.
        workers: Workers of the LocalCluster (default: the machine's cores, at most 4).
    """

    experiment: str
    quick: bool = False
    runs: int = 3
    periods: int = 8
    cases: int = 1000
    rows: int = 50_000
    patients: int = 10_000
    seed: int | None = None
    input: Path | None = None
    admissions: Path | None = None
    schema: Path | None = None
    rules: Path | None = None
    scheduler: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class ExperimentResult:
    """Rows (one per measured task), the per-setting summary, and how the run went."""

    rows: pd.DataFrame
    summary: pd.DataFrame
    meta: dict
    out: Path | None = None


def task_seed(base: int, name: str) -> int:
    """A 64-bit seed for the task called ``name``: independent of the order tasks run in."""
    digest = hashlib.sha256(f"{base}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[tuple[object, str]]:
    """A ``distributed.Client`` on the given scheduler, or on a fresh LocalCluster."""
    from dask.distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ValidationError(f"Cannot reach the Dask scheduler at {scheduler!r}: {exc}.") from None
        with client:
            yield client, f"Dask cluster at {scheduler}"
        return
    n = workers or max(1, min(4, os.cpu_count() or 1))
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        yield client, f"Dask LocalCluster with {n} worker process(es)"


def _with_worker(func: Callable[..., dict], *args: object) -> dict:
    """Run a measuring task and record which worker ran it."""
    from dask.distributed import get_worker

    row = func(*args)
    try:
        row["worker"] = get_worker().address
    except ValueError:  # not on a worker (never with a Client, but keep tasks callable)
        row["worker"] = "local"
    return row


def _submit_periodic(client, config: ExperimentConfig, settings: list[Setting], base: int):
    rules = ()
    if config.rules is not None:
        from ..metrics.signals import read_rules

        rules = tuple(read_rules(config.rules))
    data = periodic.load_periodic_data(config.input, periods=config.periods, cases=config.cases,
                                       seed=base % 2**32, rules=rules)
    published = list(data.periods)
    if any(s.method == "ha" for s in settings):
        # HA publishes a period only once the next one is known (an md-record is a case absent
        # from it), so the last period serves as "next" and every method stops before it.
        if len(published) < 2:
            raise ValidationError(f"{config.experiment} needs at least 2 periods: HA publishes a "
                                  "period only when the next one is known.")
        published = published[:-1]
    shared = client.scatter(data.dataset)  # workers fetch the input once, then keep it
    md = config.experiment == "plos2021"
    release, measure = [], []
    for setting in settings:
        for run in range(config.runs):
            state = None
            for period in published:
                name = f"{config.experiment}-release-{setting.key}-{period}-r{run}"
                state = client.submit(periodic.release_period, shared, state, setting, period,
                                      task_seed(base, name), key=name, pure=False)
                release.append(state)
            for period in published:
                name = f"{config.experiment}-measure-{setting.key}-{period}-r{run}"
                measure.append(client.submit(_with_worker, periodic.measure_period, shared, state,
                                             setting, period, run, data.rules, md, key=name,
                                             pure=False))
    return release, measure, {"source": data.source, **data.details,
                              "periods": list(data.periods), "published_periods": published,
                              "rules": [r.name for r in data.rules]}


def _submit_single(client, config: ExperimentConfig, settings: list[Setting], base: int):
    if config.experiment == "ipa":
        data = single.load_table_input(config.input, config.schema, rows=config.rows,
                                       seed=base % 2**32)
        task = single.run_table_task
    else:
        data = single.load_ehr_input(config.input, config.admissions, patients=config.patients,
                                     seed=base % 2**32)
        task = single.run_clinsim_task
    shared = client.scatter(data)
    measure = []
    for setting in settings:
        for run in range(config.runs):
            name = f"{config.experiment}-{setting.key}-{single.NO_PERIOD}-r{run}"
            measure.append(client.submit(_with_worker, task, shared, setting, run,
                                         task_seed(base, name), key=name, pure=False))
    return [], measure, {"source": data.source, **data.details}


def run_experiment(config: ExperimentConfig, *, out: Path | None = None,
                   progress: Callable[[str], None] | None = None,
                   on_start: Callable[[int, str], None] | None = None) -> ExperimentResult:
    """Run the grid, gather the rows, and (with ``out``) write tables and figures.

    Args:
        config: What to run.
        out: A new folder for ``results.csv``, ``summary.csv``/``.md``, ``figures/*.png`` and
            ``experiment.json``; written atomically once every task has finished.
        progress: Called with each finished task's name.
        on_start: Called once with the number of tasks and the cluster's description.

    Raises:
        ValidationError: a bad option, or an unreachable scheduler.
        MedanonError: a task failed with a user error (the first one is raised).
    """
    from dask.distributed import as_completed

    if config.experiment not in EXPERIMENTS:
        raise ValidationError(f"Unknown experiment {config.experiment!r}; available: "
                              f"{', '.join(EXPERIMENTS)}.")
    for name in ("runs", "periods", "cases", "rows", "patients"):
        if getattr(config, name) < 1:
            raise ValidationError(f"--{name} must be at least 1; got {getattr(config, name)}.")
    kind = EXPERIMENTS[config.experiment][1]
    if kind != "ehr" and config.admissions is not None:
        raise ValidationError("--admissions applies to the clinsimrr experiment only.")
    if kind != "table" and config.schema is not None:
        raise ValidationError("--schema applies to the ipa experiment only.")
    if kind != "faers" and config.rules is not None:
        raise ValidationError("--rules applies to the periodic experiments (jmir2021, plos2021, "
                              "ppms-dp) only.")
    if out is not None:
        check_new_folder(Path(out))
    base = config.seed if config.seed is not None else secrets.randbits(63)
    settings = grid(config.experiment, quick=config.quick)
    started = time.perf_counter()
    with dask_client(config.scheduler, config.workers) as (client, cluster):
        submit = _submit_periodic if kind == "faers" else _submit_single
        release, measure, data_meta = submit(client, config, settings, base)
        if on_start is not None:
            on_start(len(release) + len(measure), cluster)
        rows, measuring = [], {f.key for f in measure}
        try:
            for future in as_completed(release + measure):
                if future.status == "error":
                    _raise_task_error(future)
                if future.key in measuring:
                    rows.append(future.result())
                if progress is not None:
                    progress(str(future.key))
        finally:
            client.cancel(release + measure)
        workers = sorted({r["worker"] for r in rows})
    rows.sort(key=lambda r: (r["setting"], r["period"], r["run"]))  # completion order varies
    frame = pd.DataFrame(rows)
    first = ["method", *(p for p in outputs.PARAMS if p in frame.columns), "setting", "period",
             "run"]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    summary = outputs.summarize(frame, config.experiment)
    meta = {"experiment": config.experiment, "paper": EXPERIMENTS[config.experiment][0],
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
            "base_seed": base, "seed_given": config.seed is not None, "cluster": cluster,
            "workers_used": workers, "tasks": len(release) + len(measure),
            "settings": [s.label for s in settings], "data": data_meta,
            "seconds": round(time.perf_counter() - started, 2), "medanon": __version__}
    if out is not None:
        def writer(folder: Path) -> None:
            outputs.write_tables(frame, config.experiment, folder)
            outputs.write_figures(frame, config.experiment, folder)
            (folder / "experiment.json").write_text(
                json.dumps(meta, indent=2, default=_json_default) + "\n", encoding="utf-8")

        write_new_folder(out, writer)
    return ExperimentResult(frame, summary, meta, Path(out) if out is not None else None)


def _json_default(value: object) -> object:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def _raise_task_error(future) -> None:
    exc = future.exception()
    if isinstance(exc, MedanonError):
        raise type(exc)(f"task {future.key}: {exc}") from None
    raise RuntimeError(f"task {future.key} failed: {type(exc).__name__}: {exc}") from exc
