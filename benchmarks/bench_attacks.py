"""Benchmark: the verify gate, the worst-case attacks, RR/AR_rev and the whole evaluation.

Publishes a synthetic series (default 4 quarters) with MS (per-release groups, so the attacks
bite), PPMS++ and PPMS-DP_all (strict, ε = 1 per QID: the likelihood-weighted attacker, whose
RR is a posterior over every record of the release per target) and times, per size:

* ``verify``: the verifier over the series (:func:`medanon.verify.verify_series`);
* ``attack``: the worst-case attacks on every release (:func:`attack_series`);
* ``RR``: RR/AR_rev of the middle quarter (:func:`linkage_risk`: from the index for the
  hard-exclusion attacker, a targets x records computation in chunks for the likelihood-weighted
  one); with ``--reference`` also the all-pairs reference the index replaced (``RR ref``);
* ``evaluate``: everything ``medanon evaluate`` computes for every release, the planted signal
  rules included (:func:`evaluate_series`, one period at a time).

Prints peak resident memory. Not a test: timings are noisy (run on a quiet machine). This
script times the library calls; the command-line figures (``medanon verify``/``attack``/
``evaluate`` on a store, parsing and start-up included) are in ``docs/attacks-and-verify.md``.

    python benchmarks/bench_attacks.py                         # 5k and 20k cases per quarter
    python benchmarks/bench_attacks.py --sizes 100000 --methods ppms++
    python benchmarks/bench_attacks.py --sizes 5000 --reference
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import medanon
from medanon.attacks.worst_case import attack_series
from medanon.data.synth import PLANTED_SIGNALS
from medanon.data.synth.faers import write_faers_series
from medanon.metrics.disclosure import _reference_linkage_risk, linkage_risk
from medanon.metrics.evaluation import evaluate_series
from medanon.metrics.signals import SignalRule
from medanon.published.format import original_as_published
from medanon.verify import verify_series

SIZES = (7_000, 28_000)
METHODS = ("ms", "ppms++", "ppms-dp-all")


def publish(method_name: str, data):
    extra = {"epsilon": 1} if method_name.startswith("ppms-dp") else {}
    publisher = medanon.Publisher(method_name, k=5, theta="frequency",
                                  on_infeasible="raise-theta", max_withheld=1.0, seed=1,
                                  **extra)
    # MS's releases break the periodic model (the attacks bite): keep them to time the attacks
    return publisher.publish(data, allow_violations=True)


class _Originals(dict):
    """Period -> original super records, made when first asked for (as the store reads them)."""

    def __init__(self, data, published: bool):
        super().__init__()
        self.data, self.published = data, published

    def __missing__(self, period: str):
        frame = self.data.super_records(period).frame
        return original_as_published(frame, self.data.schema) if self.published else frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="cases per quarter (new and follow-up)")
    parser.add_argument("--periods", type=int, default=4)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--reference", action="store_true",
                        help="also time the all-pairs RR/AR_rev (quadratic: small sizes only)")
    args = parser.parse_args()
    rules = [SignalRule(r.drug, r.reaction, r.condition) for r in PLANTED_SIGNALS]
    print(f"{'method':11} {'cases/q':>8} {'verify s':>9} {'attack s':>9} {'RR s':>7} "
          f"{'RR ref s':>9} {'evaluate s':>11} {'DIR Q2':>7} {'RR Q2':>7} {'AR Q2':>7}")
    for size in args.sizes:
        folder = Path(tempfile.mkdtemp(prefix="bench-attacks-"))
        # FAERS's own follow-up rate (about 0.1)
        write_faers_series(folder / "faers", periods=args.periods, cases=size, seed=9,
                           followup_rate=0.1)
        # the papers' filter, as when docs/scale.md's figures were measured
        data = medanon.Dataset.from_faers(folder / "faers", keep_missing=False)
        for method in args.methods:
            series = publish(method, data)
            mid = series.periods[len(series.periods) // 2]
            original = data.super_records(mid).frame
            t0 = time.perf_counter()
            verify_series(series)
            t1 = time.perf_counter()
            worst = attack_series(series)
            t2 = time.perf_counter()
            risk = linkage_risk(series, mid, original)
            t3 = time.perf_counter()
            reference = "-"
            if args.reference:
                if _reference_linkage_risk(series, mid, original) != risk:
                    raise AssertionError("the index and the all-pairs reference differ")
                reference = f"{time.perf_counter() - t3:.2f}"
            t4 = time.perf_counter()
            evaluate_series(series, _Originals(data, False), _Originals(data, True),
                            rules=rules)
            t5 = time.perf_counter()
            print(f"{method:11} {len(series.releases[mid]):>8} {t1 - t0:>9.2f} {t2 - t1:>9.2f} "
                  f"{t3 - t2:>7.2f} {reference:>9} {t5 - t4:>11.2f} "
                  f"{worst.release(mid).dir:>7.3f} {risk.rr:>7.4f} {risk.ar_rev:>7.4f}",
                  flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
