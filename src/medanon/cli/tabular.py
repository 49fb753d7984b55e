"""Commands over general tabular data: ``synth table`` and ``ipa`` (IPA and its two baselines).

``ipa`` is a thin layer over the public API (:class:`medanon.Publisher` on a
:class:`medanon.Table`): flags in, the release folder and the operator's summary out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..anonymize.dphist import require_public_domain
from ..anonymize.lattice import Lattice
from ..data.synth.table import write_synth_table
from ..data.tabular import TableSchema
from ..random import refuse_seeded_release
from ..vocabulary import MEAN_RELATIVE_ERROR
from ..published.format import check_new_folder
from ..pipeline.methods import table_method
from ..pipeline.tabular import table_schema_path
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
        node: str | None, seed: int | None, allow_seeded: bool, out: Path, as_json: bool,
        selection: str | None = None, min_records: int | None = None,
        allow_tiny_epsilon: bool = False, one_off: tuple | None = None) -> None:
    from ..api import Table, TablePublisher

    with ui.errors_as_flags():  # table_method: only the table methods, their parameters as flags
        algorithm = table_method(method, epsilon=epsilon, k=k, max_suppression=max_suppression,
                                 threshold=threshold, budget_split=budget_split, node=node,
                                 selection=selection, min_records=min_records,
                                 allow_tiny_epsilon=allow_tiny_epsilon)
        publisher = TablePublisher(algorithm, seed=seed)
        schema_path = table_schema_path(input_path, schema)
    refuse_seeded_release(seed is not None and method != "kanon", allow_seeded)
    check_new_folder(out)
    if method == "dphist":  # refuse before reading the data (DPHistogram refuses too)
        require_public_domain(TableSchema.from_toml(schema_path),
                              source=f"schema file {str(schema_path)!r}")
    data = Table.read(input_path, schema_path)
    fingerprint = data.fingerprint()   # the rows as a multiset: order-free, overlap-aware
    with ui.errors_as_flags():   # the ε this input spent in earlier one-off releases
        ledger, spend, over = ui.one_off_check(one_off, method,
                                               None if method == "kanon" else epsilon,
                                               fingerprint)
    total = 1 if method == "dphist" else len(Lattice(data.data.top_node))
    with progress_bar(f"{method}: lattice nodes", total) as step:
        release = publisher.publish(data, progress=lambda done, _total: step(done))
    if over:
        release.manifest["method"].setdefault("acknowledged", []).append("allow_over_budget")
    release.write(out)
    ui.one_off_record(ledger, spend, fingerprint, method, out)
    # input_sha256: operator only (stdout), never in the manifest
    summary: dict[str, Any] = {**release.summary, "out": str(out)}
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
    # "withheld": the glossary's word for records left out (JSON key "suppressed")
    ui.out.print(f"Withheld {summary['suppressed']}, counterfeit {summary['counterfeit']} "
                 f"(operator only: not in the manifest of a DP release).")
    if summary["epsilon_per_step"]:
        ui.out.print("ε per step: " + ", ".join(f"{k} {v:g}" for k, v in summary["epsilon_per_step"].items())
                     + f" (total {summary['epsilon']:g})")
    if summary["queries"]:
        table = Table("query", "aggregate", MEAN_RELATIVE_ERROR, title="Analysis queries")
        for q in summary["queries"]:
            table.add_row(q["name"], q["aggregate"], f"{q['mean_relative_error']:.4f}")
        ui.out.print(table)
    ui.out.print(f"Guarantee: {summary['guarantee']}")
    ui.out.print(f"Not guaranteed: {summary['does_not_guarantee']}")
