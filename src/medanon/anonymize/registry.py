"""Build a periodic method by name, with parameters checked together (one place for library and CLI).

``periodic_method("ppms++", k=5, theta="frequency")`` returns the configured
:class:`~medanon.anonymize.base.Anonymizer`. Errors name the parameter
(``The 'alpha' parameter of periodic_method ...``); the command line maps parameter names to
its flags (``alpha`` -> ``--alpha``) when it prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._validation import check_int
from ..errors import ValidationError
from .base import Anonymizer

__all__ = ["PERIODIC_METHODS", "parse_domains", "periodic_method"]

_OWNER = "periodic_method"


def _methods() -> dict[str, type[Anonymizer]]:
    from . import METHODS

    return METHODS


#: the names of the periodic methods (``--method`` of ``medanon release``).
PERIODIC_METHODS = ("none", "ms", "ppms", "ppms+", "ppms++", "ha", "ppms-dp-num", "ppms-dp-all")


def parse_domains(items: list[str] | Mapping[str, tuple[float, float]] | None
                  ) -> dict[str, tuple[float, float]]:
    """Public numeric domains: ``["weight=0:300"]`` or ``{"weight": (0, 300)}``.

    Raises:
        ValidationError: an item that is not ``NAME=LO:HI``.
    """
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return {str(k): (float(v[0]), float(v[1])) for k, v in items.items()}
    out = {}
    for item in items:
        name, _, bounds = str(item).partition("=")
        lo, _, hi = bounds.partition(":")
        try:
            out[name.strip()] = (float(lo), float(hi))
        except ValueError:
            raise ValidationError(f"The 'domains' parameter of {_OWNER} expects NAME=LO:HI (e.g. "
                                  f"weight=0:300); got {item!r}.") from None
        if not name.strip():
            raise ValidationError(f"The 'domains' parameter of {_OWNER} expects NAME=LO:HI (e.g. "
                                  f"weight=0:300); got {item!r}.")
    return out


def _refuse(name: str, why: str) -> ValidationError:
    return ValidationError(f"The '{name}' parameter of {_OWNER} {why}.")


def periodic_method(method: str, *, k: int | None = None, theta: str | float | None = None,
                    alpha: float | None = None, ss_rule: str | Mapping[str, int] | None = None,
                    lifespan: int | None = None, on_infeasible: str = "refuse",
                    epsilon: str | float | None = None, dp_variant: str = "strict",
                    domains: list[str] | Mapping[str, tuple[float, float]] | None = None,
                    dp_aware_grouping: bool = False, case_budget: str | float | None = None,
                    ) -> Anonymizer:
    """A periodic anonymization method, configured.

    Args:
        method: One of :data:`PERIODIC_METHODS`.
        k, theta: The k and θ* of the model (``theta``: a number, ``"frequency"``, or a file).
        alpha, ss_rule: HA only (002's α and the ss-record rule).
        lifespan: CaseID life span in periods (not for ``ms``).
        on_infeasible: ``refuse``, ``raise-theta`` or ``suppress-terms``.
        epsilon, dp_variant, domains, dp_aware_grouping: PPMS-DP only.
        case_budget: With ``dp_aware_grouping``: design the groups for this ε per case over the
            whole series (else for one release's ε per case).

    Raises:
        ValidationError: an unknown method, or a parameter the method needs, lacks or cannot
            take (the message names the parameter).
    """
    methods = _methods()
    if method not in methods:
        raise _refuse("method", f"must be one of {', '.join(methods)}; got {method!r}")
    dp = method.startswith("ppms-dp")
    if not dp:
        for name, given in (("epsilon", epsilon is not None), ("domains", bool(domains)),
                            ("dp_variant", dp_variant != "strict"),
                            ("dp_aware_grouping", dp_aware_grouping)):
            if given:
                raise _refuse(name, f"applies to methods ppms-dp-num and ppms-dp-all, not "
                                    f"{method!r}")
    if dp_aware_grouping and dp_variant != "strict":
        raise _refuse("dp_aware_grouping", "needs dp_variant 'strict': the paper variant is not "
                                           "epsilon-DP, so no posterior bound holds for it")
    if method == "none":
        for name, value in (("k", k), ("theta", theta), ("alpha", alpha), ("ss_rule", ss_rule),
                            ("lifespan", lifespan)):
            if value is not None:
                raise _refuse(name, "does not apply to method 'none', which gives no privacy "
                                    "guarantee")
        return methods[method]()
    if k is None:
        raise _refuse("k", f"is required by method {method!r} (e.g. k=5)")
    if theta is None:
        raise _refuse("theta", f"is required by method {method!r} (e.g. theta=0.2)")
    check_int(k, name="k", owner=_OWNER, minimum=2)
    kwargs: dict[str, Any] = {"k": k, "theta": theta, "on_infeasible": on_infeasible}
    if method != "ms":
        kwargs["lifespan"] = lifespan
    elif lifespan is not None:
        raise _refuse("lifespan", "does not apply to method 'ms', which anonymizes each release "
                                  "on its own")
    if method == "ha":
        if alpha is None:
            raise _refuse("alpha", "is required by method 'ha' (e.g. alpha=0.25)")
        kwargs["alpha"] = alpha
        if ss_rule is not None:
            if isinstance(ss_rule, str):
                from ..attacks.ss import parse_ss_rule

                ss_rule = parse_ss_rule(ss_rule)
            kwargs["ss_rule"] = ss_rule
    else:
        for name, value in (("alpha", alpha), ("ss_rule", ss_rule)):
            if value is not None:
                raise _refuse(name, f"applies to method 'ha' only, not {method!r}")
    if dp:
        if epsilon is None:
            raise _refuse("epsilon", f"is required by method {method!r} (per perturbed QID, "
                                     f"e.g. epsilon=1)")
        kwargs.update(epsilon=epsilon, variant=dp_variant, domains=parse_domains(domains))
        if dp_aware_grouping:
            kwargs.update(dp_aware_grouping=True, dp_aware_epsilon=case_budget)
    return methods[method](**kwargs)
