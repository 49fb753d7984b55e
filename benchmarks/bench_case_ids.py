"""Benchmark: a release's CaseID pseudonyms, its input digest and its shuffle, each on its own.

Reads one period's records from a store (a copy: opening it writes nothing, but the store
given may be shared), then times, in this process, what ``medanon release`` runs of them:

* ``check``     ``_check_pseudonyms`` of the period (hashes its CaseIDs, checks injectivity and
                the new cases against the published pseudonyms)
* ``cases``     ``CaseIds.of`` of the period's CaseIDs again (``release_steps``)
* ``records``   ``CaseIds.records`` of the period's records (``prepare_release``)
* ``digest``    ``input_digest`` of the records (operator-only)
* ``unordered`` ``_unordered`` of the super records (the release's shuffle)

Each figure is CPU seconds (``time.process_time``) and the growth of the process's peak RSS
during the pass. ``--repeat`` runs every pass again and prints the best. ``--out`` writes a
SHA-256 of each pass's output, to compare two versions of the code (they must agree).

    PYTHONPATH=src python benchmarks/bench_case_ids.py --store /tmp/q1_published.duckdb \
        --period 2020Q2 --repeat 3

Not a test: figures on a shared machine are noisy (+-15%); compare versions alternately.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sha(values) -> str:
    return hashlib.sha256("\x1f".join(map(str, values)).encode("utf-8", "surrogatepass")
                          ).hexdigest()


def _one_pass(store, args, schema, hierarchies, real, rng, timed) -> dict[str, str]:
    """Every pass once, as ``medanon release`` runs them; a digest of each one's output."""
    import numpy as np

    from medanon.data.records import combine_super_records
    from medanon.pipeline import publish
    from medanon.pipeline.case_ids import resolve
    from medanon.random import randomness

    case_ids, _key = resolve("pseudonym", rng, store.case_key())
    new = timed("check", lambda: publish._check_pseudonyms(store, case_ids, [args.period]))
    cases = timed("cases", lambda: case_ids.of(np.asarray(list(map(str, new)), dtype=object)))
    records = timed("records", lambda: case_ids.records(real, schema.case_id))
    case_ids.forget()
    digest = timed("digest", lambda: publish.input_digest(real))
    supers = combine_super_records(records, schema, hierarchies)
    shuffled = timed("unordered", lambda: publish._unordered(
        supers, records, schema, randomness(args.seed)))
    return {"check": _sha(new), "cases": _sha(cases), "records": _sha(records[schema.case_id]),
            "digest": digest, "unordered": _sha(shuffled.frame[schema.case_id])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--period", required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="write each pass's output digest (JSON) here")
    args = parser.parse_args()

    from medanon.random import randomness
    from medanon.store.duckdb_store import ReleaseStore

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.duckdb"
        shutil.copy(args.store, copy)
        store = ReleaseStore.open(copy, read_only=True)
        rng = randomness(args.seed)
        real = store.records(args.period)
        schema = store.schema
        hierarchies = schema.load_hierarchies()
        best: dict[str, float] = {}
        grew: dict[str, float] = {}
        outputs: dict[str, str] = {}

        def timed(name, run):
            before = _peak_mib()
            started = time.process_time()
            value = run()
            spent = time.process_time() - started
            best[name] = min(best.get(name, spent), spent)
            grew[name] = max(grew.get(name, 0.0), _peak_mib() - before)
            return value

        for _ in range(args.repeat):
            outputs = _one_pass(store, args, schema, hierarchies, real, rng, timed)
        store.close()
    for name, seconds in best.items():
        print(f"{name:10s} {seconds:7.3f} s  peak +{grew[name]:6.0f} MiB")
    print(f"{'total':10s} {sum(best.values()):7.3f} s  peak {_peak_mib():.0f} MiB")
    if args.out:
        Path(args.out).write_text(json.dumps(outputs, indent=1))


if __name__ == "__main__":
    main()
