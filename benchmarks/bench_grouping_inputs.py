"""Benchmark: the grouping alone (``group_records``) on the inputs of real releases (issue 43).

A release spends a third to a half of its CPU in the grouping; timing the whole release to see
a change there is slow and noisy. This script does it in two steps:

1. ``capture``: run ``medanon release`` with the given arguments (on a copy of a store: a
   release writes into its store) and pickle every ``GroupingInput`` the release groups, with
   the grouping's result;
2. ``run``: load a pickled input, group it again with the code on ``PYTHONPATH`` and print its
   CPU seconds, and whether the result equals the captured one (group of every record,
   unplaced, suppressed and the counters).

So the same input can be grouped by two versions of the code (say main and a branch) in
alternation, and a branch's result checked against main's captured result (``compare`` runs
both versions in one process, alternating, the other one loaded from its file)::

    cp /tmp/s450/ingested.duckdb /tmp/x.duckdb
    python benchmarks/bench_grouping_inputs.py capture /tmp/q1 -- release --store /tmp/x.duckdb \\
        --method ppms++ --k 5 --theta frequency --on-infeasible suppress-terms --seed 1 \\
        --allow-seeded --publish-despite-violations --json 2020Q1
    python benchmarks/bench_grouping_inputs.py run /tmp/q1.1
    python benchmarks/bench_grouping_inputs.py compare /tmp/q1.1 \\
        /work/main/src/medanon/anonymize/clustering.py --repeat 4

Issue 43 (450k-case quarters, d64cebc -> branch g43-group, CPU of ``group_records``, the two
versions run side by side on a loaded 2-core machine): quarter 1 12.1 -> 10.3 s and 14.6 ->
12.0 s, quarter 2 (45k follow-ups placed) 27.1 -> 21.7 s; every result the same as captured.
Branch g45-growth (the growth phase, 914f239 -> it, in one process alternating, least of 8 and
of 4 runs at load 4.5-9; the growth phase is group_records without the leftover placement):
quarter 1 7.38 -> 5.27 s (median 7.81 -> 6.31 s), quarter 2 7.49 -> 5.18 s (median 7.85 ->
5.67 s); making the GroupingInput 0.39-0.46 -> 0.03 s; every result the same as captured.
Not a test: the machine is shared and its timings vary by far more than +-15% under load.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
import time

import numpy as np


def capture(prefix: str, argv: list[str]) -> None:
    """Run the CLI with ``argv``, pickling each grouping's input and result under ``prefix``."""
    import medanon.anonymize.common as common
    from medanon.cli.app import main

    original = common.group_records
    count = [0]

    def recording(data, **kwargs):
        count[0] += 1
        name = f"{prefix}.{count[0]}"
        with open(f"{name}.pkl", "wb") as f:
            pickle.dump(data, f, protocol=5)
        start = time.process_time()
        result = original(data, **kwargs)
        print(f"grouping {name}: {data.n} records, {time.process_time() - start:.2f} s CPU",
              file=sys.stderr)
        with open(f"{name}.res.pkl", "wb") as f:
            pickle.dump(result, f, protocol=5)
        return result

    common.group_records = recording  # type: ignore[assignment]
    sys.argv = ["medanon", *argv]
    main()


def run(name: str, repeat: int) -> None:
    """Group the input pickled as ``name`` again; print CPU seconds and agreement."""
    from medanon.anonymize import clustering

    with open(f"{name}.pkl", "rb") as f:
        # (replace: the input's derived fields are made again by the code being measured)
        data = dataclasses.replace(pickle.load(f))
    with open(f"{name}.res.pkl", "rb") as f:
        expected = pickle.load(f)
    # the leftover placement's share, timed apart (issue 43: the largest single piece of
    # quarter 2's grouping)
    place, leftover_cpu = clustering._place_leftovers, [0.0]

    def timed_placement(*args, **kwargs):
        start = time.process_time()
        place(*args, **kwargs)
        leftover_cpu[0] += time.process_time() - start

    clustering._place_leftovers = timed_placement  # type: ignore[assignment]
    for _ in range(repeat):
        leftover_cpu[0] = 0.0
        start = time.process_time()
        result = clustering.group_records(data)
        cpu = time.process_time() - start
        same = (np.array_equal(result.group_of, expected.group_of)
                and all(getattr(result, a) == getattr(expected, a)
                        for a in ("n_groups", "unplaced", "suppressed", "late", "failed_seeds",
                                  "budget_stops", "leftovers", "preformed", "passes")))
        print(f"{name}: {data.n} records, {result.n_groups} groups, {result.leftovers} leftovers, "
              f"group_records {cpu:.2f} s CPU (leftover placement {leftover_cpu[0]:.2f} s), "
              f"same as captured: {same}")


def compare(name: str, base: str, repeat: int) -> None:
    """Group the input pickled as ``name`` with the clustering module on ``PYTHONPATH`` and with
    the one in the file ``base`` (say main's ``src/medanon/anonymize/clustering.py``), in
    alternation, ``repeat`` times each; print each CPU time and agreement with the capture."""
    import importlib.util

    from medanon.anonymize import clustering

    # the base module sits in the same package (imported above), so its relative imports resolve
    spec = importlib.util.spec_from_file_location("medanon.anonymize._base_clustering", base)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other
    spec.loader.exec_module(other)
    with open(f"{name}.pkl", "rb") as f:
        raw = pickle.load(f)
    with open(f"{name}.res.pkl", "rb") as f:
        expected = pickle.load(f)
    fields = {f.name: getattr(raw, f.name) for f in dataclasses.fields(raw) if f.init}
    times: dict[str, list[float]] = {"base": [], "this": []}
    for i in range(repeat):
        pair = [("base", other), ("this", clustering)]
        for tag, module in pair if i % 2 == 0 else pair[::-1]:
            start = time.process_time()
            # (the input made by each module: the time of its derived fields is counted)
            result = module.group_records(module.GroupingInput(**fields))
            cpu = time.process_time() - start
            same = (np.array_equal(result.group_of, expected.group_of)
                    and result.budget_stops == expected.budget_stops)
            times[tag].append(cpu)
            print(f"{tag}: input and group_records {cpu:.2f} s CPU, same as captured: {same}",
                  flush=True)
    for tag, values in times.items():
        print(f"{tag}: least {min(values):.2f} s, median {sorted(values)[len(values) // 2]:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="run a release, pickling its grouping inputs")
    cap.add_argument("prefix", help="path prefix of the pickles (PREFIX.N.pkl, PREFIX.N.res.pkl)")
    cap.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the medanon arguments")
    again = sub.add_parser("run", help="group a pickled input again")
    again.add_argument("name", help="PREFIX.N of a captured input")
    again.add_argument("--repeat", type=int, default=1)
    both = sub.add_parser("compare", help="group a pickled input with two versions, alternating")
    both.add_argument("name", help="PREFIX.N of a captured input")
    both.add_argument("base", help="path of the other version's clustering.py")
    both.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.prefix, args.argv[1:] if args.argv[:1] == ["--"] else args.argv)
    elif args.command == "compare":
        compare(args.name, args.base, args.repeat)
    else:
        run(args.name, args.repeat)


if __name__ == "__main__":
    main()
