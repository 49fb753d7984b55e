"""Anonymization algorithms, one module per family, all with the same shape.

Configure in the constructor, work in one verb: ``Method(**params).anonymize(super_records,
previous_releases, rng=...)`` returns an :class:`AnonymizationResult`.
"""

from .base import AnonymizationResult, Anonymizer
from .ha import HA
from .ms import MSAnonymization
from .none import DropIdentifiers
from .ppms import PPMS, PPMSPlus, PPMSPlusPlus
from .ppms_dp import PPMSDPAll, PPMSDPNum

METHODS: dict[str, type[Anonymizer]] = {
    m.name: m for m in (DropIdentifiers, MSAnonymization, PPMS, PPMSPlus, PPMSPlusPlus, HA,
                        PPMSDPNum, PPMSDPAll)}

__all__ = ["HA", "METHODS", "PPMS", "AnonymizationResult", "Anonymizer", "DropIdentifiers",
           "MSAnonymization", "PPMSDPAll", "PPMSDPNum", "PPMSPlus", "PPMSPlusPlus"]
