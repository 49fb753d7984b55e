"""Anonymization algorithms, one module per family, all with the same shape.

Configure in the constructor, work in one verb: ``Method(**params).anonymize(super_records,
previous_releases, rng=...)`` returns an :class:`AnonymizationResult`.
"""

from .base import AnonymizationResult, Anonymizer
from .none import DropIdentifiers

METHODS: dict[str, type[Anonymizer]] = {DropIdentifiers.name: DropIdentifiers}

__all__ = ["METHODS", "AnonymizationResult", "Anonymizer", "DropIdentifiers"]
