"""Benchmark: the verify gate alone on a candidate release (issue 43).

``medanon release`` runs the gate (:func:`medanon.verify.gate`) on each candidate before its
store transaction commits. This script runs a release as the command line does, in this
process, with the gate wrapped: the gate's arguments are pickled into ``--keep`` (once), and
the gate's CPU time is printed. Given a file kept before, it times the gate alone on it,
``--repeat`` times, and prints a digest of the manifest's verification entry and of the
verdict, so two versions of the code can be compared on the same candidate (same digests:
the same verdict, byte for byte).

    # once: release quarter 1 of a copy of an ingested store, keeping the gate's input
    cp /tmp/s450/ingested.duckdb /tmp/q1.duckdb
    python benchmarks/bench_gate.py --keep /tmp/gate_q1.pkl -- release --store /tmp/q1.duckdb \\
        --method ppms++ --k 5 --theta frequency --on-infeasible suppress-terms --seed 1 \\
        --allow-seeded --publish-despite-violations --json 2020Q1
    # then, per version of the code (PYTHONPATH=.../src):
    python benchmarks/bench_gate.py --input /tmp/gate_q1.pkl --repeat 3

CPU is user + system time of this process (``time.process_time``). Not a test: figures on a
shared machine are noisy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def keep(path: str, argv: list[str]) -> int:
    """Run ``medanon ARGV`` with the gate's input pickled into ``path``."""
    import medanon.pipeline.publish as publish
    from medanon.cli.app import main

    real = publish.gate

    def wrapped(published, period, rows, manifest, *, before=None):
        with open(path, "wb") as fh:
            pickle.dump((published, period, rows, manifest, before), fh, protocol=5)
        started = time.process_time()
        try:
            return real(published, period, rows, manifest, before=before)
        finally:
            print(f"gate {period}: {time.process_time() - started:.3f} s CPU", file=sys.stderr)

    publish.gate = wrapped
    return main(argv)


def replay(path: str, repeat: int) -> None:
    """Time the gate on the input kept in ``path``."""
    from medanon.errors import PrivacyViolation
    from medanon.verify import gate

    with open(path, "rb") as fh:
        published, period, rows, manifest, before = pickle.load(fh)
    for _ in range(repeat):
        started = time.process_time()
        try:
            result = gate(published, period, rows, manifest, before=before)
            entry, verdict = result.verification, result.verdict
        except PrivacyViolation as exc:
            entry, verdict = exc.verification, exc.verdict
        print(f"gate {period} ({len(rows)} rows): {time.process_time() - started:.3f} s CPU")
    print(f"verification entry {_digest(entry)}, {len(entry.get('violations', []))} "
          f"violation(s); verdict {_digest(verdict.to_dict() if verdict else None)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="run the medanon command after '--', keeping the "
                                       "gate's input in this file")
    parser.add_argument("--input", help="time the gate on the input kept in this file")
    parser.add_argument("--repeat", type=int, default=1)
    args, rest = parser.parse_known_args()
    rest = rest[1:] if rest[:1] == ["--"] else rest
    if bool(args.keep) == bool(args.input):
        parser.error("give exactly one of --keep (with a medanon command) or --input")
    if args.keep:
        return keep(args.keep, rest)
    replay(args.input, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
