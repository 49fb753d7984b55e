"""Commands over general tabular data: ``synth table`` and ``ipa`` (IPA and its two baselines)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..anonymize.dphist import require_public_domain
from ..anonymize.lattice import Lattice
from ..data.synth.table import write_synth_table
from ..data.tabular import TableSchema, load_table
from ..mechanisms.noise import NoiseSource
from ..random import refuse_seeded_release
from ..metrics.tabular import evaluate_queries
from ..published.format import check_new_folder
from ..pipeline.methods import table_method
from ..pipeline.tabular import table_schema_path, tabular_manifest, write_tabular_release
from . import console as ui
from .console import print_json, progress_bar

def synth_table(out: Path, *, rows: int, seed: int, as_json: bool) -> None:
    table_path, schema_path = write_synth_table(out, rows=rows, seed=seed)
    if as_json:
        print_json({"table": str(table_path), "schema": str(schema_path), "rows": rows, "seed": seed})
    else:
        ui.out.print(f"Wrote {rows} synthetic patient records to {table_path} "
                     f"and their schema to {schema_path}.")


def ipa(input_path: Path, *, schema: Path | None, method: str, epsilon: str | None, k: int | None,
        max_suppression: float | None, threshold: int | None, budget_split: str | None,
        node: str | None, seed: int | None, allow_seeded: bool, out: Path, as_json: bool) -> None:
    with ui.errors_as_flags():
        algorithm = table_method(method, epsilon=epsilon, k=k, max_suppression=max_suppression,
                                 threshold=threshold, budget_split=budget_split, node=node)
        schema_path = table_schema_path(input_path, schema)
    refuse_seeded_release(seed is not None and method != "kanon", allow_seeded)
    check_new_folder(out)
    table_schema = TableSchema.from_toml(schema_path)
    if method == "dphist":  # refuse before reading the data (DPHistogram refuses too)
        require_public_domain(table_schema, source=f"schema file {str(schema_path)!r}")
    data = load_table(input_path, table_schema, schema_dir=schema_path.parent)
    noise = NoiseSource.secure() if seed is None else NoiseSource.seeded(seed)
    started = time.perf_counter()
    total = 1 if method == "dphist" else len(Lattice(data.top_node))
    with progress_bar(f"{method}: lattice nodes", total) as step:
        result = algorithm.anonymize(data, noise=noise, progress=lambda done, _total: step(done))
    seconds = time.perf_counter() - started
    queries = evaluate_queries(data, result.table)
    manifest = tabular_manifest(result, data, randomness=noise.describe(), seed=seed)
    write_tabular_release(out, result, manifest)
    # input_sha256: operator only (stdout), never in the manifest
    summary: dict[str, Any] = {**result.summary(), "out": str(out), "seconds": round(seconds, 3),
                               "input_sha256": data.digest,
                               "queries": [q.to_dict() for q in queries],
                               "guarantee": result.guarantee,
                               "does_not_guarantee": result.does_not_guarantee}
    if as_json:
        print_json(summary)
        return
    _print_summary(summary)


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.table import Table

    ui.out.print(f"[bold]{summary['method']}[/bold] released {summary['released_rows']} rows in "
                 f"{summary['classes']} classes to {summary['out']} ({summary['seconds']:.2f} s).")
    ui.out.print("Node: " + ", ".join(f"{k}={v}" for k, v in summary["node_levels"].items()))
    ui.out.print(f"Information loss {summary['information_loss']:.4f} = NCP {summary['ncp']:.4f} "
                 f"+ EMD {summary['emd']:.4f} + Rate {summary['rate']:.4f}")
    ui.out.print(f"Suppressed {summary['suppressed']}, counterfeit {summary['counterfeit']} "
                 f"(operator only: not in the manifest of a DP release).")
    if summary["epsilon_per_step"]:
        ui.out.print("ε per step: " + ", ".join(f"{k} {v:g}" for k, v in summary["epsilon_per_step"].items())
                     + f" (total {summary['epsilon']:g})")
    if summary["queries"]:
        table = Table("query", "aggregate", "mean relative error", title="Analysis queries")
        for q in summary["queries"]:
            table.add_row(q["name"], q["aggregate"], f"{q['mean_relative_error']:.4f}")
        ui.out.print(table)
    ui.out.print(f"Guarantee: {summary['guarantee']}")
    ui.out.print(f"Not guaranteed: {summary['does_not_guarantee']}")
