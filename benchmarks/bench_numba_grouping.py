"""Benchmark: does a numba kernel pay for the grouping on this 2-core machine? (issue 43)

Issue 43 allows a compiled kernel for a loop of the grouping that must stay sequential, "only if
it pays on this 2-core machine". This script measures what decides it, on a pickled
``GroupingInput`` of a real release (``bench_grouping_inputs.py capture`` writes them; so does
any ``pickle.dump`` of the input ``common.py`` passes to ``group_records``):

* ``sections PICKLE``: the CPU of ``group_records`` and of its parts that module-level
  functions bound (preforming, the leftover placement and its searches); the growth phase is
  the rest. It shows how the grouping's cost is spread, i.e. how much code a kernel must take
  over before it can save a given number of seconds.
* ``probe PICKLE``: a kernel written for one sequential loop, the first fit of
  :func:`medanon.anonymize.clustering.preform_classes` over the QID classes whose runs do not
  fit (record by record, first open group whose σ_s + 1 <= η_s for every bounded term), against
  the same loop in Python, alternated; the kernel's groups are checked against
  ``preform_classes`` itself (every group, members in order). It gives the per-loop speed-up a
  kernel brings and, in fresh processes, numba's fixed costs: importing numba, compiling the
  kernel with no cache (a cold first run) and loading it from the cache (a warm run).
* ``check``: the kernel on the generated inputs of the grouping's property tests, against the
  record-by-record first fit and (inside ``group_records``) against ``group_reference``.
* ``release [--kernel] -- ARGS``: ``medanon ARGS`` in this process, with ``preform_classes``
  running its first fit as the kernel when asked: time it with ``/usr/bin/time -v`` and a fresh
  ``NUMBA_CACHE_DIR`` (cold, the kernel compiled) or a used one (warm, the kernel loaded).

It needs numba, which is not a dependency of medanon: run it with a Python that has it (e.g. a
throw-away venv: ``python3 -m venv /tmp/nb-venv && /tmp/nb-venv/bin/pip install -e . numba``;
``check`` needs pytest there too)::

    /tmp/nb-venv/bin/python benchmarks/bench_numba_grouping.py sections /tmp/q2.pkl
    /tmp/nb-venv/bin/python benchmarks/bench_numba_grouping.py probe /tmp/q2.pkl --repeat 5
    /tmp/nb-venv/bin/python benchmarks/bench_numba_grouping.py check
    cp /tmp/q1_published.duckdb /tmp/x.duckdb
    NUMBA_CACHE_DIR=/tmp/nbcache /usr/bin/time -v /tmp/nb-venv/bin/python \\
        benchmarks/bench_numba_grouping.py release --kernel -- release --store /tmp/x.duckdb \\
        --seed 1 --allow-seeded --publish-despite-violations --json 2020Q2

numba caches a kernel under ``NUMBA_CACHE_DIR`` when set, else in ``__pycache__`` beside its
source file when that is writable, else in ``$XDG_CACHE_HOME/numba`` (``~/.cache/numba``); when
none is writable, decorating a function with ``cache=True`` raises RuntimeError ("cannot cache
function ...: no locator available"), i.e. at import. The cache is keyed by a hash of the whole
source file, so any edit of the kernel's module compiles it again.

The figures (``FIGURES``, printed by ``--help``) are not a test: the machine is shared and its
timings vary by far more than +-15% under load.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

FIGURES = """
Branch g46-numba on main d014b82; 450k-case quarters of /tmp/s450 (ppms++ k 5, theta frequency);
numba 0.68.1, llvmlite 0.50.0, numpy 2.4.6, Python 3.11; CPU = user + sys; machine load 4-7.

Where group_records spends its CPU (sections):
  quarter 2 (449,526 records; 74,261 groups preformed, 6,654 grown in 26,616 steps, 44,951
  leftovers): 13.5 s = leftover placement 6.7 (_best_of_many 1.7, _best_in_class 1.4 in
  34,959 calls, the rest in evaluate, the group table and the loop) + preform_classes 1.8
  (_class_groups 1.2: making the _Group objects) + qid_classes 0.24 + growth ~4.7.
  quarter 1 (all new): 6.5 s = preform_classes 1.8 (_class_groups 1.2) + growth ~4.5.

The kernel (probe; least of 5): the first fit of the classes whose runs do not fit
  quarter 2 (19 classes, 33,218 records): python 0.145 s, kernel 0.018 s (8x)
  quarter 1 (148 classes, 103,607 records): python 0.345 s, kernel 0.048 s (7x)
  equal to the Python loop and to preform_classes on both; on the 72 generated inputs of the
  property tests (33 with classes fitted record by record) equal to the record-by-record first
  fit and, inside group_records, to group_reference (check).
numba's fixed costs, each in a fresh process: import numba 0.43-0.50 s CPU (0.18 of it numpy,
  already paid by medanon); first call with no cache (compile) 5.8-5.9 s; first call with the
  cache 0.45-0.47 s (numba's own start-up on a first dispatch: a trivial cached function costs
  0.55 s, a second one 0.004 s); cache 142 KiB. Peak RSS: import numba +54 MiB, its first
  dispatch +68 MiB.

Whole releases (medanon release through the release command below, CPU s / peak RSS MiB, runs
alternated in pairs q1 + q2):
  quarter 1: main 42.2/961, 37.8/939, 39.5/953, 41.6/946; kernel cold 44.4/1060, 51.9/1070;
             kernel warm 42.1/1057, 42.3/1057, 45.4/1044
  quarter 2: main 55.9/1199, 53.6/1190, 52.0/1203, 53.4/1197; kernel cold 60.0/1269, 66.8/1269;
             kernel warm 51.8/1233, 56.1/1233, 59.6/1232
  medians: q1 main 40.5 s, warm 42.3 s, cold 48 s; q2 main 53.5 s, warm 56.1 s, cold 63 s (the
  noise is larger than the kernel's 0.1-0.3 s, not its fixed costs); peak RSS +100 MiB on q1
  (946-961 -> 1044-1072), +35-70 MiB on q2 (1190-1203 -> 1232-1269).
  The exports (csv) of main's and the kernel's stores are the same bytes but published_at.
Verdict: this kernel saves 0.13-0.30 s and costs ~0.7 s CPU warm (import + first dispatch),
  ~6 s cold, and ~100 MiB of peak RSS: a kernel pays only if it takes over some 3 s of Python
  (>= 2 s net), which only the whole growth phase (~4.5 s each quarter) or the whole leftover
  placement (6.7 s on quarter 2) holds, each spread over dict-based sigma, _Group objects and
  the block indexes.
"""


def _load(path: str):
    with open(path, "rb") as f:
        return pickle.load(f)


def sections(path: str, names: list[str]) -> None:
    """Print the CPU of ``group_records`` on the pickled input and of the module functions
    ``names`` called inside it (wrapped, so only module-level calls are seen)."""
    from medanon.anonymize import clustering as cl

    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)

    def timed(name: str):
        inner = getattr(cl, name)

        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - start
                calls[name] += 1
        return wrapper

    for name in names:
        setattr(cl, name, timed(name))
    data = _load(path)
    start = time.process_time()
    result = cl.group_records(data)
    total = time.process_time() - start
    print(f"group_records: {data.n} records, {result.n_groups} groups ({result.preformed} "
          f"preformed), {result.leftovers} leftovers: {total:.2f} s CPU")
    for name in names:
        print(f"  {name}: {spent[name]:.2f} s in {calls[name]} calls")


# --------------------------------------------------------------------------------- the probe loop
def _first_fit_inputs(data, class_of=None, p0=None):
    """The arrays :func:`preform_classes` hands its record-by-record first fit (no α): the
    eligible records by class (bounded first, each kind in rank order), each class's start and
    count of bounded records, the classes its runs cannot serve, each record's bounded terms
    (CSR) and η_s at k. The same steps as ``preform_classes`` up to its loop."""
    from medanon.anonymize import clustering as cl

    n, k = data.n, data.k
    growth_etas = data.growth_etas()
    p0 = data.base_risk() if p0 is None else p0
    eligible = data.pool & data.anchor & (p0 < cl.INF)
    holder = np.repeat(np.arange(n), np.diff(data.term_ptr))
    is_bounded = growth_etas[data.term_ids] < cl.UNBOUNDED
    bounded = np.bincount(holder, weights=is_bounded, minlength=n) > 0
    if class_of is None:
        class_of, _ = cl.qid_classes(data)
    members = np.flatnonzero(eligible)
    members = members[np.lexsort((data.rank[members], ~bounded[members], class_of[members]))]
    sizes = np.bincount(class_of[members], minlength=int(class_of.max()) + 1)
    starts = np.r_[0, np.cumsum(sizes)]
    b_ids = data.term_ids[is_bounded]
    b_ptr = np.r_[0, np.cumsum(np.bincount(holder[is_bounded], minlength=n))]
    cls_sorted = class_of[members]
    m_of = sizes // k
    pos = np.arange(len(members)) - starts[cls_sorted]
    used = pos < (m_of * k)[cls_sorted]
    runs = members[used].reshape(-1, k)
    run_class = np.repeat(np.arange(len(sizes)), m_of)
    exact = np.zeros(len(sizes), dtype=bool)
    if len(runs):
        recs = runs.ravel()
        lengths = b_ptr[recs + 1] - b_ptr[recs]
        at = (np.repeat(b_ptr[recs] - np.cumsum(lengths) + lengths, lengths)
              + np.arange(int(lengths.sum())))
        V = len(data.theta)
        pairs = np.repeat(np.repeat(np.arange(len(runs)), k), lengths) * V + b_ids[at]
        keys, counts = np.unique(pairs, return_counts=True)
        over = keys[counts > growth_etas[keys % V]] // V
        exact[run_class[over]] = True
    hard = np.bincount(cls_sorted[bounded[members]], minlength=len(sizes))
    return dict(members=members, starts=starts, classes=np.flatnonzero(exact), hard=hard,
                b_ptr=b_ptr, b_ids=b_ids, etas=growth_etas.astype(np.int64), k=k,
                runs=runs[~exact[run_class]], run_class=run_class[~exact[run_class]],
                class_of=class_of)


def first_fit_python(members, starts, classes, hard, b_ptr, b_ids, etas, k):
    """``preform_classes``'s record-by-record first fit (no α), as it is written there:
    (members of each group formed, k per row; the class of each)."""
    eta_list = etas.tolist()
    bounded_ids, bounded_ptr = b_ids.tolist(), b_ptr.tolist()
    formed_rows: list[list[int]] = []
    formed_class: list[int] = []
    for c in classes.tolist():
        rows = members[starts[c]:starts[c + 1]]
        m = len(rows) // k
        slots: list[list[int]] = [[] for _ in range(m)]
        sigma: list[dict[int, int]] = [{} for _ in range(m)]
        h = int(hard[c])
        open_slots = list(range(m))
        for r in rows[:h].tolist():
            terms = bounded_ids[bounded_ptr[r]:bounded_ptr[r + 1]]
            for at_slot, i in enumerate(open_slots):
                sig = sigma[i]
                if any(sig.get(s, 0) >= eta_list[s] for s in terms):
                    continue
                for s in terms:
                    sig[s] = sig.get(s, 0) + 1
                slots[i].append(r)
                if len(slots[i]) == k:
                    del open_slots[at_slot]
                break
            if not open_slots:
                break
        free = rows[h:].tolist()
        used_free = 0
        for i in range(m):
            need = k - len(slots[i])
            slots[i] += free[used_free:used_free + need]
            used_free += need
            if len(slots[i]) == k:
                formed_rows.append(slots[i])
                formed_class.append(c)
    return (np.asarray(formed_rows, dtype=np.int64).reshape(-1, k),
            np.asarray(formed_class, dtype=np.int64))


def _first_fit_kernel_py(members, starts, classes, hard, b_ptr, b_ids, etas, k):
    """The same first fit over integer arrays, for numba (each open group's σ of bounded terms
    is a short list of (term, count): a group of k records holds at most k times a record's
    bounded terms)."""
    most = 0
    for r in range(len(b_ptr) - 1):
        most = max(most, b_ptr[r + 1] - b_ptr[r])
    cap = max(1, k * most)
    out = np.empty((len(members) // k + 1, k), dtype=np.int64)
    out_class = np.empty(len(members) // k + 1, dtype=np.int64)
    formed = 0
    for c in classes:
        lo = starts[c]
        size = starts[c + 1] - lo
        m = size // k
        slot = np.empty((m, k), dtype=np.int64)
        fill = np.zeros(m, dtype=np.int64)
        held = np.empty((m, cap), dtype=np.int64)
        count = np.empty((m, cap), dtype=np.int64)
        distinct = np.zeros(m, dtype=np.int64)
        open_slots = np.arange(m)
        n_open = m
        h = hard[c]
        for p in range(lo, lo + h):
            if n_open == 0:
                break
            r = members[p]
            for at in range(n_open):
                i = open_slots[at]
                fits = True
                for q in range(b_ptr[r], b_ptr[r + 1]):
                    s = b_ids[q]
                    sig = 0
                    for x in range(distinct[i]):
                        if held[i, x] == s:
                            sig = count[i, x]
                            break
                    if sig >= etas[s]:
                        fits = False
                        break
                if not fits:
                    continue
                for q in range(b_ptr[r], b_ptr[r + 1]):
                    s = b_ids[q]
                    found = False
                    for x in range(distinct[i]):
                        if held[i, x] == s:
                            count[i, x] += 1
                            found = True
                            break
                    if not found:
                        held[i, distinct[i]] = s
                        count[i, distinct[i]] = 1
                        distinct[i] += 1
                slot[i, fill[i]] = r
                fill[i] += 1
                if fill[i] == k:
                    # del open_slots[at], keeping the slot order
                    for y in range(at, n_open - 1):
                        open_slots[y] = open_slots[y + 1]
                    n_open -= 1
                break
        free = lo + h
        end = lo + size
        for i in range(m):
            while fill[i] < k and free < end:
                slot[i, fill[i]] = members[free]
                fill[i] += 1
                free += 1
            if fill[i] == k:
                out[formed] = slot[i]
                out_class[formed] = c
                formed += 1
    return out[:formed], out_class[:formed]


def probe(path: str, repeat: int) -> None:
    """Time the first fit in Python and as a kernel (alternated), check the kernel against
    ``preform_classes``, and measure numba's fixed costs in fresh processes."""
    from medanon.anonymize import clustering as cl

    data = _load(path)
    if data.alpha is not None:
        sys.exit("probe: the kernel covers the first fit without alpha")
    inputs = _first_fit_inputs(data)
    args = [inputs[name] for name in ("members", "starts", "classes", "hard", "b_ptr", "b_ids",
                                      "etas", "k")]
    print(f"{data.n} records; {len(inputs['classes'])} classes fitted record by record, "
          f"{int(np.diff(inputs['starts'])[inputs['classes']].sum())} of their records")
    kernel = _compiled()
    python_times, kernel_times = [], []
    for _ in range(repeat):
        start = time.process_time()
        slow = first_fit_python(*args)
        python_times.append(time.process_time() - start)
        start = time.process_time()
        fast = kernel(*args)
        kernel_times.append(time.process_time() - start)
    same = np.array_equal(slow[0], fast[0]) and np.array_equal(slow[1], fast[1])
    # the oracle: preform_classes itself (runs and fitted classes, in class order)
    rows = np.concatenate([inputs["runs"], fast[0]])
    order = np.argsort(np.concatenate([inputs["run_class"], fast[1]]), kind="stable")
    groups, _ = cl.preform_classes(data)
    oracle = np.array([g.members for g in groups], dtype=np.int64).reshape(-1, data.k)
    print(f"first fit: python {min(python_times):.3f} s, kernel {min(kernel_times):.4f} s "
          f"(least of {repeat}); kernel == python: {same}; "
          f"kernel == preform_classes: {np.array_equal(rows[order], oracle)}")
    costs()


def _compiled():
    from numba import njit

    return njit(cache=True)(_first_fit_kernel_py)


_COST_SNIPPET = """
import time, sys
t0 = time.process_time()
import numba
t1 = time.process_time()
sys.path.insert(0, {here!r})
import bench_numba_grouping as b
import numpy as np
kernel = b._compiled()
z = np.zeros(2, dtype=np.int64)
t2 = time.process_time()
kernel(np.arange(10), np.array([0, 10]), np.array([0]), np.array([3]), np.zeros(11, dtype=np.int64),
       np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), 5)
t3 = time.process_time()
print(f"{{t1 - t0:.3f}} {{t3 - t2:.3f}}")
"""


def costs() -> None:
    """numba's import, and the kernel's first call with no cache (compile) and with it (load),
    each in a fresh process with a fresh cache directory."""
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold (no cache)", "warm (cache loaded)", "warm again"):
            out = subprocess.run([sys.executable, "-c", _COST_SNIPPET.format(here=here)], env=env,
                                 check=True, capture_output=True, text=True).stdout.split()
            print(f"{label}: import numba {out[0]} s CPU, first call {out[1]} s CPU")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(cache) for f in fs)
        print(f"cache: {size // 1024} KiB in NUMBA_CACHE_DIR")


def _kernel_preform(original):
    """``preform_classes`` with its first fit run by the kernel (without α and by runs; else
    ``original``): the same steps before and after it."""
    from medanon.anonymize import clustering as cl

    compiled = _compiled()

    def preform(data, class_of=None, *, p0=None, alpha_seed=None, by_runs=True):
        if data.alpha is not None or not by_runs or data.n < data.k:
            return original(data, class_of, p0=p0, alpha_seed=alpha_seed, by_runs=by_runs)
        inputs = _first_fit_inputs(data, class_of, p0)
        fitted, fitted_class = compiled(*[inputs[name] for name in (
            "members", "starts", "classes", "hard", "b_ptr", "b_ids", "etas", "k")])
        flat = np.concatenate([inputs["runs"], fitted])
        taken = np.zeros(data.n, dtype=bool)
        if not len(flat):
            return [], taken
        flat = flat[np.argsort(np.concatenate([inputs["run_class"], fitted_class]),
                               kind="stable")]
        taken[flat.ravel()] = True
        return cl._class_groups(data, flat, inputs["class_of"]), taken

    return preform


def check() -> None:
    """The kernel on the generated inputs of the grouping's property tests
    (``tests/unit/test_clustering.py``): ``preform_classes`` with the kernel equals the record
    by record first fit (members and σ of every group), and ``group_records`` with it equals
    ``group_reference`` (group of every record, unplaced, preformed)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from medanon.anonymize import clustering as cl
    from tests.unit.test_clustering import _random_input

    original = cl.preform_classes
    kernel = _kernel_preform(original)
    cases = bad = fitted = 0
    for mode in ("ms", "ppms", "ppms++"):
        for seed in range(8):
            for values in (2, 3, None):
                data = _random_input(200 + 40 * seed, seed, mode, k=2 + seed % 3,
                                     theta=(0.3, 0.5, 0.7, 1.0)[seed % 4], alpha=None,
                                     values=values, missing=seed % 2 == 1, classes_first=True)
                fast, fast_taken = kernel(data)
                fitted += bool(len(_first_fit_inputs(data)["classes"]))
                slow, slow_taken = original(data, by_runs=False)
                ok = (np.array_equal(fast_taken, slow_taken)
                      and [g.members for g in fast] == [g.members for g in slow]
                      and [g.sigma for g in fast] == [g.sigma for g in slow])
                cl.preform_classes = kernel
                try:
                    quick = cl.group_records(data)
                finally:
                    cl.preform_classes = original
                ref = cl.group_reference(data)
                ok = ok and (np.array_equal(quick.group_of, ref.group_of)
                             and quick.unplaced == ref.unplaced and quick.preformed == ref.preformed)
                cases += 1
                bad += not ok
    print(f"{cases} generated inputs ({fitted} with classes the kernel fits record by record): "
          f"kernel == first fit and group_records == group_reference on {cases - bad}")


def release(argv: list[str], kernel: bool) -> None:
    """Run the CLI with ``argv``; with ``kernel``, ``preform_classes`` (without α, by runs)
    runs its first fit as the kernel (the rest as it is), so that a whole release shows the
    kernel's gain net of numba's import and of compiling or loading the kernel."""
    from medanon.anonymize import clustering as cl
    from medanon.cli.app import main as cli

    if kernel:
        cl.preform_classes = _kernel_preform(cl.preform_classes)
    sys.argv = ["medanon", *argv]
    cli()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=FIGURES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sections", help="CPU of group_records and its parts")
    s.add_argument("pickle")
    s.add_argument("--names", default="qid_classes,preform_classes,_class_groups,"
                   "_place_leftovers,_best_in_class,_best_of_many")
    p = sub.add_parser("probe", help="the first fit as a kernel, and numba's fixed costs")
    p.add_argument("pickle")
    p.add_argument("--repeat", type=int, default=3)
    r = sub.add_parser("release", help="medanon ARGS, with or without the kernel")
    r.add_argument("--kernel", action="store_true")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    sub.add_parser("check", help="the kernel against the oracles on the property tests' inputs")
    args = parser.parse_args()
    if args.command == "check":
        check()
    elif args.command == "release":
        release([a for a in args.argv if a != "--"], args.kernel)
    elif args.command == "sections":
        sections(args.pickle, args.names.split(","))
    else:
        probe(args.pickle, args.repeat)


if __name__ == "__main__":
    main()
