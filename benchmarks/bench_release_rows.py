"""Benchmark: the object-column passes around the method in one release, each on its own.

Reads one period's records from a store once, then times, in this process:

* ``read``      the store's records of the period (``ReleaseStore.records``)
* ``digest``    ``input_digest`` of the records (operator-only)
* ``combine``   ``combine_super_records`` (super records: unions of terms, LUBs of the QIDs)
* ``unordered`` ``_unordered`` (the super records shuffled, as a release orders them)
* ``encode``    ``_encode_qids`` (inside the method; the sum over its passes)
* ``cover``     ``_cover_old_cases`` (the method's QID-covering of cases published before)
* ``terms``     the method's pooled sensitive terms: ``_SensitiveTerms`` built, each case's
                terms and the term counts
* ``bounds``    the method's ``_check_own_bounds``
* ``table``     the method's ``build_table`` (generalized QIDs, published columns)
* ``rows``      ``to_published_rows`` (the release's cells as text)

The method (PPMS++ k 5, frequency θ, suppress-terms, seed 1 by default) runs as
``medanon release`` runs it; its grouping is not timed here (another benchmark's subject).
Each figure is CPU seconds (user + system of this process) and the growth of the process's peak
RSS during the pass (0 when the pass stayed under an earlier peak). ``--repeat`` times the
combine and rows passes again on the same input and prints the best. ``--digest`` prints a
SHA-256 of the super records and of the rows, to compare two versions of the code.
``--pseudonyms`` publishes the CaseIDs as a release does by default (a fixed key): the
records then reach ``combine_super_records`` in no CaseID order, so its sort runs (a store
gives them ordered by the real CaseIDs); ``--previous`` names a published period of the store
whose rows the method covers (quarter 2 of a store with quarter 1 released).

    PYTHONPATH=src python benchmarks/bench_release_rows.py --store /tmp/s450/ingested.duckdb \
        --period 2020Q1 --repeat 3

Not a test: figures on a shared machine are noisy (+-15%); compare versions alternately.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import tempfile
from pathlib import Path


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Timer:
    """Sums the CPU of every call of the functions it wraps, per name."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.peak: dict[str, float] = {}

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            before, peak = _cpu(), _peak_mib()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[name] = self.cpu.get(name, 0.0) + _cpu() - before
                self.peak[name] = max(self.peak.get(name, 0.0), _peak_mib() - peak)
        return timed


def _digest(frame) -> str:
    text = frame.to_csv(index=False, lineterminator="\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="an ingested store (copied, never written)")
    parser.add_argument("--period", default="2020Q1")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pseudonyms", action="store_true")
    parser.add_argument("--previous", default=None)
    args = parser.parse_args()

    from medanon.anonymize import common
    from medanon.cli.commands import make_method
    from medanon.data import records as records_module
    from medanon.pipeline import publish
    from medanon.pipeline.case_ids import CaseIds
    from medanon.published import format as format_module
    from medanon.random import randomness
    from medanon.store.duckdb_store import ReleaseStore

    timer = _Timer()
    common._encode_qids = timer.wrap("encode", common._encode_qids)
    common.ClusteringMethod.build_table = timer.wrap("table", common.ClusteringMethod.build_table)
    common._cover_old_cases = timer.wrap("cover", common._cover_old_cases)
    terms = common._SensitiveTerms
    terms.of = classmethod(timer.wrap("terms", terms.of.__func__))
    terms.record_terms = timer.wrap("terms", terms.record_terms)
    terms.counts = timer.wrap("terms", terms.counts)
    common.ClusteringMethod._check_own_bounds = timer.wrap(
        "bounds", common.ClusteringMethod._check_own_bounds)
    figures: dict[str, dict[str, float]] = {}

    def record(name: str, cpu: float, grew: float) -> None:
        figures[name] = {"cpu_s": round(cpu, 3), "peak_growth_mib": round(grew, 1)}

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.duckdb"
        shutil.copy(args.store, copy)
        store = ReleaseStore.open(copy, read_only=True)
        schema = store.schema
        hierarchies = schema.load_hierarchies()
        before, peak = _cpu(), _peak_mib()
        records = store.records(args.period)
        record("read", _cpu() - before, _peak_mib() - peak)
        previous = [store.release_rows(args.previous)] if args.previous else []
        store.close()

    before, peak = _cpu(), _peak_mib()
    input_sha256 = publish.input_digest(records)
    record("digest", _cpu() - before, _peak_mib() - peak)
    if args.pseudonyms:
        records = CaseIds("pseudonym", bytes(32)).records(records, schema.case_id)

    best = float("inf")
    for _ in range(args.repeat):
        before, peak = _cpu(), _peak_mib()
        supers = records_module.combine_super_records(records, schema, hierarchies)
        best = min(best, _cpu() - before)
        grew = _peak_mib() - peak
    record("combine", best, grew)
    rng = randomness(args.seed)
    before, peak = _cpu(), _peak_mib()
    supers = publish._unordered(supers, records, schema, rng)
    record("unordered", _cpu() - before, _peak_mib() - peak)
    method = make_method("ppms++", k=args.k, theta="frequency", on_infeasible="suppress-terms")
    before = _cpu()
    result = method.anonymize(supers, previous, rng=rng)
    method_cpu = _cpu() - before
    for name in ("encode", "cover", "terms", "bounds", "table"):
        record(name, timer.cpu.get(name, 0.0), timer.peak.get(name, 0.0))
    best = float("inf")
    for _ in range(args.repeat):
        before, peak = _cpu(), _peak_mib()
        rows = format_module.to_published_rows(result.table, schema)
        best = min(best, _cpu() - before)
        grew = _peak_mib() - peak
    record("rows", best, grew)
    out: dict[str, object] = {"period": args.period, "cases": len(supers.frame),
                              "reports": len(records), "passes": figures,
                              "method_cpu_s": round(method_cpu, 3),
                              "peak_rss_mib": round(_peak_mib(), 1)}
    if args.digest:
        out["input_sha256"] = input_sha256[:16]
        out["supers_sha256"] = _digest(supers.frame)
        out["rows_sha256"] = _digest(rows)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.period}: {out['reports']} reports, {out['cases']} cases; "
          f"method {out['method_cpu_s']} s CPU; peak RSS {out['peak_rss_mib']} MiB")
    for name, f in figures.items():
        print(f"  {name:8s} {f['cpu_s']:7.3f} s CPU   peak +{f['peak_growth_mib']:7.1f} MiB")
    for key in ("input_sha256", "supers_sha256", "rows_sha256"):
        if key in out:
            print(f"  {key}: {out[key]}")


if __name__ == "__main__":
    main()
