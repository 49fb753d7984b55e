"""The one registry of methods: build any method by name, its parameters checked together.

Three families, one shape (a name and keyword parameters in, a configured method out):

* :func:`periodic_method` — ``periodic_method("ppms++", k=5, theta="frequency")``, an
  :class:`~medanon.anonymize.base.Anonymizer` for a periodic series (001, 002, 000);
* :func:`table_method` — ``table_method("ipa", epsilon=1)``, a one-off table release (004);
* :func:`ehr_method` — ``ehr_method("clinsimrr", epsilon=1)``, a diagnosis-sequence release (003).

:func:`family_of` says which family a name belongs to. Errors name the parameter
(``The 'alpha' parameter of periodic_method ...``); the command line maps parameter names to
its flags (``alpha`` -> ``--alpha``) when it prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._validation import check_int
from ..errors import ValidationError
from ..anonymize.base import Anonymizer
from ..models.theta import parse_protect

if TYPE_CHECKING:
    from ..anonymize.clinsim import METHODS as EHR_METHODS  # the diagnosis-sequence methods (003)

__all__ = ["EHR_METHODS", "PERIODIC_METHODS", "TABLE_METHODS", "ehr_method", "family_of",
           "parse_domains", "periodic_method", "table_method"]

_OWNER = "periodic_method"


def _methods() -> dict[str, type[Anonymizer]]:
    from ..anonymize import METHODS

    return METHODS


def _ehr_methods() -> tuple[str, ...]:
    """The diagnosis-sequence methods (003), defined with them: imported on use, as they load
    SciPy, which a periodic release does not need (issue 30)."""
    from ..anonymize.clinsim import METHODS

    return METHODS


def __getattr__(name: str) -> Any:  # EHR_METHODS, loaded on first use (PEP 562)
    if name == "EHR_METHODS":
        return _ehr_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the names of the periodic methods (``--method`` of ``medanon release``).
PERIODIC_METHODS = ("none", "ms", "ppms", "ppms+", "ppms++", "ha", "ppms-dp-num", "ppms-dp-all")
#: the one-off table methods (``medanon ipa``, paper 004).
TABLE_METHODS = ("ipa", "kanon", "dphist")


def family_of(method: str) -> str:
    """``"periodic"``, ``"table"`` or ``"ehr"``: the family of a method name.

    Raises:
        ValidationError: an unknown name (the message lists every known one).
    """
    for family, names in (("periodic", PERIODIC_METHODS), ("table", TABLE_METHODS)):
        if method in names:
            return family
    if method in _ehr_methods():
        return "ehr"
    known = ", ".join((*PERIODIC_METHODS, *TABLE_METHODS, *_ehr_methods()))
    raise ValidationError(f"The 'method' parameter must be one of {known}; got {method!r}.")


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


def _refuse(name: str, why: str, owner: str = _OWNER) -> ValidationError:
    return ValidationError(f"The '{name}' parameter of {owner} {why}.")


def periodic_method(method: str, *, k: int | None = None, theta: str | float | None = None,
                    alpha: float | None = None, ss_rule: str | Mapping[str, int] | None = None,
                    lifespan: int | None = None, on_infeasible: str = "refuse",
                    epsilon: str | float | None = None, dp_variant: str = "strict",
                    domains: list[str] | Mapping[str, tuple[float, float]] | None = None,
                    dp_aware_grouping: bool = False, case_budget: str | float | None = None,
                    label_confidence: float | None = None,
                    label_mechanism: str | None = None,
                    protect: Sequence[str] | Mapping[str, float] | None = None,
                    max_withheld: float | None = None,
                    allow_tiny_epsilon: bool = False,
                    grouping: str | None = None,
                    on_unplaceable: str | None = None) -> Anonymizer:
    """A periodic anonymization method, configured.

    Args:
        method: One of :data:`PERIODIC_METHODS`.
        k, theta: The k and θ* of the model (``theta``: a number, ``"frequency"``, or a file).
        protect: Protected terms whose θ never exceeds a cap, whatever ``theta`` gives them:
            ``{"Death": 0.3}`` or ``["Death=0.3", ...]`` (``medanon release --protect``).
        alpha, ss_rule: HA only (002's α and the ss-record rule).
        on_unplaceable: HA only: ``suppress-terms`` (default) or ``withhold`` (002 as
            written), what becomes of a case that fits no group (:class:`~medanon.anonymize.ha.HA`).
        lifespan: CaseID life span in periods (not for ``ms``).
        on_infeasible: ``refuse``, ``raise-theta`` or ``suppress-terms``.
        max_withheld: The largest share of a period's cases the release may withhold (default
            10%); more refuses the period (not for ``none``).
        epsilon, dp_variant, domains, dp_aware_grouping: PPMS-DP only.
        case_budget: With ``dp_aware_grouping``: design the groups for this ε per case over the
            whole series (else for one release's ε per case).
        label_confidence: PPMS-DP_all, strict: publish each perturbed categorical QID at the
            finest hierarchy level whose labels are consistent with the truth with at least
            this probability (a function of ε and the hierarchy; post-processing).
        label_mechanism: PPMS-DP_all, strict: ``"exponential"`` (000's draw; default) or
            ``"randomized-response"`` over the chosen level's labels.
        grouping: ``"classes-first"`` (zero-loss groups inside exact QID classes first, then
            the papers' greedy; default of ppms++ and ha) or ``"greedy"`` (the papers' greedy
            alone; default of the baselines and of PPMS-DP).
        allow_tiny_epsilon: PPMS-DP: accept an ``epsilon`` below
            :data:`~medanon.anonymize.ppms_dp.EPSILON_FLOOR` (0.01 per perturbed QID), where
            the noise swamps the domain; recorded in each manifest's ``method.acknowledged``.

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
                            ("dp_aware_grouping", dp_aware_grouping),
                            ("label_confidence", label_confidence is not None),
                            ("label_mechanism", label_mechanism is not None),
                            ("allow_tiny_epsilon", allow_tiny_epsilon)):
            if given:
                raise _refuse(name, f"applies to methods ppms-dp-num and ppms-dp-all, not "
                                    f"{method!r}")
    if dp_aware_grouping and dp_variant != "strict":
        raise _refuse("dp_aware_grouping", "needs dp_variant 'strict': the paper variant is not "
                                           "epsilon-DP, so no posterior bound holds for it")
    if method == "none":
        for name, value in (("k", k), ("theta", theta), ("alpha", alpha), ("ss_rule", ss_rule),
                            ("lifespan", lifespan), ("protect", protect or None),
                            ("max_withheld", max_withheld), ("grouping", grouping),
                            ("on_unplaceable", on_unplaceable)):
            if value is not None:
                raise _refuse(name, "does not apply to method 'none', which gives no privacy "
                                    "guarantee")
        return methods[method]()
    if k is None:
        raise _refuse("k", f"is required by method {method!r} (e.g. k=5)")
    # k's value first: a caller who gave a bad k and no theta hears about the k they gave
    check_int(k, name="k", owner=_OWNER, minimum=2)
    if theta is None:
        raise _refuse("theta", f"is required by method {method!r} (e.g. theta=0.2)")
    kwargs: dict[str, Any] = {"k": k, "theta": theta, "on_infeasible": on_infeasible,
                              "max_withheld": max_withheld}
    if protect:
        kwargs["protect"] = parse_protect(protect, owner=_OWNER)
    if grouping is not None:
        kwargs["grouping"] = grouping
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
        if on_unplaceable is not None:
            kwargs["on_unplaceable"] = on_unplaceable
    else:
        for name, value in (("alpha", alpha), ("ss_rule", ss_rule),
                            ("on_unplaceable", on_unplaceable)):
            if value is not None:
                raise _refuse(name, f"applies to method 'ha' only, not {method!r}")
    if dp:
        if epsilon is None:
            raise _refuse("epsilon", f"is required by method {method!r} (per perturbed QID, "
                                     f"e.g. epsilon=1)")
        kwargs.update(epsilon=epsilon, variant=dp_variant, domains=parse_domains(domains),
                      allow_tiny_epsilon=allow_tiny_epsilon)
        if dp_aware_grouping:
            kwargs.update(dp_aware_grouping=True, dp_aware_epsilon=case_budget)
        if label_confidence is not None:
            kwargs.update(label_confidence=label_confidence)
        if label_mechanism is not None:
            kwargs.update(label_mechanism=label_mechanism)
    return methods[method](**kwargs)


def table_method(method: str, *, epsilon: str | float | None = None, k: int | None = None,
                 max_suppression: float | None = None, threshold: int | None = None,
                 budget_split: str | None = None, node: str | list[int] | None = None,
                 selection: str | None = None, min_records: int | None = None,
                 allow_tiny_epsilon: bool = False):
    """A one-off table method (paper 004 and its baselines), configured.

    Args:
        method: One of :data:`TABLE_METHODS`.
        epsilon: The privacy budget (``ipa``, ``dphist``).
        k, max_suppression: ``kanon`` only (default k 10, no suppression).
        threshold, budget_split: ``ipa`` only (default 2 and the paper's split).
        selection, min_records: ``ipa`` only: how the node is chosen, ``"utility"`` (default:
            on the true data, :mod:`medanon.anonymize.ipa_utility`) or ``"paper"`` (004's
            Eq. 12); with ``"utility"``, a public lower bound on the number of records (default:
            a noisy count paid from the choice's share of ε).
        node: ``dphist`` only: the generalization levels (``"1,0,1"`` or a list).
        allow_tiny_epsilon: ``ipa``, ``dphist``: accept an ε (IPA: a step's) below
            :data:`~medanon.accounting.EPSILON_FLOOR` (0.01), where the release's made-up rows
            grow as 1/ε; recorded in the manifest's ``method.acknowledged``.

    Raises:
        ValidationError: an unknown method, or a parameter it needs, lacks or cannot take.
    """
    from ..anonymize.dphist import DPHistogram
    from ..anonymize.ipa import DEFAULT_BUDGET_SPLIT, IPA
    from ..anonymize.kanon import FullDomainKAnonymity

    owner = "table_method"
    if method not in TABLE_METHODS:
        raise _refuse("method", f"must be one of {', '.join(TABLE_METHODS)}; got {method!r}", owner)
    given = {"k": k, "max_suppression": max_suppression, "threshold": threshold,
             "budget_split": budget_split, "node": node, "selection": selection,
             "min_records": min_records}
    allowed = {"ipa": ("threshold", "budget_split", "selection", "min_records"),
               "kanon": ("k", "max_suppression"),
               "dphist": ("node",)}[method]
    for name, value in given.items():
        if value is not None and name not in allowed:
            raise _refuse(name, f"does not apply to method {method!r}: it takes "
                                f"{', '.join(allowed)}", owner)
    if method == "kanon":
        for name, present in (("epsilon", epsilon is not None),
                              ("allow_tiny_epsilon", allow_tiny_epsilon)):
            if present:
                raise _refuse(name, "does not apply to method 'kanon': k-anonymity is not "
                                    "differentially private", owner)
        return FullDomainKAnonymity(k=10 if k is None else k,
                                    max_suppression=0.0 if max_suppression is None else max_suppression)
    if epsilon is None:
        raise _refuse("epsilon", f"is required by method {method!r} (the privacy budget, e.g. 1)",
                      owner)
    if method == "ipa":
        return IPA(epsilon=epsilon, threshold=2 if threshold is None else threshold,
                   budget_split=DEFAULT_BUDGET_SPLIT if budget_split is None else budget_split,
                   selection="utility" if selection is None else selection,
                   min_records=min_records, allow_tiny_epsilon=allow_tiny_epsilon)
    levels = None
    if isinstance(node, str):
        try:
            levels = [int(x) for x in node.split(",")]
        except ValueError:
            raise _refuse("node", f"must be comma-separated levels such as 1,0,1,0,1; got {node!r}",
                          owner) from None
    elif node is not None:
        levels = list(node)
    return DPHistogram(epsilon=epsilon, node=levels, allow_tiny_epsilon=allow_tiny_epsilon)


def ehr_method(method: str, *, epsilon: str | float | None = None, gamma: float | None = None,
               b_max: int | None = None, alpha: float = 0.5, max_path_length: int = 2):
    """A diagnosis-sequence method (ClinSimRR, paper 003, or a baseline), configured.

    Args:
        method: One of :data:`EHR_METHODS`.
        epsilon: Per released element (not for ``suppression``).
        gamma, b_max, alpha, max_path_length: The protected-set extension of ``clinsimrr`` and
            ``umaxrr-yp`` (default γ 0.05, b_max 16).

    Raises:
        ValidationError: an unknown method, or a parameter it needs, lacks or cannot take.
    """
    from ..anonymize.clinsim import EXTENDING, METHODS, make_method

    owner = "ehr_method"
    if method not in METHODS:
        raise _refuse("method", f"must be one of {', '.join(METHODS)}; got {method!r}", owner)
    if method not in EXTENDING:
        for name, value in (("gamma", gamma), ("b_max", b_max)):
            if value is not None:
                raise _refuse(name, f"does not apply to method {method!r}: only "
                                    f"{' and '.join(EXTENDING)} extend the protected set", owner)
    if method == "suppression":
        if epsilon is not None:
            raise _refuse("epsilon", "does not apply to method 'suppression': it is not "
                                     "randomized", owner)
        return make_method(method)
    if epsilon is None:
        raise _refuse("epsilon", f"is required by method {method!r} (per released element, "
                                 f"e.g. 1)", owner)
    if method not in EXTENDING:
        return make_method(method, epsilon=epsilon)
    return make_method(method, epsilon=epsilon, gamma=0.05 if gamma is None else gamma,
                       alpha=alpha, b_max=16 if b_max is None else b_max,
                       max_path_length=max_path_length)
