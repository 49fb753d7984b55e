"""The series policy: how every release of a store is made, pinned at the first one.

A periodic series is one privacy design applied quarter after quarter: the PPMS guarantees hold
*across* releases only when the method, k, θ, the life span and the infeasibility policy stay
the same (a later release with a smaller k re-groups cases an attacker links by CaseID). So the
design is an object, :class:`SeriesPolicy`, built

* in Python with typed, completable constructors: ``SeriesPolicy.ppms_plus_plus(k=5,
  theta="frequency", protect={"Death": 0.3})``, ``SeriesPolicy.ha(...)``,
  ``SeriesPolicy.ppms_dp(...)``...;
* from a TOML file (``medanon release --policy release.toml``)::

      [policy]
      method = "ppms++"
      k = 5
      theta = "frequency"
      on_infeasible = "raise-theta"
      [policy.protect]
      Death = 0.3

* or from ``medanon release``'s flags.

The first release of a store pins its policy in the store (``meta``, key
:data:`POLICY_KEY`, in the release's own transaction). A later ``medanon release`` with no
method flag publishes with the pinned policy. Against a pinned policy only the flags given are
read, each over the pinned value (issue 44): a flag left out keeps the pinned value, so
repeating ``--method ppms++ --k 5 --theta frequency`` of a policy pinned with ``--protect`` is
the same policy, not a change to no protect. A ``--method`` other than the pinned one keeps the
pinned parameters the new method takes (k, θ, protect...; an HA-only α does not go to PPMS++)
and is named first when refused (``method: ppms++ -> ms``), before anything the new method
lacks. A parameter is dropped, or set back to its default, by giving the whole policy as a file
(``--policy``), which states it entirely. A policy that agrees with the pinned one is
accepted; one that changes it is refused unless ``--change-policy`` is given, which pins the
new policy and is recorded in the release's manifest (``method.acknowledged``) and in the
pinned policy's history. With no policy pinned, the flags state the whole policy (a parameter
left out takes its default). A store published before policies existed has none pinned: its
latest manifest's method and k stand for it until the next release pins one.

A θ given as a file is pinned by its path and the SHA-256 of its content (the operator's file,
not private data): the same path with other content is a change of policy.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import _repr
from ..literals import DpVariant, Grouping, LabelMechanism, OnInfeasible, OnUnplaceable
from .._validation import check_choice, in_callers_words, keywords_checked
from ..errors import InputFormatError, ValidationError

if TYPE_CHECKING:
    from ..anonymize.base import Anonymizer

__all__ = ["POLICY_KEY", "POLICY_PARAMETERS", "SeriesPolicy", "read_toml", "resolve_policy"]

#: the store's ``meta`` key of the pinned policy (JSON)
POLICY_KEY = "series_policy"
#: the parameters a policy holds: those of :func:`~medanon.pipeline.methods.periodic_method`,
#: and how a case over its ε budget is handled
POLICY_PARAMETERS = (
    "k", "theta", "protect", "alpha", "ss_rule", "lifespan", "on_infeasible", "on_unplaceable",
    "max_withheld", "grouping", "epsilon", "dp_variant", "domains", "dp_aware_grouping",
    "case_budget", "on_case_budget", "label_confidence", "label_mechanism", "case_ids")
#: the parameters a policy passes to periodic_method (on_case_budget and case_ids, how CaseIDs
#: are published, go to the publisher)
_METHOD_PARAMETERS = tuple(p for p in POLICY_PARAMETERS if p not in ("on_case_budget", "case_ids"))


#: parameters whose default is a value (the others default to None)
_DEFAULTS = {"on_infeasible": "refuse", "dp_variant": "strict", "on_case_budget": "refuse",
             "dp_aware_grouping": False, "case_ids": "pseudonym"}
_NO_DEFAULT = object()


def _plain(value: Any) -> Any:
    """A JSON-ready, order-independent form of a parameter value."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _normalized(name: str, value: Any) -> Any:
    """One spelling per value, whichever way it was given: ``["Death=0.3"]`` (the CLI) and
    ``{"Death": 0.3}`` (Python, TOML) are the same protect; ``"0.4"`` and ``0.4`` the same θ."""
    if name in ("protect", "domains") and isinstance(value, (list, tuple)) and all(
            isinstance(v, str) and "=" in v for v in value):
        out: dict[str, Any] = {}
        for item in value:
            key, _, rest = item.rpartition("=")
            if name == "protect":
                parts = [_number(rest.strip())]
                out[key.strip()] = parts[0]
            else:
                lo, sep, hi = rest.partition(":")
                parts = [_number(lo.strip()), _number(hi.strip())] if sep else [rest]
                out[key.strip()] = parts
            if any(isinstance(p, str) for p in parts):
                return value   # malformed: the method names it (TERM=CAP, NAME=LO:HI)
        return out
    if name in ("theta", "epsilon", "case_budget") and isinstance(value, str):
        return _number(value.strip())
    return value


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """A TOML file's tables (a policy file, a plan's candidates).

    Raises:
        InputFormatError: the file is missing or not TOML (``what`` names it).
    """
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(f"{what} {str(path)!r} does not exist.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"{what} {str(path)!r} is not valid TOML: {exc}.") from None


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True, repr=False)
class SeriesPolicy:
    """How every release of a series is made: the method and its parameters.

    Build one with a typed constructor (:meth:`ppms_plus_plus`, :meth:`ppms_plus`,
    :meth:`ppms`, :meth:`ms`, :meth:`ha`, :meth:`ppms_dp`), :meth:`of` (a method name and
    keyword parameters), :meth:`from_toml` or :meth:`from_dict`. Every constructor checks the
    parameters by configuring the method (:func:`~medanon.pipeline.methods.periodic_method`).

    Attributes:
        method: The periodic method (``ppms++``, ``ha``, ``ppms-dp-all``...).
        parameters: The parameters given (a parameter left out takes the method's default).
        theta_sha256: The SHA-256 of a θ file's content, when ``theta`` names a file.
    """

    method: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    theta_sha256: str | None = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={_repr.clip(repr(value), 40)}"
                          for name, value in self.parameters.items())
        return _repr.one_line(f"<SeriesPolicy: {_repr.clip(self.method, 30)}"
                              f"{' ' + shown if shown else ''}>")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def of(cls, method: str, **parameters: Any) -> SeriesPolicy:
        """A policy of ``method`` with these parameters (:data:`POLICY_PARAMETERS`).

        Raises:
            ValidationError: an unknown method or parameter, or a value the method refuses
                (named as a parameter of SeriesPolicy).
        """
        try:
            return cls._of(method, parameters)
        except ValidationError as exc:
            raise in_callers_words(exc, "SeriesPolicy") from None

    @classmethod
    def _of(cls, method: str, parameters: Mapping[str, Any]) -> SeriesPolicy:
        if not isinstance(method, str) or not method:
            raise ValidationError(f"The 'method' parameter of SeriesPolicy must be a periodic "
                                  f"method name; got {method!r}.")
        unknown = sorted(set(parameters) - set(POLICY_PARAMETERS))
        if unknown:
            raise ValidationError(f"SeriesPolicy takes the parameters "
                                  f"{', '.join(POLICY_PARAMETERS)}; got {', '.join(unknown)}.")
        # a value equal to the method's default is left out: given or not, it is one policy
        given = {k: _plain(_normalized(k, v)) for k, v in parameters.items()
                 if v is not None and _DEFAULTS.get(k, _NO_DEFAULT) != v}
        digest = None
        theta = given.get("theta")
        if isinstance(theta, str) and theta.lower().endswith((".csv", ".toml")):
            path = Path(theta)
            if not path.is_file():
                raise ValidationError(f"The 'theta' parameter of SeriesPolicy names a file that "
                                      f"does not exist: {theta!r}.")
            digest = _file_digest(path)
        if "case_ids" in given:
            from .case_ids import CASE_ID_MODES

            check_choice(given["case_ids"], name="case_ids", owner="SeriesPolicy",
                         choices=CASE_ID_MODES)
        method = method.strip().lower()  # the docs write PPMS++; the registry ppms++
        policy = cls(method, given, digest)
        # the method checks every value, naming it (a tiny ε is the release's to acknowledge)
        policy.anonymizer(allow_tiny_epsilon=method.startswith("ppms-dp"))
        return policy

    @classmethod
    @keywords_checked("SeriesPolicy.ppms_plus_plus")
    def ppms_plus_plus(cls, k: int, theta: float | str, *, protect: Mapping[str, float] | None = None,
                       lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
                       max_withheld: float | None = None,
                       grouping: Grouping | None = None) -> SeriesPolicy:
        """PPMS++ (paper 001): PPMS(k, θ*)-bounding with the fewest generalized values."""
        return cls.of("ppms++", k=k, theta=theta, protect=protect, lifespan=lifespan,
                      on_infeasible=on_infeasible, max_withheld=max_withheld, grouping=grouping)

    @classmethod
    @keywords_checked("SeriesPolicy.ppms_plus")
    def ppms_plus(cls, k: int, theta: float | str, *, protect: Mapping[str, float] | None = None,
                  lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
                  max_withheld: float | None = None) -> SeriesPolicy:
        """PPMS+ (paper 001)."""
        return cls.of("ppms+", k=k, theta=theta, protect=protect, lifespan=lifespan,
                      on_infeasible=on_infeasible, max_withheld=max_withheld)

    @classmethod
    @keywords_checked("SeriesPolicy.ppms")
    def ppms(cls, k: int, theta: float | str, *, protect: Mapping[str, float] | None = None,
             lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
             max_withheld: float | None = None) -> SeriesPolicy:
        """PPMS (paper 001)."""
        return cls.of("ppms", k=k, theta=theta, protect=protect, lifespan=lifespan,
                      on_infeasible=on_infeasible, max_withheld=max_withheld)

    @classmethod
    @keywords_checked("SeriesPolicy.ms")
    def ms(cls, k: int, theta: float | str, *, protect: Mapping[str, float] | None = None,
           on_infeasible: OnInfeasible = "refuse", max_withheld: float | None = None) -> SeriesPolicy:
        """MS-Anonymization (001's single-release baseline: no protection across releases)."""
        return cls.of("ms", k=k, theta=theta, protect=protect, on_infeasible=on_infeasible,
                      max_withheld=max_withheld)

    @classmethod
    @keywords_checked("SeriesPolicy.ha")
    def ha(cls, k: int, theta: float | str, alpha: float, *, ss_rule: str | None = None,
           protect: Mapping[str, float] | None = None, lifespan: int | None = None,
           on_infeasible: OnInfeasible = "refuse", on_unplaceable: OnUnplaceable | None = None,
           max_withheld: float | None = None, grouping: Grouping | None = None) -> SeriesPolicy:
        """HA (paper 002): PPMS(k, θ, α)-bounding against the MD- and SS-attacks."""
        return cls.of("ha", k=k, theta=theta, alpha=alpha, ss_rule=ss_rule, protect=protect,
                      lifespan=lifespan, on_infeasible=on_infeasible,
                      on_unplaceable=on_unplaceable, max_withheld=max_withheld,
                      grouping=grouping)

    @classmethod
    @keywords_checked("SeriesPolicy.ppms_dp")
    def ppms_dp(cls, k: int, theta: float | str, epsilon: float | str, *,
                perturb: Literal["numeric", "all"] = "numeric", dp_variant: DpVariant = "strict",
                domains: Mapping[str, tuple[float, float]] | None = None,
                case_budget: float | str | None = None, on_case_budget: str = "refuse",
                dp_aware_grouping: bool = False, label_confidence: float | None = None,
                label_mechanism: LabelMechanism | None = None, protect: Mapping[str, float] | None = None,
                lifespan: int | None = None, on_infeasible: OnInfeasible = "refuse",
                max_withheld: float | None = None) -> SeriesPolicy:
        """PPMS-DP (paper 000): ``perturb="numeric"`` is PPMS-DP_num, ``"all"`` PPMS-DP_all."""
        if perturb not in ("numeric", "all"):
            raise ValidationError(f"The 'perturb' parameter of SeriesPolicy.ppms_dp must be "
                                  f"'numeric' or 'all'; got {perturb!r}.")
        return cls.of("ppms-dp-num" if perturb == "numeric" else "ppms-dp-all", k=k,
                      theta=theta, epsilon=epsilon, dp_variant=dp_variant,
                      domains=None if domains is None else {q: list(b) for q, b in domains.items()},
                      case_budget=case_budget, on_case_budget=on_case_budget,
                      dp_aware_grouping=dp_aware_grouping or None,
                      label_confidence=label_confidence, label_mechanism=label_mechanism,
                      protect=protect, lifespan=lifespan, on_infeasible=on_infeasible,
                      max_withheld=max_withheld)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeriesPolicy:
        """The policy :meth:`to_dict` wrote (a pinned policy), checked again.

        Raises:
            ValidationError: not a policy, or one the method refuses.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("method"), str):
            raise ValidationError(f"A series policy needs a 'method' and its 'parameters'; got "
                                  f"{data!r}.")
        parameters = data.get("parameters") or {}
        if not isinstance(parameters, Mapping):
            raise ValidationError(f"The 'parameters' of a series policy must be a table; got "
                                  f"{parameters!r}.")
        policy = cls.of(data["method"], **parameters)
        pinned = data.get("theta_sha256")
        if pinned and policy.theta_sha256 != pinned:
            # the file changed under the pinned policy: a change the steward must make
            return cls(policy.method, policy.parameters, pinned)
        return policy

    @classmethod
    def from_toml(cls, path: str | Path) -> SeriesPolicy:
        """The ``[policy]`` table of a TOML file (``medanon release --policy FILE``).

        Raises:
            InputFormatError: the file is missing or not TOML, or has no ``[policy]`` table.
            ValidationError: a parameter the method refuses (named).
        """
        path = Path(path)
        data = read_toml(path, "Policy file")
        table = data.get("policy")
        if not isinstance(table, dict) or "method" not in table:
            raise InputFormatError(f"Policy file {str(path)!r} needs a [policy] table with a "
                                   f"'method' (e.g. method = \"ppms++\", k = 5, theta = "
                                   f"\"frequency\").")
        table = dict(table)
        method = table.pop("method")
        owner = f"policy file {str(path)!r}"
        unknown = sorted(set(table) - set(POLICY_PARAMETERS))
        if unknown:
            raise ValidationError(f"The [policy] table of {owner} has key(s) "
                                  f"{', '.join(map(repr, unknown))} it does not take; it takes "
                                  f"method, {', '.join(POLICY_PARAMETERS)}.")
        theta = table.get("theta")
        if isinstance(theta, str) and theta.lower().endswith((".csv", ".toml")):
            # a θ file beside the policy file
            table["theta"] = str((path.parent / theta) if not Path(theta).is_absolute() else theta)
        try:
            return cls._of(method, table)
        except ValidationError as exc:  # told as the file's keys, not as flags or keywords
            raise in_callers_words(exc, owner, kind="key") from None

    # ------------------------------------------------------------------ use
    def anonymizer(self, *, allow_tiny_epsilon: bool = False) -> Anonymizer:
        """The configured method (:func:`~medanon.pipeline.methods.periodic_method`).

        ``allow_tiny_epsilon`` is a release's acknowledgement (recorded in its manifest), not
        part of the policy: it is given again with every release that needs it.
        """
        from .methods import periodic_method

        return periodic_method(self.method, allow_tiny_epsilon=allow_tiny_epsilon,
                               **{k: v for k, v in self.parameters.items()
                                  if k in _METHOD_PARAMETERS})

    @property
    def case_ids(self) -> str:
        """``pseudonym`` (the default) or ``real``: how the series publishes CaseIDs
        (:mod:`medanon.pipeline.case_ids`)."""
        return str(self.parameters.get("case_ids", "pseudonym"))

    @property
    def on_case_budget(self) -> str:
        """``refuse`` or ``suppress``: what a case over its ε budget does to a release."""
        return str(self.parameters.get("on_case_budget", "refuse"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: what the store pins."""
        out: dict[str, Any] = {"method": self.method, "parameters": _plain(dict(self.parameters))}
        if self.theta_sha256:
            out["theta_sha256"] = self.theta_sha256
        return out

    def differences(self, other: SeriesPolicy) -> list[str]:
        """What changes from ``self`` to ``other``, one entry per parameter (``k: 5 -> 3``)."""
        out = []
        if self.method != other.method:
            out.append(f"method: {self.method} -> {other.method}")
        for name in POLICY_PARAMETERS:
            mine, theirs = self.parameters.get(name), other.parameters.get(name)
            if mine != theirs:
                out.append(f"{name}: {json.dumps(mine)} -> {json.dumps(theirs)}")
        if self.theta_sha256 != other.theta_sha256 and self.parameters.get("theta") == \
                other.parameters.get("theta"):
            out.append(f"the content of theta file {self.parameters.get('theta')!r}")
        return out

    def describe(self) -> str:
        """One line: the method and its parameters."""
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(self.parameters.items()))
        return f"{self.method}({shown})"


def _refusal(pinned: str, asked: str, changes: list[str]) -> str:
    return (f"This store's series policy is {pinned}; the release asks for {asked} "
            f"({'; '.join(changes)}). A series keeps one policy so that its guarantees hold "
            f"across releases: release with no method flags to use it, or give "
            f"--change-policy to change it (recorded in the manifests).")


def _legacy_refusal(legacy: Mapping[str, Any], asked: str, changes: list[str]) -> str:
    recorded_k = (legacy.get("parameters") or {}).get("k")
    return (f"This store's latest release used {legacy.get('name')} with k={recorded_k}; "
            f"the release asks for {asked} ({'; '.join(changes)}). Give --change-policy to "
            f"change the series' method or k (recorded in the manifests).")


_DP_METHODS = ("ppms-dp-num", "ppms-dp-all")
#: parameters only some methods take (:func:`~medanon.pipeline.methods.periodic_method`);
#: the others every method but ``none`` takes
_ONLY_FOR = {"alpha": ("ha",), "ss_rule": ("ha",), "on_unplaceable": ("ha",),
             "epsilon": _DP_METHODS, "dp_variant": _DP_METHODS, "domains": _DP_METHODS,
             "dp_aware_grouping": _DP_METHODS, "case_budget": _DP_METHODS,
             "on_case_budget": _DP_METHODS, "label_confidence": _DP_METHODS,
             "label_mechanism": _DP_METHODS}


def _takes(method: str, name: str) -> bool:
    """Whether ``method`` takes the policy parameter ``name``: what a change of method keeps
    of the pinned policy (``none`` keeps only how CaseIDs are published)."""
    if method == "none":
        return name == "case_ids"
    if name == "lifespan":
        return method != "ms"   # MS anonymizes each release on its own
    return method in _ONLY_FOR.get(name, (method,))


def _method_name(method: Any) -> Any:
    """A method as the registry spells it (``PPMS++`` -> ``ppms++``); other values unchanged
    (:meth:`SeriesPolicy.of` refuses them, naming the parameter)."""
    return method.strip().lower() if isinstance(method, str) else method


def _build(method: Any, parameters: Mapping[str, Any], *, before: str | None, refusal: str,
           change_policy: bool) -> SeriesPolicy:
    """The policy the flags ask for. A change of method from ``before`` that
    ``--change-policy`` does not acknowledge is refused with ``refusal`` (naming the change)
    before anything the new method lacks: ``--method ms`` on a PPMS++ series is first a
    change of policy, not a missing ``--k``."""
    from .methods import PERIODIC_METHODS

    try:
        return SeriesPolicy.of(method, **parameters)
    except ValidationError as exc:
        if change_policy or before is None or method == before or \
                method not in PERIODIC_METHODS:   # an unknown name is no change: just refused
            raise
        raise ValidationError(f"{refusal} With --change-policy, method {method} would still "
                              f"need more: {exc}") from None


def resolve_policy(pinned: Mapping[str, Any] | None, *, given: SeriesPolicy | None,
                   flags: Mapping[str, Any], change_policy: bool,
                   legacy: Mapping[str, Any] | None = None
                   ) -> tuple[SeriesPolicy, dict[str, Any] | None]:
    """The policy a release uses, and the pin to record (None: the pinned one stands).

    Args:
        pinned: The store's pinned policy (:meth:`SeriesPolicy.to_dict`), or None.
        given: A policy file's policy (``--policy``), or None.
        flags: The method flags given (``method`` and :data:`POLICY_PARAMETERS`; those not
            given left out or None). Against a pinned policy each changes only its own
            parameter; a flag not given is no change.
        change_policy: ``--change-policy``: a policy that differs from the pinned one is pinned
            instead of refused.
        legacy: For a store with releases but no pinned policy: the latest manifest's
            ``method`` (its ``name`` and ``parameters.k`` stand for the policy).

    Returns:
        (the policy, the record to pin: ``{"policy": ..., "pinned_at": ..., "history": [...]}``
        when it is new or changed, else None).

    Raises:
        ValidationError: no policy at all (no pin, no flags), or a change without
            ``change_policy`` (naming each difference).
    """
    flags = {k: v for k, v in flags.items() if v is not None}
    current = SeriesPolicy.from_dict(pinned["policy"]) if pinned else None
    if given is not None and flags:
        raise ValidationError("Give the policy as a file (--policy) or as flags, not both: "
                              f"the flags {', '.join('--' + k.replace('_', '-') for k in flags)} "
                              f"would change it.")
    if given is not None:
        wanted = given
    elif flags:
        method = _method_name(flags.pop("method", None))
        if current is not None:
            # against a pinned policy only the flags given change it, each over the pinned
            # value: a flag left out is no change (issue 44: repeating method, k and θ of a
            # policy pinned with --protect is that policy); another method keeps the pinned
            # parameters it takes
            target = current.method if method is None else method
            kept = {k: v for k, v in current.parameters.items() if _takes(target, k)} \
                if isinstance(target, str) else {}
            wanted = _build(target, {**kept, **flags}, before=current.method,
                            refusal=_refusal(current.describe(), f"method {target}",
                                             [f"method: {current.method} -> {target}"]),
                            change_policy=change_policy)
        elif method is None:
            if legacy is None:
                raise ValidationError("--method is required: ms, ppms, ppms+, ppms++, ha, "
                                      "ppms-dp-num, ppms-dp-all, or none with "
                                      "--allow-unprotected (no series policy is pinned in this "
                                      "store yet).")
            wanted = SeriesPolicy.of(str(legacy["name"]), **flags)
        else:
            # no policy pinned: the flags are the whole policy (a parameter left out takes
            # its default); a legacy store's method change is still named first
            wanted = _build(method, flags,
                            before=None if legacy is None else str(legacy.get("name")),
                            refusal="" if legacy is None else _legacy_refusal(
                                legacy, f"method {method}",
                                [f"method: {legacy.get('name')} -> {method}"]),
                            change_policy=change_policy)
    elif current is not None:
        if current.theta_sha256 and SeriesPolicy.of(current.method, **current.parameters
                                                    ).theta_sha256 != current.theta_sha256:
            raise ValidationError(f"The theta file {current.parameters.get('theta')!r} of the "
                                  f"pinned policy has changed since it was pinned: give the "
                                  f"policy again with --change-policy to pin the new content.")
        return current, None
    else:
        raise ValidationError("--method is required: ms, ppms, ppms+, ppms++, ha, ppms-dp-num, "
                              "ppms-dp-all, or none with --allow-unprotected (no series policy "
                              "is pinned in this store yet; the first release pins one).")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if current is not None:
        changes = current.differences(wanted)
        if not changes:
            return current, None
        if not change_policy:
            raise ValidationError(_refusal(current.describe(), wanted.describe(), changes))
        assert pinned is not None  # current was read from it
        history = [*pinned.get("history", []), {"policy": pinned["policy"],
                                                "pinned_at": pinned.get("pinned_at"),
                                                "replaced_at": now, "changes": changes}]
        return wanted, {"policy": wanted.to_dict(), "pinned_at": now, "history": history}
    if legacy is not None:
        recorded_k = (legacy.get("parameters") or {}).get("k")
        changes = []
        if str(legacy.get("name")) != wanted.method:
            changes.append(f"method: {legacy.get('name')} -> {wanted.method}")
        if recorded_k is not None and wanted.parameters.get("k") not in (None, recorded_k):
            changes.append(f"k: {recorded_k} -> {wanted.parameters.get('k')}")
        if changes and not change_policy:
            raise ValidationError(_legacy_refusal(legacy, wanted.describe(), changes))
        return wanted, {"policy": wanted.to_dict(), "pinned_at": now,
                        "history": [{"policy": {"method": legacy.get("name"),
                                                "parameters": {"k": recorded_k}},
                                     "pinned_at": None, "replaced_at": now,
                                     "changes": changes}] if changes else []}
    return wanted, {"policy": wanted.to_dict(), "pinned_at": now, "history": []}
