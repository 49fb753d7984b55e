"""The privacy models of one-off releases: tables (paper 004 and its baselines) and EHR codes (003).

* :class:`KAnonymityModel` — k-anonymity of a generalized table (the full-domain baseline of
  004): every class of generalized dimension values holds at least k rows, except the class of
  fully suppressed rows. Checkable on the published rows, and checked.
* :class:`DPHistogramModel` — ε-DP (add/remove one record) of a noisy histogram released as
  rows (004's DP-histogram baseline). Only with a public informative domain: a domain read
  from the data would disclose which values occur, so the model refuses such a manifest.
* :class:`IPAModel` — 004's IPA: each noisy step is an ε-DP mechanism; the release as a whole
  is not ε-DP (the text says why). What can be checked on the output is the declaration.
* :class:`LocalDPModel` — local DP per released diagnosis element (003): (Y_P, ε)-utility-
  optimized LDP for ClinSimRR and UMAXRR; :class:`PlainLDPModel`, ε-LDP among the sensitive
  codes for plain RR; the suppression baseline declares no model. The texts name what Y_P and
  the blocks are: a non-private statistic of the auxiliary patients, published as such.

A one-off release is a folder with ``release.csv`` and ``manifest.json`` whose ``format`` is the
tabular or the EHR release format. Its manifest declares the model in ``method.privacy_model``
and ``method.parameters``; :meth:`check` reads the folder's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Self

import pandas as pd

from .._validation import check_int
from ..errors import InputFormatError, ValidationError
from .base import PrivacyModel, ReleaseVerdict, manifest_field, manifest_int, register

__all__ = ["DPHistogramModel", "IPAModel", "KAnonymityModel", "LocalDPModel", "OneOffRelease",
           "PlainLDPModel", "suppression_non_guarantees"]

KANON_MODEL = "k-anonymity"
DPHIST_MODEL = "epsilon-DP histogram"
IPA_MODEL = "IPA (per-step epsilon-DP)"
ULDP_MODEL = "(Y_P, epsilon)-utility-optimized LDP"
LDP_MODEL = "epsilon-LDP"
SUPPRESSED = "*"


class OneOffRelease:
    """A one-off published release: its rows (strings) and manifest, and a name for messages."""

    def __init__(self, name: str, rows: pd.DataFrame, manifest: Mapping):
        self.name = name
        self.rows = rows
        self.manifest = manifest


def _epsilon(manifest: Mapping, path: str, label: str) -> Fraction:
    from ..accounting import to_exact

    value = manifest_field(manifest, path, label)
    try:
        return to_exact(value, name=path, owner=f"the manifest of {label}")
    except ValidationError as exc:
        raise InputFormatError(str(exc)) from None


def _fmt(x: Fraction) -> str:
    from ..accounting import format_epsilon

    return format_epsilon(x)


class _OneOff(PrivacyModel):
    scope = "release"
    one_off = True

    @classmethod
    def check(cls, series, declared: Mapping[str, Self]) -> list[ReleaseVerdict]:
        return [model.check_release(series[label]) for label, model in declared.items()]

    def check_release(self, release: OneOffRelease) -> ReleaseVerdict:
        """The verdict on one one-off release (default: the declaration is complete)."""
        return ReleaseVerdict(release.name, self.name, "passed", self.checked_text())

    def checked_text(self) -> str:
        return "the declared parameters (the noise itself cannot be checked on the output)"


@register
class KAnonymityModel(_OneOff):
    """k-anonymity of a generalized table."""

    name = KANON_MODEL

    def __init__(self, *, k: int):
        self.k = check_int(k, name="k", owner="KAnonymityModel", minimum=2)

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("record linkage on the dimensions",)

    def parameters(self) -> dict[str, object]:
        return {"k": self.k}

    @property
    def guarantee(self) -> str:
        return (f"k-anonymity: every released class of generalized dimension values holds at least "
                f"{self.k} records, except the class of suppressed records (every dimension '*').")

    @property
    def does_not_guarantee(self) -> str:
        return ("No differential privacy and no protection of the informative attribute (a class "
                "may hold a single informative value); an adversary's background knowledge is "
                "assumed to be the dimension values only.")

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "KAnonymityModel":
        return cls(k=manifest_int(manifest, "method.parameters.k", label, minimum=2))

    def checked_text(self) -> str:
        return f"k={self.k} per class of released dimension values (suppressed class excepted)"

    def check_release(self, release: OneOffRelease) -> ReleaseVerdict:
        dims = _dimension_names(release)
        rows = release.rows.astype(str)
        suppressed = (rows[dims] == SUPPRESSED).all(axis=1)
        sizes = rows[~suppressed].groupby(dims, sort=True).size()
        small = sizes[sizes < self.k]
        violations = tuple(
            f"{release.name}: class ({_class_text(dims, key)}) holds {n} record(s) < k={self.k}"
            for key, n in small.items())
        n = len(sizes)
        return ReleaseVerdict(release.name, self.name, "violated" if violations else "passed",
                              self.checked_text(), "", violations=violations,
                              dir=len(small) / n if n else 0.0)


def _class_text(dims: list[str], key: object) -> str:
    """``d1=v1, d2=v2`` for one equivalence class (groupby gives a bare value for one dimension)."""
    values = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{d}={v}" for d, v in zip(dims, values, strict=True))


def _dimension_names(release: OneOffRelease) -> list[str]:
    dims = manifest_field(release.manifest, "columns.dimensions", release.name)
    try:
        if not isinstance(dims, Iterable):
            raise TypeError  # refused below, like a list whose items are not mappings
        names = [str(d["name"]) for d in dims]
    except (TypeError, KeyError):
        raise InputFormatError(f"The manifest of {release.name} must list 'columns.dimensions' "
                               f"as [{{name, kind}}, ...]; got {dims!r}.") from None
    missing = [d for d in names if d not in release.rows.columns]
    if missing:
        raise InputFormatError(f"{release.name} lacks the dimension column(s) "
                               f"{', '.join(map(repr, missing))}.")
    return names


@register
class DPHistogramModel(_OneOff):
    """ε-DP of a noisy histogram over a node fixed in advance and a public informative domain."""

    name = DPHIST_MODEL

    def __init__(self, *, epsilon: object):
        from ..accounting import to_exact

        self.epsilon = to_exact(epsilon, name="epsilon", owner="DPHistogramModel")

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("any (differential privacy)",)

    def parameters(self) -> dict[str, object]:
        return {"epsilon": _fmt(self.epsilon)}

    @property
    def guarantee(self) -> str:
        return (f"{_fmt(self.epsilon)}-differential privacy of the whole release (add or remove one "
                f"record): a histogram over every cell of a generalization node fixed in advance "
                f"and of the public informative domain, with exact discrete Laplace noise of scale "
                f"1/{_fmt(self.epsilon)} per cell, published as rows.")

    @property
    def does_not_guarantee(self) -> str:
        return ("Accuracy: every cell gets noise, empty ones too, so many rows are counterfeit; "
                "rows are not records of real people.")

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "DPHistogramModel":
        public = manifest_field(manifest, "informative_domain.public", label)
        if public is not True:
            raise InputFormatError(f"The manifest of {label} declares {cls.name} with an "
                                   f"informative domain read from the data "
                                   f"('informative_domain.public' is {public!r}): the values that "
                                   f"occur would be disclosed, so the release is not epsilon-DP.")
        return cls(epsilon=_epsilon(manifest, "method.parameters.epsilon", label))

    def checked_text(self) -> str:
        return (f"epsilon={_fmt(self.epsilon)} declared and the informative domain declared "
                f"public (the noise itself cannot be checked on the output)")


@register
class IPAModel(_OneOff):
    """IPA (004): each noisy step ε-DP; the release as a whole is not."""

    name = IPA_MODEL

    def __init__(self, *, epsilon: object, steps: Mapping[str, object], selection: str = "paper"):
        from ..accounting import to_exact

        self.epsilon = to_exact(epsilon, name="epsilon", owner="IPAModel")
        self.steps = {str(s): to_exact(e, name=f"steps[{s!r}]", owner="IPAModel")
                      for s, e in dict(steps).items()}
        if selection not in ("paper", "utility"):
            raise ValidationError(f"The 'selection' parameter of IPAModel must be 'paper' or "
                                  f"'utility'; got {selection!r}.")
        self.selection = selection

    @property
    def attacks(self) -> tuple[str, ...]:
        return ()

    def parameters(self) -> dict[str, object]:
        return {"epsilon": _fmt(self.epsilon), "steps": {s: _fmt(e) for s, e in self.steps.items()},
                "selection": self.selection}

    @property
    def guarantee(self) -> str:
        steps = ", ".join(f"{s} {_fmt(e)}" for s, e in self.steps.items())
        if self.selection == "paper":
            choice = ("the exponential choice of the generalization node on the perturbed nodes' "
                      "information loss (delta u = 3)")
        else:
            choice = ("the exponential choice of the generalization node on its expected loss "
                      "computed from the true data (sensitivity O(1/N), N a noisy record count "
                      "or a public lower bound; not in paper 004)")
        return (f"Each noisy step of paper 004 is an epsilon-DP mechanism ({steps}; total "
                f"{_fmt(self.epsilon)}): the noisy suppression threshold, the counterfeit counts "
                f"and values per class, and {choice}. "
                f"Dimension attributes are generalized full-domain; any released row may be "
                f"counterfeit.")

    @property
    def does_not_guarantee(self) -> str:
        return ("The release as a whole is NOT epsilon-differentially private, because the "
                "counterfeit noise is one-sided: real records are published as they are (exact "
                "informative value; a suppressed record still appears in class '*') and a class "
                "only gains max(0, noise) counterfeit rows, so its released size never falls below "
                "its true size, every real (class, value) pair is always released, and a class "
                "appears only if it holds a real record. An output lacking a value that one record "
                "holds is impossible with that record and possible without it.")

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "IPAModel":
        epsilon = _epsilon(manifest, "method.parameters.epsilon", label)
        split = manifest_field(manifest, "method.parameters.budget_split", label)
        if not isinstance(split, Mapping) or not split:
            raise InputFormatError(f"The manifest of {label} must give the share of epsilon of "
                                   f"each IPA step in 'method.parameters.budget_split'; got "
                                   f"{split!r}.")
        selection = manifest_field(manifest, "method.parameters.selection", label,
                                   required=False, default="paper")
        if selection not in ("paper", "utility"):
            raise InputFormatError(f"The manifest of {label} must name the IPA node selection "
                                   f"'paper' or 'utility' in 'method.parameters.selection'; got "
                                   f"{selection!r}.")
        return cls(epsilon=epsilon,
                   steps={s: epsilon * _epsilon(manifest, f"method.parameters.budget_split.{s}",
                                                label) for s in split},
                   selection=selection)


_ULDP_METHODS = ("clinsimrr", "umaxrr", "umaxrr-yp")
_LDP_METHODS = ("rr",)


def suppression_non_guarantees() -> tuple[str, ...]:
    """What the suppression baseline (no model) does not guarantee."""
    return ("the published sensitive set is the operator's codes resolved on the code tree, which "
            "is extended with codes of the auxiliary split: at full-code level it can name a "
            "retired or non-billable code that only auxiliary patients hold (a non-private "
            "statistic of them)",
            "codes outside the sensitive set are published truthfully",
            "no protection against inference from correlated non-sensitive codes",
            "a '*' reveals that the element was sensitive")


@register
class LocalDPModel(_OneOff):
    """Local DP per released EHR element (003): (Y_P, ε)-ULDP for ClinSimRR and UMAXRR.

    Args:
        method: ``clinsimrr``, ``umaxrr``, ``umaxrr-yp`` (this class) or ``rr``
            (:class:`PlainLDPModel`).
        epsilon: ε per released element.
        protected: |Y_P| (for ``rr``: the number of sensitive codes).
        sensitive: |X_S|, the operator's sensitive codes.
        block_size: b of the block mechanism.
        p_s: the probability that an unprotected code is replaced (shown in the texts).
        gamma, max_path_length, alpha, b_max: ClinSimRR's parameters, for the texts.
    """

    #: computed from the auxiliary split (never published) and the sensitive codes: the model's
    #: does_not_guarantee names them a non-private statistic of the auxiliary patients
    input_dependence = dict.fromkeys(
        ("protected.**", "codes.tree.leaves", "dependence_graph.nodes",
         "split.auxiliary_patients", "method.model.parameters.p_s",
         "method.model.parameters.protected_codes", "method.model.parameters.block_size"),
        "a statistic of the auxiliary patients (not published) and the sensitive codes: the "
        "protected set Y_P, its blocks, p_T and p_S, the code tree's and the dependence graph's "
        "sizes and the auxiliary split's size; declared non-private by the model")

    name = ULDP_MODEL

    def __init__(self, *, method: str, epsilon: object, protected: int, sensitive: int,
                 block_size: int = 1, p_s: float = 0.0, gamma: object = None,
                 max_path_length: object = None, alpha: object = None, b_max: object = None):
        from ..accounting import to_exact

        allowed = _LDP_METHODS if self.name == LDP_MODEL else _ULDP_METHODS
        if method not in allowed:
            raise ValidationError(f"The 'method' parameter of {type(self).__name__} must be one of "
                                  f"{', '.join(allowed)}; got {method!r}.")
        self.method = method
        self.epsilon = to_exact(epsilon, name="epsilon", owner=type(self).__name__)
        # ε as the method states it ("1/2" stays "1/2"), so the texts quote the parameter
        self._eps = epsilon.strip() if isinstance(epsilon, str) else _fmt(self.epsilon)
        self.protected = check_int(protected, name="protected", owner=type(self).__name__,
                                   minimum=1)
        self.sensitive = check_int(sensitive, name="sensitive", owner=type(self).__name__,
                                   minimum=1)
        self.block_size = check_int(block_size, name="block_size", owner=type(self).__name__,
                                    minimum=1)
        self.p_s = float(p_s)
        self.gamma, self.max_path_length, self.alpha, self.b_max = gamma, max_path_length, alpha, b_max

    @property
    def attacks(self) -> tuple[str, ...]:
        return ("inference of a protected code from its released element",)

    def parameters(self) -> dict[str, object]:
        return {"method": self.method, "epsilon": self._eps,
                "protected_codes": self.protected, "sensitive_codes": self.sensitive,
                "block_size": self.block_size, "p_s": self.p_s, "gamma": self.gamma,
                "max_path_length": self.max_path_length, "alpha": self.alpha, "b_max": self.b_max}

    @property
    def guarantees(self) -> tuple[str, ...]:
        """The guarantee, one statement per item."""
        eps = self._eps
        if self.method == "rr":
            return (f"local differential privacy with epsilon = {eps} among the {self.sensitive} "
                    "sensitive codes, per released element (each sensitive code is reported "
                    "through |X_S|-ary randomized response)",)
        which = ("the sensitive set X_S" if self.method == "umaxrr"
                 else "the sensitive set extended by ClinSimRR's leakage and blocking steps")
        return (f"(Y_P, epsilon = {eps})-utility-optimized local differential privacy for each "
                f"released diagnosis element, given the published protected set Y_P "
                f"({self.protected} codes: {which}) and its blocks (block size b = "
                f"{self.block_size}): for any two true codes x, x' and every released code y in "
                f"Y_P, Pr[M(x) = y] <= e^{eps} * Pr[M(x') = y]; a true code in Y_P is always "
                f"released inside Y_P",
                f"Y_P and the blocks depend on no released patient: {self._provenance()}")

    def _provenance(self) -> str:
        if self.method == "umaxrr":
            return ("Y_P = X_S is the operator's sensitive set, resolved on the code tree, which is "
                    "extended with codes of the auxiliary split only")
        return (f"they are computed from the dependence graph of the auxiliary split (leakage bound "
                f"gamma = {self.gamma}, paths up to L = {self.max_path_length}), the code tree "
                f"(extended with codes of the auxiliary split only; alpha = {self.alpha} in Eq. 4) "
                f"and the operator's sensitive codes")

    @property
    def non_guarantees(self) -> tuple[str, ...]:
        """What does not hold, one statement per item."""
        eps = self._eps
        out: list[str] = []
        if self.method in ("clinsimrr", "umaxrr-yp"):
            out.append(f"Y_P, the blocks, p_T and p_S are a non-private statistic of the auxiliary "
                       f"patients: they are chosen without noise from the dependence graph learned "
                       f"on the auxiliary split (gamma = {self.gamma}, L = {self.max_path_length}) "
                       f"and the adaptive-blocking search (b_max = {self.b_max}), so one auxiliary "
                       f"patient more or less can change them; they are published as such, and "
                       f"epsilon = {eps} holds per released element given them, not for the "
                       f"auxiliary patients")
        elif self.method == "umaxrr":
            out.append(f"Y_P = X_S is published as is (not randomized); epsilon = {eps} holds per "
                       f"released element given it")
        if self.method in ("umaxrr", "rr"):
            out.append(suppression_non_guarantees()[0])
        kept = (f"with probability 1 - p_S = {1.0 - self.p_s:.4g} each" if self.p_s > 0
                else "always")
        out.append(f"codes outside the protected set are published truthfully ({kept}): a "
                   "released code outside Y_P is the true code")
        out.append(f"a record's elements are reported independently: j elements of one record "
                   f"in the protected set compose to j * {eps}")
        if self.method == "clinsimrr":
            out.append(f"the dependence step bounds the leakage (gamma = {self.gamma}) estimated on "
                       "the auxiliary data's graph only; an adversary knowing stronger "
                       "dependences may still infer sensitive codes")
        if self.method == "umaxrr-yp":
            out.append("the codes added for blocking were chosen for ClinSimRR's blocks; with b = 1 "
                       "they only raise p_S (this method is the like-for-like baseline of ClinSimRR)")
        if self.method in ("umaxrr", "rr"):
            out.append("no protection against inference from correlated non-sensitive codes")
        if self.method == "rr":
            out.append("an output in the sensitive set reveals that the input was sensitive")
        return tuple(out)

    @property
    def guarantee(self) -> str:
        return "; ".join(self.guarantees) + "."

    @property
    def does_not_guarantee(self) -> str:
        return "; ".join(self.non_guarantees) + "."

    @classmethod
    def from_manifest(cls, manifest: Mapping, label: str) -> "LocalDPModel":
        params = manifest_field(manifest, "method.model.parameters", label)
        if not isinstance(params, Mapping):
            raise InputFormatError(f"The manifest of {label} must give the model's parameters in "
                                   f"'method.model.parameters'; got {params!r}.")
        try:
            return cls(method=str(params.get("method")),
                       epsilon=str(manifest_field(manifest, "method.model.parameters.epsilon",
                                                  label)),
                       protected=manifest_int(manifest, "method.model.parameters.protected_codes",
                                              label),
                       sensitive=manifest_int(manifest, "method.model.parameters.sensitive_codes",
                                              label),
                       block_size=manifest_int(manifest, "method.model.parameters.block_size",
                                               label),
                       p_s=float(params.get("p_s") or 0.0), gamma=params.get("gamma"),
                       max_path_length=params.get("max_path_length"), alpha=params.get("alpha"),
                       b_max=params.get("b_max"))
        except ValidationError as exc:
            raise InputFormatError(f"The manifest of {label}: {exc}") from None

    def checked_text(self) -> str:
        return (f"epsilon={_fmt(self.epsilon)} per element and |Y_P|={self.protected} declared "
                f"(the randomization itself cannot be checked on the output)")


@register
class PlainLDPModel(LocalDPModel):
    """ε-LDP among the sensitive codes (plain randomized response, 003's RR baseline)."""

    name = LDP_MODEL
