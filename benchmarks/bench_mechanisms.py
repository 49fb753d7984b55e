"""Benchmark: throughput of the exact DP samplers (samples per second).

Prints samples/second for the exact discrete Laplace sampler (secure and seeded sources, three
scales), for its vectorized form discrete_laplace_array (10^6 samples per call, scales 10/3 and
10), for LaplaceMechanism.randomise on 20000 values, and for one exponential-mechanism selection
and one randomized response per value.

    python benchmarks/bench_mechanisms.py
    python benchmarks/bench_mechanisms.py --values 100000

Not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from medanon.mechanisms import (ExponentialMechanism, LaplaceMechanism, NoiseSource,
                                RandomizedResponse)
from medanon.random import randomness


def rate(count: int, fn) -> float:
    start = time.perf_counter()
    fn()
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=20000)
    args = parser.parse_args()
    n = args.values
    # the samplers over the one randomness type (secure, or seeded for comparison)
    sources = {"secure": lambda: NoiseSource(randomness()),
               "seeded": lambda: NoiseSource(randomness(1))}
    print(f"{'what':58} {'samples/s':>12} {'us/sample':>10}")
    # The lambdas bind their loop variables as defaults (ruff B023): rate() calls them at once,
    # but a closure over a loop variable would see only the last iteration's object if deferred.
    for kind, make in sources.items():
        for scale in (Fraction(3, 2), Fraction(10), Fraction(2 ** 20 + 1)):
            noise = make()
            r = rate(n, lambda noise=noise, scale=scale: [noise.discrete_laplace(scale) for _ in range(n)])
            print(f"{f'discrete_laplace(scale={scale}), {kind}':58} {r:12,.0f} {1e6 / r:10.1f}")
    for kind, make in sources.items():
        for scale in (Fraction(10, 3), Fraction(10)):
            noise, size = make(), 10 ** 6
            r = rate(size, lambda noise=noise, scale=scale, size=size:
                     noise.discrete_laplace_array(scale, size))
            print(f"{f'discrete_laplace_array(scale={scale}, size=1e6), {kind}':58} {r:12,.0f} "
                  f"{1e6 / r:10.3f}")
    x = np.random.default_rng(0).uniform(0, 100, n)
    for kind, make in sources.items():
        mech = LaplaceMechanism(epsilon=Fraction(1, 10), sensitivity=37.3)
        noise = make()
        r = rate(n, lambda mech=mech, noise=noise: mech.randomise(x, noise))
        print(f"{f'LaplaceMechanism.randomise({n} values), {kind}':58} {r:12,.0f} {1e6 / r:10.1f}")
    utilities = np.random.default_rng(1).normal(size=50)
    for kind, make in sources.items():
        mech, noise = ExponentialMechanism(epsilon=1, sensitivity=1), make()
        r = rate(n, lambda mech=mech, noise=noise: [mech.select(utilities, noise) for _ in range(n)])
        print(f"{f'ExponentialMechanism.select(50 candidates), {kind}':58} {r:12,.0f} "
              f"{1e6 / r:10.1f}")
    cats = [f"c{i}" for i in range(8)]
    values = [cats[i % 8] for i in range(n)]
    for kind, make in sources.items():
        rr, noise = RandomizedResponse(epsilon=1, categories=cats), make()
        r = rate(n, lambda rr=rr, noise=noise: rr.randomise(values, noise))
        print(f"{f'RandomizedResponse.randomise({n} values, 8 categories), {kind}':58} {r:12,.0f} "
              f"{1e6 / r:10.1f}")


if __name__ == "__main__":
    main()
