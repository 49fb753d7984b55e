"""Differential-privacy mechanisms with floating-point-safe samplers, all of one protocol.

- :class:`Mechanism`: the base class: ε (exact) and Δ validated at construction, the shared
  accessors, and the privacy map :meth:`~Mechanism.privacy_loss`. Every sampling verb takes an
  optional :class:`~medanon.accounting.Accountant` and reports its own loss to it before drawing
  (design rule 4: the accountant sums what the mechanisms that ran report).
- :class:`LaplaceMechanism`: real values, exactly ε-DP via grid rounding plus exact discrete
  Laplace noise (the OpenDP approach; defeats Mironov's 2012 floating-point attack).
- :class:`DiscreteLaplaceMechanism`: integer values (counts, thresholds), exact discrete Laplace.
- :class:`ExponentialMechanism`: selection (McSherry and Talwar 2007), log-space, Gumbel-max.
- :class:`RandomizedResponse`: k-ary randomized response (Warner 1965; Kairouz et al. 2016).
- :class:`BlockRandomizedResponse`: ClinSimRR's block-structured, utility-optimized randomized
  response over a protected set (Bonomi et al. 2023; uRR of Murakami and Kawamoto 2019 at b = 1).
- :class:`NoiseSource`: the exact samplers they draw from, over the bits of the
  :class:`~medanon.random.Randomness` a caller passes (secure, OS CSPRNG, by default; seeded for
  tests and research); never over its PCG64 generator.
- :mod:`.likelihood`: the other direction, for attackers: the probability of a published value
  given a true value under the strict PPMS-DP Laplace and exponential perturbations (pure
  functions; the samplers are unchanged).
- :mod:`.coarsening`: hierarchy labels published at a level chosen from ε (PPMS-DP_all's
  ``label_confidence``): the published label's distribution under 000's exponential draw cut to
  a level or randomized response over a level's labels, and the level rule (issue 22).
"""

from .base import Mechanism
from .block_rr import BlockRandomizedResponse
from .discrete_laplace import DiscreteLaplaceMechanism
from .exponential import ExponentialMechanism
from .laplace import LaplaceMechanism
from .noise import NoiseSource, to_fraction
from .randomized_response import RandomizedResponse

__all__ = ["BlockRandomizedResponse", "DiscreteLaplaceMechanism", "ExponentialMechanism",
           "LaplaceMechanism", "Mechanism", "NoiseSource", "RandomizedResponse", "to_fraction"]
