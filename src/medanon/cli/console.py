"""Terminal output shared by every command: errors, summaries and progress bars."""

from __future__ import annotations

import errno
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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


@contextmanager
def progress_bar(description: str, total: int | None) -> Iterator[callable]:
    """A rich progress bar on stderr, silent when stderr is not a terminal.

    Yields a function to call once per finished step (its argument names the step).
    """
    if not sys.stderr.isatty():
        yield lambda *_: None
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[step]}"), TimeElapsedColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task(description, total=total, step="")
        yield lambda step="", *_: progress.update(task, advance=1, step=str(step))


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
    # that column and field names in a message (case_id, privacy_model) stay as they are
    return re.sub(r"\b([a-z]+_[a-z_]+)\b(?![(])",
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
