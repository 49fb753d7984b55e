"""``medanon`` command line. Every command is a thin layer over the library.

User errors (:class:`~medanon.errors.MedanonError`) are printed as ``ErrorType: message`` on
stderr with a non-zero exit and no traceback. Set ``MEDANON_DEBUG=1`` to see tracebacks of
unexpected errors.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, TypeVar

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    # typer vendors click (typer._click, not the `click` package) and hands a group's methods
    # that click's Context, of which typer.Context is only a subclass
    from typer._click import Context as ClickContext

from .. import __version__
from ..errors import MedanonError, ValidationError
from ..store import DEFAULT_STORE

# The command modules (and through them pandas, DuckDB, SciPy, matplotlib, ...) are imported
# inside each command's body, so that ``--version`` and ``--help`` start at once
# (benchmarks/bench_cli_startup.py; tests/system/test_cli_startup.py guards the module set).

#: ``medanon --help`` lists the commands in the order a holder meets them: try it, a quarter's
#: release from ingest to report, the analyst's and the evaluator's commands, then the one-off
#: releases (a command missing here would come last, in registration order).
WORKFLOW_ORDER = ("demo", "synth", "ingest", "plan", "release", "verify", "export", "report",
                  "inspect", "signals", "evaluate", "attack", "ledger", "experiment", "ipa",
                  "clinsim")


class _WorkflowGroup(TyperGroup):
    def list_commands(self, ctx: ClickContext) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(WORKFLOW_ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), names.index(n)))


app = typer.Typer(name="medanon", cls=_WorkflowGroup, add_completion=False, no_args_is_help=True,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Publish medical microdata without giving away the people in it.")
synth_app = typer.Typer(no_args_is_help=True, help="Write synthetic data sets.")
app.add_typer(synth_app, name="synth")

# -- options shared by several commands (defined once) --------------------------------------------
StoreOpt = Annotated[Path, typer.Option("--store", "-s", help="Release store (DuckDB file).")]
SeedOpt = Annotated[Optional[int], typer.Option(
    "--seed", help="Fix the random seed (reproducible runs for tests and research; recorded).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
BudgetOpt = Annotated[Optional[float], typer.Option(
    "--budget", help="The most epsilon this input may spend over all one-off releases (the "
                     "operator's ledger, --ledger): past it the release is refused.")]
OverBudgetOpt = Annotated[bool, typer.Option(
    "--allow-over-budget", help="Publish past --budget anyway (recorded in the manifest).")]
LedgerOpt = Annotated[Optional[Path], typer.Option(
    "--ledger", help="The one-off ledger: epsilon spent per input (operator only; default "
                     "$MEDANON_LEDGER or ~/.medanon/one-off-ledger.json).")]
DEFAULT_STORE_PATH = Path(DEFAULT_STORE)


F = TypeVar("F", bound=Callable[..., None])


#: exit code of a command whose output pipe was closed early (``medanon ... --json | head``):
#: 128 + SIGPIPE, what a shell reports for a program the closed pipe ended; never 0, so that a
#: cut-off ``verify`` cannot pass for one whose releases all hold.
EXIT_CLOSED_PIPE = 141
EXIT_BUG = 70  # EX_SOFTWARE: the only exit code that means "a bug in medanon"
_OS_EXIT = {errno.ENOSPC: 74, errno.EDQUOT: 74, errno.EFBIG: 74, errno.EACCES: 77, errno.EPERM: 77,
            errno.EROFS: 77}


def guarded(func: F) -> F:
    """Turn library errors into ``ErrorType: message`` on stderr and the error's exit code.

    Errors met outside the library's own checks get their real cause as well: a full disk or a
    refused permission while writing a file (exit 74, 77), a store error DuckDB raised outside
    the store's own translation (:func:`medanon.store.duckdb_store.store_failure`), and a closed
    output pipe, which ends the command quietly (exit 141). Anything else is a bug (exit 70).
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        code = 0
        try:
            func(*args, **kwargs)
        except BrokenPipeError:
            code = EXIT_CLOSED_PIPE
        except MedanonError as exc:
            sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
            code = exc.exit_code
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                where = f" while writing {exc.filename!r}" if exc.filename else ""
                sys.stderr.write(f"DiskFullError: no space left on the device{where}. Free some "
                                 "space (or write elsewhere) and run the command again.\n")
            elif exc.errno == errno.EFBIG:  # ulimit -f, or the filesystem's largest file
                sys.stderr.write(f"DiskFullError: {exc.filename or 'a file'!r} reached the "
                                 "largest file this process may write (EFBIG: a 'ulimit -f' "
                                 "limit or the filesystem's largest file size). Raise the limit "
                                 "(or write elsewhere) and run the command again.\n")
            else:
                sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
            code = 1 if exc.errno is None else _OS_EXIT.get(exc.errno, 1)
        except KeyboardInterrupt:
            sys.stderr.write("Aborted.\n")
            code = 130
        except Exception as exc:
            known = _store_failure(exc)
            if known is not None:
                sys.stderr.write(f"{type(known).__name__}: {known}\n")
                code = known.exit_code
            else:  # a bug: say so plainly, traceback only on request
                if os.environ.get("MEDANON_DEBUG"):
                    traceback.print_exc()
                sys.stderr.write(f"InternalError: {type(exc).__name__}: {exc} (this is a bug in "
                                 "medanon; set MEDANON_DEBUG=1 for the traceback)\n")
                code = EXIT_BUG
        if not _flush_stdout():
            code = code or EXIT_CLOSED_PIPE
        if code:
            raise typer.Exit(code)

    return wrapper  # type: ignore[return-value]


def _store_failure(exc: Exception) -> MedanonError | None:
    """A lock, permission or full disk that DuckDB reported outside the store's own
    translation (e.g. a Parquet export), as the medanon error naming it."""
    if not type(exc).__module__.lstrip("_").startswith("duckdb"):
        return None
    from ..store.duckdb_store import duckdb_failure  # DuckDB is loaded already

    return duckdb_failure(exc)


def _flush_stdout() -> bool:
    """Flush stdout now, so that a reader that went away (``| head``) is noticed here rather
    than as a BrokenPipeError trace at interpreter exit; False when the pipe is closed.

    Then stdout is pointed at the null device: the interpreter's own last flush must find
    nothing left to fail on.
    """
    try:
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass  # not a real file descriptor (in-process use): nothing will flush it at exit
        return False


def _version(value: bool) -> None:
    if value:
        typer.echo(f"medanon {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                 help="Print the version and exit.")] = False,
          quiet: Annotated[bool, typer.Option(
              "--quiet", "-q", help="No progress on stderr (warnings and errors still).")] = False,
          verbose: Annotated[bool, typer.Option(
              "--verbose", "-v", help="Every progress step on stderr, with a timestamp.")] = False,
          ) -> None:
    """Publish medical microdata without giving away the people in it."""
    from .console import set_verbosity

    set_verbosity(quiet=quiet, verbose=verbose)


@synth_app.command("faers")
@guarded
def synth_faers(
    out: Annotated[Path, typer.Argument(help="Folder to write one sub-folder per period into.")],
    periods: Annotated[int, typer.Option(help="Number of quarterly periods.")] = 8,
    cases: Annotated[int, typer.Option(help="Cases per period (new and follow-up).")] = 1000,
    profile: Annotated[str, typer.Option(
        help="Calibration: default (FAERS-like) | legacy | faers-2004 | faers-2014 | "
        "faers-current (docs/data.md); "
        "it sets the term shares, the first period and the rates an option below leaves "
        "unset.")] = "default",
    start: Annotated[Optional[str], typer.Option(
        help="First period, YYYYQn (default: the profile's; 2020Q1).")] = None,
    lifespan: Annotated[int, typer.Option(help="Periods within which a case may be followed up.")] = 4,
    follow_up_rate: Annotated[Optional[float], typer.Option(
        "--follow-up-rate", help="Share of a quarter's cases that follow up earlier cases "
        "(default profile: 0.10, as FAERS; legacy: 0.18).")] = None,
    missing_age: Annotated[Optional[float], typer.Option(
        help="Share of new cases with no age (default profile: 0.08).")] = None,
    missing_weight: Annotated[Optional[float], typer.Option(
        help="Share of new cases with no weight (default profile: 0.20).")] = None,
    no_indication: Annotated[Optional[float], typer.Option(
        help="Share of new cases with no indication (default profile: 0.03).")] = None,
    signal_probability: Annotated[Optional[float], typer.Option(
        help="Extra probability of a planted signal's reaction (0: no signals; default "
        "profile: 0.4).")] = None,
    stop_rate: Annotated[Optional[float], typer.Option(
        help="Share of new cases whose treatment stops (never followed up; default "
        "profile: 0.5).")] = None,
    seed: SeedOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a synthetic FAERS-like periodic series in the FAERS 2014Q3+ ASCII layout."""
    from . import commands
    commands.synth_faers(out, periods=periods, cases=cases, start=start, lifespan=lifespan,
                         seed=seed, as_json=as_json, profile=profile,
                         knobs={"followup_rate": follow_up_rate, "missing_age": missing_age,
                                "missing_weight": missing_weight, "no_indication": no_indication,
                                "signal_probability": signal_probability,
                                "stop_rate_new": stop_rate})


@synth_app.command("table")
@guarded
def synth_table(
    out: Annotated[Path, typer.Argument(help="CSV file to write (its schema goes beside it).")],
    rows: Annotated[int, typer.Option(help="Number of patient records.")] = 50_000,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 2020,
    as_json: JsonOpt = False,
) -> None:
    """Write a synthetic patient table (age, sex, stay, surgery, region, diagnosis) and its schema."""
    from . import tabular
    tabular.synth_table(out, rows=rows, seed=seed, as_json=as_json)


@app.command("ipa")
@guarded
def ipa(
    input_path: Annotated[Path, typer.Argument(metavar="INPUT", help="Table (CSV or Parquet).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="New folder for release.csv and manifest.json.")],
    schema: Annotated[Optional[Path], typer.Option(
        help="Table schema TOML (default: INPUT's <stem>.schema.toml).")] = None,
    method: Annotated[str, typer.Option(help="ipa (paper 004), kanon or dphist (its baselines).")] = "ipa",
    epsilon: Annotated[Optional[str], typer.Option(help="Total ε (ipa, dphist), e.g. 1 or 1/2.")] = None,
    k: Annotated[Optional[int], typer.Option(help="kanon: minimum class size (default 10).")] = None,
    max_suppression: Annotated[Optional[float], typer.Option(
        help="kanon: largest share of records that may be suppressed (default 0).")] = None,
    threshold: Annotated[Optional[int], typer.Option(
        help="ipa: suppression threshold t >= 2 (default 2).")] = None,
    budget_split: Annotated[Optional[str], typer.Option(
        help="ipa: shares of ε for suppression,insertion,value,candidates "
             "(default 0.1,0.3,0.3,0.3).")] = None,
    selection: Annotated[Optional[str], typer.Option(
        help="ipa: how the node is chosen: 'utility' (default; expected loss on the true data, "
             "sensitivity O(1/n)) or 'paper' (004: every node perturbed, Δu = 3).")] = None,
    min_records: Annotated[Optional[int], typer.Option(
        help="ipa --selection utility: a public lower bound on the number of records (default: "
             "a noisy count, 1/10 of the candidates' ε).")] = None,
    node: Annotated[Optional[str], typer.Option(
        help="dphist: lattice node as levels, e.g. 1,0,1,0,1 (default: level 1 where there is one).")] = None,
    seed: SeedOpt = None,
    allow_seeded: Annotated[bool, typer.Option(
        "--allow-seeded", help="Allow publishing a seeded (reproducible, non-secret) run.")] = False,
    allow_tiny_epsilon: Annotated[bool, typer.Option(
        "--allow-tiny-epsilon", help="ipa, dphist: accept an epsilon (ipa: a step's share of it) "
                                     "below 0.01, where the made-up rows grow as 1/epsilon "
                                     "(recorded in the manifest).")] = False,
    budget: BudgetOpt = None,
    allow_over_budget: OverBudgetOpt = False,
    ledger: LedgerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Release a table with IPA or a baseline; report information loss and query errors."""
    from . import tabular
    tabular.ipa(input_path, schema=schema, method=method, epsilon=epsilon, k=k,
                max_suppression=max_suppression, threshold=threshold, budget_split=budget_split,
                node=node, seed=seed, allow_seeded=allow_seeded, out=out, as_json=as_json,
                selection=selection, min_records=min_records,
                allow_tiny_epsilon=allow_tiny_epsilon,
                one_off=(budget, allow_over_budget, ledger))


@synth_app.command("ehr")
@guarded
def synth_ehr(
    out: Annotated[Path, typer.Argument(help="New folder for DIAGNOSES_ICD.csv and ADMISSIONS.csv.")],
    patients: Annotated[int, typer.Option(help="Number of patients.")] = 5_000,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 2023,
    as_json: JsonOpt = False,
) -> None:
    """Write synthetic EHR diagnosis sequences in MIMIC-III layout, with planted dependences."""
    from . import clinsim as clinsim_cli
    clinsim_cli.synth_ehr(out, patients=patients, seed=seed, as_json=as_json)


@app.command("clinsim")
@guarded
def clinsim(
    diagnoses: Annotated[Path, typer.Argument(
        metavar="DIAGNOSES",
        help="MIMIC-III DIAGNOSES_ICD.csv, or a long CSV (patient, admission, time, code).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="New folder for release.csv and manifest.json.")],
    admissions: Annotated[Optional[Path], typer.Option(
        help="MIMIC-III ADMISSIONS.csv (admission order).")] = None,
    method: Annotated[str, typer.Option(
        help="clinsimrr (paper 003), umaxrr, umaxrr-yp (UMAXRR on ClinSimRR's protected set), rr "
             "or suppression (its baselines).")] = "clinsimrr",
    epsilon: Annotated[Optional[str], typer.Option(
        help="ε per released element (randomized methods), e.g. 1 or 1/2.")] = None,
    gamma: Annotated[Optional[float], typer.Option(
        help="clinsimrr, umaxrr-yp: leakage bound γ of the dependence step (default 0.05).")] = None,
    alpha: Annotated[float, typer.Option(help="α of the code dissimilarity, Eq. 4 (default 0.5).")] = 0.5,
    b_max: Annotated[Optional[int], typer.Option(
        help="clinsimrr, umaxrr-yp: largest block size tried (default 16).")] = None,
    sensitive: Annotated[Optional[Path], typer.Option(
        help="File of sensitive ICD-9 codes, one per line.")] = None,
    sensitive_preset: Annotated[Optional[str], typer.Option(
        help="Named sensitive set (default va-7332: the conditions of 38 U.S.C. 7332).")] = None,
    code_level: Annotated[str, typer.Option(
        help="category (first three digits, as in 003) or full codes.")] = "category",
    min_admissions: Annotated[int, typer.Option(
        help="Keep patients with at least this many admissions (003: 2).")] = 1,
    aux_fraction: Annotated[float, typer.Option(
        help="Share of patients that only shape the protection (003: 0.8); the rest is released.")] = 0.8,
    delta_t: Annotated[float, typer.Option(help="ΔT of the dependence graph, in days (003: 300).")] = 300.0,
    max_path_length: Annotated[int, typer.Option(
        help="Longest dependence path counted, for the protection and the attack (default 2).")] = 2,
    map_min_predictions: Annotated[int, typer.Option(
        help="A sensitive code enters the attack's MAP only with this many guesses (default 10).")] = 10,
    seed: SeedOpt = None,
    allow_seeded: Annotated[bool, typer.Option(
        "--allow-seeded", help="Allow publishing a seeded (reproducible, non-secret) run.")] = False,
    pseudonym_key: Annotated[Optional[Path], typer.Option(
        "--pseudonym-key", help="Operator-held key file for the SUBJECT_ID/HADM_ID pseudonyms "
        "(created with mode 0600 if missing; never inside --out): releases made with it are "
        "linkable. Default: a fresh key per release from OS entropy (with --seed too), never "
        "stored.")] = None,
    keep_ids: Annotated[bool, typer.Option(
        "--keep-ids", help="Publish the raw SUBJECT_ID and HADM_ID (the manifest says so).")] = False,
    time_resolution: Annotated[str, typer.Option(
        "--time-resolution", help="day, hour or minute: the published time (days since the "
        "patient's first admission) is floored to it. Default day; finer times make a patient "
        "easier to find from known admission dates.")] = "day",
    budget: BudgetOpt = None,
    allow_over_budget: OverBudgetOpt = False,
    ledger: LedgerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Release diagnosis sequences with ClinSimRR or a baseline; report CIL, KL and the attack's MAP."""
    from . import clinsim as clinsim_cli
    clinsim_cli.clinsim(diagnoses, admissions=admissions, method=method, epsilon=epsilon, gamma=gamma,
                        alpha=alpha, b_max=b_max, sensitive_file=sensitive, preset=sensitive_preset,
                        code_level=code_level, min_admissions=min_admissions, aux_fraction=aux_fraction,
                        delta_t_days=delta_t, max_path_length=max_path_length,
                        min_predictions=map_min_predictions, seed=seed, allow_seeded=allow_seeded, out=out,
                        as_json=as_json, pseudonym_key=pseudonym_key, keep_ids=keep_ids,
                        time_resolution=time_resolution,
                        one_off=(budget, allow_over_budget, ledger))


@app.command()
@guarded
def ingest(
    source: Annotated[Path, typer.Argument(help="FAERS quarterly zip, folder, or folder of quarters.")],
    store: StoreOpt = DEFAULT_STORE_PATH,
    schema: Annotated[Optional[Path], typer.Option(
        help="Schema TOML (default: the FAERS schema of the papers).")] = None,
    drop_missing: Annotated[bool, typer.Option(
        "--drop-missing",
        help="Drop reports lacking a QID or sensitive value, as papers 000-002 do (counted per "
             "quarter, in the manifests and the report). By default every report is kept and "
             "a missing value is published as missing.")] = False,
    keep_missing: Annotated[bool, typer.Option(
        "--keep-missing", hidden=True,
        help="The default (kept for scripts written when dropping was).")] = False,
    allow_empty: Annotated[bool, typer.Option(
        "--allow-empty", help="Accept a quarter with no reports (refused by default: an empty "
                              "period would be published as an empty release).")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Refuse the source (nothing written) when reading it repaired or "
                         "dropped what its files say: duplicate DEMO rows that conflict, "
                         "implausible or unitless ages and weights, invalid dates, rows of no "
                         "report. By default they are repaired and counted.")] = False,
    max_field_chars: Annotated[Optional[int], typer.Option(
        "--max-field-chars", metavar="<int>",
        help="The longest field a FAERS table may hold, in characters (default 10000; FDA's "
             "hold a few hundred). A longer one refuses the source, naming file, line and "
             "column: raise this only for a field you mean to keep.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read FAERS extracts into the store (private; nothing is published)."""
    from . import commands
    if drop_missing and keep_missing:
        raise ValidationError("--drop-missing and --keep-missing contradict each other; give one "
                              "(keeping is the default).")
    commands.ingest(source, store=store, schema_path=schema, keep_missing=not drop_missing,
                    as_json=as_json, allow_empty=allow_empty, strict=strict,
                    max_field_chars=max_field_chars)


@app.command()
@guarded
def release(
    periods: Annotated[Optional[list[str]], typer.Argument(
        help="Periods to publish (default: every ingested, unpublished period, in order).")] = None,
    store: StoreOpt = DEFAULT_STORE_PATH,
    method: Annotated[Optional[str], typer.Option(
        help="ms | ppms | ppms+ | ppms++ | ha | ppms-dp-num | ppms-dp-all (see "
             "docs/algorithms/), or none (raw records without identifiers; needs "
             "--allow-unprotected). Required by a store's first release, which pins the "
             "series policy; later, each flag given changes only its own parameter of the "
             "pinned policy (a flag left out keeps it).")] = None,
    k: Annotated[Optional[int], typer.Option("--k", help="Minimum group size (k >= 2).")] = None,
    theta: Annotated[Optional[str], typer.Option(
        help="Sensitive-value thresholds: a number in (0, 1] (uniform), 'frequency', or a "
             ".csv/.toml file of per-term thresholds (level-wise or explicit, with optional "
             "caps). 'frequency' gives theta 1 (no limit) to the most frequent terms: cap the "
             "ones to protect with --protect.")] = None,
    protect: Annotated[Optional[list[str]], typer.Option(
        "--protect", help="A protected term and its cap, TERM=CAP (repeatable, e.g. --protect "
                          "\"Death=0.3\"): its theta never exceeds the cap, whatever --theta "
                          "gives it; recorded in the manifest's theta table.")] = None,
    alpha: Annotated[Optional[float], typer.Option(
        help="HA: largest share of ss-records in each attacker view, in (0, 1].")] = None,
    ss_rule: Annotated[Optional[str], typer.Option(
        "--ss-rule", help="HA: 'mean+sd' (default) or 'column=count,...' minimum term counts "
                          "that make a record an ss-record.")] = None,
    lifespan: Annotated[Optional[int], typer.Option(
        help="Periods within which a follow-up links to an earlier release (default: all).")] = None,
    on_infeasible: Annotated[Optional[str], typer.Option(
        "--on-infeasible", help="refuse (default) | raise-theta | suppress-terms: what to do "
                                "when a term cannot meet its theta or a case fits no group (the "
                                "latter is withheld; HA keeps it with its blocking terms "
                                "suppressed unless --on-unplaceable withhold); recorded in the "
                                "manifest.")] = None,
    on_unplaceable: Annotated[Optional[str], typer.Option(
        "--on-unplaceable", help="HA: suppress-terms (default: a case that fits no group is "
                                 "published with the terms that block it suppressed) | "
                                 "withhold (002 as written: it is withheld, like PPMS+); "
                                 "recorded in the manifest.")] = None,
    max_withheld: Annotated[Optional[float], typer.Option(
        "--max-withheld", help="Largest share of a period's cases the release may withhold "
                               "(default 0.1): a release that would withhold more is refused, "
                               "naming the terms that block them.")] = None,
    grouping: Annotated[Optional[str], typer.Option(
        "--grouping", help="classes-first (zero-loss groups inside exact QID classes first, "
                           "then the papers' greedy on the rest: faster, less loss; default of "
                           "ppms++ and ha) or greedy (the papers' greedy alone; default of the "
                           "baselines ms, ppms, ppms+ and of ppms-dp); recorded in the manifest.")
    ] = None,
    epsilon: Annotated[Optional[str], typer.Option(
        help="PPMS-DP: epsilon per perturbed QID (e.g. 1 or 0.1); a case spends it once per "
             "perturbed QID in every release it appears in.")] = None,
    dp_variant: Annotated[Optional[str], typer.Option(
        "--dp-variant", help="PPMS-DP: 'strict' (epsilon-DP per case end to end; default) or "
                             "'paper' (paper 000's local sensitivity: NOT epsilon-DP).")] = None,
    domain: Annotated[Optional[list[str]], typer.Option(
        "--domain", help="PPMS-DP strict: public bounds of a numeric QID, NAME=LO:HI "
                         "(repeatable; default: the schema's 'domain').")] = None,
    case_budget: Annotated[Optional[str], typer.Option(
        "--case-budget", help="epsilon-DP methods: the most epsilon any case may spend over "
                              "all releases (the store's ledger; refused with --dp-variant "
                              "paper, whose epsilon bounds nothing).")] = None,
    on_case_budget: Annotated[Optional[str], typer.Option(
        "--on-case-budget", help="refuse (default) | suppress: a case that would exceed "
                                 "--case-budget refuses the release, or is withheld from "
                                 "it.")] = None,
    dp_aware_grouping: Annotated[bool, typer.Option(
        "--dp-aware-grouping", help="PPMS-DP strict: grow groups to k' = 1 + (k-1)e^(2 epsilon) "
                                    "and theta to theta' so that even an attacker weighting "
                                    "candidates by their noisy QIDs stays within 1/k and theta "
                                    "(epsilon: --case-budget if given, else per release).")] = False,
    dp_label_confidence: Annotated[Optional[float], typer.Option(
        "--dp-label-confidence",
        help="PPMS-DP_all strict: publish each perturbed categorical QID (age, sex) at the finest "
             "level of its hierarchy whose label is consistent with the true value with at "
             "least this probability, e.g. 0.99 (chosen from epsilon and the hierarchy only: "
             "post-processing, epsilon unchanged; recorded in the manifest). Stops noisy labels "
             "from moving reports into the wrong stratum of a signal analysis.")] = None,
    dp_label_mechanism: Annotated[Optional[str], typer.Option(
        "--dp-label-mechanism",
        help="PPMS-DP_all strict: how categorical QIDs are perturbed: 'exponential' (paper 000's "
             "draw over the whole hierarchy, cut to the --dp-label-confidence level; default) or "
             "'randomized-response' (k-ary randomized response over that level's labels, or the "
             "leaves: finer labels at the same epsilon).")] = None,
    case_ids: Annotated[Optional[str], typer.Option(
        "--case-ids", help="pseudonym (default: keyed pseudonyms under the store's secret key, "
                           "stable within the series, carrying no order or time) | real (the "
                           "holder's CaseIDs; the gate then reads their receipt order as "
                           "adversary knowledge and may refuse a release); recorded in the "
                           "series policy and every manifest.")] = None,
    seed: SeedOpt = None,
    allow_seeded: Annotated[bool, typer.Option(
        "--allow-seeded", help="Allow publishing a seeded (reproducible, non-secret) run.")] = False,
    publish_despite_violations: Annotated[bool, typer.Option(
        "--publish-despite-violations",
        help="Publish even when the verify gate finds violations (recorded in the manifest).")] = False,
    allow_unprotected: Annotated[bool, typer.Option(
        "--allow-unprotected", help="Allow --method none (no privacy guarantee); never after a "
                                    "protected release of the store.")] = False,
    allow_unknown_terms: Annotated[bool, typer.Option(
        "--allow-unknown-terms", help="Accept theta-file or protected terms that no ingested "
                                      "period holds (a vocabulary that arrives later).")] = False,
    allow_gap: Annotated[bool, typer.Option(
        "--allow-gap", help="Publish past a missing or empty period, which can then never be "
                            "published (recorded in the manifest).")] = False,
    allow_short_lifespan: Annotated[bool, typer.Option(
        "--allow-short-lifespan", help="Accept a --lifespan shorter than the data's longest "
                                       "follow-up span (recorded in the manifest).")] = False,
    allow_tiny_epsilon: Annotated[bool, typer.Option(
        "--allow-tiny-epsilon", help="PPMS-DP: accept an --epsilon below 0.01 per QID, where the "
                                     "noise swamps the domain (recorded in the manifest).")] = False,
    per_period_commit: Annotated[bool, typer.Option(
        "--per-period-commit", help="Commit each period on its own (default: all requested "
                                    "periods land together or none does).")] = False,
    final: Annotated[bool, typer.Option(
        "--final", help="HA: also publish the latest ingested period, as the series' final "
                        "release (grouped as if no case went on; its MD view holds only while "
                        "no later release exists, so the store publishes none after it).")] = False,
    policy: Annotated[Optional[Path], typer.Option(
        "--policy", help="The series policy as a TOML file ([policy] method, k, theta, ...; "
                         "docs/api.md) instead of the method flags.")] = None,
    change_policy: Annotated[bool, typer.Option(
        "--change-policy", help="Accept a method or parameter that differs from the series "
                                "policy pinned at the store's first release; the new policy is "
                                "pinned and the change recorded in the manifests.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Anonymize, verify and publish periods: all of them in one store transaction (or one each
    with --per-period-commit). The first release pins the series policy (the method and its
    parameters); later releases use it with no method flags."""
    from . import commands
    # the method flags given (None: not given; the pinned policy or the method's default)
    flags = {"method": method, "k": k, "theta": theta, "alpha": alpha, "ss_rule": ss_rule,
             "lifespan": lifespan, "on_infeasible": on_infeasible,
             "on_unplaceable": on_unplaceable, "epsilon": epsilon, "dp_variant": dp_variant,
             "domains": domain or None, "case_budget": case_budget,
             "on_case_budget": on_case_budget, "dp_aware_grouping": dp_aware_grouping or None,
             "label_confidence": dp_label_confidence, "label_mechanism": dp_label_mechanism,
             "protect": protect or None, "max_withheld": max_withheld, "grouping": grouping,
             "case_ids": case_ids}
    commands.release(store=store, periods=periods or [], seed=seed, allow_seeded=allow_seeded,
                     as_json=as_json, flags=flags, policy_file=policy,
                     change_policy=change_policy,
                     publish_despite_violations=publish_despite_violations,
                     allow_unprotected=allow_unprotected, allow_unknown_terms=allow_unknown_terms,
                     allow_gap=allow_gap, allow_short_lifespan=allow_short_lifespan,
                     per_period_commit=per_period_commit, allow_tiny_epsilon=allow_tiny_epsilon,
                     final=final)


@app.command()
@guarded
def ledger(
    store: StoreOpt = DEFAULT_STORE_PATH,
    case_budget: Annotated[Optional[str], typer.Option(
        "--case-budget", help="Report the cases at or over this per-case epsilon.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The privacy ledger: epsilon spent per case summed over the releases it appears in.

    Releases without an epsilon-DP claim (PPMS-DP --dp-variant paper) are listed apart with
    their nominal epsilon, which is never added to a case's total.
    """
    from . import commands
    commands.ledger(store=store, case_budget=case_budget, as_json=as_json)


@app.command()
@guarded
def export(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the series into.")],
    store: StoreOpt = DEFAULT_STORE_PATH,
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | faers")] = "csv",
) -> None:
    """Export the published series (never the private records) in the release format.

    --format faers also writes FAERS DEMO/DRUG/REAC/INDI/OUTC files (UTF-8) beside each
    release, weight bands in MEDANONyyQq.txt, and FAERS_NOTES.txt, which lists first the FDA
    columns whose meaning changed (conventions: docs/faers-export.md; a DP release's perturbed
    age, sex and weight go to columns named *_perturbed, never to FDA's age_grp, sex, wt).
    """
    from . import commands
    commands.export(store=store, out=out, fmt=fmt)


@app.command()
@guarded
def inspect(store: StoreOpt = DEFAULT_STORE_PATH, as_json: JsonOpt = False) -> None:
    """Show the periods in a store, their counts, and what is published.

    Also shows the operator-only hash of each published period's input (never exported).
    """
    from . import commands
    commands.inspect(store=store, as_json=as_json)


SeriesArg = Annotated[Optional[Path], typer.Argument(
    help="A published series folder (PERIOD/release.csv + manifest.json), e.g. from another tool.")]
OptStore = Annotated[Optional[Path], typer.Option("--store", "-s", help="Release store (DuckDB file).")]
AuditSchemaOpt = Annotated[Optional[Path], typer.Option(
    "--schema", help="Schema TOML saying how to read the columns (default: the manifests' own).")]
BackgroundOpt = Annotated[Optional[Path], typer.Option(
    "--background", help="Medical background knowledge: CSV 'term,attribute,value' or TOML "
                         "[[rule]] (e.g. breast cancer -> sex F).")]


@app.command()
@guarded
def verify(
    series: SeriesArg = None,
    store: OptStore = None,
    schema: AuditSchemaOpt = None,
    period: Annotated[Optional[list[str]], typer.Option(
        "--period", help="Only these periods (repeatable; default all).")] = None,
    allow_gap: Annotated[bool, typer.Option(
        "--allow-gap", help="Accept a series that lacks periods between its first and last "
                            "release (published without them); they are still reported.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check every release against the privacy model its manifest declares; exit 0 only if all
    hold and no period is missing between the first and the last."""
    from . import commands
    commands.verify(series_dir=series, store=store, schema_path=schema, periods=period or [],
                    as_json=as_json, allow_gap=allow_gap)


@app.command()
@guarded
def attack(
    series: SeriesArg = None,
    store: OptStore = None,
    schema: AuditSchemaOpt = None,
    period: Annotated[Optional[str], typer.Option(
        "--period", help="The release to attack (the target's release with --target).")] = None,
    target: Annotated[Optional[str], typer.Option(
        "--target", help="The target's known QID values, 'col=value,...' (e.g. 'sex=F,age=32'; "
                         "a value may hold commas).")] = None,
    first_appearance: Annotated[bool, typer.Option(
        "--first-appearance",
        help="The adversary knows the case first appears in --period (L-attack).")] = False,
    discontinued: Annotated[bool, typer.Option(
        "--discontinued",
        help="The adversary knows the case is absent from the next period (MD-attack).")] = False,
    background: BackgroundOpt = None,
    lifespan: Annotated[Optional[int], typer.Option(
        help="Link only releases at most this many periods apart (default: all).")] = None,
    k: Annotated[Optional[int], typer.Option("--k", help="k for DIR (default: each manifest's).")] = None,
    alpha: Annotated[Optional[float], typer.Option(
        help="alpha of the SS-attack (default: each manifest's).")] = None,
    ss_rule: Annotated[Optional[str], typer.Option(
        "--ss-rule", help="'mean+sd' or 'column=count,...' defining ss-records.")] = None,
    all_groups: Annotated[bool, typer.Option(
        "--all-groups", help="JSON: list every group, not only the risky ones.")] = False,
    md: Annotated[Optional[bool], typer.Option(
        "--md/--no-md", help="Worst case: apply the MD-attack to every release / to none "
                             "(default: to releases declaring 002's model).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay the B-, F-, L-, MD- and SS-attacks: on one --target, or the worst case per group.

    Noisy (PPMS-DP) QIDs never exclude a candidate; on strict PPMS-DP releases the candidates are
    weighted by the likelihood of their noisy values and the posterior is reported.
    """
    from . import commands
    commands.attack(series_dir=series, store=store, schema_path=schema, period=period,
                    target=target, first_appearance=first_appearance, discontinued=discontinued,
                    background=background, lifespan=lifespan, k=k, alpha=alpha, ss_rule=ss_rule,
                    all_groups=all_groups, as_json=as_json, md=md)


@app.command()
@guarded
def evaluate(
    store: StoreOpt = DEFAULT_STORE_PATH,
    rules: Annotated[Optional[Path], typer.Option(
        "--rules", help="Signal rules: TOML [[rule]] drug/reaction/condition, or CSV "
                        "'drug,condition,reaction'.")] = None,
    background: BackgroundOpt = None,
    md: Annotated[bool, typer.Option("--md", help="Add the MD-attack to RR and AR_rev.")] = False,
    period: Annotated[Optional[list[str]], typer.Option(
        "--period", help="Only these periods (repeatable; default all published).")] = None,
    screening: Annotated[bool, typer.Option(
        "--screening/--no-screening",
        help="Screen every drug-reaction pair (MGPS EB05, BCPNN IC025, PRR, FDR decisions) of "
             "the original and the release: each case once (dedup), per quarter and per "
             "stratum.")] = True,
    cumulative: Annotated[bool, typer.Option(
        "--cumulative", help="Also screen the database as it stood at each quarter and "
                             "compare when each pair first signals.")] = False,
    pooled: Annotated[bool, typer.Option(
        "--pooled", help="Also screen every row of every period together (a case once per "
                         "quarter), beside each case's latest version.")] = False,
    stratum: Annotated[Optional[list[str]], typer.Option(
        "--stratum", help="A stratum condition such as 'age <= 18' (repeatable; default: "
                          "age <= 18, age in [19-64], age >= 65, sex = F, sex = M).")] = None,
    drug_column: Annotated[Optional[list[str]], typer.Option(
        "--drug-column", help="Column(s) whose terms are the drugs (repeatable; default drugs, "
                              "every role; e.g. drugs_primary_suspect and "
                              "drugs_secondary_suspect for suspect-only).")] = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", help="Evaluate on Dask: the address of a running scheduler "
                            "(tcp://host:8786; its workers must see the store's path), or "
                            "'local' for a LocalCluster. Same results as without.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", help="Evaluate on a Dask LocalCluster of this many worker processes "
                          "(default with --scheduler local: cores, at most 4).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Information loss, disclosure risk after the attacks, and signal bias of each release."""
    from . import commands
    commands.evaluate(store=store, rules=rules, background=background, md=md,
                      periods=period or [], as_json=as_json, screening=screening,
                      strata=stratum or [], drug_columns=drug_column or [],
                      cumulative=cumulative, pooled=pooled, scheduler=scheduler,
                      workers=workers)


@app.command()
@guarded
def signals(
    series: Annotated[Optional[Path], typer.Argument(
        help="A published series folder (release format csv/parquet, or the FAERS layout).",
        show_default=False)] = None,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="The pair table: .csv or .parquet; the sidecar OUT.json beside it "
                            "holds each scope's prior and its fit diagnostics.")] = Path("pairs.csv"),
    store: Annotated[Optional[Path], typer.Option(
        "--store", "-s", help="Screen a release store instead of a folder (see --side).")] = None,
    side: Annotated[str, typer.Option(
        "--side", help="With --store: 'original' (the ingested records; operator only, never "
                       "publish the table) or 'release'.")] = "original",
    scope: Annotated[Optional[list[str]], typer.Option(
        "--scope", help="dedup (latest version of each case; default), pooled (every row), "
                        "quarter, cumulative; repeatable or comma-separated.")] = None,
    stratify_by: Annotated[Optional[str], typer.Option(
        "--stratify-by", help="Stratum-adjusted E over these published variables, e.g. "
                              "'age,sex,year' (year: init_fda_dt).")] = None,
    drug_column: Annotated[Optional[list[str]], typer.Option(
        "--drug-column", help="Column(s) whose terms are the drugs (repeatable; default "
                              "drugs).")] = None,
    fdr: Annotated[float, typer.Option(
        "--fdr", help="Level of the false-discovery-rate decisions.")] = 0.05,
    rr0: Annotated[float, typer.Option(
        "--rr0", help="Null hypothesis of the MGPS FDR list: p_h0_mgps = P(RR <= RR0 | n) "
                      "(PhViD's and vigipy's RR0).")] = 1.0,
    min_count: Annotated[int, typer.Option(
        "--min-count", help="Fit the MGPS prior on pairs reported at least this often.")] = 1,
) -> None:
    """One row per drug-reaction pair and scope: n, E, EBGM/EB05/EB95, IC/IC025, PRR, ROR, chi2
    and each rule's decision (docs/metrics.md), as FDA's and WHO's tools list them."""
    from . import commands
    commands.signals(series=series, store=store, side=side, out=out, scopes=scope or ["dedup"],
                     stratify_by=stratify_by or "", drug_columns=drug_column or ["drugs"],
                     fdr=fdr, rr0=rr0, min_count=min_count)


@app.command()
@guarded
def plan(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for plan.csv, plan.json and "
                                                          "plan.html.")],
    store: StoreOpt = DEFAULT_STORE_PATH,
    candidates: Annotated[Optional[Path], typer.Option(
        "--candidates", help="TOML file of [[candidate]] policies (method, k, theta, ...); "
                             "default: PPMS++ with k 3/5/10 under frequency and uniform theta, "
                             "PPMS, MS and PPMS-DP_num.")] = None,
    protect: Annotated[Optional[list[str]], typer.Option(
        "--protect", help="A term that must stay bounded, TERM=CAP (repeatable): the default "
                          "candidates cap it; a candidate leaving it at theta 1 is not "
                          "recommended.")] = None,
    max_withheld: Annotated[float, typer.Option(
        "--max-withheld", help="Largest withheld share of a recommended candidate.")] = 0.1,
    min_recall: Annotated[float, typer.Option(
        "--min-recall", help="Smallest MGPS recall (each case once) of a recommended "
                             "candidate.")] = 0.8,
    period: Annotated[Optional[list[str]], typer.Option(
        "--period", help="Plan on these ingested periods (repeatable; default all).")] = None,
    apply: Annotated[Optional[int], typer.Option(
        "--apply", help="Pin candidate N of the plan in --out as the store's series policy "
                        "(the only write; runs nothing).")] = None,
    change_policy: Annotated[bool, typer.Option(
        "--change-policy", help="With --apply: replace a policy pinned already.")] = False,
    on_infeasible: Annotated[str, typer.Option(
        "--on-infeasible", help="The default candidates' refuse | raise-theta | "
                                "suppress-terms (as release's --on-infeasible; default refuse, "
                                "release's default, so a candidate is what release pins from "
                                "the same method, k and theta). raise-theta measures what "
                                "raising the theta of terms that cannot meet it costs.")
    ] = "refuse",
    seed: SeedOpt = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", help="Run the candidates on Dask, one task per candidate: the address "
                            "of a running scheduler (tcp://host:8786; its workers must see the "
                            "store's path), or 'local' for a LocalCluster. Same rows as in one "
                            "process but for the CPU seconds.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        "--workers", help="Run the candidates on a Dask LocalCluster of this many worker "
                          "processes (default with --scheduler local: cores, at most 4).")] = None,
) -> None:
    """Compare candidate series policies on the ingested data without publishing anything:
    withheld share, mean NIL, MGPS recall, max DIR after the attacks, unbounded terms; recommends
    one, with the release command that pins it."""
    from . import commands
    commands.plan(store=store, out=out, candidates=candidates, protect=protect or [],
                  max_withheld=max_withheld, min_recall=min_recall, periods=period or [],
                  apply=apply, change_policy=change_policy, seed=seed, scheduler=scheduler,
                  workers=workers, on_infeasible=on_infeasible)


@app.command()
@guarded
def report(
    store: Annotated[list[Path], typer.Option("--store", "-s", help=(
        "Release store (DuckDB file); repeat to compare series side by side."))],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    name: Annotated[Optional[list[str]], typer.Option(
        "--name", help="Name of each series, one per --store (default: the file names).")] = None,
    rules: Annotated[Optional[Path], typer.Option(
        help="Signal rules (TOML or CSV: drug, reaction, optional condition).")] = None,
    background: Annotated[Optional[Path], typer.Option(
        help="Medical background knowledge for the RR/AR bias (000 section E).")] = None,
    md: Annotated[bool, typer.Option("--md", help="Apply 002's MD-attack to every release.")] = False,
    title: Annotated[str, typer.Option(help="Title of the page.")] = "medanon release report",
) -> None:
    """A self-contained HTML report: releases, attacks, signals, ledger and manifests, with plots."""
    from . import commands
    commands.report(stores=store, names=name or [], rules=rules, background=background, md=md,
                    out=out, title=title)


@app.command()
@guarded
def experiment(
    name: Annotated[str, typer.Argument(
        help="jmir2021 (001), plos2021 (002), ppms-dp (000), ipa (004) or clinsimrr (003); "
             "'all': every one at the settings docs/results/ documents, each into OUT/NAME.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="A new folder for tables and figures.")],
    scheduler: Annotated[Optional[str], typer.Option(
        help="Address of a running Dask scheduler (tcp://host:8786); default: a LocalCluster.")] = None,
    workers: Annotated[Optional[int], typer.Option(
        help="Worker processes of the LocalCluster (default: cores, at most 4).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="The small smoke grid.")] = False,
    runs: Annotated[int, typer.Option(help="Repetitions of every setting.")] = 3,
    periods: Annotated[int, typer.Option(help="Quarters of the synthetic FAERS-like series.")] = 8,
    cases: Annotated[int, typer.Option(help="Cases per synthetic quarter.")] = 1000,
    profile: Annotated[str, typer.Option(
        help="Shape of the synthetic FAERS-like series: default (FAERS-like), legacy, "
             "faers-2004 (001's data), faers-2014 (002's) or faers-current (docs/data.md).")
    ] = "default",
    rows: Annotated[int, typer.Option(help="Records of the synthetic patient table (ipa).")] = 50_000,
    patients: Annotated[int, typer.Option(help="Synthetic patients (clinsimrr).")] = 10_000,
    input_path: Annotated[Optional[str], typer.Option(
        "--input", help="User data, read by every worker from this path (the same on all workers) "
        "or URL (s3://, gs://, ...): a release store or FAERS source (periodic experiments), a "
        "table (ipa) or DIAGNOSES_ICD (clinsimrr).")] = None,
    admissions: Annotated[Optional[str], typer.Option(
        help="MIMIC ADMISSIONS file (clinsimrr), path or URL.")] = None,
    schema: Annotated[Optional[str], typer.Option(help="Table schema TOML (ipa), path or URL.")] = None,
    rules: Annotated[Optional[Path], typer.Option(help="Signal rules (periodic experiments).")] = None,
    only: Annotated[Optional[list[str]], typer.Option(
        "--only", help="Run only this setting of the grid, named as the summary names it "
        "('ppms++ k=5 theta=0.2'); repeat for more.")] = None,
    seed: SeedOpt = None,
) -> None:
    """Run a paper's comparison grid on Dask and write tables and figures."""
    from . import commands
    if name == "all":
        given = {"--runs": runs != 3, "--periods": periods != 8, "--cases": cases != 1000,
                 "--profile": profile != "default", "--rows": rows != 50_000,
                 "--patients": patients != 10_000, "--input": input_path is not None,
                 "--admissions": admissions is not None, "--schema": schema is not None,
                 "--rules": rules is not None, "--seed": seed is not None, "--only": bool(only)}
        commands.experiment_all(out=out, quick=quick, scheduler=scheduler, workers=workers,
                                refused=[flag for flag, on in given.items() if on])
        return
    commands.experiment(name=name, out=out, scheduler=scheduler, workers=workers, quick=quick,
                        runs=runs, periods=periods, cases=cases, profile=profile, rows=rows,
                        patients=patients, input_path=input_path, admissions=admissions,
                        schema=schema, rules=rules, seed=seed, only=tuple(only or ()))


@app.command()
@guarded
def demo(
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the demo's files.")] = Path("medanon-demo"),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 2024,
) -> None:
    """Run the whole flow on a small synthetic series: synth -> ingest -> release -> export."""
    from . import commands
    commands.demo(out=out, seed=seed)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``medanon`` console script; returns the exit code."""
    try:
        app(args=argv, prog_name="medanon")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        return 1
    return 0
