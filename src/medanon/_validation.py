"""Parameter validation shared by every public class and function.

One message format everywhere (the scikit-learn ``_param_validation`` idea):
``The 'k' parameter of PPMS must be an integer >= 2; got 1.``
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from .errors import ValidationError


def _fail(name: str, owner: str, requirement: str, value: Any) -> ValidationError:
    return ValidationError(f"The {name!r} parameter of {owner} must be {requirement}; got {value!r}.")


def check_int(value: Any, *, name: str, owner: str, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as an int, or raise ValidationError in the common format."""
    requirement = "an integer"
    if minimum is not None and maximum is not None:
        requirement += f" in [{minimum}, {maximum}]"
    elif minimum is not None:
        requirement += f" >= {minimum}"
    elif maximum is not None:
        requirement += f" <= {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _fail(name, owner, requirement, value)
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _fail(name, owner, requirement, value)
    return value


def check_fraction(value: Any, *, name: str, owner: str, low_open: bool = True,
                   low: float = 0.0, high: float = 1.0) -> float:
    """Validate a threshold in ``(low, high]`` (or ``[low, high]`` when ``low_open`` is False)."""
    bracket = "(" if low_open else "["
    requirement = f"a number in {bracket}{low:g}, {high:g}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, requirement, value)
    value = float(value)
    if math.isnan(value) or value > high or value < low or (low_open and value == low):
        raise _fail(name, owner, requirement, value)
    return value


def check_choice(value: Any, *, name: str, owner: str, choices: tuple[str, ...]) -> str:
    """Validate that ``value`` is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise _fail(name, owner, f"one of {listed}", value)
    return value


def pydantic_problems(exc: Any, root: str) -> str:
    """A pydantic ``ValidationError`` as ``location: message; ...`` (``root`` names the
    top-level object when an error has no location)."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or root}: {err['msg']}"
                     for err in exc.errors())


#: internal parameter names a method's own checks use -> the keyword a caller of the public API
#: wrote (Publisher, SeriesPolicy)
_KEYWORD_OF = {"variant": "dp_variant", "dp_aware_epsilon": "case_budget"}


def in_callers_words(exc: ValidationError, owner: str, *, kind: str = "parameter"
                     ) -> ValidationError:
    """``exc`` told as a ``kind`` (a parameter, a TOML key) of ``owner`` (what the caller used:
    Publisher, a policy file) under the caller's name for it, not as a parameter of the internal
    function or class that checked it: ``The 'k' parameter of periodic_method`` -> ``The 'k'
    parameter of Publisher``. Same type."""
    def told(match: re.Match[str]) -> str:
        return f"The {_KEYWORD_OF.get(match.group(1), match.group(1))!r} {kind} of {owner}"

    return type(exc)(re.sub(r"The '(\w+)' parameter of [\w.]+", told, str(exc)))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def keywords_checked(owner: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A typed constructor's arguments checked before the call: an unknown keyword or a missing
    one is a :class:`ValidationError` naming it (with the nearest keyword for a misspelt one),
    not Python's bare ``TypeError``. The signature stays the function's own (``inspect`` and
    type checkers read it)."""
    def wrap(function: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(function)
        names = [p.name for p in signature.parameters.values() if p.name != "cls"]

        @functools.wraps(function)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise ValidationError(_binding_problem(owner, names, kwargs, exc)) from None
            return function(*args, **kwargs)
        return checked
    return wrap


def _binding_problem(owner: str, names: list[str], given: dict[str, Any],
                     exc: TypeError) -> str:
    unknown = [k for k in given if k not in names]
    if unknown:
        near = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return (f"The {unknown[0]!r} parameter of {owner} does not exist{hint}; it takes "
                f"{', '.join(names)}.")
    missing = re.search(r"missing a required argument: '(\w+)'", str(exc))
    if missing:
        return f"The {missing.group(1)!r} parameter of {owner} is required."
    return f"{owner}: {exc}."

