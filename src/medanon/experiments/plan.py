"""``medanon plan``: choose a series policy before anything is published (issue 33).

A steward who must pick k, θ, the infeasibility policy (and ε for PPMS-DP) learns today what a
choice costs only by publishing. ``plan`` runs candidate policies
(:class:`~medanon.pipeline.policy.SeriesPolicy`) on the ingested records of a store, in memory,
through the same publisher and gate a release uses (:class:`medanon.Publisher`), and measures
each with the same code as ``medanon evaluate`` (:func:`medanon.metrics.evaluation.
evaluate_series`): what a candidate withholds and suppresses, its information loss, the
signals it keeps against the original (each case once, and per stratum), the disclosure risk
after the attacks, the sensitive terms it leaves unbounded and the θ it had to raise (per term,
to what: ``theta_raised_to``). Nothing is written to the store (it is opened read-only);
``--apply N`` pins candidate N as the series policy, the only write. With ``--scheduler`` or
``--workers`` the candidates run on Dask, one task per candidate, each worker opening the store
read-only by path; every candidate's publisher is seeded alike, so the rows are the same
wherever and in whatever order the candidates run (but for their CPU seconds).

The recommendation is the candidate that meets the steward's constraints (every release
passes the gate; withheld share at most ``max_withheld``; MGPS recall of the ``dedup`` scope at
least ``min_recall``; no ``protect``-ed term left unbounded) with the lowest risk, and only
among equal risk the best utility (:func:`_rank`). Risk is, in this order: the disclosing
groups (groups in which every candidate the attacks leave holds one term, summed over the
releases: an exact disclosure whatever θ says, θ = 1 included, which DIR and DSR cannot see),
max DIR, max DSR, then the sensitive terms left unbounded (θ = 1): a tie on the measured risk is
never broken towards a policy that bounds less. Utility is the highest recall, then the lowest
NIL. Every other candidate's reason for not being chosen is in the table.

The candidates are research runs on private data: the plan's files are the operator's, like
the store (they hold exact counts of the original records), and must not be published. Each
file says so itself: ``plan.csv``'s first line (:data:`OPERATOR_ONLY_LINE`), ``plan.json``'s
``operator_only`` field, ``plan.html``'s first paragraph.
"""

from __future__ import annotations

import base64
import html
import io
import json
import shlex
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from .._validation import check_choice, check_int
from ..errors import InputFormatError, MedanonError, ValidationError
from ..literals import OnInfeasible
from ..pipeline.policy import SeriesPolicy, read_toml

if TYPE_CHECKING:  # the API is imported when a plan runs, not with the module
    from ..api import Dataset

__all__ = ["COUNT_COLUMNS", "GLOSSARY", "OPERATOR_ONLY_LINE", "PLAN_COLUMNS", "PlanResult",
           "apply_candidate", "default_candidates", "plan_store", "read_candidates",
           "release_command", "write_plan"]

#: the columns of ``plan.csv``, in order
PLAN_COLUMNS = (
    "candidate", "policy", "method", "k", "theta", "on_infeasible", "status", "gate", "cpu_s",
    "cases", "withheld_share", "suppressed_terms", "theta_raised", "theta_raised_to",
    "unbounded_terms", "nil", "disclosing_groups", "dir_max",
    "dsr_max", "reidentified", "mgps_recall", "mgps_precision", "mgps_recall_strata",
    "prr_recall", "recall_note", "meets", "why_not", "message", "release_command")
#: the columns that count things: written and shown as integers (a column with a missing value
#: is a float column in pandas, which would print ``43.00`` terms)
COUNT_COLUMNS = ("candidate", "k", "cases", "suppressed_terms", "theta_raised",
                 "unbounded_terms", "disclosing_groups", "reidentified")
#: ``plan.html``'s table: column -> (its header in words, its glossary entry); the CPU
#: seconds and the other columns are in ``plan.csv`` and ``plan.json``
GLOSSARY: dict[str, tuple[str, str]] = {
    "candidate": ("#", "The candidate's number (plan --apply N pins it)."),
    "policy": ("Policy", "The method and its parameters, as the store would pin them."),
    "on_infeasible": ("If infeasible", "What the candidate does when a term cannot meet its θ "
                      "or a case fits no group: refuse (release's default), raise-theta or "
                      "suppress-terms."),
    "status": ("Status", "published, or refused (the reason in 'Why not')."),
    "withheld_share": ("Withheld", "Withheld share: cases withheld over all cases, over the "
                       "releases."),
    "theta_raised_to": ("θ raised to", "The terms whose θ raise-theta raised, each with the "
                        "largest θ it was raised to in any release (the term's share of the "
                        "period's anchor cases, rounded up: the smallest θ with which the "
                        "period can hold the term within θ, not a promise that the grouping "
                        "places every case holding it); for a candidate refused because terms "
                        "cannot meet their θ, the θ raise-theta would give them in the period "
                        "that refused."),
    "unbounded_terms": ("Terms at θ = 1", "Unbounded terms: sensitive terms at θ = 1 (no "
                        "bound) in some release."),
    "nil": ("Info. loss", "Mean normalized information loss (NIL, paper 001): 0 keeps "
            "every value, 1 generalizes all away."),
    "disclosing_groups": ("Groups disclosed", "Disclosing groups: the groups, over the "
                          "releases, in which every candidate the attacks leave holds one "
                          "term, disclosed whatever θ says."),
    "dir_max": ("Max DIR", "The largest disclosure-of-identity risk of the releases after the "
                "B/F/L attacks (lower is better)."),
    "mgps_recall": ("Signal recall", "Share of the original's MGPS signals (EB05 ≥ 2) the "
                    "release keeps, each case once (dedup); n/a says why there is none."),
    "mgps_recall_strata": ("Recall / stratum", "The same recall with the screening "
                           "stratified (per stratum)."),
    "why_not": ("Why not", "Why the candidate is not recommendable: the constraint it misses, "
                "or its refusal's message."),
}
#: the columns ``plan.html`` shows, in order
SHOWN_COLUMNS = tuple(GLOSSARY)
#: what the plan's files are, said in each of them (the csv's first line, read back with
#: ``pd.read_csv(path, skiprows=1)``)
OPERATOR_ONLY = ("OPERATOR-ONLY: exact counts of the original (private) records from candidate "
                 "runs; keep with the store, never publish")
OPERATOR_ONLY_LINE = f"# {OPERATOR_ONLY}"


#: what a candidate does when a term cannot meet its θ: as ``medanon release`` (refuse)
ON_INFEASIBLE = ("refuse", "raise-theta", "suppress-terms")


def default_candidates(protect: Mapping[str, float] | None = None,
                       on_infeasible: str = "refuse") -> list[SeriesPolicy]:
    """The default grid: PPMS++ with k 3, 5, 10 under the frequency rule (with ``protect``'s
    caps) and under a uniform θ 0.4, PPMS (001's baseline), MS (no protection across
    releases, for contrast) and PPMS-DP_num at ε 1.

    Every candidate takes ``on_infeasible``, whose default is ``medanon release``'s
    (``refuse``): a candidate is then the policy ``release`` pins from the same method, k and
    θ, and one whose terms cannot meet their θ is shown refused with the θ raise-theta would
    give them. ``"raise-theta"`` measures what raising those θs costs instead (each raise is
    reported, and pinned with the candidate).

    Raises:
        ValidationError: an ``on_infeasible`` that is not refuse, raise-theta or
            suppress-terms.
    """
    # typed for the caller's editor, checked for the caller who passed a plain string
    chosen = cast(OnInfeasible, check_choice(on_infeasible, name="on_infeasible",
                                             owner="default_candidates", choices=ON_INFEASIBLE))
    caps = dict(protect or {}) or None
    out = [SeriesPolicy.ppms_plus_plus(k=k, theta="frequency", protect=caps,
                                       on_infeasible=chosen) for k in (3, 5, 10)]
    out += [SeriesPolicy.ppms_plus_plus(k=k, theta=0.4, protect=caps,
                                        on_infeasible=chosen) for k in (3, 5, 10)]
    out.append(SeriesPolicy.ppms(k=5, theta="frequency", protect=caps,
                                 on_infeasible=chosen))
    out.append(SeriesPolicy.ms(k=5, theta="frequency", protect=caps,
                               on_infeasible=chosen))
    out.append(SeriesPolicy.ppms_dp(k=5, theta="frequency", epsilon=1, protect=caps,
                                    on_infeasible=chosen))
    return out


#: a policy parameter's flag of ``medanon release``, where it is not ``--`` + the name with
#: dashes
_RELEASE_FLAGS = {"domains": "--domain", "label_confidence": "--dp-label-confidence",
                  "label_mechanism": "--dp-label-mechanism"}


def release_command(policy: SeriesPolicy) -> str:
    """The ``medanon release`` command line that pins ``policy`` at a store's first release
    (shell-quoted): what a plan's candidate is, in the steward's flags."""
    parts = ["medanon", "release", "--method", policy.method]
    for name, value in sorted(policy.parameters.items()):
        flag = _RELEASE_FLAGS.get(name, "--" + name.replace("_", "-"))
        if isinstance(value, bool):
            parts += [flag] if value else []
        elif name == "protect" and isinstance(value, Mapping):
            for term, cap in value.items():
                parts += [flag, f"{term}={json.dumps(cap)}"]   # the cap exactly, as pinned
        elif name == "domains" and isinstance(value, Mapping):
            for qid, (lo, hi) in value.items():
                parts += [flag, f"{qid}={json.dumps(lo)}:{json.dumps(hi)}"]
        else:
            parts += [flag, value if isinstance(value, str) else json.dumps(value)]
    return " ".join(shlex.quote(str(p)) for p in parts)


def read_candidates(path: str | Path) -> list[SeriesPolicy]:
    """Candidates from a TOML file of ``[[candidate]]`` tables, each a policy
    (``method = "ppms++"``, ``k = 5``, ``theta = "frequency"``...).

    Raises:
        InputFormatError: not TOML, or no ``[[candidate]]`` table with a method.
        ValidationError: a candidate's parameter the method refuses (named).
    """
    path = Path(path)
    data = read_toml(path, "Candidates file")
    tables = data.get("candidate")
    if not isinstance(tables, list) or not tables or not all(
            isinstance(t, dict) and "method" in t for t in tables):
        raise InputFormatError(f"Candidates file {str(path)!r} needs [[candidate]] tables, each "
                               f"with a 'method' (e.g. method = \"ppms++\", k = 5, theta = "
                               f"\"frequency\").")
    out = []
    for number, table in enumerate(tables, 1):
        table = dict(table)
        method = table.pop("method")
        try:
            out.append(SeriesPolicy.of(method, **table))
        except ValidationError as exc:
            raise ValidationError(f"Candidate {number} of {str(path)!r}: {exc}") from None
    return out


@dataclass
class PlanResult:
    """The candidates measured, and the recommendation.

    Attributes:
        rows: One row per candidate (:data:`PLAN_COLUMNS`).
        policies: Candidate number -> its policy (:meth:`SeriesPolicy.to_dict`).
        recommended: The recommended candidate's number, or None when none meets the
            constraints.
        constraints: The constraints the recommendation met.
        source: The store planned on.
        periods: The periods planned on.
        thetas: Candidate number -> term -> θ: for a published candidate the largest θ
            ``on_infeasible="raise-theta"`` declared for the term in any release (the
            ``theta_raised_to`` column); for a candidate refused because terms could not meet
            their θ, the θ raise-theta would have declared for them in the period that refused
            (later periods did not run). Empty otherwise.
        seed: The seed every candidate's publisher used (None: OS entropy).
        ran_on: Where the candidates ran (this process, or the Dask cluster).
        notes: What the steward must know of the constraints: one that could not apply to
            some candidates (a recall of n/a: no signal to keep), and why.
    """

    rows: pd.DataFrame
    policies: dict[int, dict]
    recommended: int | None
    constraints: dict[str, Any]
    source: str
    periods: list[str] = field(default_factory=list)
    thetas: dict[int, dict[str, float]] = field(default_factory=dict)
    seed: int | None = None
    ran_on: str = "this process"
    notes: list[str] = field(default_factory=list)

    def recommendation(self) -> str:
        """The recommendation in one sentence (or why there is none)."""
        if self.recommended is None:
            return ("No candidate meets the constraints ("
                    + ", ".join(f"{k} {v}" for k, v in self.constraints.items() if v is not None)
                    + "); relax them, or add candidates (--candidates).")
        row = self.rows.set_index("candidate").loc[self.recommended]
        unbounded = int(row["unbounded_terms"] or 0)
        disclosing = int(row["disclosing_groups"] or 0)
        return (f"Candidate {self.recommended}: {row['policy']} — withholds "
                f"{row['withheld_share']:.1%}, mean NIL {row['nil']:.3f}, disclosing groups "
                f"{disclosing}, max DIR {_num(row['dir_max'])}, max DSR "
                f"{_num(row['dsr_max'])}, MGPS recall {_num(row['mgps_recall'])}"
                + (f" ({row['recall_note']})" if isinstance(row["recall_note"], str)
                   and row["recall_note"] else "")
                + "; the lowest "
                "risk (disclosing groups, max DIR, max DSR, unbounded terms) among the "
                "candidates that meet the constraints"
                + (f". In {disclosing} group(s) every candidate the attacks leave holds one "
                   f"term, which the adversary then learns whatever θ says: no candidate "
                   f"that meets the constraints avoids it; add candidates with a larger k or "
                   f"a bounded θ" if disclosing else "")
                + (f". It leaves {unbounded} sensitive term(s) unbounded (θ = 1): require a "
                   f"term bounded with --protect TERM=CAP" if unbounded else "")
                + (f". Its θ was raised (on_infeasible raise-theta) for {row['theta_raised_to']}"
                   if row["theta_raised_to"] else "")
                + f". Pin it with 'medanon plan --apply {self.recommended}', or release it "
                  f"with '{row['release_command']}'.")

    def to_dict(self) -> dict[str, Any]:
        """``plan.json``: the rows, the policies, the constraints and the recommendation."""
        rows = self.rows.astype(object).where(self.rows.notna(), None).to_dict(orient="records")
        for row in rows:   # the csv's "Term=θ; ..." text as a term -> θ object
            row["theta_raised_to"] = dict(sorted(self.thetas.get(row["candidate"], {}).items()))
        return {"operator_only": OPERATOR_ONLY, "source": self.source, "periods": self.periods,
                "constraints": self.constraints,
                "seed": self.seed, "ran_on": self.ran_on,
                "recommended": self.recommended, "recommendation": self.recommendation(),
                "notes": self.notes,
                "policies": {str(k): v for k, v in self.policies.items()}, "candidates": rows}


def _num(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.3f}"


def _max(values: Sequence[Any]) -> float | None:
    known = [float(v) for v in values if v is not None and not pd.isna(v)]
    return max(known) if known else None


def _measure(data: Dataset, policy: SeriesPolicy, *, seed: int | None, originals, original_rows,
             screening) -> dict[str, Any]:
    """Publish ``data`` with ``policy`` in memory and measure it as ``evaluate`` does."""
    from ..api import Publisher, Series, UnboundedTermsWarning
    from ..metrics.evaluation import evaluate_series
    from ..models.theta import raised_thetas

    started = time.process_time()
    row: dict[str, Any] = {"method": policy.method, "k": policy.parameters.get("k"),
                           "theta": json.dumps(policy.parameters.get("theta")),
                           "on_infeasible": policy.parameters.get("on_infeasible", "refuse")}
    try:
        publisher = Publisher(policy, seed=seed)
        with warnings.catch_warnings():
            # the plan's table counts each candidate's unbounded terms: a warning per candidate
            # on stderr would repeat it nine times
            warnings.simplefilter("ignore", UnboundedTermsWarning)
            series = publisher.publish(data)
    except MedanonError as exc:   # a refusal is a result: it names what blocks the policy
        workable = {str(t): float(v) for t, v in
                    (getattr(exc, "workable_theta", None) or {}).items()}
        return {**row, "status": "refused", "message": f"{type(exc).__name__}: {exc}",
                "theta_raised_to": _theta_text(workable), "thetas": workable,
                "cpu_s": round(time.process_time() - started, 2)}
    assert isinstance(series, Series)  # a Dataset is published as a Series (Publisher.publish)
    # the operator's view: plan's files are operator-only (withheld counts are not published)
    manifests = list(series.operator_manifests().values())
    cases = sum(int(m["counts"].get("cases", 0)) for m in manifests)
    withheld = sum(int(m["counts"].get("suppressed", 0)) for m in manifests)
    # the original cases under the CaseIDs the candidate published (keyed pseudonyms, issue 41)
    column = data.schema.case_id
    originals = {p: publisher.case_ids.records(f, column) for p, f in originals.items()}
    original_rows = {p: publisher.case_ids.records(f, "case_id")
                     for p, f in original_rows.items()}
    evaluation = evaluate_series(series, originals, original_rows, screening=screening)
    releases = evaluation["releases"]
    summary = (evaluation.get("screening") or {}).get("summary", {})
    # per term, the largest θ raise-theta declared for it in any release (each the term's share
    # of that period's anchors, rounded up): the least a policy must allow the term for these
    # periods to hold it within θ, not a θ known to let the grouping place its cases
    raised: dict[str, float] = {}
    for manifest in manifests:
        for term, (_, effective) in raised_thetas(manifest).items():
            raised[term] = max(raised.get(term, 0.0), float(effective))
    unbounded = sorted({t for terms in series.unbounded_terms().values() for t in terms})
    mgps = (summary.get("dedup") or {}).get("mgps", {})
    # a recall of n/a says why: the min_recall constraint cannot apply to it (issue 44)
    if evaluation.get("screening") is None:
        recall_note = "no drug and reaction columns to screen for signals"
    elif mgps.get("recall") is None:
        recall_note = "the original holds no MGPS signal (EB05 ≥ 2) to keep"
    else:
        recall_note = ""
    verdicts = [m["verification"]["verdict"] for m in manifests]
    return {**row, "status": "published",
            "gate": "passed" if all(v == "passed" for v in verdicts) else ", ".join(verdicts),
            "cpu_s": round(time.process_time() - started, 2), "cases": cases,
            "withheld_share": round(withheld / (cases + withheld), 6) if cases + withheld else 0.0,
            "suppressed_terms": sum(int(m["counts"].get("suppressed_terms", 0)) for m in manifests),
            "theta_raised": len(raised), "theta_raised_to": _theta_text(raised),
            "thetas": raised, "unbounded_terms": len(unbounded),
            "unbounded": unbounded,
            "nil": round(sum(r["nil"] for r in releases) / len(releases), 6) if releases else None,
            "disclosing_groups": sum(int(r["disclosing_groups"]) for r in releases),
            "dir_max": _max([r["dir"] for r in releases]),
            "dsr_max": _max([r["dsr"] for r in releases]),
            "reidentified": sum(int(r["reidentified"]) for r in releases),
            "mgps_recall": (summary.get("dedup") or {}).get("mgps", {}).get("recall"),
            "mgps_precision": (summary.get("dedup") or {}).get("mgps", {}).get("precision"),
            "mgps_recall_strata": (summary.get("stratum") or {}).get("mgps", {}).get("recall"),
            "prr_recall": (summary.get("dedup") or {}).get("prr", {}).get("recall"),
            "recall_note": recall_note, "message": ""}


def _rank(row: Mapping[str, Any]) -> tuple:
    """The order of the recommendation: risk first, and utility only among equal risk.

    Risk: the disclosing groups (an exact disclosure, seen whatever θ says), max DIR, max
    DSR, then the unbounded terms (θ = 1: no bound the attacks could break, so DSR is blind to
    them), so that a tie on the measured risk never goes to the policy that bounds less. An
    unknown risk counts as the worst. Utility: the highest MGPS recall, then the lowest NIL.
    """
    def risk(value: Any, worst: float) -> float:
        return worst if value is None or pd.isna(value) else float(value)

    return (risk(row.get("disclosing_groups"), float("inf")), risk(row.get("dir_max"), 1.0),
            risk(row.get("dsr_max"), 1.0), risk(row.get("unbounded_terms"), float("inf")),
            -(row.get("mgps_recall") or 0.0), row.get("nil") or 0.0)


def _theta_text(thetas: Mapping[str, float]) -> str:
    """``plan.csv``'s compact form of term -> θ: ``"Coma=0.6; Death=0.45"`` (by term)."""
    return "; ".join(f"{t}={v:g}" for t, v in sorted(thetas.items()))


def _why_not(row: Mapping[str, Any], *, max_withheld: float, min_recall: float,
             protect: Sequence[str]) -> str:
    if row["status"] != "published":
        if row.get("on_infeasible") == "refuse" and \
                str(row.get("message", "")).startswith("InfeasibleError"):
            # release's default refuses where raise-theta would raise θ (or withhold the
            # cases no group can take): say so, and how to measure that
            what = (f"terms cannot meet their θ (raise-theta would declare "
                    f"{row['theta_raised_to']})" if row.get("theta_raised_to")
                    else "cases or terms the grouping cannot place")
            return (f"refused under on_infeasible refuse (release's default): {what}; "
                    f"on_infeasible raise-theta measures the alternative")
        return "refused"
    reasons = []
    if row["gate"] != "passed":
        reasons.append(f"gate {row['gate']}")
    if row["withheld_share"] > max_withheld:
        reasons.append(f"withholds {row['withheld_share']:.1%} > {max_withheld:.0%}")
    recall = row.get("mgps_recall")
    if recall is not None and recall < min_recall:
        reasons.append(f"MGPS recall {recall:.2f} < {min_recall:.2f}")
    open_terms = [t for t in protect if t in row.get("unbounded", [])]
    if open_terms:
        reasons.append(f"protected term(s) unbounded: {', '.join(open_terms)}")
    return "; ".join(reasons)


@dataclass(frozen=True)
class _Inputs:
    """What every candidate is measured on: the ingested records of the planned periods, the
    originals as ``evaluate`` compares them, and the screening options."""

    data: Dataset
    originals: dict
    original_rows: dict
    screening: Any


def _wanted(ingested: Sequence[str], periods: Sequence[str] | None) -> list[str]:
    """The periods to plan on: ``periods``, or every ingested one.

    Raises:
        ValidationError: no ingested period; a period not ingested.
    """
    wanted = list(periods) if periods else list(ingested)
    missing = [p for p in wanted if p not in ingested]
    if not wanted or missing:
        raise ValidationError(f"The 'periods' parameter of plan_store names period(s) the "
                              f"store has not ingested: {', '.join(missing) or 'none'}; it "
                              f"holds {', '.join(ingested) or 'none'}.")
    return wanted


def _read_inputs(store: str | Path, periods: Sequence[str] | None) -> _Inputs:
    """The store's records of ``periods`` (default all ingested), read-only.

    Raises:
        ValidationError: no ingested period; a period not ingested.
    """
    from ..api import Dataset
    from ..metrics.screening import ScreeningOptions, screening_for
    from ..published.format import original_as_published
    from ..store import ReleaseStore

    with ReleaseStore.open(store, read_only=True) as db:
        wanted = _wanted(db.ingested_periods(), periods)
        schema = db.schema
        data = Dataset({p: db.records(p) for p in wanted}, schema)
    originals = {p: data.super_records(p).frame for p in data.periods}
    original_rows = {p: original_as_published(f, schema) for p, f in originals.items()}
    options = screening_for(set(next(iter(original_rows.values())).columns))
    screening = None if options is None else ScreeningOptions(strata=options.strata,
                                                              quarters=False)
    return _Inputs(data, originals, original_rows, screening)


#: a Dask worker's inputs, kept between its tasks: (store path, periods, file stamp) -> inputs.
#: One entry: a worker measuring several candidates reads the store once, and a worker of a
#: long-lived cluster holds at most one plan's records.
_WORKER_INPUTS: dict[tuple, _Inputs] = {}


def _candidate_task(policy: dict, *, store: str, periods: list[str],
                    seed: int | None) -> dict[str, Any]:
    """One candidate measured on a worker, which opens the store read-only by path."""
    stat = Path(store).stat()
    # the file's stamp in the key: a store changed since (a release) is read again
    key = (store, tuple(periods), stat.st_mtime_ns, stat.st_size)
    inputs = _WORKER_INPUTS.get(key)
    if inputs is None:
        _WORKER_INPUTS.clear()
        inputs = _WORKER_INPUTS[key] = _read_inputs(store, periods)
    return _measure(inputs.data, SeriesPolicy.from_dict(policy), seed=seed,
                    originals=inputs.originals, original_rows=inputs.original_rows,
                    screening=inputs.screening)


def _measure_on_dask(store: str | Path, pool: Sequence[SeriesPolicy], periods: list[str],
                     seed: int | None, scheduler: str | None, workers: int | None,
                     progress: Callable[[str], None] | None) -> tuple[dict[int, dict], str]:
    """Candidate number -> its measured row, one Dask task per candidate; and where they ran."""
    from dask.distributed import as_completed

    from .runner import dask_client

    path = str(Path(store).resolve())
    rows: dict[int, dict] = {}
    with dask_client(None if scheduler == "local" else scheduler, workers) as (client, cluster):
        futures = {client.submit(_candidate_task, policy.to_dict(), store=path,
                                 periods=periods, seed=seed, pure=False,
                                 key=f"plan-candidate-{number}"): number
                   for number, policy in enumerate(pool, 1)}
        # progress as candidates finish, in whatever order the workers finish them
        for future in as_completed(futures):
            number = futures[future]
            rows[number] = future.result()
            if progress:
                progress(pool[number - 1].describe())
    return rows, cluster


def plan_store(store: str | Path, *, candidates: Sequence[SeriesPolicy] | None = None,
               protect: Mapping[str, float] | None = None, max_withheld: float = 0.1,
               min_recall: float = 0.8, periods: Sequence[str] | None = None,
               seed: int | None = None, scheduler: str | None = None,
               workers: int | None = None,
               progress: Callable[[str], None] | None = None,
               on_infeasible: str = "refuse") -> PlanResult:
    """Run candidate policies on a store's ingested records without writing to it.

    Every candidate publishes with its own publisher seeded with ``seed`` (the same seed for
    each, not draws from one stream in turn), so a candidate's row does not depend on the
    other candidates, on their order or on where it runs: the run in one process and the run
    on Dask give the same rows but for ``cpu_s``.

    Args:
        store: The release store (opened read-only; with ``scheduler``/``workers``, a path
            every worker sees).
        candidates: The policies to compare (default :func:`default_candidates`).
        protect: Terms the steward needs bounded, with their caps: the default candidates cap
            them; a candidate leaving one at θ = 1 does not meet the constraints.
        max_withheld: The largest withheld share a recommended candidate may have.
        min_recall: The smallest MGPS recall (``dedup`` scope) a recommended candidate may have.
        periods: The ingested periods to plan on (default all).
        seed: For research: a reproducible run (DP noise, random choices), recorded in
            ``plan.json``; default OS entropy (each candidate its own, not reproducible).
        scheduler: Run the candidates on Dask, one task per candidate: the address of a running
            scheduler, or ``"local"`` for a LocalCluster. Each worker opens the store
            read-only by path. None (and no ``workers``): in this process.
        workers: Workers of the LocalCluster (implies ``scheduler="local"``; default: the
            machine's cores, at most 4).
        progress: Called with each candidate's description when it has been measured.
        on_infeasible: The default candidates' ``on_infeasible`` (default ``"refuse"``, as
            ``medanon release``'s; :func:`default_candidates`). Ignored with ``candidates``,
            each of which states its own.

    Raises:
        ValidationError: a bad constraint; no ingested period; a period not ingested; an
            unreachable scheduler.
        StoreError: the store cannot be opened.
    """
    for name, value in (("max_withheld", max_withheld), ("min_recall", min_recall)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValidationError(f"The {name!r} parameter of plan_store must be a number in "
                                  f"[0, 1]; got {value!r}.")
    if workers is not None:
        check_int(workers, name="workers", owner="plan_store", minimum=1)
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ValidationError(f"The 'scheduler' parameter of plan_store must be a scheduler's "
                              f"address (tcp://host:8786) or 'local'; got {scheduler!r}.")
    protect = dict(protect or {})
    pool = list(candidates) if candidates is not None else default_candidates(
        protect, on_infeasible)
    if not pool:
        raise ValidationError("The 'candidates' parameter of plan_store holds no policy.")
    on_dask = scheduler is not None or workers is not None
    if on_dask:
        # the client checks the periods (a cheap read) so that a bad one fails before any
        # cluster starts; the workers read the records themselves
        from ..store import ReleaseStore

        with ReleaseStore.open(store, read_only=True) as db:
            wanted = _wanted(db.ingested_periods(), periods)
        measured, ran_on = _measure_on_dask(store, pool, wanted, seed, scheduler, workers,
                                            progress)
    else:
        inputs = _read_inputs(store, periods)
        wanted = list(inputs.data.periods)
        measured, ran_on = {}, "this process"
        for number, policy in enumerate(pool, 1):
            measured[number] = _measure(inputs.data, policy, seed=seed,
                                        originals=inputs.originals,
                                        original_rows=inputs.original_rows,
                                        screening=inputs.screening)
            if progress:
                progress(policy.describe())
    rows, policies, thetas = [], {}, {}
    for number, policy in enumerate(pool, 1):
        row = measured[number]
        thetas[number] = row.pop("thetas", {})
        row.update(candidate=number, policy=policy.describe(),
                   release_command=release_command(policy))
        row["why_not"] = _why_not(row, max_withheld=max_withheld, min_recall=min_recall,
                                  protect=list(protect))
        row["meets"] = row["why_not"] == ""
        rows.append(row)
        policies[number] = policy.to_dict()
    frame = pd.DataFrame(rows).reindex(columns=PLAN_COLUMNS)
    for column in COUNT_COLUMNS:   # counts stay integers where a refusal leaves them empty
        frame[column] = frame[column].astype("Int64")
    meeting = [r for r in rows if r["meets"]]
    best = min(meeting, key=_rank, default=None)
    return PlanResult(frame, policies, None if best is None else int(best["candidate"]),
                      {"max_withheld": max_withheld, "min_recall": min_recall,
                       "protect": sorted(protect) or None, "gate": "passed"},
                      f"Store {str(store)!r}", wanted, thetas=thetas, seed=seed,
                      ran_on=ran_on, notes=_recall_notes(rows, min_recall))


def _recall_notes(rows: Sequence[Mapping[str, Any]], min_recall: float) -> list[str]:
    """The candidates whose recall is n/a, which ``min_recall`` could not judge (issue 44: it
    did not apply, silently), grouped by the reason."""
    if not min_recall:
        return []
    by_reason: dict[str, list[str]] = {}
    for row in rows:
        if row["status"] == "published" and row.get("recall_note"):
            by_reason.setdefault(row["recall_note"], []).append(str(row["candidate"]))
    return [f"The 'min_recall' parameter ({min_recall:g}) could not apply to candidate(s) "
            f"{', '.join(numbers)}: {reason}, so they have no signal recall and were judged "
            f"without it." for reason, numbers in by_reason.items()]


#: a label's text size in the plot, in points
_LABEL_POINTS = 9


@dataclass
class _Frontier:
    """The risk–utility plot, and what a test checks of it: each label's box (display pixels:
    x0, y0, x1, y1) and the legend's entries (only for what is drawn)."""

    figure: Any
    boxes: list[tuple[float, float, float, float]]
    legend: list[str]
    unlabelled: list[str]


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place_labels(anchors: Sequence[tuple[float, float]], sizes: Sequence[tuple[float, float]],
                  bounds: tuple[float, float, float, float], marker: float = 6.0
                  ) -> list[tuple[float, float, float, float] | None]:
    """Boxes for labels beside their points (display pixels) that overlap no other label,
    no point's marker and stay in ``bounds``: tried around each point at growing distance;
    a label no place fits is left out (None) rather than drawn over another."""
    markers = [(x - marker, y - marker, x + marker, y + marker) for x, y in anchors]
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float, float, float] | None] = []
    for (x, y), (w, h) in zip(anchors, sizes):
        chosen = None
        for radius in (8.0, 20.0, 34.0, 50.0, 70.0):
            for dx, dy in ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)):
                left = x + dx * radius - (w if dx < 0 else w / 2 if dx == 0 else 0)
                bottom = y + dy * radius - (h if dy < 0 else h / 2 if dy == 0 else 0)
                box = (left, bottom, left + w, bottom + h)
                if box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2] or \
                        box[3] > bounds[3]:
                    continue
                if any(_overlaps(box, other) for other in placed + markers):
                    continue
                chosen = box
                break
            if chosen is not None:
                break
        if chosen is not None:
            placed.append(chosen)
        out.append(chosen)
    return out


def _frontier(result: PlanResult) -> _Frontier:
    """The plot: each published candidate's max DIR against 1 − NIL; candidates at one point
    share one label, labels never overlap, and the legend names only what is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.rows[result.rows["status"] == "published"].copy()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    ax.set_xlabel("risk: max DIR after the attacks (lower is better)")
    ax.set_ylabel("utility: 1 − NIL, information kept (higher is better)")
    ax.grid(alpha=0.3)
    boxes: list[tuple[float, float, float, float]] = []
    unlabelled: list[str] = []
    if not len(rows):
        fig.tight_layout()
        return _Frontier(fig, boxes, [], unlabelled)
    risk = [float(v) for v in rows["dir_max"].astype(float).fillna(0.0)]
    utility = [1.0 - float(v) for v in rows["nil"].astype(float).fillna(1.0)]
    meets = [bool(m) for m in rows["meets"]]
    for flag, colour, label in ((True, "#2a7", "meets the constraints"),
                                (False, "#999", "does not meet the constraints")):
        xs = [x for x, m in zip(risk, meets) if m is flag]
        if xs:   # a legend entry only for points drawn
            ax.scatter(xs, [y for y, m in zip(utility, meets) if m is flag], c=colour, s=60,
                       zorder=3, label=label)
    # the risk-utility frontier: no other candidate has less risk and more utility
    frontier: list[tuple[float, float]] = []
    best = -1.0
    for x, y in sorted(set(zip(risk, utility)), key=lambda p: (p[0], -p[1])):
        if y > best:
            frontier.append((x, y))
            best = y
    if len(frontier) > 1:   # one point is no line: no legend entry for a line not drawn
        ax.plot([x for x, _ in frontier], [y for _, y in frontier], "-", color="#2a7",
                label="frontier: no candidate has less risk and more utility", zorder=2)
    if result.recommended is not None and result.recommended in set(rows["candidate"]):
        chosen = rows.set_index("candidate").loc[result.recommended]
        ax.scatter([float(chosen["dir_max"] or 0.0)], [1.0 - float(chosen["nil"] or 0.0)],
                   s=220, facecolors="none", edgecolors="#c30", linewidths=2, zorder=4,
                   label=f"recommended: candidate {result.recommended}")
    span = max(risk) - min(risk)
    pad = max(0.05, 0.1 * span)
    ax.set_xlim(min(risk) - pad, max(risk) + pad)
    ax.set_ylim(-0.05, 1.05)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
              fontsize=8, frameon=False)
    fig.tight_layout()
    # candidates at one point (to the pixel) share one label: "2, 5, 8"
    to_pixels = ax.transData
    points: dict[tuple[int, int], list[str]] = {}
    for number, x, y in zip(rows["candidate"], risk, utility):
        px, py = to_pixels.transform((x, y))
        points.setdefault((round(px), round(py)), []).append(str(number))
    anchors = [(float(px), float(py)) for px, py in points]
    texts = [", ".join(numbers) for numbers in points.values()]
    pixel = fig.dpi / 72.0
    sizes = [(0.62 * _LABEL_POINTS * pixel * len(t) + 2, 1.2 * _LABEL_POINTS * pixel)
             for t in texts]
    frame = ax.get_window_extent()
    placed = _place_labels(anchors, sizes, (frame.x0, frame.y0, frame.x1, frame.y1))
    back = to_pixels.inverted()
    for text, box in zip(texts, placed):
        if box is None:
            unlabelled.append(text)
            continue
        boxes.append(box)
        x, y = back.transform((box[0] + 1, box[1]))
        ax.text(x, y, text, fontsize=_LABEL_POINTS, ha="left", va="bottom", zorder=5)
        # a thin line from the point to its label, so that a label moved aside (another
        # label or point in the way) is not read as its neighbour's
        px, py = anchors[texts.index(text)]
        near = (min(max(px, box[0]), box[2]), min(max(py, box[1]), box[3]))
        if abs(near[0] - px) + abs(near[1] - py) > 3:
            ax.plot(*zip(back.transform((px, py)), back.transform(near)), "-", color="#888",
                    linewidth=0.6, zorder=2)
    return _Frontier(fig, boxes, labels, unlabelled)


def _frontier_png(result: PlanResult) -> tuple[bytes, list[str]]:
    """The plot as PNG, and the candidates left unlabelled (no place for their label)."""
    import matplotlib.pyplot as plt

    plot = _frontier(result)
    buffer = io.BytesIO()
    plot.figure.savefig(buffer, format="png")
    plt.close(plot.figure)
    return buffer.getvalue(), plot.unlabelled


#: ``plan.html``'s style: the table fits the 1,000 px page (fixed layout over its width, long
#: cells wrapped), whatever the candidates' policies and messages hold
_PAGE_STYLE = (
    "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em;"
    "box-sizing:border-box}"
    "table{border-collapse:collapse;font-size:12px;table-layout:fixed;width:100%}"
    "td,th{border:1px solid #ccc;padding:3px;text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere}"
    "th{background:#f4f4f4;font-size:11px;overflow-wrap:normal}"
    "th[title]{cursor:help;text-decoration:underline dotted}"
    "tr.rec{background:#efe}tr.msg td{font-size:11px;color:#444;border-top:none}"
    "img{max-width:100%}p.note{background:#fff4e0;padding:4px 8px}"
    "dl{font-size:13px}dt{font-weight:bold;margin-top:4px}dd{margin-left:1.5em}")
#: the widths of the wide columns (the rest share what is left)
_WIDTHS = {"candidate": "3%", "policy": "14%", "on_infeasible": "8%", "status": "7%",
           "theta_raised_to": "9%", "why_not": "15%"}


def write_plan(result: PlanResult, out: str | Path) -> list[Path]:
    """Write ``plan.csv``, ``plan.json`` and ``plan.html`` (the table and the risk–utility
    frontier) into the folder ``out`` (created; files replaced)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path, html_path = out / "plan.csv", out / "plan.json", out / "plan.html"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(OPERATOR_ONLY_LINE + "\n")   # the file says what it is, wherever it goes
        result.rows.to_csv(handle, index=False, lineterminator="\n")
    json_path.write_text(json.dumps(result.to_dict(), indent=2, default=str) + "\n",
                         encoding="utf-8")
    png, unlabelled = _frontier_png(result)
    image = base64.b64encode(png).decode("ascii")
    html_path.write_text(_page(result, image, unlabelled), encoding="utf-8")
    return [csv_path, json_path, html_path]


def _page(result: PlanResult, image: str, unlabelled: Sequence[str]) -> str:
    """``plan.html``: headers in words with their glossary (each header's title, and the
    list under the table), counts as integers, an n/a recall with its reason."""
    shown = SHOWN_COLUMNS
    columns = "".join(f"<col style='width:{_WIDTHS[c]}'>" if c in _WIDTHS else "<col>"
                      for c in shown)
    head = "".join(f"<th title='{html.escape(GLOSSARY[c][1], quote=True)}'>"
                   f"{html.escape(GLOSSARY[c][0])}</th>" for c in shown)

    def cell(r: pd.Series, column: str) -> str:
        if column == "why_not" and r["status"] != "published" and r["why_not"] == "refused":
            return "refused: the message below"
        if column == "mgps_recall" and r["status"] == "published" and pd.isna(r[column]):
            return f"n/a: {r['recall_note']}" if r["recall_note"] else "n/a"
        return _cell(r[column], column)

    def row(r: pd.Series) -> str:
        cells = []
        for c in shown:
            title = (f" title='{html.escape(str(r['release_command']), quote=True)}'"
                     if c == "policy" else "")
            cells.append(f"<td{title}>{html.escape(cell(r, c))}</td>")
        mark = "rec" if r["candidate"] == result.recommended else ""
        out = f'<tr class="{mark}">' + "".join(cells) + "</tr>"
        if r["status"] != "published" and isinstance(r["message"], str) and r["message"]:
            # a refusal's own message names what blocks the candidate (the terms, the θ or k
            # that would do): the row under it, over the table's width, not a narrow cell
            out += (f"<tr class='msg'><td colspan='{len(shown)}'>Candidate {r['candidate']} "
                    f"refused: {html.escape(r['message'])}</td></tr>")
        return out

    body = "".join(row(r) for _, r in result.rows.iterrows())
    glossary = "".join(f"<dt>{html.escape(GLOSSARY[c][0])}</dt><dd>{html.escape(GLOSSARY[c][1])}"
                       f"</dd>" for c in shown)
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in result.notes)
    missing = (f"<p>Not labelled in the plot (no free place beside their point): candidate(s) "
               f"{html.escape('; '.join(unlabelled))}; the table has them.</p>"
               if unlabelled else "")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>medanon plan</title>"
        f"<style>{_PAGE_STYLE}</style></head><body>"
        f"<h1>Series policy plan: {html.escape(result.source)}</h1>"
        f"<p><strong>{html.escape(OPERATOR_ONLY)}.</strong></p>"
        f"<p>Periods {html.escape(', '.join(result.periods))}; nothing was published or written "
        "to the store. Operator only: these figures come from the original records.</p>"
        f"<h2>Recommendation</h2><p>{html.escape(result.recommendation())}</p>{notes}"
        f"<h2>Risk against utility</h2><img alt='frontier' src='data:image/png;base64,{image}'>"
        "<p>Each published candidate's max DIR against the information it keeps (1 − NIL), "
        f"labelled with its number; the signal recall is in the table.</p>{missing}"
        f"<h2>Candidates</h2><table><colgroup>{columns}</colgroup><tr>{head}</tr>{body}"
        "</table><p>A policy's release command (the flags that pin it at a store's first "
        "release) shows over its cell and is in plan.csv's release_command column.</p>"
        f"<h2>Glossary</h2><dl>{glossary}</dl></body></html>")


def _cell(value: Any, column: str = "") -> str:
    if value is None or value is pd.NA or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if column in COUNT_COLUMNS:   # counts as counts: 43 terms, not 43.00
        return str(int(value))
    if column == "withheld_share":
        return f"{float(value):.1%}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def apply_candidate(store: str | Path, plan_dir: str | Path, number: int, *,
                    change_policy: bool = False) -> SeriesPolicy:
    """Pin candidate ``number`` of the plan in ``plan_dir`` (its ``plan.json``) as the store's
    series policy.

    Raises:
        InputFormatError: no plan in ``plan_dir``.
        ValidationError: no such candidate, or a pinned policy it would change without
            ``change_policy``.
    """
    from datetime import datetime, timezone

    from ..store import ReleaseStore

    path = Path(plan_dir) / "plan.json"
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        raise InputFormatError(f"{str(path)!r} is no plan: run 'medanon plan --out "
                               f"{plan_dir}' first.") from None
    policies = plan.get("policies") or {}
    if str(number) not in policies:
        raise ValidationError(f"The 'apply' parameter names candidate {number}; the plan has "
                              f"{', '.join(policies) or 'none'}.")
    policy = SeriesPolicy.from_dict(policies[str(number)])
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with ReleaseStore.open(store) as db:
        pinned = db.series_policy()
        history = []
        if pinned is not None:
            changes = SeriesPolicy.from_dict(pinned["policy"]).differences(policy)
            if not changes:
                return policy
            if not change_policy:
                raise ValidationError(
                    f"This store's series policy is pinned already; candidate {number} changes "
                    f"it ({'; '.join(changes)}): give --change-policy to pin it instead.")
            history = [*pinned.get("history", []),
                       {"policy": pinned["policy"], "pinned_at": pinned.get("pinned_at"),
                        "replaced_at": now, "changes": changes}]
        db.pin_policy({"policy": policy.to_dict(), "pinned_at": now, "history": history})
    return policy
