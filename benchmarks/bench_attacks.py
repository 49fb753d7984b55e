"""Benchmark: the verify gate, the worst-case attacks and RR/AR_rev on synthetic quarters.

Publishes a 3-quarter synthetic series with MS (per-release groups, so the attacks bite),
PPMS++ and PPMS-DP_all (strict, ε = 1 per QID: the likelihood-weighted attacker, whose RR is a
posterior over every record of the release per target) and times, per size: the verifier over the series (``verify_series``), the worst-case
attacks (``attack_series``) and RR/AR_rev of the middle quarter (``linkage_risk``, a targets x
records computation in chunks). Prints peak resident memory. Not a test: timings are noisy.

    python benchmarks/bench_attacks.py                 # about 5k and 20k cases per quarter
    python benchmarks/bench_attacks.py --sizes 7000
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from medanon.anonymize import METHODS
from medanon.attacks.worst_case import attack_series
from medanon.data.loaders.faers import read_faers
from medanon.data.records import combine_super_records
from medanon.data.schema import Schema
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.disclosure import linkage_risk
from medanon.random import randomness
from medanon.published.cells import QidInfo
from medanon.published.format import to_published_rows
from medanon.pipeline.publish import build_manifest
from medanon.published.series import PublishedSeries
from medanon.verify import verify_series

SIZES = (7_000, 28_000)


def publish(method_name: str, quarters, schema, tax):
    extra = {"epsilon": 1} if method_name.startswith("ppms-dp") else {}
    method = METHODS[method_name](k=5, theta="frequency", on_infeasible="raise-theta", **extra)
    rng = randomness(1)
    releases, manifests, originals = {}, {}, {}
    for quarter in quarters:
        label = getattr(quarter.period, "label", quarter.period)
        supers = combine_super_records(quarter.records, schema, tax)
        result = method.anonymize(supers, list(releases.values()), rng=rng)
        rows = to_published_rows(result.table, schema)
        releases[label] = rows
        manifests[label] = build_manifest(schema, tax, method, label, rng, result=result,
                                          rows=rows, n_reports=len(quarter.records))
        originals[label] = supers.frame
    qids = tuple(QidInfo(q.name, q.kind, tax.get(q.name)) for q in schema.qids)
    return PublishedSeries(releases, manifests, qids, tuple(schema.sensitive), method_name), originals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    schema = Schema.default()
    tax = schema.load_hierarchies()
    print(f"{'method':8} {'cases/q':>8} {'verify s':>9} {'attack s':>9} {'RR s':>7} "
          f"{'DIR Q2':>7} {'RR Q2':>7} {'AR Q2':>7}")
    for size in args.sizes:
        folder = Path(tempfile.mkdtemp(prefix="bench-attacks-"))
        write_faers_series(folder, periods=3, cases=size, seed=9)
        quarters = read_faers(folder).quarters
        for method in ("ms", "ppms++", "ppms-dp-all"):
            series, originals = publish(method, quarters, schema, tax)
            mid = series.periods[1]
            t0 = time.perf_counter()
            verify_series(series)
            t1 = time.perf_counter()
            worst = attack_series(series)
            t2 = time.perf_counter()
            risk = linkage_risk(series, mid, originals[mid])
            t3 = time.perf_counter()
            print(f"{method:8} {len(series.releases[mid]):>8} {t1 - t0:>9.2f} {t2 - t1:>9.2f} "
                  f"{t3 - t2:>7.2f} {worst.release(mid).dir:>7.3f} {risk.rr:>7.4f} "
                  f"{risk.ar_rev:>7.4f}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
