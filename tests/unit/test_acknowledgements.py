"""The steward's acknowledgements of a series release are one value (issue 44): each override
the manifest records is listed in OVERRIDES order, and a value that is not True or False is
refused by name rather than read as truthy."""

import pytest

from medanon.errors import ValidationError
from medanon.pipeline.checks import NOTHING_ACKNOWLEDGED, OVERRIDES, Acknowledgements


def test_the_recorded_overrides_follow_overrides_order_and_leave_out_the_rest():
    assert NOTHING_ACKNOWLEDGED.recorded == []
    everything = Acknowledgements(unprotected=True, unknown_terms=True, gap=True,
                                  short_lifespan=True, seeded=True, violations=True)
    assert everything.recorded == list(OVERRIDES)
    # seeded and violations are recorded elsewhere (randomness, verification), not as overrides
    assert Acknowledgements(seeded=True, violations=True).recorded == []
    assert Acknowledgements(short_lifespan=True, gap=True).recorded == ["allow_gap",
                                                                        "allow_short_lifespan"]


@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_value_that_is_not_a_bool_is_refused_by_name(value):
    with pytest.raises(ValidationError, match="The 'gap' parameter of Acknowledgements must be "
                                              "True or False"):
        Acknowledgements(gap=value)  # type: ignore[arg-type]
