"""Randomness: secure by default, reproducible only on explicit request.

Every random choice in medanon goes through a :class:`RandomSource`. Without a seed it draws
256 bits from the operating system's entropy pool (``secrets``) to seed NumPy's PCG64 stream,
so no two runs share a stream and nobody can replay one. A seed makes a run reproducible for
tests and research; the source remembers that it was seeded, manifests record it, and the
release store refuses to publish a seeded release unless the caller explicitly allows it.

Privacy guarantee: this module only *chooses* seeds. Differential-privacy noise is sampled by the
mechanisms in ``medanon.mechanisms``, which use samplers that resist floating-point attacks; a
PCG64 stream is fine for tie-breaking and seed selection in clustering, not for DP noise.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import numpy as np

from ._validation import check_int
from .errors import ValidationError


@dataclass(frozen=True)
class RandomSource:
    """A NumPy generator plus the record of how it was seeded.

    Attributes:
        seed: the seed given by the caller, or None for an OS-entropy seeded source.
        generator: the NumPy generator to draw from.
    """

    seed: int | None
    generator: np.random.Generator = field(repr=False, compare=False)

    @property
    def seeded(self) -> bool:
        """True when the caller fixed the seed (the run is reproducible, not secret)."""
        return self.seed is not None

    @property
    def kind(self) -> str:
        """``"seeded"`` or ``"secure"``, as written into manifests."""
        return "seeded" if self.seeded else "secure"

    def describe(self) -> dict[str, object]:
        """The manifest entry for this source."""
        return {"kind": self.kind, "seed": self.seed}


def make_random_source(seed: int | None = None) -> RandomSource:
    """Create a secure source (``seed=None``) or a reproducible seeded one.

    Raises:
        ValidationError: when the seed is not a non-negative integer.
    """
    if seed is None:
        entropy = secrets.randbits(256)
        return RandomSource(None, np.random.Generator(np.random.PCG64(entropy)))
    seed = check_int(seed, name="seed", owner="make_random_source", minimum=0)
    return RandomSource(seed, np.random.default_rng(seed))


def refuse_seeded_release(seeded: bool, allow_seeded: bool) -> None:
    """The one rule for every command that publishes: a seeded (hence non-secret) random run
    is published only when ``--allow-seeded`` says so.

    Raises:
        ValidationError: ``seeded`` without ``allow_seeded``.
    """
    if seeded and not allow_seeded:
        raise ValidationError("A seeded run is reproducible by anyone who knows the seed; "
                              "publishing it needs --allow-seeded (for tests and research only).")
