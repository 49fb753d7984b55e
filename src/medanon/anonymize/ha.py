"""HA: PPMS(k, θ, α)-bounding of periodic SRS releases (paper 002).

Reference: Huang, Yi, Zhu, Shang, Lin, "Improved privacy preserving method for periodical SRS
publishing", PLoS One 2021;16(4):e0250457: Definition 7, Lemma 1 (Eq. 1), Eqs. 2-4, Algorithm 1
(HA), Procedure 1 (Grouping), Procedure 2 (Judge_α_bounding), Procedure 3 (Update_Group).

Privacy guarantee (002 Definition 7): PPMS(k, θ*)-bounding (see ``ppms.py``) also when the
attacker knows the target stops medication in the next quarter (MD-attack: every case present
in the next period is excluded), and, in each of the four attacker views of a group (GV1 new &
md, GV2 new, GV3 md, GV4 all), the share of ss-records (records with substantially more
symptoms) is at most α (SS-attack). Mechanisms: every group holds >= k new & md records
(|GV1| >= k, 002's change 2); η_v(G) = floor(|GV1|·θ_v) (Lemma 1, change 1); the α-check of
Procedures 2-3 with k reserved positions (change 3). Old cases cover their earliest published
clone (HA lines 2-6, as PPMS+).

An md-record is one whose case does NOT appear in the next period, so releasing period i needs
period i+1's data: without it the release is refused. md is judged on the next period's
*data*, so HA never withholds a case from a release (a withheld case would turn "not md" into
"md" in the published series after the fact and could break α in the previous release). A case
that fits no group with all its terms (leftover placement) is instead published in the group
nearest to it in the QIDs, with the terms that group cannot take suppressed
(``clustering._fit_by_suppression``; counted in the manifest's ``counts.suppressed_terms``);
the group is not chosen by the case's terms, so a suppressed term reaches no published byte
(issue 41), with ``on_infeasible`` ``raise-theta`` or
``suppress-terms``; with ``refuse`` (the default) the release is refused. It is refused too when
no group can be formed at all.

ss-records (002 §5): a record is ss when, for some sensitive column, its number of terms is at
least mean + SD of that column's counts over the period (default), or at least a fixed count
given per column. Counts are of the terms the release publishes: the threshold is computed on
the period's cells after any release-wide suppression and recorded (``ss_min_counts``); a case
whose terms are suppressed is judged again on the terms it keeps, so the α counters count
exactly the records the published release shows as ss (what the SS-attack reads, 002 Example 2,
and what the independent checker counts). The proof is in ``docs/algorithms/ha.md`` §5.

``on_unplaceable="withhold"`` withholds such a case instead (002 as written, like PPMS+), at the
risk above: the verify gate re-checks release i once release i+1 exists and refuses a release
that breaks α there.

Deviations (docs/algorithms/ha.md): those of the clustering core (growth uses max(k, |GV1|);
a failed seed does not end the grouping); by default a case that fits no group keeps its place
with some terms suppressed (002 does not say what happens to it); θ may be any θ* table (002
uses one θ for all values, as a special case).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np

from .._validation import check_choice, check_fraction, check_int
from ..data.records import SuperRecords
from ..errors import ValidationError
from ..models.names import HA_MODEL
from .clustering import NEW_MD, NEW_NMD, OLD_MD, OLD_NMD
from .common import ClusteringMethod

SS_MEAN_SD = "mean+sd"
#: what becomes of a case that fits no group (with ``on_infeasible`` other than ``refuse``):
#: published with the terms that block it suppressed (the default), or withheld (002 as written)
ON_UNPLACEABLE = ("suppress-terms", "withhold")


def ha_classes(new: np.ndarray, md: np.ndarray) -> np.ndarray:
    """002's record classes (n&md, n&nmd, o&md, o&nmd) for Procedure 3."""
    return np.where(new, np.where(md, NEW_MD, NEW_NMD), np.where(md, OLD_MD, OLD_NMD))


class HA(ClusteringMethod):
    """PPMS(k, θ, α)-bounding by algorithm HA.

    Args:
        alpha: the largest share of ss-records allowed in each view, in (0, 1].
        ss_rule: ``"mean+sd"`` or a mapping ``{sensitive column: minimum term count}``.
        on_unplaceable: what becomes of a case that fits no group when ``on_infeasible`` is
            not ``refuse``: ``"suppress-terms"`` (default) publishes it with the terms that
            block it suppressed; ``"withhold"`` withholds it, as PPMS+ does (002 as written;
            the manifest counts ``withheld_cases`` and ``max_withheld`` bounds them). A case
            withheld from release i+1 that release i counted as "not md" reads as md there
            afterwards, which can break α in release i: the gate checks that and refuses.
        (other arguments: see :class:`~medanon.anonymize.common.ClusteringMethod`)
    """

    name = "ha"
    default_grouping = "classes-first"
    privacy_model = HA_MODEL
    cover = "earliest"
    needs_next_period = True

    def __init__(self, *, alpha: float, ss_rule: str | Mapping[str, int] = SS_MEAN_SD,
                 on_unplaceable: str = "suppress-terms", **kwargs):
        super().__init__(**kwargs)
        self.alpha = check_fraction(alpha, name="alpha", owner="HA")
        self.on_unplaceable = check_choice(on_unplaceable, name="on_unplaceable", owner="HA",
                                           choices=ON_UNPLACEABLE)
        if isinstance(ss_rule, str):
            if ss_rule != SS_MEAN_SD:
                raise ValidationError(f"The 'ss_rule' parameter of HA must be {SS_MEAN_SD!r} or a "
                                      f"mapping of column to minimum term count; got {ss_rule!r}.")
            self.ss_rule: str | dict[str, int] = ss_rule
        else:
            self.ss_rule = {str(c): check_int(v, name=f"ss_rule[{c!r}]", owner="HA", minimum=1)
                            for c, v in dict(ss_rule).items()}
            if not self.ss_rule:
                raise ValidationError("The 'ss_rule' parameter of HA must name at least one column.")

    @property
    def may_withhold(self) -> bool:  # type: ignore[override]
        # Release i counts a case present in period i+1 as "not md". Withholding that case
        # from release i+1 makes it md in the published series after the fact, which can break
        # α in release i's views (the gate then refuses release i+1): so by default HA keeps a
        # case that fits no group, with its blocking terms suppressed. "withhold" is 002 as
        # written (its Procedure 1 does not say what becomes of such a case; PPMS+ withholds).
        return self.on_unplaceable == "withhold"

    def parameters(self) -> dict[str, object]:
        return {**super().parameters(), "alpha": self.alpha, "ss_rule": self.ss_rule,
                "on_unplaceable": self.on_unplaceable}

    def anchor_name(self) -> str:
        return "new cases that stop in the next period (new & md)"

    def anchors_and_pool(self, new, md):
        return new & md, np.ones(len(new), dtype=bool)

    def md_flags(self, data: SuperRecords, next_cases: Collection[str] | None) -> np.ndarray:
        if next_cases is None:
            raise ValidationError("HA needs the case ids of the next period (an md-record is a case "
                                  "absent from it); pass next_cases.")
        present = set(map(str, next_cases))
        return np.array([c not in present for c in data.frame[data.schema.case_id].astype(str)],
                        dtype=bool)

    def ss_thresholds(self, per_column: dict[str, list[tuple[str, ...]]]) -> dict[str, int]:
        """Smallest term count per column that makes an ss-record (mean + SD rounded up)."""
        if isinstance(self.ss_rule, dict):
            unknown = set(self.ss_rule) - set(per_column)
            if unknown:
                raise ValidationError(f"ss_rule names column(s) {', '.join(sorted(unknown))} that are "
                                      f"not sensitive columns ({', '.join(per_column)}).")
            return dict(self.ss_rule)
        out = {}
        for column, cells in per_column.items():
            counts = np.array([len(v) for v in cells], dtype=float)
            level = float(counts.mean() + counts.std()) if len(counts) else 0.0
            out[column] = max(1, math.ceil(level - 1e-9))
        return out

    def ha_inputs(self, data, per_column, new, md, thresholds=None) -> dict:
        if thresholds is None:
            thresholds = self.ss_thresholds(per_column)
        n = len(new)
        ss = np.zeros(n, dtype=bool)
        for column, thr in thresholds.items():
            ss |= np.array([len(v) for v in per_column[column]]) >= thr
        return {"alpha": self.alpha, "ha_class": ha_classes(new, md), "ss": ss,
                "_ss_min_counts": thresholds,
                "_details": {"ss_min_counts": thresholds, "ss_records": int(ss.sum()),
                             "md_records": int(md.sum()), "new_md_records": int((new & md).sum())}}
