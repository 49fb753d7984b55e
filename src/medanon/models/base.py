"""Privacy models as objects: parameters, manifest round trip, attacks answered, check, guarantee.

A privacy model is what a release promises, kept apart from the algorithm that tries to keep the
promise (``design.md`` rule 6, after ARX's privacy criteria and OpenDP's measurement + privacy
map). Each model class:

* holds its parameters, validated at construction;
* reads itself from a manifest (:meth:`PrivacyModel.from_manifest`) and writes the part of the
  manifest that declares it (:meth:`PrivacyModel.to_manifest`);
* names the attacks it answers (:attr:`PrivacyModel.attacks`);
* checks published releases (:meth:`PrivacyModel.check`) and returns a :class:`ReleaseVerdict`
  per release that says exactly what was checked;
* generates its guarantee and non-guarantee text from its parameters, so the text a steward
  reads can never drift from what the checker checks.

The registry (:func:`model_from_manifest`) is the only place that maps the name a manifest
declares (``method.privacy_model``) to a class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Self, overload

from .. import _repr
from ..errors import InputFormatError
from ..published.roles import refuse_unknown_role

__all__ = ["PrivacyModel", "ReleaseVerdict", "SeriesVerdict", "model_class", "model_from_manifest",
           "register", "registered_models"]


@dataclass(frozen=True, repr=False)
class ReleaseVerdict:
    """The verdict on one release.

    Attributes:
        period: Period label (or the release's name for a single table/EHR release).
        model: The declared privacy model (None when none is declared).
        verdict: ``"passed"``, ``"violated"`` or ``"no-model"``.
        checked: What exactly was checked, in words (e.g. "k=5 and theta* per group after the
            B/F/L-attacks over the generalized QIDs age, sex; epsilon declared").
        attacks: The attacks replayed (e.g. ``"B/F/L/MD"``; empty for a single-release model).
        md_pending: PPMS(k, θ, α) only: the MD part awaits the next period's release.
        violations: ``"<period> group <id>: <reason>"`` per violated condition.
        dir, dsr, ssgr: DIG, DSG and SSG ratios as checked (None without such a check).
        bound: For releases with perturbed QIDs: the combined bound on the adversary's
            posterior (see :mod:`medanon.models.dp_bound`); None otherwise.
    """

    period: str
    model: str | None
    verdict: str
    checked: str = ""
    attacks: str = ""
    md_pending: bool = False
    violations: tuple[str, ...] = ()
    dir: float | None = None
    dsr: float | None = None
    ssgr: float | None = None
    bound: Mapping[str, object] | None = field(default=None)

    @property
    def ok(self) -> bool:
        """Whether the release passed its model."""
        return self.verdict == "passed"

    def __repr__(self) -> str:
        # one line: what was checked, in full, is in .checked and to_dict()
        shown = f"{self.verdict}, {_repr.clip(self.model or 'no model', 40)}"
        if self.attacks:
            shown += f", attacks {_repr.clip(self.attacks, 20)}"
        if self.violations:
            shown += f"; {_repr.plural(len(self.violations), 'violation')}"
        return _repr.one_line(f"<ReleaseVerdict {_repr.clip(self.period, 20)}: {shown}>")

    def to_dict(self) -> dict:
        out: dict[str, object] = {
            "period": self.period, "model": self.model, "verdict": self.verdict,
            "checked": self.checked, "attacks": self.attacks, "md_pending": self.md_pending,
            "dir": self.dir, "dsr": self.dsr, "ssgr": self.ssgr,
            "violations": list(self.violations)}
        if self.bound is not None:
            out["bound"] = dict(self.bound)
        return out


@dataclass(frozen=True, repr=False)
class SeriesVerdict:
    """The verdicts on the releases of a series, oldest first."""

    releases: tuple[ReleaseVerdict, ...]
    #: the most periods between a CaseID's first and last release in the series (published data)
    observed_case_span: int | None = None
    #: facts of the published series that bound what the verdicts mean (never failures)
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every release passed its model."""
        return all(r.ok for r in self.releases)

    def __repr__(self) -> str:
        periods = [r.period for r in self.releases]
        shown = (f"{_repr.plural(len(periods), 'release')} {_repr.span(periods)}: "
                 f"{_repr.tally(r.verdict for r in self.releases)}")
        if self.violations:
            shown += f"; {_repr.plural(len(self.violations), 'violation')}"
        return _repr.one_line(f"<SeriesVerdict {'ok' if self.ok else 'not ok'}, {shown}>")

    @property
    def violations(self) -> tuple[str, ...]:
        """Every violation of every release, oldest release first."""
        return tuple(v for r in self.releases for v in r.violations)

    def release(self, period: str) -> ReleaseVerdict:
        """The verdict on one release (its label as given).

        Raises:
            KeyError: no release of that label was checked.
        """
        for r in self.releases:
            if r.period == period:
                return r
        raise KeyError(period)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "releases": [r.to_dict() for r in self.releases],
                "observed_case_span": self.observed_case_span, "notes": list(self.notes)}


class PrivacyModel(ABC):
    """Base class of the privacy models (see the module docstring)."""

    #: the name manifests declare in ``method.privacy_model``.
    name: ClassVar[str]
    #: ``"series"`` for models over linked periodic releases, ``"release"`` for one release.
    scope: ClassVar[str] = "release"
    #: whether the model is for a one-off release folder (a table or EHR release), not a
    #: period of a series.
    one_off: ClassVar[bool] = False

    @property
    @abstractmethod
    def attacks(self) -> tuple[str, ...]:
        """The attacks the model answers (``"B"``, ``"F"``, ``"L"``, ``"MD"``, ``"SS"``, ...)."""

    @abstractmethod
    def parameters(self) -> dict[str, object]:
        """The model's parameters as JSON values."""

    @property
    @abstractmethod
    def guarantee(self) -> str:
        """What a release that passes :meth:`check` guarantees, from the parameters."""

    @property
    @abstractmethod
    def does_not_guarantee(self) -> str:
        """What such a release does not guarantee, from the parameters."""

    #: The manifest leaves whose value may depend on the private input beyond the published
    #: rows, and what each reveals (issue 41): pattern of ``published.manifest_roles`` -> the
    #: declared, bounded dependence. Every leaf of role ``declared`` must match one; the
    #: non-interference tests allow exactly these and nothing else. Empty: none may.
    input_dependence: ClassVar[Mapping[str, str]] = {}

    #: the published columns no model covers (role ``clear`` in the manifest's
    #: ``columns.roles``, ``published.roles``); :func:`model_from_manifest` reads them
    clear_columns: tuple[str, ...] = ()

    @property
    def not_protected(self) -> str:
        """:attr:`does_not_guarantee` and the columns published in clear: the text manifests
        and reports carry, so that every clear column is named where the model says what it
        does not protect (issue 29's column contract)."""
        if not self.clear_columns:
            return self.does_not_guarantee
        return (f"{self.does_not_guarantee} Published as reported, covered by no model: "
                f"{', '.join(self.clear_columns)}.")

    @classmethod
    @abstractmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "PrivacyModel":
        """The model a manifest declares, with the parameters it used.

        Raises:
            InputFormatError: a parameter the model needs is missing or malformed; the message
                names the manifest field.
        """

    def to_manifest(self) -> dict[str, object]:
        """The manifest's declaration of the model (``method.model``)."""
        return {"name": self.name, "parameters": self.parameters(), "attacks": list(self.attacks),
                "guarantee": self.guarantee, "does_not_guarantee": self.not_protected}

    def setting(self) -> tuple:
        """Releases whose models share this key are checked together (default: the class and
        the parameters that are not per release)."""
        return (type(self).__name__,)

    @classmethod
    @abstractmethod
    def check(cls, series, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        """Check the releases of ``series`` named in ``declared`` (label -> the model each one
        declares, all sharing one :meth:`setting`); the other releases of the series serve as
        earlier and later releases. The setting starts with the class name, so the models are
        all instances of ``cls`` (``Self``)."""


_REGISTRY: dict[str, type[PrivacyModel]] = {}


def register(cls: type[PrivacyModel]) -> type[PrivacyModel]:
    """Class decorator: make ``cls`` known under its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def registered_models() -> tuple[str, ...]:
    """The names of every known model."""
    return tuple(_REGISTRY)


def model_class(name: object, label: str) -> type[PrivacyModel]:
    """The class of a declared model name.

    Raises:
        InputFormatError: the name is not a known model (names the manifest field).
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise InputFormatError(f"The manifest of {label} declares an unknown privacy model "
                               f"{name!r} in 'method.privacy_model'; known models: "
                               f"{', '.join(_REGISTRY)}.")
    return _REGISTRY[name]


def model_from_manifest(manifest: Mapping, label: str) -> PrivacyModel | None:
    """The privacy model a manifest declares (None when it declares none).

    Raises:
        InputFormatError: an unknown model, or a declared model without the parameters it needs.
    """
    method = manifest.get("method") if isinstance(manifest, Mapping) else None
    if not isinstance(method, Mapping):
        raise InputFormatError(f"The manifest of {label} has no 'method' entry.")
    name = method.get("privacy_model")
    if name is None:
        return None
    model = model_class(name, label).from_manifest(manifest, label)
    columns = manifest.get("columns")  # a one-off release's manifest lists its columns
    roles = columns.get("roles") if isinstance(columns, Mapping) else None
    if roles is not None:
        roles = refuse_unknown_role(roles, f"The manifest of {label}")
        model.clear_columns = tuple(c for c, entry in roles.items()
                                    if isinstance(entry, Mapping) and entry.get("role") == "clear")
    return model


# ------------------------------------------------------------------------ manifest field access
def manifest_field(manifest: Mapping, path: str, label: str, *, required: bool = True,
                   default: object = None) -> object:
    """The value at a dotted ``path`` of a manifest (``"method.parameters.k"``).

    Raises:
        InputFormatError: a required field is missing (the message names the field).
    """
    node: object = manifest
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node or node[part] is None:
            if required:
                raise InputFormatError(f"The manifest of {label} lacks the field {path!r}.")
            return default
        node = node[part]
    return node


@overload
def manifest_int(manifest: Mapping, path: str, label: str, *, minimum: int = 1,
                 required: Literal[True] = True) -> int: ...
@overload
def manifest_int(manifest: Mapping, path: str, label: str, *, minimum: int = 1,
                 required: bool) -> int | None: ...
def manifest_int(manifest: Mapping, path: str, label: str, *, minimum: int = 1,
                 required: bool = True) -> int | None:
    """An integer field >= ``minimum`` (see :func:`manifest_field`); None only for a missing
    field that is not ``required`` (a missing required field raises)."""
    value = manifest_field(manifest, path, label, required=required)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputFormatError(f"The manifest of {label} has a non-integer {path!r}: {value!r}.")
    try:
        number = int(value)
    except ValueError:
        raise InputFormatError(f"The manifest of {label} has a non-integer {path!r}: "
                               f"{value!r}.") from None
    if number < minimum:
        raise InputFormatError(f"The manifest of {label} has {path!r} = {number}; it must be "
                               f">= {minimum}.")
    return number


def names_list(value: object, path: str, label: str) -> tuple[str, ...]:
    """A list of non-empty strings (see :func:`manifest_field`)."""
    if not isinstance(value, Sequence) or isinstance(value, str) or not all(
            isinstance(v, str) and v for v in value):
        raise InputFormatError(f"The manifest of {label} must give {path!r} as a list of names; "
                               f"got {value!r}.")
    return tuple(value)
