"""The comparison grids of the five papers, as lists of :class:`Setting`.

A setting is one method with one set of parameters; an experiment runs every setting on every
period (periodic data) and repeats it ``runs`` times. Each (setting, period, run) is one task.

Parameter values follow the papers where they state them (``docs/results.md`` lists the sources):

* ``jmir2021`` (001): MS, PPMS, PPMS+, PPMS++; k ∈ {5, 10}; θ* uniform 0.2 / 0.4,
  frequency-based (0.2 / 0.6 / 1) and level-wise (0.2 / 0.4 / 1).
* ``plos2021`` (002): PPMS+ against HA. 002's baseline PPMS_EAR covers each old case against
  its earliest release, which is PPMS+ (002 builds HA's grouping from PPMS_EAR with three
  changes). θ ∈ {0.2, 0.4} and α = 0.25, 002's own settings (002 shows θ = 0.2 and α = 1/4 in
  its example; it does not state k); k ∈ {5, 10}. HA runs twice: as 002 states it, a case that
  fits no group withheld (``on_unplaceable=withhold``, as PPMS+), and as medanon publishes by
  default, such a case kept with the terms that block it suppressed
  (``on_unplaceable=suppress-terms``). Every release is measured after the MD-attack as well.
* ``ppms-dp`` (000): PPMS++ against PPMS-DP_num and PPMS-DP_all, each in its strict variant
  (ε-DP per case) and in 000's own (``variant=paper``: local sensitivity, not ε-DP end to end);
  k ∈ {5, 10}; θ* ∈ {0.2, 0.4}; ε ∈ {0.1, 1, 10}.

Every periodic method runs with ``on_infeasible="raise-theta"`` (a term θ cannot bound is given
the smallest feasible θ; a case no group can take is withheld, or for HA with term suppression
kept): the result rows record every such change (``docs/experiments.md``) and the summary marks
the settings it changed.
* ``ipa`` (004): IPA, optimal full-domain k-anonymity and an ε-DP histogram; k = 10; ε ∈
  {0.1, 1, 10}. IPA runs with the paper's node selection and with medanon's (``selection``
  ``utility``: the node scored on the true data with its real sensitivity, ``ipa.md``).
* ``clinsimrr`` (003): ClinSimRR, UMAXRR, RR and suppression; ε ∈ {0.1, 1, 2.5, 5}; γ ∈
  {0.01, 0.05, 0.1} (ClinSimRR only). Beside UMAXRR on the sensitive set (003's baseline),
  ``umaxrr-yp`` is UMAXRR on the protected set ClinSimRR chooses for the same ε and γ, so that
  ClinSimRR's blocks are compared with uRR on the very same Y_P.

``quick=True`` keeps one or two values per axis: the smoke grid that CI runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from ..errors import ValidationError

__all__ = ["EXPERIMENTS", "Setting", "grid"]

#: One parameter value of a grid: a number (k, θ, α, ε, γ) or a name (a θ rule, a variant, ...)
ParamValue = int | float | str

#: experiment name -> (paper, kind of data)
EXPERIMENTS = {
    "jmir2021": ("001 PPMS(k, θ*)-bounding (JMIR 2021)", "faers"),
    "plos2021": ("002 PPMS(k, θ, α)-bounding, HA (PLOS ONE 2021)", "faers"),
    "ppms-dp": ("000 PPMS-DP(k, θ*, ε)", "faers"),
    "ipa": ("004 IPA (BMC 2020)", "table"),
    "clinsimrr": ("003 ClinSimRR (CIKM 2023)", "ehr"),
}


@dataclass(frozen=True)
class Setting:
    """One method with one set of parameters.

    Attributes:
        method: The method's name (as the CLI spells it).
        params: Parameter name -> value (``theta`` may be ``"level-wise"``).
    """

    method: str
    params: tuple[tuple[str, ParamValue], ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, method: str, **params: ParamValue) -> "Setting":
        return cls(method, tuple(sorted(params.items())))

    @property
    def kwargs(self) -> dict[str, ParamValue]:
        return dict(self.params)

    # One parameter by the type :func:`grid` gives it, or None when the setting has none; the
    # asserts hold for every grid (they state its types, they check no user input).
    def integer(self, name: str) -> int | None:
        value = self.kwargs.get(name)
        assert value is None or isinstance(value, int), (self.label, name)
        return value

    def number(self, name: str) -> float | None:
        value = self.kwargs.get(name)
        assert value is None or isinstance(value, (int, float)), (self.label, name)
        return value

    def text(self, name: str) -> str | None:
        value = self.kwargs.get(name)
        assert value is None or isinstance(value, str), (self.label, name)
        return value

    @property
    def label(self) -> str:
        """Human-readable and unique within a grid, e.g. ``ppms++ k=5 theta=0.2``."""
        return " ".join([self.method, *(f"{k}={v}" for k, v in self.params)])

    @property
    def key(self) -> str:
        """A token safe in file names and Dask keys."""
        text = "_".join([self.method, *(f"{k}{v}" for k, v in self.params)])
        return "".join(c if c.isalnum() or c in "._+-" else "-" for c in text)


def grid(experiment: str, *, quick: bool = False) -> list[Setting]:
    """The settings of an experiment (see the module docstring)."""
    if experiment not in EXPERIMENTS:
        raise ValidationError(f"Unknown experiment {experiment!r}; available: "
                              f"{', '.join(EXPERIMENTS)}.")
    if experiment == "jmir2021":
        ks = (5,) if quick else (5, 10)
        # θ: a number, or the name of a rule; each experiment's own grid of values
        thetas: tuple[float | str, ...] = ((0.4, "frequency") if quick
                                           else (0.2, 0.4, "frequency", "level-wise"))
        methods = ("ms", "ppms++") if quick else ("ms", "ppms", "ppms+", "ppms++")
        return [Setting.of(m, k=k, theta=t) for m, k, t in product(methods, ks, thetas)]
    if experiment == "plos2021":
        ks = (5,) if quick else (5, 10)
        alphas = (0.25,)
        thetas = (0.4,) if quick else (0.2, 0.4)
        return ([Setting.of("ppms+", k=k, theta=t) for k, t in product(ks, thetas)]
                + [Setting.of("ha", k=k, theta=t, alpha=a, on_unplaceable=u)
                   for k, t, a, u in product(ks, thetas, alphas, ("withhold", "suppress-terms"))])
    if experiment == "ppms-dp":
        ks = (5,) if quick else (5, 10)
        thetas = (0.4,) if quick else (0.2, 0.4)
        epsilons: tuple[float, ...] = (1.0,) if quick else (0.1, 1.0, 10.0)
        return ([Setting.of("ppms++", k=k, theta=t) for k, t in product(ks, thetas)]
                + [Setting.of(m, k=k, theta=t, epsilon=e, variant=v)
                   for m, v, k, t, e in product(("ppms-dp-num", "ppms-dp-all"),
                                                ("strict", "paper"), ks, thetas, epsilons)])
    if experiment == "ipa":
        epsilons = (1.0,) if quick else (0.1, 1.0, 10.0)
        return ([Setting.of("ipa", epsilon=e, selection=s)
                 for e, s in product(epsilons, ("paper", "utility"))] + [Setting.of("kanon", k=10)]
                + [Setting.of("dphist", epsilon=e) for e in epsilons])
    epsilons = (1.0,) if quick else (0.1, 1.0, 2.5, 5.0)
    gammas = (0.05,) if quick else (0.01, 0.05, 0.1)
    return ([Setting.of(m, epsilon=e, gamma=g)
             for m, e, g in product(("clinsimrr", "umaxrr-yp"), epsilons, gammas)]
            + [Setting.of(m, epsilon=e) for m, e in product(("umaxrr", "rr"), epsilons)]
            + [Setting.of("suppression")])
