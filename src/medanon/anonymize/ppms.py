"""PPMS, PPMS+ and PPMS++: PPMS(k, θ*)-bounding of periodic SRS releases.

Reference: Wang & Lin, "PPMS(k, θ*)-bounding", JMIR Med Inform 2021;9(10):e28752 (paper 001),
with the pseudo-code of its appendices reconstructed in ``algorithms.md`` §1.7.

Privacy guarantee (001 Definition 6 and Theorem 1): for a target whose exact QID values an
attacker knows, after excluding every candidate a B-, F- or L-attack over the releases of the
life span can exclude, at least k candidate cases remain in the target's group, and the share of
any sensitive value s among them is at most θ_s. Mechanisms: NC-bounding (>= k new CaseIDs per
group, so removing every old case still leaves k) against B- and L-attacks; QID-covering (an old
case's QIDs are generalized to cover its earlier published value) against the F-attack;
η_s(g) = floor(θ_s·|NC(g)|) (001 Lemma 2, ``algorithms.md`` §1.3) against attribute disclosure.

Equations: IL (Eq. 1), ΔIL (Eq. 2), PR_s and PR (Eqs. 4-5), ΔIL' (Eqs. 6-7), Lemma 1 (covering
transitivity), Lemma 2 (η). Variants:

* PPMS covers the latest earlier clone (Lemma 1: it already covers the earlier ones);
* PPMS+ covers only the earliest clone ("neglecting subsequent coverings": the later clones are
  old cases, excludable anyway, so covering them protects nothing);
* PPMS++ additionally grows groups from new cases only and places old cases afterwards
  ("grouping with new cases", 001 Example 5).

Deviations from the paper (details in docs/algorithms/ppms.md): η uses max(k, |NC|) while a
group grows; the grouping continues from a new seed when one group cannot be completed; cases
that fit no group are refused or, on request, withheld; a missing QID value is treated as fully
generalized. The life span x counts periods (quarters), default: every earlier release.
"""

from __future__ import annotations

from ..models.names import PPMS_MODEL
from .common import ClusteringMethod

class PPMS(ClusteringMethod):
    """PPMS-Anonymization: covers the latest earlier clone of each old case."""

    name = "ppms"
    privacy_model = PPMS_MODEL
    cover = "latest"


class PPMSPlus(ClusteringMethod):
    """PPMS+-Anonymization: covers only the earliest clone (neglecting subsequent coverings)."""

    name = "ppms+"
    privacy_model = PPMS_MODEL
    cover = "earliest"


class PPMSPlusPlus(ClusteringMethod):
    """PPMS++-Anonymization: PPMS+ whose groups are grown from new cases only."""

    name = "ppms++"
    privacy_model = PPMS_MODEL
    cover = "earliest"
    new_cases_first = True
    default_grouping = "classes-first"
