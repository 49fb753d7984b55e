"""One randomness type: secure by default, seeded on request, exact bits for DP noise and a
generator for the other choices, one description in every manifest."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import medanon
import medanon.random as random_module
from medanon.anonymize.dphist import DPHistogram
from medanon.anonymize.ipa import IPA
from medanon.errors import ValidationError
from medanon.mechanisms import (BlockRandomizedResponse, DiscreteLaplaceMechanism,
                                ExponentialMechanism, LaplaceMechanism, RandomizedResponse)
from medanon.random import Randomness, randomness, refuse_seeded_release


class Tripwire:
    """Stands in for a generator that must not be read."""

    def __getattr__(self, name):
        raise AssertionError(f"the PCG64 generator was read ({name}) by a DP sampler")


def secure_without_generator() -> Randomness:
    rng = randomness()
    rng._generator = Tripwire()  # the test replaces the non-DP half
    return rng


@pytest.fixture(scope="module")
def table():
    return medanon.Table.synthetic(400, seed=2)


def test_secure_by_default_and_seeded_on_request():
    secure = randomness()
    assert secure.kind == "secure" and not secure.seeded and secure.bits.secure
    assert secure.describe()["seed"] is None
    a, b = randomness(3), randomness(3)
    assert a.kind == "seeded" and a.seed == 3
    assert a.bits.randbits(64) == b.bits.randbits(64)
    assert a.generator.random() == b.generator.random()
    assert randomness((3, 1)).seed == (3, 1) and randomness((3, 1)).describe()["seed"] == [3, 1]
    for bad in (-1, 1.5, "7", True, ()):
        with pytest.raises(ValidationError, match="'seed' parameter of randomness"):
            randomness(bad)


def test_the_generator_and_the_bits_are_independent_streams():
    rng = randomness(11)
    bits = rng.bits.words(4).tolist()
    assert rng.generator.bit_generator.random_raw(4).tolist() != bits
    # The bits are PCG64 on SeedSequence(seed) (what NoiseSource.seeded always drew); the
    # generator is its first spawned child, so it is neither that stream nor default_rng(seed)'s.
    assert bits == np.random.PCG64(11).random_raw(4).tolist()
    child = np.random.SeedSequence(11).spawn(1)[0]
    assert randomness(11).generator.random() == np.random.default_rng(child).random()


def test_secure_dp_samplers_read_the_os_csprng_only(monkeypatch, table):
    calls = {"randbits": 0, "token_bytes": 0}
    real_randbits, real_token_bytes = random_module.secrets.randbits, random_module.secrets.token_bytes

    def randbits(k):
        calls["randbits"] += 1
        return real_randbits(k)

    def token_bytes(n):
        calls["token_bytes"] += 1
        return real_token_bytes(n)

    monkeypatch.setattr(random_module.secrets, "randbits", randbits)
    monkeypatch.setattr(random_module.secrets, "token_bytes", token_bytes)
    rng = secure_without_generator()           # any read of the generator fails the test
    LaplaceMechanism(epsilon=1, sensitivity=1).randomise([1.0, 2.0], rng)
    DiscreteLaplaceMechanism(epsilon=1, sensitivity=1).randomise([1, 2], rng)
    ExponentialMechanism(epsilon=1, sensitivity=1).select([0.0, 1.0, 2.0], rng)
    RandomizedResponse(epsilon=1, categories=["a", "b", "c"]).randomise(["a", "c"], rng)
    BlockRandomizedResponse(epsilon=1, blocks=np.arange(4)[:, None]).randomise([0, 3, -1], rng)
    IPA(epsilon=1).anonymize(table.data, noise=rng)
    DPHistogram(epsilon=1).anonymize(table.data, noise=rng)
    release = medanon.Publisher("ipa", epsilon=1, rng=rng).publish(table)
    assert release.manifest["rng"]["kind"] == "secure"
    assert calls["randbits"] + calls["token_bytes"] > 0


def test_a_numpy_generator_is_refused_where_randomness_is_passed(table):
    with pytest.raises(ValidationError, match="'rng' parameter of Publisher must be a Randomness"):
        medanon.Publisher("ipa", epsilon=1, rng=np.random.default_rng(1))
    with pytest.raises(ValidationError, match="'noise' parameter of IPA.anonymize must be a "
                                              "Randomness"):
        IPA(epsilon=1).anonymize(table.data, noise=np.random.default_rng(1))
    from medanon.pipeline.clinsim import run_clinsim

    with pytest.raises(ValidationError, match="'rng' parameter of run_clinsim"):
        run_clinsim(medanon.EhrRecords.synthetic(50, seed=1).data, method="umaxrr", epsilon=1,
                    rng=np.random.default_rng(1))
    with pytest.raises(ValidationError, match="--allow-seeded"):
        refuse_seeded_release(True, False)


def test_pickling_continues_a_seeded_stream_and_refreshes_a_secure_one():
    rng = randomness(5)
    rng.bits.randbits(7), rng.generator.random()
    copy = pickle.loads(pickle.dumps(rng))
    assert [rng.bits.randbits(13) for _ in range(5)] == [copy.bits.randbits(13) for _ in range(5)]
    assert rng.generator.random() == copy.generator.random()
    fresh = pickle.loads(pickle.dumps(randomness()))
    assert fresh.kind == "secure" and fresh.bits.secure


def test_one_publisher_one_stream_one_manifest_entry(table):
    rng = randomness(9)
    publisher = medanon.Publisher("dphist", epsilon=1, rng=rng)
    first, second = publisher.publish(table), publisher.publish(table)
    # the stream continues (a second release gets new noise), and both say where it came from
    assert not first.rows.equals(second.rows)
    assert first.manifest["rng"] == second.manifest["rng"] == randomness(9).describe()
    again = medanon.Publisher("dphist", epsilon=1, seed=9).publish(table)
    assert again.rows.equals(first.rows)
    ehr = medanon.Publisher("umaxrr", epsilon=1, seed=4).publish(
        medanon.EhrRecords.synthetic(120, seed=3))
    assert ehr.manifest["rng"] == randomness(4).describe()
    # the seed reproduces the release's randomness, never the pseudonym key (issue 29)
    assert ehr.manifest["identifiers"]["key"].startswith("fresh per release, from OS entropy")
