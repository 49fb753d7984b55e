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

It needs numba, which is not a dependency of medanon: run it with a Python that has it (e.g. a
throw-away venv: ``python3 -m venv /tmp/nb-venv && /tmp/nb-venv/bin/pip install -e . numba``)::

    /tmp/nb-venv/bin/python benchmarks/bench_numba_grouping.py sections /tmp/q2.pkl
    /tmp/nb-venv/bin/python benchmarks/bench_numba_grouping.py probe /tmp/q2.pkl --repeat 5

Figures (branch g46-numba on main d014b82, 450k-case quarters of /tmp/s450, numba 0.68.1 /
llvmlite 0.50.0 / numpy 2.4.6, Python 3.11; least of the runs): see the module's end
(``FIGURES``), printed by ``--help``. Not a test: the machine is shared and its timings vary
by far more than +-15% under load.
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
quarter 2 (449,526 records, 74,261 groups preformed, 44,951 leftovers), group_records 13.5 s:
  leftover placement 6.7 (_best_of_many 1.7, _best_in_class 1.4 over 34,959 calls, the rest
  in evaluate, the group table and the loop), preform_classes 1.8 (_class_groups 1.2: making
  the _Group objects), qid_classes 0.24, growth (the rest) ~4.7 over 26,616 steps.
quarter 1 (all new): group_records 6.5 s: preform_classes 1.8 (_class_groups 1.2), growth ~4.5.
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
def _first_fit_inputs(data):
    """The arrays :func:`preform_classes` hands its record-by-record first fit (no α): the
    eligible records by class (bounded first, each kind in rank order), each class's start and
    count of bounded records, the classes its runs cannot serve, each record's bounded terms
    (CSR) and η_s at k. The same steps as ``preform_classes`` up to its loop."""
    from medanon.anonymize import clustering as cl

    n, k = data.n, data.k
    growth_etas = data.growth_etas()
    p0 = data.base_risk()
    eligible = data.pool & data.anchor & (p0 < cl.INF)
    holder = np.repeat(np.arange(n), np.diff(data.term_ptr))
    is_bounded = growth_etas[data.term_ids] < cl.UNBOUNDED
    bounded = np.bincount(holder, weights=is_bounded, minlength=n) > 0
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
                runs=runs[~exact[run_class]], run_class=run_class[~exact[run_class]])


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
    args = parser.parse_args()
    if args.command == "sections":
        sections(args.pickle, args.names.split(","))
    else:
        probe(args.pickle, args.repeat)


if __name__ == "__main__":
    main()
