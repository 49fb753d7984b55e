"""Differential-privacy mechanisms with floating-point-safe samplers.

- :class:`LaplaceMechanism`: real values, exactly ε-DP via grid rounding plus exact discrete
  Laplace noise (the OpenDP approach; defeats Mironov's 2012 floating-point attack).
- :class:`ExponentialMechanism`: selection (McSherry and Talwar 2007), log-space, Gumbel-max.
- :class:`RandomizedResponse`: k-ary randomized response (Warner 1965; Kairouz et al. 2016).
- :class:`NoiseSource`: their only randomness; secure (OS CSPRNG) by default, seeded for tests.

Each mechanism exposes ``name``, the exact per-invocation ``epsilon`` (a Fraction, δ = 0) and
``describe()``; the privacy accounting (:mod:`medanon.accounting`) records them.
"""

from .exponential import ExponentialMechanism
from .laplace import LaplaceMechanism
from .noise import NoiseSource, to_fraction
from .randomized_response import RandomizedResponse

__all__ = ["ExponentialMechanism", "LaplaceMechanism", "NoiseSource", "RandomizedResponse",
           "to_fraction"]
