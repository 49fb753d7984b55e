"""Terminal output shared by every command: errors, summaries and progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: summaries go to stdout; progress and errors to stderr so that ``--json`` output stays clean.
# Piped output gets a wide fixed width so tables do not wrap into unreadable columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)


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
