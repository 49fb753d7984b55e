"""IPA: informative-attribute-preserving anonymization (paper 004).

Lee & Chung, "Differentially private release of medical microdata: an efficient and practical
approach for preserving informative attribute values", BMC Med Inform Decis Mak 20:155 (2020).
Spec: ``spec/algorithms.md`` §3 (the paper prints none of its formulas legibly).

What is implemented (Algorithms 1 and 2, spec §3.8):

1. For every node of the full-domain lattice (all combinations of the dimensions' levels):
   generalize every record (the informative attribute untouched) and form the equivalence
   classes (ECs) that are not empty;
2. suppression (Def. 3, Thm 5): EC ``E_i`` goes to the class ``*`` iff
   ``|E_i| <= t + Lap((t-1)/ε_supp)``, one noise draw per EC;
3. insertion (Thm 6): every released class (``*`` included) gets ``max(0, ñ − |E|)``
   counterfeit rows, ``ñ = |E| + Lap(1/ε_ins)``; a counterfeit row takes its class's generalized
   dimension values;
4. counterfeit informative values (Eq. 3–4, Thm 7) by the exponential mechanism over the domain
   ``Inf`` with ``S(E, v) = Count_E(v)/(|E|+1)`` for values seen in the class and
   ``1/((|E|+1)(|Inf| − |Inf_E|))`` for the others, ``ΔS = 1``, weight ``exp(ε_value·S/2)``;
5. scoring (Step 2): ``IL = NCP + EMD + Rate`` (:mod:`medanon.anonymize.tabular`);
6. choosing the node (Eq. 12, Thm 8): exponential mechanism with ``u = 3 − IL``, ``Δu = 3``
   (``selection="paper"``).

Beyond the paper, the default ``selection="utility"`` chooses the node *first*, by the exponential
mechanism on its expected per-record loss computed from the true data (expected NCP under the
noisy threshold plus twice the expected counterfeit share), whose sensitivity is ``Δ_T/N`` with
``N`` a noisy record count (1/10 of the candidates' ε) or a public lower bound: at ε_cand = 0.27 and
n = 20,000 a node 0.01 worse weighs e^{-11} as much, where the paper's Δu = 3 gives e^{-0.0005}.
Steps 1–4 then run on the chosen node only. Derivation and its assumptions:
:mod:`medanon.anonymize.ipa_utility` and ``docs/algorithms/ipa.md``.

Budget: ε is split over the four steps, by default 0.1/0.3/0.3/0.3 (the paper's values at ε = 1),
and the split always sums to ε exactly (Thm 9's sequential composition); with
``selection="utility"`` and no ``min_records`` the candidates' share is split 1/10 (the noisy
record count, ledger target ``records``) and 9/10 (the choice), again exactly. Each step has its
mechanism object (:attr:`IPA.mechanisms`); each reports its loss once per run to the run's
accountant, and the result's ``privacy_losses`` are those reports (checked against
:meth:`IPA.planned_losses`).

Deviations from the paper and from the authors' code (spec §3.10), and why:

- Noise is the exact discrete Laplace distribution on the integers (Canonne–Kamath–Steinke
  2020) instead of rounded continuous Laplace: counts and thresholds are integers, and the exact
  sampler is immune to floating-point attacks. For the threshold, ``|E| <= t + Z`` with integer
  ``Z``; for the counts, ``ñ = |E| + Z``.
- ``t >= 2`` is required: at ``t = 1`` the paper's scale ``(t−1)/ε`` is 0 (no noise).
- The code's bugs are not reproduced: the EMD index is advanced (we use total variation, see
  :mod:`medanon.anonymize.tabular`), IL is not carried across nodes, NCP is normalized by the real
  domain widths, the unseen-value score uses ``|Inf| − |Inf_E|`` (not ``|E|``), node selection
  uses its share of ε (not ε/3), the threshold test is the paper's ``<=``.
- Sampling a counterfeit value draws a double uniform against normalized weights (like the
  project's Gumbel-max exponential mechanism, exact up to double rounding: about 1e-10 here);
  the node choice uses :class:`~medanon.mechanisms.ExponentialMechanism`.
- Released rows are shuffled so that a counterfeit row's position gives nothing away; the paper
  does not say how rows are ordered.
- By default the node is chosen on the true data before any perturbation (``selection``
  above); ``selection="paper"`` keeps Eq. 12 and reproduces the earlier releases draw for draw.

Privacy guarantee — read this before publishing. Each noisy quantity is drawn by an ε-DP
mechanism as the paper states (per EC by parallel composition): the noisy threshold (Thm 5), the
noisy class size ``ñ = |E| + Z`` (Thm 6), the counterfeit values (Thm 7) and the node (Thm 8);
and ε sums to the requested total (Thm 9). The default choice (``"utility"``) is ε_cand-DP by the
exponential mechanism with its derived sensitivity, composed sequentially with the record count
and followed by Steps 1–4 on the chosen node. The paper's node choice is sound as composed: ``u = 3 − IL``
lies in [0, 3] for every possible output, so with ``Δu = 3`` each node's selection probability
changes by at most ``e^{ε_cand}`` between any two data sets whatever the other nodes' noisy
outputs were, and only the chosen node's output is released. The *release as a whole is still
not ε-differentially private* under add/remove-one-record neighbours, for one reason the proof
of Thm 6 skips: **the counterfeit noise is one-sided**. What is released is not ``ñ`` but the
class's real records, published as they are (generalized dimensions, exact informative value; a
suppressed record still appears in the class ``*``), plus ``max(0, ñ − |E|)`` counterfeit rows.
So a class's released size is ``max(|E|, ñ) >= |E|``, every real (class, informative value) pair
is always in the output, and a class appears only when it holds a real record. An output with
fewer rows of some (class, value) than the data holds — e.g. one in which a value held by one
record does not occur — has positive probability on the data set without that record and
probability 0 on the one with it; no ε bounds that ratio. What IPA does give: generalization with
a noisy suppression of small classes, and plausible deniability for every row (any row may be
counterfeit). The manifest states this.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .._validation import _fail, check_choice, check_int
from ..accounting import (Accountant, PrivacyLoss, check_epsilon_floor, check_plan, format_epsilon,
                          losses_per_unit, to_exact)
from ..data.tabular import TabularData
from ..errors import InternalError, ValidationError
from ..mechanisms import DiscreteLaplaceMechanism, ExponentialMechanism, Mechanism
from ..models.single import IPAModel
from ..random import Randomness
from ..mechanisms.noise import NoisePool, NoiseSource, check_noise
from .lattice import GroupTable, Lattice, Node, RollUp, group_sum, node_ncp, record_classes
from .ipa_utility import ExpectedLoss
from .tabular import ClassRelease, LossParts, TabularResult, class_emd, node_level_names

__all__ = ["IPA", "DEFAULT_BUDGET_SPLIT", "RECORDS_SHARE", "SELECTIONS", "STEPS", "parse_budget_split"]

STEPS = ("suppression", "insertion", "value", "candidates")
#: how the node is chosen: on the true data (default) or as in 004 (every node perturbed, Δu = 3)
SELECTIONS = ("utility", "paper")
#: the share of the choice's ε that selection "utility" spends on a noisy record count when no
#: public lower bound (``min_records``) is given
RECORDS_SHARE = Fraction(1, 10)
DEFAULT_BUDGET_SPLIT = (Fraction(1, 10), Fraction(3, 10), Fraction(3, 10), Fraction(3, 10))
#: what a step's ε below :data:`~medanon.accounting.EPSILON_FLOOR` (0.01) does to an IPA release:
#: its output size grows as 1/ε whatever the data (about 1/(2ε) counterfeit rows per released
#: class), so the release is mostly made up (a 2,000-row table at ε = 0.001 got 24,581 counterfeit
#: rows; at ε = 1e-6 it ran out of memory), and its choices are within 1% of uniform.
TINY_EPSILON = ("the counterfeit rows grow as 1/epsilon whatever the data (about 1/(2 epsilon) "
                "per released class), so the release is mostly made up and can exhaust memory, "
                "and the noisy threshold, values and choice are all but uniform.")
#: ΔIL: NCP, EMD and Rate each lie in [0, 1]
IL_SENSITIVITY = 3
#: ΔS of the counterfeit values' score (Eq. 3)
VALUE_SENSITIVITY = 1
#: the unit every step protects
SCOPE = "record"



def parse_budget_split(split: Any, *, owner: str = "IPA") -> tuple[Fraction, ...]:
    """Four positive shares of ε (suppression, insertion, value, candidates) summing to 1.

    Accepts a sequence of four numbers or the text ``"0.1,0.3,0.3,0.3"``; shares are read exactly
    (0.1 is 1/10), so the split sums to 1 without rounding.

    Raises:
        ValidationError: not four shares, a share <= 0, or a sum other than 1.
    """
    requirement = "four positive shares of ε (suppression, insertion, value, candidates) summing to 1"
    if isinstance(split, str):
        split = [part for part in split.replace("/", ",").split(",") if part.strip()] \
            if "," in split else split.split()
    try:
        parts = tuple(to_exact(p.strip() if isinstance(p, str) else p, name="budget_split",
                               owner=owner) for p in split)
    except TypeError:
        raise _fail("budget_split", owner, requirement, split) from None
    if len(parts) != len(STEPS):
        raise _fail("budget_split", owner, requirement, split)
    if sum(parts) != 1:
        raise _fail("budget_split", owner, f"{requirement} (they sum to {format_epsilon(sum(parts))})",
                    split)
    return parts


@dataclass
class _Candidate:
    """One node's perturbation, kept compact until the node is chosen."""

    node: Node
    loss: LossParts
    suppressed_ec: np.ndarray   # bool per EC (ECs in sorted code order)
    fakes: np.ndarray           # counterfeit count per class (kept ECs in order, then `*`)
    fake_class: np.ndarray      # one entry per counterfeit row
    fake_value: np.ndarray


class IPA:
    """IPA of paper 004 (module docstring: algorithm, deviations, what is and is not guaranteed).

    Args:
        epsilon: Total ε, split over the four steps.
        threshold: The suppression threshold ``t`` (an integer >= 2; the paper uses 2).
        budget_split: Shares of ε for suppression, insertion, value and candidates (sum 1).
        selection: How the node is chosen: ``"utility"`` (default, not in 004): by the
            exponential mechanism on the node's expected per-record loss computed from the true
            data, whose sensitivity is Δ_T/N (:mod:`medanon.anonymize.ipa_utility`), then only
            the chosen node is perturbed; ``"paper"``: 004's Eq. 12 (every node perturbed and
            scored, Δu = 3).
        min_records: ``"utility"`` only: a public lower bound N on the number of records. The
            default (None) spends :data:`RECORDS_SHARE` of the candidates' share of ε on a noisy
            count ``N = max(1, n + DLap)``. Either way the guarantee holds for every n; N only
            sets how sharp the choice is.
        allow_tiny_epsilon: Accept a step's ε (ε times its share) below
            :data:`~medanon.accounting.EPSILON_FLOOR` (:data:`TINY_EPSILON`); recorded in the
            manifest's ``method.acknowledged``.

    Raises:
        ValidationError: on a bad parameter.
    """

    name = "ipa"

    def __init__(self, *, epsilon: Any, threshold: int = 2,
                 budget_split: Any = DEFAULT_BUDGET_SPLIT, selection: str = "utility",
                 min_records: int | None = None, allow_tiny_epsilon: bool = False) -> None:
        self.epsilon = to_exact(epsilon, name="epsilon", owner="IPA")
        self.threshold = check_int(threshold, name="threshold", owner="IPA", minimum=2)
        self.budget_split = parse_budget_split(budget_split)
        #: the acknowledgements given to the method (the manifest's ``method.acknowledged``)
        self.acknowledged: tuple[str, ...] = ()
        for step, share in zip(STEPS, self.budget_split):
            self.acknowledged = check_epsilon_floor(
                self.epsilon * share, owner="IPA", allow_tiny_epsilon=allow_tiny_epsilon,
                what=f"to its {step} step ({format_epsilon(share)} of "
                     f"{format_epsilon(self.epsilon)})", consequence=TINY_EPSILON)
        self.selection = check_choice(selection, name="selection", owner="IPA", choices=SELECTIONS)
        if min_records is not None:
            if self.selection != "utility":
                raise ValidationError("The 'min_records' parameter of IPA applies to selection "
                                      "'utility' only (it bounds the number of records for the "
                                      "choice on the true data); got selection 'paper'.")
            min_records = check_int(min_records, name="min_records", owner="IPA", minimum=1)
        self.min_records = min_records
        eps = {step: self.epsilon * share for step, share in zip(STEPS, self.budget_split)}
        #: the mechanism of each step, keyed by the target it reports (its ledger entry): the
        #: noisy threshold (Δ = t − 1), the counterfeit counts (Δ = 1), the counterfeit values
        #: (ΔS = 1) and the node choice. The paper's choice scores every perturbed node
        #: (Δu = 3); the default one (``selection="utility"``) scores the true data
        #: (:mod:`medanon.anonymize.ipa_utility`, Δu = Δ_T/N) and, without ``min_records``,
        #: first spends 1/10 of the choice's share on a noisy record count (``records``). Their
        #: privacy maps are the plan (:meth:`planned_losses`); what they report while running is
        #: the result's ``privacy_losses``.
        # (each step's mechanism also under its own typed name, for the verbs only it has)
        self._suppression = DiscreteLaplaceMechanism(epsilon=eps["suppression"],
                                                     sensitivity=self.threshold - 1)
        self._insertion = DiscreteLaplaceMechanism(epsilon=eps["insertion"], sensitivity=1)
        self._records: DiscreteLaplaceMechanism | None = None
        self.mechanisms: dict[str, Mechanism] = {
            "suppression": self._suppression,
            "insertion": self._insertion,
            "value": ExponentialMechanism(epsilon=eps["value"], sensitivity=VALUE_SENSITIVITY),
        }
        #: the expected-loss utility of ``selection="utility"`` (None for the paper's choice)
        self.expected_loss: ExpectedLoss | None = None
        if self.selection == "paper":
            self.selector = ExponentialMechanism(epsilon=eps["candidates"],
                                                 sensitivity=IL_SENSITIVITY)
        else:
            self.expected_loss = ExpectedLoss(threshold=self.threshold,
                                              suppression_epsilon=eps["suppression"],
                                              insertion_epsilon=eps["insertion"])
            choice = eps["candidates"]
            if self.min_records is None:
                self._records = self.mechanisms["records"] = DiscreteLaplaceMechanism(
                    epsilon=choice * RECORDS_SHARE, sensitivity=1)
                choice -= choice * RECORDS_SHARE
            self.selector = ExponentialMechanism(
                epsilon=choice, sensitivity=self.expected_loss.sensitivity)
        self.mechanisms["candidates"] = self.selector
        #: the privacy model the method satisfies: it writes the guarantee texts
        self.model = IPAModel(epsilon=self.epsilon,
                              steps={s: m.epsilon for s, m in self.mechanisms.items()},
                              selection=self.selection)

    @property
    def suppression_scale(self) -> Fraction:
        """The noisy threshold's scale (t − 1)/ε_suppression."""
        return self._suppression.scale

    @property
    def insertion_scale(self) -> Fraction:
        """The counterfeit counts' scale 1/ε_insertion."""
        return self._insertion.scale

    @property
    def value_epsilon(self) -> Fraction:
        """ε of the counterfeit values' exponential mechanism (Eq. 4)."""
        return self.mechanisms["value"].epsilon

    def planned_losses(self) -> tuple[PrivacyLoss, ...]:
        """The ε each step will spend per record: its mechanism's privacy map. ``anonymize``
        raises InternalError if what the mechanisms report differs."""
        return tuple(mech.privacy_loss(target=step, scope=SCOPE)
                     for step, mech in self.mechanisms.items())

    def parameters(self) -> dict[str, Any]:
        """The manifest's parameters. ``budget_split`` gives the share of ε of every ledger
        step (with ``records`` when the choice pays for a noisy record count); they sum to 1."""
        out: dict[str, Any] = {
            "epsilon": format_epsilon(self.epsilon), "threshold": self.threshold,
            "selection": self.selection,
            "budget_split": {s: format_epsilon(m.epsilon / self.epsilon)
                             for s, m in self.mechanisms.items()}}
        if self.selection == "utility":
            out["min_records"] = self.min_records
            out["selection_sensitivity"] = format_epsilon(self.selector.sensitivity) + "/N"
        return out

    # -- Algorithm 2 ------------------------------------------------------------------------

    def anonymize(self, data: TabularData, *, noise: Randomness | NoiseSource | None = None,
                  progress: Callable[[int, int], None] | None = None) -> TabularResult:
        """Perturb every lattice node, score it, choose one with the exponential mechanism.

        Args:
            data: The encoded table.
            noise: A :class:`~medanon.random.Randomness` (secure by default; seeded for tests
                and research); every draw comes from its exact bits.
            progress: Called as ``progress(done, total)`` after each node.
        """
        noise = check_noise(noise, owner="IPA.anonymize")
        lattice = Lattice(data.top_node)
        # Each step charges once per run: its draws of one node go to disjoint classes (parallel
        # composition), and only the chosen node's are released (the paper's Thm 8 argument).
        accountant = Accountant(scope=SCOPE)
        if self.selection == "paper":
            chosen, details = self._choose_paper(data, lattice, noise, accountant, progress)
        else:
            chosen, details = self._choose_utility(data, lattice, noise, accountant, progress)
        release = self._release(data, chosen)
        table, fake_mask = release.frame(noise)
        check_plan(self.planned_losses(), accountant.charges, owner="IPA")
        losses = losses_per_unit(accountant.charges)
        return TabularResult(
            method=self.name, node=chosen.node, node_labels=node_level_names(data, chosen.node),
            table=table, is_counterfeit=fake_mask, loss=chosen.loss, records=len(data),
            suppressed=int((~release.row_fake & release.starred[release.row_class]).sum()),
            counterfeit=int(fake_mask.sum()), classes=len(release.starred),
            parameters=self.parameters(), privacy_losses=losses, privacy_model=self.model,
            details={"selection": self.selection, **details}, acknowledged=self.acknowledged)

    def _choose_paper(self, data: TabularData, lattice: Lattice, noise: NoiseSource,
                      accountant: Accountant, progress: Callable[[int, int], None] | None
                      ) -> tuple[_Candidate, dict[str, Any]]:
        """004's Step 2: perturb every node, choose by the exponential mechanism on 3 − IL."""
        rollup = RollUp(data, with_informative=True)
        candidates: list[_Candidate] = []
        pools = self._pools(noise, accountant)
        # the counterfeit values are drawn in _counterfeit_values from this mechanism's ε and ΔS
        self.mechanisms["value"].report(accountant, target="value")
        for done, node in enumerate(lattice.nodes, start=1):
            candidates.append(self._perturb(data, rollup.table(node), noise, pools))
            if progress is not None:
                progress(done, len(lattice))
        utilities = np.array([IL_SENSITIVITY - c.loss.total for c in candidates])
        index = self.selector.select(utilities, noise, accountant=accountant, target="candidates")
        probability = float(self.selector.probabilities(utilities)[index])
        return candidates[index], {
            "candidates_evaluated": len(candidates),
            "selection_probability": probability,
            # how much the node choice can favour the best node over the worst (e^{ε_cand/2})
            "selection_max_weight_ratio": float(np.exp(float(self.selector.epsilon) / 2)),
            "candidates": [{"node": list(c.node), **c.loss.to_dict()} for c in candidates],
            "lattice": {"tables_rolled_up": rollup.tables_built,
                        "rows_scanned": rollup.rows_scanned, "base_rows": len(rollup.base)}}

    def selection_totals(self, data: TabularData, *, lattice: Lattice | None = None,
                         progress: Callable[[int, int], None] | None = None
                         ) -> tuple[np.ndarray, RollUp]:
        """``T_g`` of every node (in ``Lattice(data.top_node).nodes`` order): the expected loss of
        its release summed over the records (:class:`~.ipa_utility.ExpectedLoss`), on the true
        data. Selection ``"utility"`` only; nothing is drawn or reported."""
        if self.expected_loss is None:
            raise ValidationError("IPA.selection_totals needs selection 'utility'; this IPA has "
                                  "selection 'paper'.")
        lattice = Lattice(data.top_node) if lattice is None else lattice
        rollup = RollUp(data, with_informative=False)
        totals = np.empty(len(lattice))
        for done, node in enumerate(lattice.nodes, start=1):
            totals[done - 1] = self.expected_loss.node_total(data.hierarchies, rollup.table(node))
            if progress is not None:
                progress(done, len(lattice))
        return totals, rollup

    @staticmethod
    def selection_utilities(totals: np.ndarray, records: int, bound: int) -> np.ndarray:
        """``N·u_g = −T_g·N/max(n, N)``: what the choice's exponential mechanism scores, at
        sensitivity ``Δ_T`` (:mod:`.ipa_utility`); ``records`` is n, ``bound`` is N >= 1."""
        return -np.asarray(totals, dtype=float) * (bound / max(records, bound))

    def choose_node(self, data: TabularData, noise: Randomness | NoiseSource | None = None, *,
                    accountant: Accountant | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    lattice: Lattice | None = None
                    ) -> tuple[int, np.ndarray, np.ndarray, int, RollUp]:
        """Selection ``"utility"``'s choice: N (noisy count, or ``min_records``), then the
        exponential mechanism on :meth:`selection_utilities`. Returns the index of the chosen
        node, the totals, the utilities, N and the roll-up. Reports ``records`` (when counted)
        and ``candidates`` to ``accountant``."""
        noise = check_noise(noise, owner="IPA.choose_node")
        if self.min_records is not None:
            bound = self.min_records
        elif self._records is not None:
            noisy = int(self._records.randomise(
                np.array([len(data)]), noise, accountant=accountant, target="records")[0])
            bound = max(1, noisy)
        else:  # selection "paper": no records step and no expected loss to choose by
            raise ValidationError("IPA.choose_node is the choice of selection 'utility'; this "
                                  "IPA uses selection 'paper'.")
        lattice = Lattice(data.top_node) if lattice is None else lattice
        totals, rollup = self.selection_totals(data, lattice=lattice, progress=progress)
        utilities = self.selection_utilities(totals, len(data), bound)
        index = self.selector.select(utilities, noise, accountant=accountant, target="candidates")
        return index, totals, utilities, bound, rollup

    def _choose_utility(self, data: TabularData, lattice: Lattice, noise: NoiseSource,
                        accountant: Accountant, progress: Callable[[int, int], None] | None
                        ) -> tuple[_Candidate, dict[str, Any]]:
        """Choose the node on the true data (:mod:`.ipa_utility`), then perturb it alone."""
        assert self.expected_loss is not None
        # the perturbation's steps report first, as in the plan (they draw after the choice)
        pools = self._pools(noise, accountant)
        self.mechanisms["value"].report(accountant, target="value")
        n = len(data)
        index, totals, utilities, bound, rollup = self.choose_node(
            data, noise, accountant=accountant, progress=progress, lattice=lattice)
        probabilities = self.selector.probabilities(utilities)
        node = lattice.nodes[index]
        informative = RollUp(data, with_informative=True)
        chosen = self._perturb(data, informative.table(node), noise, pools)
        expected = totals / max(n, 1)
        best = int(expected.argmin())
        return chosen, {
            "candidates_evaluated": len(lattice),
            "selection_probability": float(probabilities[index]),
            "records_bound": bound,
            "selection_expected_loss": float(expected[index]),
            "best_expected_loss": {"node": list(lattice.nodes[best]),
                                   "expected_loss": float(expected[best])},
            "candidates": [{"node": list(nd), "expected_loss": float(e), "probability": float(pr)}
                           for nd, e, pr in zip(lattice.nodes, expected, probabilities)],
            "lattice": {"tables_rolled_up": rollup.tables_built + informative.tables_built,
                        "rows_scanned": rollup.rows_scanned + informative.rows_scanned,
                        "base_rows": len(informative.base)}}

    # -- Algorithm 1 ------------------------------------------------------------------------

    def _pools(self, noise: NoiseSource,
               accountant: Accountant | None = None) -> tuple[NoisePool, NoisePool]:
        """Threshold and count noise of the steps' mechanisms, drawn in batches (the same exact
        distributions); each mechanism reports its loss to ``accountant`` once."""
        return (self._suppression.pool(noise, accountant=accountant, target="suppression"),
                self._insertion.pool(noise, accountant=accountant, target="insertion"))

    def _perturb(self, data: TabularData, table: GroupTable, noise: NoiseSource,
                 pools: tuple[NoisePool, NoisePool] | None = None) -> _Candidate:
        threshold_pool, count_pool = self._pools(noise) if pools is None else pools
        # the callers roll up with_informative=True: the perturbation counts informative values
        assert table.informative is not None
        m = len(data.informative_domain)
        ec_of_row, ec_first = table.classes()
        n_ec = np.bincount(ec_of_row, weights=table.count).astype(np.int64)
        threshold_noise = threshold_pool.take(len(n_ec))
        suppressed = n_ec <= self.threshold + threshold_noise
        kept = np.flatnonzero(~suppressed)
        n_classes = len(kept) + int(suppressed.any())
        class_of_ec = np.full(len(n_ec), n_classes - 1, dtype=np.int64)  # suppressed -> `*`
        class_of_ec[kept] = np.arange(len(kept))
        (e_class, e_value), e_count = group_sum([class_of_ec[ec_of_row], table.informative],
                                                [n_classes, m], table.count)
        n_real = np.bincount(e_class, weights=e_count, minlength=n_classes).astype(np.int64)
        fakes = np.maximum(count_pool.take(n_classes), 0)
        fake_class, fake_value = self._counterfeit_values(e_class, e_value, e_count, n_real, fakes,
                                                          m, noise)
        starred = np.zeros(n_classes, dtype=bool)
        starred[len(kept):] = True
        codes = [c[ec_first[kept]] for c in table.codes]
        codes = [np.concatenate([c, np.zeros(n_classes - len(kept), dtype=np.int32)]) for c in codes]
        ncp = np.where(starred, 1.0, node_ncp(data.hierarchies, table.node, codes))
        loss = _class_loss(e_class, e_value, e_count, fake_class, fake_value, n_real, fakes, ncp, m)
        return _Candidate(table.node, loss, suppressed, fakes, fake_class, fake_value)

    def _counterfeit_values(self, e_class: np.ndarray, e_value: np.ndarray, e_count: np.ndarray,
                            n_real: np.ndarray, fakes: np.ndarray, m: int,
                            noise: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
        """Informative values of the counterfeit rows by Eq. 4 (one draw per counterfeit).

        Per class the candidates are its seen values plus one "unseen" bucket holding the
        |Inf| − |Inf_E| values that share one score; a bucket draw is then uniform over them.
        """
        active = np.flatnonzero(fakes > 0)
        if not active.size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        a = float(self.value_epsilon) / (2.0 * VALUE_SENSITIVITY)  # ε/(2ΔS)
        seen = np.bincount(e_class, minlength=len(n_real))
        segment_of_class = np.full(len(n_real), -1, dtype=np.int64)
        segment_of_class[active] = np.arange(len(active))
        take = segment_of_class[e_class] >= 0
        seg = segment_of_class[e_class[take]]
        lengths = seen[active] + 1
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        buckets = starts + lengths - 1
        rank = np.arange(len(seg)) - np.searchsorted(seg, seg, side="left")
        positions = starts[seg] + rank
        total = int(lengths.sum())
        log_w = np.empty(total)
        value_at = np.full(total, -1, dtype=np.int64)
        size_plus = n_real[active] + 1.0
        log_w[positions] = a * e_count[take] / size_plus[seg]
        value_at[positions] = e_value[take]
        unseen = m - seen[active]
        with np.errstate(divide="ignore"):
            log_w[buckets] = np.where(unseen > 0, np.log(np.maximum(unseen, 1))
                                      + a / (size_plus * np.maximum(unseen, 1)), -np.inf)
        segment = np.repeat(np.arange(len(active)), lengths)
        w = np.exp(log_w - np.maximum.reduceat(log_w, starts)[segment])
        cum = np.cumsum(w)
        before = cum[starts] - w[starts]
        within = (cum - before[segment]) / (cum[buckets] - before)[segment]
        within[buckets] = 1.0
        ladder = segment + within
        fake_segment = np.repeat(np.arange(len(active)), fakes[active])
        target = fake_segment + noise.uniform01_array(len(fake_segment))
        pick = np.clip(np.searchsorted(ladder, target, side="left"),
                       starts[fake_segment], buckets[fake_segment])
        values = value_at[pick]
        fake_class = active[fake_segment]
        from_bucket = np.flatnonzero(pick == buckets[fake_segment])
        if from_bucket.size:
            seen_keys = e_class.astype(np.int64) * m + e_value
            pending = from_bucket
            while pending.size:
                draw = noise.uniform_int_array(m, pending.size)
                key = fake_class[pending] * m + draw
                hit = np.searchsorted(seen_keys, key)
                is_seen = (hit < len(seen_keys)) & (seen_keys[np.minimum(hit, len(seen_keys) - 1)] == key)
                values[pending[~is_seen]] = draw[~is_seen]
                pending = pending[is_seen]
        return fake_class, values

    # -- the chosen node, row by row ----------------------------------------------------------

    def _release(self, data: TabularData, chosen: _Candidate) -> ClassRelease:
        ec_codes, ec_of_record, _ = record_classes(data, chosen.node)
        if len(ec_codes[0]) != len(chosen.suppressed_ec):
            raise InternalError("IPA: the chosen node's classes differ between the two passes")
        return ClassRelease.from_classes(data, chosen.node, ec_codes, chosen.suppressed_ec,
                                         ec_of_record, chosen.fake_class, chosen.fake_value)


def _class_loss(e_class, e_value, e_count, fake_class, fake_value, n_real, fakes, ncp, m) -> LossParts:
    """NCP, EMD and Rate of one node's perturbation, from class-level counts."""
    sizes = n_real + fakes
    keys = np.concatenate([e_class.astype(np.int64) * m + e_value,
                           fake_class.astype(np.int64) * m + fake_value])
    real_w = np.concatenate([e_count.astype(float), np.zeros(len(fake_class))])
    fake_w = np.concatenate([np.zeros(len(e_class)), np.ones(len(fake_class))])
    uniq, inverse = np.unique(keys, return_inverse=True)
    real = np.bincount(inverse, weights=real_w, minlength=len(uniq))
    fake = np.bincount(inverse, weights=fake_w, minlength=len(uniq))
    emd = class_emd((uniq // m).astype(np.int64), real, fake, n_real, fakes)
    return LossParts(ncp=float(sizes @ ncp / sizes.sum()), emd=float(emd.mean()),
                     rate=float((fakes / sizes).mean()))
