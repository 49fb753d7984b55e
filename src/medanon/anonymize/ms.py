"""MS-Anonymization: MS(k, θ*)-bounding for a single release (Lin, Yang, Wang, BMC MIDM 2016).

Reference: the 2016 paper's abstract and its use in papers 000-002; the definitions are
reconstructed in ``algorithms.md`` §2 (2.1 model, 2.3 algorithm). This is the baseline that
papers 001 and 002 beat: it ignores earlier releases, so follow-ups that share a CaseID across
quarters let B-, F- and L-attacks exclude candidates (001 reports DIR 0.61-0.80 for it).

Privacy guarantee (one release in isolation): every group holds >= k cases and, for every
sensitive value s, at most floor(θ_s·|g|) of its cases hold s. Nothing is guaranteed once an
attacker links this release to others by CaseID.

Equations: IL (001 Eq. 1, Byun et al.), ΔIL and ΔIL' = ΔIL × PR (001 Eqs. 2-7), PR (001 Eqs. 4-5)
with η_s(g) = floor(θ_s·|g|), max(k, |g|) while a group grows (``algorithms.md`` §2.3).
Deviations: those of the shared clustering core (``clustering.py``), see docs/algorithms/ms.md.
"""

from __future__ import annotations

import numpy as np

from ..models.names import MS_MODEL
from .common import ClusteringMethod


class MSAnonymization(ClusteringMethod):
    """MS(k, θ*)-bounding of one release (the single-release baseline)."""

    name = "ms"
    privacy_model = MS_MODEL
    periodic = False
    cover = None

    def anchors_and_pool(self, new, md):
        everyone = np.ones(len(new), dtype=bool)
        return everyone, everyone.copy()

    def anchor_name(self) -> str:
        return "cases"
