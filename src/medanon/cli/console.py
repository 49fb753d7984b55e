"""Terminal output shared by every command: errors, summaries and progress bars."""

from __future__ import annotations

import errno
import json
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

class _Console(Console):
    """A rich console that leaves a closed pipe to the command's guard (``cli.app.guarded``:
    quiet, exit 141) instead of rich's own ``SystemExit(1)``, which would tell a cut-off
    command from a failed one by nothing."""

    def on_broken_pipe(self) -> None:
        # Drop what could not be written (rich keeps it when the write fails), and stay usable:
        # the console is shared by every command run in this process.
        del self._buffer[:]
        raise BrokenPipeError(errno.EPIPE, "the reader of the output went away")


#: summaries go to stdout; progress and errors to stderr so that ``--json`` output stays clean.
# Piped output gets a wide fixed width so tables do not wrap into unreadable columns.
out = _Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = _Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


#: how much progress a command tells on stderr: 0 (--quiet: none), 1 (default), 2 (--verbose)
_VERBOSITY = {"level": 1}
#: a step or a whole command shorter than this is not worth a line in a log
_LOG_AFTER_SECONDS = 2.0


def set_verbosity(*, quiet: bool = False, verbose: bool = False) -> None:
    """The root options ``--quiet`` and ``--verbose`` (progress only: warnings, notes and
    errors are always told)."""
    _VERBOSITY["level"] = 0 if quiet else 2 if verbose else 1


def verbosity() -> int:
    """The level :func:`set_verbosity` set: 0 (--quiet), 1 (default) or 2 (--verbose)."""
    return _VERBOSITY["level"]


def _stamp() -> str:
    return time.strftime("%H:%M:%S")


class _LogLines:
    """Progress as plain timestamped lines, for stderr that is a log (cron, CI), not a
    terminal: each step with its count, the time so far and the estimated time left; the end
    with the total time. By default a line only once the work has taken 2 s (short commands
    stay quiet); with ``--verbose`` every line, the start too."""

    def __init__(self, description: str, total: int | None, verbose: bool,
                 first_at_once: bool = False):
        self.description, self.total, self.verbose = description, total, verbose
        self.first_at_once = first_at_once
        self.started = time.monotonic()
        self.done = 0
        if verbose:
            err.print(f"{_stamp()} {description} ...", soft_wrap=True)

    def step(self, step: object = "", *_: object) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        first = self.first_at_once and self.done == 1
        if not (self.verbose or first) and elapsed < _LOG_AFTER_SECONDS:
            return
        count = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        left = ""
        if self.total and self.done < self.total:
            left = f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        err.print(f"{_stamp()} {self.description}: {step} ({count}, {elapsed:.0f} s{left})",
                  soft_wrap=True)

    def finish(self) -> None:
        elapsed = time.monotonic() - self.started
        if self.verbose or elapsed >= _LOG_AFTER_SECONDS:
            err.print(f"{_stamp()} {self.description}: done in {elapsed:.1f} s", soft_wrap=True)


class Step(Protocol):
    """What :func:`progress_bar` yields: called once per finished step with what names it;
    any further arguments (a library's ``progress(done, total)``) are ignored."""

    def __call__(self, step: object = "", /, *_: object) -> None: ...


@contextmanager
def progress_bar(description: str, total: int | None, *,
                 first_at_once: bool = False) -> Iterator[Step]:
    """Progress on stderr: a bar with the count, the time so far and the time left when
    stderr is a terminal; timestamped lines when it is a log (:class:`_LogLines`); nothing
    with ``--quiet``.

    With ``first_at_once``, a log tells the first step as soon as it is done, even within
    the 2 s a short command stays quiet: for a command whose next step may take long
    (``medanon report``: a store opened, then its first release measured), so that the log
    shows the work started.

    Yields a function to call once per finished step (its argument names the step).
    """
    level = _VERBOSITY["level"]
    if level == 0:
        yield lambda *_: None
        return
    if not sys.stderr.isatty():
        lines = _LogLines(description, total, verbose=level == 2, first_at_once=first_at_once)
        yield lines.step
        lines.finish()   # not after a failure: the error says what happened
        return
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TextColumn("{task.fields[step]}"), TimeElapsedColumn(),
                  TextColumn("left"), TimeRemainingColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task(description, total=total, step="")

        def advance(step: object = "", *_: object) -> None:
            progress.update(task, advance=1, step=str(step))
            if level == 2:
                progress.console.log(f"{description}: {step}")
        yield advance


def print_json(data: object) -> None:
    """Machine-readable output of ``--json``: sorted keys, indented, non-JSON values as text."""
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


#: library parameter names whose flag is not ``--`` + the name with dashes
_FLAG_NAMES = {"domains": "--domain", "followup_rate": "--follow-up-rate",
               "stop_rate_new": "--stop-rate", "label_confidence": "--dp-label-confidence",
               "label_mechanism": "--dp-label-mechanism", "scopes": "--scope",
               "drug_columns": "--drug-column"}
#: parameters with an underscore that are command-line flags (told as flags wherever they
#: appear in a library message)
_FLAGGED = frozenset({
    "allow_unprotected", "allow_unknown_terms", "allow_gap", "allow_short_lifespan",
    "allow_tiny_epsilon",
    "allow_empty", "allow_seeded", "on_infeasible", "on_unplaceable", "on_case_budget",
    "dp_variant",
    "dp_aware_grouping", "case_budget", "label_confidence", "label_mechanism", "ss_rule", "b_max",
    "max_suppression", "budget_split", "min_records",
    "per_period_commit", "publish_despite_violations", "max_path_length", "delta_t_days",
    "min_predictions", "aux_fraction", "code_level", "min_admissions", "pseudonym_key",
    "keep_ids", "keep_missing", "followup_rate", "missing_age", "missing_weight", "no_indication",
    "signal_probability", "stop_rate_new"})


def flag(name: str) -> str:
    """The command-line flag of a library parameter (``b_max`` -> ``--b-max``)."""
    return _FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


def as_flags(message: str) -> str:
    """A library message with its parameter names told as this command line's flags:
    ``The 'b_max' parameter of ehr_method does not apply to method 'rr'`` ->
    ``--b-max does not apply to method 'rr'``."""
    message = re.sub(r"(?i:the) '(\w+)' parameter(?: of [\w.]+)?", lambda m: flag(m.group(1)), message)
    # a parameter named bare (``needs dp_variant 'strict'``): only the names that are flags, so
    # that column and field names in a message (case_id, privacy_model) stay as they are; a
    # quoted one is a file's key (``The 'on_infeasible' key of policy file``) and stays too
    return re.sub(r"(?<!')\b([a-z]+_[a-z_]+)\b(?![('])",
                  lambda m: flag(m.group(1)) if m.group(1) in _FLAGGED else m.group(1), message)


@contextmanager
def errors_as_flags() -> Iterator[None]:
    """Re-raise a library :class:`~medanon.errors.ValidationError`,
    :class:`~medanon.errors.SchemaError`, :class:`~medanon.errors.StoreError` or
    :class:`~medanon.errors.InputQualityError` told in flags (same type)."""
    from ..errors import InputQualityError, SchemaError, StoreError, ValidationError

    try:
        yield
    except (ValidationError, SchemaError, StoreError, InputQualityError) as exc:
        raise type(exc)(as_flags(str(exc))) from None


def one_off_check(one_off: tuple | None, method: str, epsilon: object,
                  fingerprint) -> tuple[object, float | None, bool]:
    """The one-off ledger's check before a DP release of an input (``ipa``, ``clinsim``):
    returns (the ledger, the release's ε or None for a method without one, whether the run
    goes past the budget acknowledged). Refuses past ``--budget`` (BudgetExceeded)."""
    from ..accounting import parse_epsilon
    from ..accounting.oneoff import OneOffLedger

    budget, allow_over_budget, path = one_off or (None, False, None)
    ledger = OneOffLedger.default(path)
    if epsilon is None:
        return ledger, None, False
    spend = float(parse_epsilon(epsilon, name="epsilon", owner=method))
    over = ledger.check(fingerprint, spend, budget=budget, allow_over_budget=allow_over_budget)
    return ledger, spend, over


def one_off_record(ledger, spend: float | None, fingerprint, method: str, out) -> None:
    """Record a written DP release in the one-off ledger and say what the input has spent."""
    from ..accounting.oneoff import OVERLAP_THRESHOLD

    if spend is None:
        return
    before = ledger.entries(fingerprint)
    ledger.record(fingerprint, method=method, epsilon=spend, out=out)
    if before:
        spent = sum(e["epsilon"] for e in before)
        err.print(f"note: this input (its rows in any order, or an input sharing "
                  f"{OVERLAP_THRESHOLD:.0%} or more of them) had spent epsilon {spent:g} in "
                  f"{len(before)} earlier one-off release(s) (ledger {ledger.path}); with this "
                  f"one, {spent + spend:g}.", soft_wrap=True)
