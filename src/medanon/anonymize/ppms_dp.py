"""PPMS-DP_num and PPMS-DP_all: PPMS(k, θ*)-bounding fused with differential-privacy noise.

Reference: Wu, Shen, Lin, "PPMS-DP" (paper 000): §IV.B (PPMS-DP_num, Fig. 2: NCC-Grouping,
QID^C-Covering, QID^C-Gen&Merging, LaplacePerturbation), §IV.C (PPMS-DP_all, Fig. 5:
VirtualGen&Merging, ExponentialPerturbation with ψ, IL_c, q and Δq, Example 2), with the
formulas recovered in ``algorithms.md`` §5.2 (local sensitivity), §5.3 (Soria-Comas et al.),
§5.6 (exponential perturbation checked against Example 2) and §5.8 (pipeline).

The syntactic part (both variants): NCC-Grouping is PPMS++'s grouping (groups seeded and grown
from new cases only, >= k new cases per group, η_s = floor(θ_s·|NC(g)|)); merging two groups
adds their new cases and their σ_s, so every merged group still meets k and θ*. The verify gate
checks that part on the published rows (``PPMS-DP(k, theta*, epsilon)``): B/F/L over the QIDs
that are **not** perturbed; a perturbed value is treated as carrying no exact information.

Two variants (``variant=``), and what their ε means — read this before publishing:

``paper`` (000 as written)
    Numeric QIDs: per group g, Laplace noise of scale Δf_g/ε with Δf_g = max − min of the
    attribute within g (local sensitivity, ``algorithms.md`` §5.2), for every record.
    Categorical QIDs (PPMS-DP_all): one value per group and attribute drawn by the exponential
    mechanism over ψ(C, g) (``dom`` plus its ancestors in the minimal covering subtree T^c) with
    quality q(v) = Σ_{u∈ψ} IL_c(u, v) (the sum over ψ reproduces Example 2's q(Child) = 1.5; the
    printed formula sums over dom) and Δq = max − min of IL_c over dom × ψ as defined in the
    text. **Not ε-DP end to end:** the noise scale, ψ and Δq depend on the data (a group whose
    records share a weight gets no noise at all), and the grouping sees the raw values. ε is a
    noise-scale knob; the ledger records the nominal ε of each draw a case received (a group
    whose categorical values coincide publishes them without a draw, a withheld case gets none).

``strict`` (beyond the paper; the default)
    Every perturbed QID is privatized per case **before** grouping, from that case's own value
    only: numeric values clipped to the attribute's public domain [lo, hi] and given Laplace
    noise of scale (hi − lo)/ε (then clipped again: post-processing); categorical values
    (PPMS-DP_all) replaced by an exponential-mechanism draw over every node of the public
    hierarchy with quality −IL(u, v) (φ over the whole tree, IL ∈ [0, 1], so Δq = 1). Grouping,
    merging and generalization then only read privatized values and attributes published in the
    clear, so they are post-processing. Claim: for two inputs that differ in the perturbed QID
    values of one case, the release's distribution differs by at most e^{ε_case} with
    ε_case = ε × (number of perturbed QIDs) (sequential composition over the attributes). It
    says nothing about attributes published in the clear (sensitive terms, drugs) or about
    categorical QIDs that PPMS-DP_num only generalizes. Each release spends ε_case again for
    every case it holds; the store's ledger sums that per case across releases.

Accounting: every mechanism reports its loss to the run's accountant (units: the cases' positions
in the super records) before it draws; the ledger and ``privacy_spent`` are written from those
reports, and :meth:`planned_losses` is only the budget pre-check (``pipeline.publish`` raises
InternalError when the two differ).

ε is given **per perturbed attribute**, as in 000 (which applies the same ε to each).

``dp_aware_grouping`` (beyond the paper; issue 17). k and θ* hold for an adversary who only
excludes for sure; one who weights candidates by the likelihood of their noisy values can see a
posterior above 1/k. With ``dp_aware_grouping=True`` the grouping meets k' = ``inflated_k(k, ε)``
anchors per group and θ' = ``inflated_theta(θ, ε)`` per term (:mod:`medanon.models.dp_bound`,
bounds (1)-(2)), so that the combined bound holds: no candidate's posterior above 1/k, no
term's posterior share above θ. The release still declares k and θ (and
``dp_aware_grouping: true``, which makes the gate enforce the bound). ε is
``dp_aware_epsilon`` when given — the most a case may spend over the whole series, e.g. the
store's ``--case-budget``, which makes the bound hold across releases — else this release's
ε_case: a bound *per release*, which a later release holding the same cases can exceed (the
gate then refuses that release). A θ raised for feasibility (``raise-theta``) is raised in the
grouping and declared as the θ that inflates to it.

``label_confidence`` and ``label_mechanism`` (beyond the paper; issue 22). The strict
exponential perturbation of a categorical QID is close to uniform over the hierarchy at small ε
(76% of MeSH age labels contradict the truth at ε = 1), so a stratified signal analysis reads
one stratum's reports in another and finds the majority stratum's signals in the minority one
(docs/algorithms/ppms-dp.md, "Stratified signals"). With ``label_confidence=c`` each perturbed
categorical QID is published at the finest level of its hierarchy at which the published label
is consistent with the true value (itself, an ancestor or a descendant) with probability >= c
for every true value (:func:`label_level`, :mod:`medanon.mechanisms.coarsening`): a function of
ε, the hierarchy, the mechanism and c only.

* ``label_mechanism="exponential"`` (default, 000's draw): the drawn label is cut to its
  ancestor at that level, after the grouping. Post-processing: the release is the unremedied
  one with those labels replaced by their ancestors, and its ε is unchanged.
* ``label_mechanism="randomized-response"``: the label is drawn, before grouping, by k-ary
  randomized response over the root and the level's labels (a data-independent output domain;
  ε-DP per case as well; a missing value mostly stays missing). It spends ε on the labels
  published, so it reaches a finer level at the same ε (MeSH age at ε = 5, c = 0.99:
  Nonadult/Adult instead of the root). Without a confidence it draws over the leaves.

``details.label_levels`` records the levels (the attacks read the published labels'
likelihoods from them and ``privacy_spent.mechanisms``), ``details.label_consistency`` the
worst-case probability each level achieves.

What is published and what is not: facts that are deterministic functions of the private
values and that no mechanism accounts for go to ``AnonymizationResult.private_details`` (the
store keeps them operator-only): ``clipped_to_domain`` (strict; how many true values fell
outside the public domain, with ``domain_checked_values``, how many were checked) and
``smallest_laplace_scale`` (paper; (max − min)/ε of a group's raw
values). The paper variant publishes ``details.exact_groups``: per numeric QID, the groups (labels
as published) whose Laplace scale is below half the last published digit (``EXACT_SCALE``), whose
values are therefore published exact; a verifier must count them as exact. The variant's ledger
rows carry ``dp = False`` (:attr:`claims_dp`).

Deviations from 000 (docs/algorithms/ppms-dp.md): the numeric QIDs of old cases are not
covered (they are perturbed; covering would only widen them); a missing numeric value is
perturbed from the middle of its range; noisy numbers are published rounded to 0.01
(post-processing); noise is drawn by the floating-point-safe samplers of
:mod:`medanon.mechanisms`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..accounting import (Accountant, PrivacyLoss, check_epsilon_floor, format_epsilon,
                          to_exact)
from ..data.records import SuperRecords
from ..errors import InfeasibleError, SchemaError, ValidationError
from ..hierarchies import Taxonomy
from ..mechanisms import ExponentialMechanism, LaplaceMechanism, NoiseSource, RandomizedResponse
from ..mechanisms.coarsening import (LABEL_MECHANISMS, ancestor_at_level, check_confidence,
                                     finest_level, label_consistency, published_log_table,
                                     rr_domain)
from ..models.dp_bound import inflated_k, inflated_theta
from ..models.names import PPMS_DP_MODEL
from ..models.theta import ThetaSpec, ThetaTable
from ..random import Randomness
from .clustering import QidSpace
from .common import (OPERATOR_ONLY, ClusteringMethod, TermSuppression, add_published_columns,
                     case_columns, group_lub)

VARIANTS = ("strict", "paper")
#: what an ε below :data:`~medanon.accounting.EPSILON_FLOOR` (0.01) per perturbed QID does to a
#: PPMS-DP release: any two true values give output distributions within a factor e^ε < 1.01;
#: strict Laplace noise, of scale at least 100 domain widths, lands inside the public domain with
#: probability at most 1 - e^(-ε/2) < 0.5%, so more than 99.5% of the published numbers are a
#: domain bound (at ε = 1e-300 every one is), and the exponential mechanism's label is within 1%
#: of uniform over the hierarchy. The gate still passes such a release, which looks like data and
#: carries none; an ε that small (10 times below the smallest of paper 000's grid, 0.1) is more
#: often a slip (1e-3 for 1e3, a budget split too thin) than a choice.
TINY_EPSILON = ("the noise swamps the domain: more than 99.5% of the perturbed numbers are "
                "published as a bound of the public domain and the labels are all but uniform, "
                "so the release looks like data and carries none (the verify gate still passes "
                "it).")
#: published noisy numbers are rounded to this many decimals (post-processing).
DECIMALS = 2
#: a Laplace scale below half the last published digit leaves the rounded value (nearly
#: always) exact: the paper variant names the groups that got one (``details.exact_groups``).
EXACT_SCALE = 0.5 * 10.0 ** -DECIMALS


# ------------------------------------------------------------------------ exponential (§5.6)
@dataclass(frozen=True)
class PerturbationCandidates:
    """000's exponential perturbation of one categorical attribute in one group (§IV.C).

    Attributes:
        candidates: ψ(C, g) as taxonomy codes (dom and its ancestors within T^c), sorted.
        labels: the same as labels.
        il: IL_c(u, v) for u, v in ψ (rows u, columns v), φ_c taken within T^c.
        quality: q(v, ψ) per candidate v.
        delta_q: Δq = max − min of IL_c over u ∈ dom, v ∈ ψ (000's definition).
    """

    candidates: tuple[int, ...]
    labels: tuple[str, ...]
    il: np.ndarray
    quality: np.ndarray
    delta_q: float


def perturbation_candidates(taxonomy: Taxonomy, values: Sequence[str], *,
                            quality_over: str = "psi") -> PerturbationCandidates:
    """ψ, IL_c, q and Δq for the labels of one group (000 §IV.C, ``algorithms.md`` §5.6).

    Args:
        taxonomy: The attribute's hierarchy T.
        values: The group's values (dom(C, g) is their set).
        quality_over: ``"psi"`` sums q over ψ (reproduces Example 2), ``"dom"`` over dom
            (000's printed formula).
    """
    quality_over = check_choice(quality_over, name="quality_over",
                                owner="perturbation_candidates", choices=("psi", "dom"))
    dom = sorted(set(taxonomy.encode(list(values)).tolist()))
    if not dom:
        raise ValidationError("The 'values' parameter of perturbation_candidates must hold at "
                              "least one label.")
    parent = taxonomy.parent_array
    depth = taxonomy.depth_array
    top = taxonomy.lca_codes(dom)  # the root of T^c
    psi = set()
    for v in dom:
        node = v
        while True:
            psi.add(node)
            if node == top:
                break
            node = int(parent[node])
    cands = sorted(psi)
    size = np.array([depth[v] - depth[top] + 1 for v in cands], dtype=float)  # |φ_c(v)|
    il = np.zeros((len(cands), len(cands)))
    for i, u in enumerate(cands):
        for j, v in enumerate(cands):
            common = depth[taxonomy.lca_codes([u, v])] - depth[top] + 1  # |φ_c(u) ∩ φ_c(v)|
            union = size[i] + size[j] - common
            il[i, j] = (union - common) / union
    rows = [cands.index(u) for u in dom]
    over = il[rows] if quality_over == "dom" else il
    quality = over.sum(axis=0)
    pairs = il[rows]
    return PerturbationCandidates(tuple(cands), tuple(taxonomy.decode(cands)), il, quality,
                                  float(pairs.max() - pairs.min()))


def full_tree_il(taxonomy: Taxonomy) -> np.ndarray:
    """IL(u, v) over all nodes of T with φ over the whole tree (000's IL+ term), codes × codes."""
    depth = taxonomy.depth_array.astype(float)
    n = len(depth)
    il = np.zeros((n, n))
    for u in range(n):
        for v in range(n):
            common = depth[taxonomy.lca_codes([u, v])] + 1
            union = depth[u] + 1 + depth[v] + 1 - common
            il[u, v] = (union - common) / union
    return il


# ------------------------------------------------------------------------------- the methods
class _PPMSDP(ClusteringMethod):
    """Shared pipeline of PPMS-DP_num and PPMS-DP_all (see the module docstring).

    Args:
        k, theta, lifespan, on_infeasible, protect: as for PPMS++.
        epsilon: ε per perturbed attribute (> 0).
        variant: ``"strict"`` (default, ε-DP per case end to end) or ``"paper"`` (000 as
            written, local sensitivity: not ε-DP end to end).
        domains: public domain ``{name: (lo, hi)}`` of numeric QIDs for the strict variant
            (overrides the schema's ``domain``).
        dp_aware_grouping: grow groups to k' and θ' so that the combined posterior bound holds
            (strict variant only; see the module docstring).
        dp_aware_epsilon: the per-case ε the dp-aware grouping designs for (default: this
            release's ε_case).
        allow_tiny_epsilon: accept an ``epsilon`` below
            :data:`~medanon.accounting.EPSILON_FLOOR` (:data:`TINY_EPSILON`; recorded in
            each manifest's ``method.acknowledged``).
        label_confidence: PPMS-DP_all, strict variant: publish each perturbed categorical QID
            at the finest level of its hierarchy at which the published label is consistent
            with the true value (the value, an ancestor or a descendant) with at least this
            probability, for every true value (:func:`label_level`). None: the labels as drawn.
        label_mechanism: PPMS-DP_all, strict variant: ``"exponential"`` (000's draw over the
            whole hierarchy, cut to the level by post-processing) or ``"randomized-response"``
            (k-ary randomized response over the level's labels; the leaves without a
            confidence).
    """

    privacy_model = PPMS_DP_MODEL
    cover = "earliest"
    new_cases_first = True
    #: No second grouping without the withheld cases (``ClusteringMethod.anonymize``): the
    #: mechanisms ran on every case and charged it; a second run would spend ε again. A
    #: withheld case reaches the grouping through its perturbed values, which ε covers.
    regroup_without_withheld = False
    # The mechanisms perturb encoded values over the hierarchy and the public domain, where a
    # missing value is the root (the whole domain); it is not a value of its own here.
    missing_as_value = False
    #: whether categorical QIDs are perturbed (PPMS-DP_all) or generalized (PPMS-DP_num).
    perturb_categorical: ClassVar[bool] = False

    def __init__(self, *, k: int, theta: float | str | ThetaSpec, epsilon: object,
                 variant: str = "strict", lifespan: int | None = None,
                 on_infeasible: str = "refuse",
                 domains: Mapping[str, tuple[float, float]] | None = None,
                 dp_aware_grouping: bool = False, dp_aware_epsilon: object = None,
                 label_confidence: float | None = None, label_mechanism: str = "exponential",
                 protect: Mapping[str, float] | Sequence[str] | None = None,
                 max_withheld: float | None = None, allow_tiny_epsilon: bool = False,
                 grouping: str | None = None):
        super().__init__(k=k, theta=theta, lifespan=lifespan, on_infeasible=on_infeasible,
                         protect=protect, max_withheld=max_withheld, grouping=grouping)
        owner = type(self).__name__
        self.epsilon = to_exact(epsilon, name="epsilon", owner=owner)
        #: the acknowledgements given to the method itself (``method.acknowledged``)
        self.acknowledged: tuple[str, ...] = check_epsilon_floor(
            self.epsilon, owner=owner, allow_tiny_epsilon=allow_tiny_epsilon,
            what="per perturbed QID", consequence=TINY_EPSILON)
        self.variant = check_choice(variant, name="variant", owner=owner, choices=VARIANTS)
        if not isinstance(dp_aware_grouping, bool):
            raise ValidationError(f"The 'dp_aware_grouping' parameter of {owner} must be True or "
                                  f"False; got {dp_aware_grouping!r}.")
        if dp_aware_grouping and self.variant != "strict":
            raise ValidationError(f"The 'dp_aware_grouping' parameter of {owner} needs the strict "
                                  f"variant: the paper variant is not epsilon-DP, so no posterior "
                                  f"bound holds for it.")
        if dp_aware_epsilon is not None and not dp_aware_grouping:
            raise ValidationError(f"The 'dp_aware_epsilon' parameter of {owner} applies only with "
                                  f"dp_aware_grouping=True.")
        self.dp_aware_grouping = dp_aware_grouping
        self.dp_aware_epsilon = (None if dp_aware_epsilon is None else
                                 to_exact(dp_aware_epsilon, name="dp_aware_epsilon", owner=owner))
        label_mechanism = check_choice(label_mechanism, name="label_mechanism", owner=owner,
                                       choices=LABEL_MECHANISMS)
        if label_confidence is not None:
            label_confidence = check_confidence(label_confidence, owner=owner,
                                                name="label_confidence")
        for name, given in (("label_confidence", label_confidence is not None),
                            ("label_mechanism", label_mechanism != "exponential")):
            if given and not self.perturb_categorical:
                raise ValidationError(
                    f"The '{name}' parameter of {owner} applies to perturbed categorical QIDs, "
                    f"which only ppms-dp-all perturbs: {self.name} publishes them generalized "
                    f"(an ancestor of the true value, never a contradicting one).")
            if given and self.variant != "strict":
                raise ValidationError(
                    f"The '{name}' parameter of {owner} needs the strict variant: the paper "
                    f"variant draws over each group's own candidates, so the probability of a "
                    f"consistent label depends on the data and no level can be chosen from "
                    f"epsilon and the hierarchy alone.")
        self.label_confidence = label_confidence
        self.label_mechanism = label_mechanism
        self.domains = {}
        for name, bounds in (domains or {}).items():
            try:
                lo, hi = (float(b) for b in bounds)
            except (TypeError, ValueError):
                lo = hi = float("nan")
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValidationError(f"The 'domains' parameter of {owner} must map each numeric "
                                      f"QID to finite bounds (lo, hi) with lo < hi; got "
                                      f"{name!r}: {bounds!r}.")
            self.domains[str(name)] = (lo, hi)

    def check_schema(self, schema) -> None:
        """A public domain must name a numeric QID of ``schema``: bounds given for a
        categorical QID (``--domain age=0:120`` where age is a MeSH band) or for a column
        that is no QID would otherwise be ignored without a word.

        Raises:
            ValidationError: naming the 'domains' parameter, the QID and its kind.
        """
        owner = type(self).__name__
        qids = {q.name: q for q in schema.qids}
        numeric = ", ".join(q.name for q in schema.qids if q.kind == "numeric") or "none"
        for name in self.domains:
            qid = qids.get(name)
            if qid is None:
                raise ValidationError(
                    f"The 'domains' parameter of {owner} names {name!r}, which is not a QID of "
                    f"schema {schema.name!r} (its numeric QIDs: {numeric}).")
            if qid.kind != "numeric":
                raise ValidationError(
                    f"The 'domains' parameter of {owner} gives bounds for {name!r}, a "
                    f"categorical QID (hierarchy {qid.hierarchy!r}): a public domain bounds the "
                    f"values of a numeric QID, which the noise is scaled to; a categorical QID "
                    f"takes the labels of its hierarchy. Numeric QIDs of schema "
                    f"{schema.name!r}: {numeric}.")

    @property
    def cover_kinds(self) -> tuple[str, ...]:  # type: ignore[override]
        return () if self.perturb_categorical else ("categorical",)

    def parameters(self) -> dict[str, object]:
        return {**super().parameters(), "epsilon": format_epsilon(self.epsilon),
                "epsilon_applies_to": "each perturbed QID", "variant": self.variant,
                "domains": {n: list(b) for n, b in sorted(self.domains.items())} or None,
                "dp_aware_grouping": self.dp_aware_grouping,
                "dp_aware_epsilon": (None if self.dp_aware_epsilon is None
                                     else format_epsilon(self.dp_aware_epsilon)),
                "label_confidence": self.label_confidence,
                "label_mechanism": self.label_mechanism}

    @property
    def claims_dp(self) -> bool:
        # the paper variant's ε is a noise-scale knob (local sensitivity), not a DP bound
        return self.variant == "strict"

    # ----------------------------------------------------------------------- hooks
    def _qids_perturbed(self, schema) -> tuple[tuple[str, str], ...]:
        return tuple((q.name, q.kind) for q in schema.qids
                     if q.kind == "numeric" or self.perturb_categorical)

    def _domain(self, data: SuperRecords, name: str) -> tuple[float, float]:
        if name in self.domains:
            return self.domains[name]
        spec = next(q for q in data.schema.qids if q.name == name)
        if spec.domain is None:
            raise SchemaError(f"The strict variant of {self.name} needs the public domain of "
                              f"numeric QID {name!r}: declare 'domain = [lo, hi]' for it in the "
                              f"schema, or pass --domain {name}=LO:HI (bounds known without "
                              f"looking at the data).")
        return spec.domain

    def label_level(self, taxonomy: Taxonomy) -> tuple[int | None, float | None]:
        """The level a perturbed categorical QID with hierarchy ``taxonomy`` is published at,
        and the worst-case probability that its label is consistent with the truth there
        (None, None: 000's draw published as it is). See :func:`label_level`."""
        if self.label_confidence is None and self.label_mechanism == "exponential":
            return None, None
        return label_level(taxonomy, self.epsilon, self.label_confidence,
                           mechanism=self.label_mechanism)

    def _design_epsilon(self, schema) -> Fraction:
        """The per-case ε the dp-aware grouping designs for."""
        if self.dp_aware_epsilon is not None:
            return self.dp_aware_epsilon
        return self.epsilon * len(self._qids_perturbed(schema))

    def grouping_thresholds(self, table: ThetaTable, schema) -> tuple[int, ThetaTable, str]:
        if not self.dp_aware_grouping:
            return super().grouping_thresholds(table, schema)
        eps = self._design_epsilon(schema)
        shown = format_epsilon(eps)
        try:
            k_group = inflated_k(self.k, float(eps))
            grouping = ThetaTable(inflated_theta(table.default, float(eps)),
                                  {t: inflated_theta(v, float(eps))
                                   for t, v in table.overrides.items()})
        except ValidationError:  # e^{2ε} beyond any data set (or a θ' that underflows)
            raise InfeasibleError(
                f"dp-aware grouping at epsilon per case {shown} would need groups of "
                f"1 + (k-1)e^(2 epsilon) cases, beyond any data set; lower epsilon or drop "
                f"--dp-aware-grouping.") from None
        self._grouping_epsilon = eps  # for declared_theta, in the same anonymize() call
        note = (f" (dp-aware grouping: k = {self.k} grown to 1 + (k-1)e^(2 epsilon) for epsilon "
                f"per case {shown}, so that no candidate's posterior exceeds 1/k)")
        return k_group, grouping, note

    def declared_theta(self, raised: dict[str, float]) -> dict[str, float]:
        if not self.dp_aware_grouping:
            return raised
        # the θ that inflates to the raised grouping θ' (common.py puts it on the public grid)
        grow = math.exp(2.0 * float(self._grouping_epsilon))
        return {t: min(1.0, v * grow / (1.0 - v + v * grow)) for t, v in raised.items()}

    def grouping_theta(self, declared: dict[str, float]) -> dict[str, float]:
        if not self.dp_aware_grouping:
            return declared
        # θ' of a declared grid θ: a function of the grid point and the public ε only
        return {t: inflated_theta(v, float(self._grouping_epsilon)) for t, v in declared.items()}

    def before_grouping(self, data: SuperRecords, space: QidSpace, values: dict,
                        rng: Randomness, accountant: Accountant) -> dict:
        self.check_schema(data.schema)
        perturbed = self._qids_perturbed(data.schema)
        noise = NoiseSource(rng)   # the exact bits of rng; its generator only groups
        source = rng.describe()
        details: dict[str, object] = {"dp_variant": self.variant,
                                      "noise_source": {k: source[k] for k in
                                                       ("kind", "generator", "dp_noise")},
                                      "perturbed_qids": [n for n, _ in perturbed]}
        # Numeric QIDs become points: the middle of an interval or missing value's range.
        for j, a in enumerate(space.attributes):
            if a.numeric:
                mid = (values["lo"][j] + values["hi"][j]) / 2.0
                values["lo"][j][:] = mid
                values["hi"][j][:] = mid
        if self.variant != "strict":
            return details
        n = len(data.frame)
        clipped, checked = {}, {}
        for j, (qid, a) in enumerate(zip(data.schema.qids, space.attributes)):
            if a.taxonomy is None:  # numeric
                lo, hi = self._domain(data, qid.name)
                # A missing value becomes the domain's middle: the period's range (used by the
                # encoding) would make the case's output depend on the other cases.
                own_lo, own_hi = data.numeric_bounds(qid.name)
                missing = np.isnan(own_lo) | np.isnan(own_hi)
                x = np.where(missing, (lo + hi) / 2.0, values["lo"][j])
                x = np.clip(x, lo, hi)
                clipped[qid.name] = int((values["lo"][j][~missing] != x[~missing]).sum())
                checked[qid.name] = int((~missing).sum())
                mech = LaplaceMechanism(epsilon=self.epsilon, sensitivity=hi - lo)
                # one value per case, every case: each is charged epsilon once
                y = np.clip(mech.randomise(x, noise, accountant=accountant, target=qid.name),
                            lo, hi) if n else x
                values["lo"][j][:] = y
                values["hi"][j][:] = y
            elif self.perturb_categorical and self.label_mechanism == "randomized-response":
                codes = values["cat"][j]
                level, _ = self.label_level(a.taxonomy)
                assert level is not None  # only 000's exponential draw has no level
                codes[:] = _randomized_labels(a.taxonomy, codes, self.epsilon, level, noise,
                                              accountant=accountant, target=qid.name)
            elif self.perturb_categorical:
                tax = a.taxonomy
                selector = ExponentialMechanism(epsilon=self.epsilon, sensitivity=1.0)
                utility = -full_tree_il(tax)
                codes = values["cat"][j]
                codes[:] = [selector.select(utility[u], noise, accountant=accountant,
                                            target=qid.name, units=case)
                            for case, u in enumerate(codes.tolist())]
        # How many true values fell outside the public domain is a deterministic function of
        # the private values (one case's weight flips it) that no mechanism accounts for:
        # operator-only, kept in the store.
        # (With how many values were checked, so that the operator can be warned when the
        # domain clips a large share of them: ``medanon release`` says so on stderr.)
        details[OPERATOR_ONLY] = {"clipped_to_domain": clipped, "domain_checked_values": checked}
        details["domains"] = {name: list(self._domain(data, name)) for name, kind in perturbed
                              if kind == "numeric"}
        return details

    def build_table(self, data: SuperRecords, space: QidSpace, values: dict, group_of: np.ndarray,
                    suppressed_terms: TermSuppression, rng: Randomness,
                    accountant: Accountant) -> tuple[pd.DataFrame, int, dict]:
        schema = data.schema
        placed = np.flatnonzero(group_of >= 0)
        codes = {j: values["cat"][j][placed] for j, a in enumerate(space.attributes)
                 if not a.numeric}
        merged, n_before = _merge_by_lub(space, codes, group_of[placed])
        table = case_columns(data, placed, merged + 1)
        noise = NoiseSource(rng) if self.variant == "paper" else None
        smallest_scale = None
        exact_groups: dict[str, list[str]] = {}
        details: dict[str, object] = {}
        label_levels: dict[str, int] = {}
        label_consistency: dict[str, float] = {}
        for j, (qid, a) in enumerate(zip(schema.qids, space.attributes)):
            if a.taxonomy is None:  # numeric
                x = values["lo"][j][placed]
                if noise is not None:  # paper: Laplace with the group's local sensitivity
                    out = np.empty_like(x)
                    exact = exact_groups.setdefault(qid.name, [])
                    for g, rows in _groups_and_rows(merged):
                        sens = float(x[rows].max() - x[rows].min())
                        mech = LaplaceMechanism(epsilon=self.epsilon, sensitivity=sens)
                        out[rows] = mech.randomise(x[rows], noise, accountant=accountant,
                                                   target=qid.name, units=placed[rows])
                        smallest_scale = (mech.scale if smallest_scale is None
                                          else min(smallest_scale, mech.scale))
                        if mech.scale < EXACT_SCALE:
                            # labels as published (case_columns writes merged + 1)
                            exact.append(str(g + 1))
                    x = out
                table[qid.name] = np.round(x, DECIMALS)
            elif not self.perturb_categorical:  # PPMS-DP_num: generalize to the group's lub
                table[qid.name] = a.taxonomy.decode(group_lub(a.taxonomy, codes[j], merged))
            elif noise is not None:  # PPMS-DP_all, paper: one exponential draw per group
                table[qid.name] = _exponential_per_group(a.taxonomy, codes[j], merged,
                                                         self.epsilon, noise, accountant=accountant,
                                                         target=qid.name, cases=placed)
            else:  # PPMS-DP_all, strict: the privatized values ...
                tax = a.taxonomy
                level, worst = self.label_level(tax)
                if level is None:
                    table[qid.name] = tax.decode(codes[j])
                    continue
                # ... at the chosen level (post-processing: each label's own ancestor)
                up = ancestor_at_level(tax.parent_array, tax.depth_array, level)
                table[qid.name] = tax.decode(up[codes[j]])
                # public: functions of epsilon, the hierarchy, the mechanism and the confidence
                assert worst is not None  # a level comes with its worst-case probability
                label_levels[qid.name] = level
                label_consistency[qid.name] = round(worst, 6)
        if label_levels:  # (the keys in the order the loop used to add them)
            details["label_levels"] = label_levels
            details["label_consistency"] = label_consistency
        add_published_columns(table, data, placed, suppressed_terms)
        n_groups = int(merged.max()) + 1 if len(merged) else 0
        details.update({"groups_before_merging": n_before,
                        "groups_merged_away": n_before - n_groups})
        if self.variant == "paper":
            # Values of these groups are published (nearly always) exact: their spread gives it
            # away anyway, and a verifier must count them as exact, not as perturbed.
            details["exact_groups"] = exact_groups
        if smallest_scale is not None:
            # a function of the group's raw range (max - min): operator-only
            details[OPERATOR_ONLY] = {"smallest_laplace_scale": smallest_scale}
        if self.dp_aware_grouping:  # public parameters only: k' and the ε it is designed for
            eps = self._design_epsilon(schema)
            details["dp_aware_grouping"] = {"epsilon_per_case": format_epsilon(eps),
                                            "k_grouping": inflated_k(self.k, float(eps))}
        return table, n_groups, details

    def planned_losses(self, schema) -> tuple[PrivacyLoss, ...]:
        """ε per perturbed QID and case, by the mechanism that perturbs it (the budget
        pre-check; the ledger is written from what the mechanisms report). The strict variant
        charges every case exactly this (``pipeline.publish`` checks it); the paper variant
        charges a case only where a group's mechanism drew noise for it, never more."""
        labels = (RandomizedResponse.name if self.label_mechanism == "randomized-response"
                  else ExponentialMechanism.name)
        return tuple(PrivacyLoss(epsilon=self.epsilon, target=name, scope="case",
                                 mechanism=(LaplaceMechanism.name if kind == "numeric"
                                            else labels))
                     for name, kind in self._qids_perturbed(schema))

    def privacy_statement(self, schema, losses: Sequence[PrivacyLoss]) -> dict:
        """The manifest's ``privacy_spent``. Strict: from ``losses``, what each case incurred
        (the mechanisms' reports). Paper: the nominal ε per perturbed QID (a noise-scale
        parameter, not a spend: a group published exact drew no noise and a withheld case
        none at all; the ledger rows, marked not DP, say what ran)."""
        if self.variant == "paper":
            losses = self.planned_losses(schema)
        per_case = sum((loss.epsilon for loss in losses), Fraction(0))
        statement = {
            "variant": self.variant,
            "epsilon_per_attribute": format_epsilon(self.epsilon),
            "epsilon_per_case": format_epsilon(per_case),
            "epsilon": float(per_case), "delta": 0.0,
            "perturbed_qids": [loss.target for loss in losses],
            "composition": "sequential over the perturbed QIDs of a case; the store's ledger "
                           "sums it over the releases a case appears in",
            "mechanisms": [loss.to_dict() for loss in losses],
        }
        # What it guarantees and what not: the model object's text (pipeline/publish.py).
        return statement


class PPMSDPNum(_PPMSDP):
    """PPMS-DP_num (000 Fig. 2): generalized categorical QIDs, Laplace-perturbed numeric QIDs."""

    name = "ppms-dp-num"


class PPMSDPAll(_PPMSDP):
    """PPMS-DP_all (000 Fig. 5): every QID perturbed (Laplace and exponential mechanisms)."""

    name = "ppms-dp-all"
    perturb_categorical = True


# ---------------------------------------------------------------------------------- helpers
def label_level(taxonomy: Taxonomy, epsilon: object, confidence: float | None, *,
                mechanism: str = "exponential") -> tuple[int, float]:
    """The level a perturbed categorical QID is published at: the finest depth L of
    ``taxonomy`` at which the label ``mechanism`` publishes is consistent with the true value
    (the value, an ancestor or a descendant) with probability at least ``confidence`` for every
    true value; and that worst-case probability (:mod:`medanon.mechanisms.coarsening`).
    Without a confidence, the leaves (the tree's height). A function of ε, the hierarchy, the
    mechanism and the confidence only: neighbouring inputs get the same level."""
    parent, depth = taxonomy.parent_array, taxonomy.depth_array
    if confidence is not None:
        return finest_level(parent, depth, epsilon, confidence, mechanism=mechanism)
    level = int(depth.max())
    table = published_log_table(parent, depth, epsilon, mechanism=mechanism, level=level)
    return level, float(label_consistency(table, parent, depth)[depth > 0].min())


def _randomized_labels(taxonomy: Taxonomy, codes: np.ndarray, epsilon: Fraction, level: int,
                       noise: NoiseSource, *, accountant: Accountant, target: str) -> np.ndarray:
    """Each case's label drawn by k-ary randomized response over the root and the labels of
    ``level`` (the first level with two labels when ``level`` is 0; the caller publishes the
    root then): :func:`medanon.mechanisms.coarsening.rr_domain`.

    A value is first put on that domain: a missing value (the root) stays the root, a value on
    or below the level is its ancestor there, a value between them one of the level's labels
    under it, uniformly. Both steps read the case's own value only; the mixture of
    randomized-response rows is within e^ε of any other row.
    """
    domain, weights = rr_domain(taxonomy.parent_array, taxonomy.depth_array, level)
    inputs = np.empty(len(codes), dtype=np.int64)
    for case, u in enumerate(codes.tolist()):
        choices = domain[weights[u] > 0]   # uniform weights: one choice, or a uniform pick
        inputs[case] = choices[0] if choices.size == 1 else choices[noise.uniform_int(choices.size)]
    mech = RandomizedResponse(epsilon=epsilon, categories=domain.tolist())
    if not len(codes):
        return codes
    return np.asarray(mech.randomise(inputs, noise, accountant=accountant, target=target),
                      dtype=np.int64)


def _rows_by_group(groups: np.ndarray) -> list[np.ndarray]:
    """The record indices of each group (groups in increasing order)."""
    if not len(groups):
        return []
    order = np.argsort(groups, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(groups[order])) + 1)


def _groups_and_rows(groups: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(group, record indices)`` per group, groups in increasing order."""
    return [(int(groups[rows[0]]), rows) for rows in _rows_by_group(groups)]


def _merge_by_lub(space: QidSpace, codes: Mapping[int, np.ndarray],
                  groups: np.ndarray) -> tuple[np.ndarray, int]:
    """QID^C-Gen&Merging / VirtualGen&Merging: merge groups whose generalized QID^C coincide.

    Args:
        space: The QIDs.
        codes: Per categorical attribute index, the codes of the placed records.
        groups: The group of each placed record.

    Returns the merged group index per record (0.., in order of first record) and the number
    of groups before merging.
    """
    n_before = len(np.unique(groups))
    keys = [group_lub(a.taxonomy, codes[j], groups)
            for j, a in enumerate(space.attributes) if a.taxonomy is not None]
    if not len(groups) or not keys:
        merged, _ = pd.factorize(groups)
        return merged.astype(np.int64), n_before
    merged, _ = pd.factorize(pd.MultiIndex.from_arrays(keys))
    return merged.astype(np.int64), n_before


def _exponential_per_group(taxonomy: Taxonomy, codes: np.ndarray, groups: np.ndarray,
                           epsilon: Fraction, noise: NoiseSource, *, accountant: Accountant,
                           target: str, cases: np.ndarray) -> list[str]:
    """000's ExponentialPerturbation: one draw over ψ per group, for all its records.

    Each draw reports to ``accountant`` for the group's ``cases``. A group whose ψ holds one
    candidate publishes it without a draw (and without a charge): its value is exact.
    """
    out = np.empty(len(codes), dtype=np.int64)
    cache: dict[tuple[int, ...], PerturbationCandidates] = {}
    for rows in _rows_by_group(groups):
        dom = tuple(sorted(set(codes[rows].tolist())))
        if dom not in cache:
            cache[dom] = perturbation_candidates(taxonomy, taxonomy.decode(list(dom)))
        pc = cache[dom]
        if len(pc.candidates) == 1 or pc.delta_q <= 0:
            out[rows] = pc.candidates[0]
            continue
        mech = ExponentialMechanism(epsilon=epsilon, sensitivity=pc.delta_q)
        out[rows] = pc.candidates[mech.select(-pc.quality, noise, accountant=accountant,
                                              target=target, units=cases[rows])]
    return taxonomy.decode(out)
