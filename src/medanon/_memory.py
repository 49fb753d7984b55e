"""Returning freed heap memory to the operating system between the big steps of a run.

glibc keeps the pages of freed memory mapped, so a process's resident memory stays at the
high-water mark of its largest step, and the temporaries of the next step come on top of that
mark rather than filling it (issue 43: a 450k-case release peaked in the gate, 130 MiB above
the grouping, on freed pages it had not given back). :func:`give_back_freed_memory` asks glibc
to return the free pages; elsewhere (macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

__all__ = ["give_back_freed_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, Windows, musl)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def give_back_freed_memory() -> None:
    """Return the heap's free pages to the system (glibc's ``malloc_trim(0)``), where the C
    library can; call it after a step that freed much of what it made and before one that
    allocates much of its own."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
