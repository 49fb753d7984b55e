"""A number in an attack target for a banded categorical QID (issue 19): the hierarchy says
which band holds it, or the error lists the values it takes."""

from __future__ import annotations

import pytest

from medanon.attacks.target import parse_target
from medanon.errors import ValidationError
from medanon.hierarchies import Taxonomy, age_to_mesh, mesh_age_tree
from medanon.published.cells import QidInfo

# "[0-49]" is a record value and the parent of narrower ones, as MeSH's "Adult" is: the value
# is the self leaf "[0-49] (exact)"
DECADES = Taxonomy({"*": None, "[0-49]": "*", "[0-9]": "[0-49]", "[10-19]": "[0-49]",
                    "[20-49]": "[0-49]", "[50-99]": "*"},
                   name="decades", values=("[0-49]", "[0-9]", "[10-19]", "[20-49]", "[50-99]"))


@pytest.mark.parametrize("age", [0, 0.05, 1, 5.9, 6, 18.99, 19, 32, 44, 45, 79, 80, 150])
def test_an_age_is_the_band_ingest_gives_it(age) -> None:
    target = parse_target(f"age={age}", (QidInfo("age", "categorical", mesh_age_tree()),))
    assert target.values == {"age": age_to_mesh(age)}


def test_a_hierarchy_of_intervals_gives_the_narrowest_band() -> None:
    qids = (QidInfo("age", "categorical", DECADES),)
    assert parse_target("age=15", qids).values == {"age": "[10-19]"}
    assert parse_target("age=[10-19]", qids).values == {"age": "[10-19]"}  # a label as before
    with pytest.raises(ValidationError, match=r"Give one of the 'age' hierarchy's values: "
                                              r"'\[0-49\] \(exact\)', '\[0-9\]'"):
        parse_target("age=120", qids)
    # the self leaf is the band of its node's label: 45 lies in [0-49] and [20-49] (narrower)
    assert parse_target("age=45", qids).values == {"age": "[20-49]"}
    wide = Taxonomy({"*": None, "[0-49]": "*", "[0-9]": "[0-49]", "[50-99]": "*"},
                    name="wide", values=("[0-49]", "[0-9]", "[50-99]"))
    assert parse_target("age=30", (QidInfo("age", "categorical", wide),)).values == {
        "age": "[0-49] (exact)"}


def test_a_number_for_a_hierarchy_without_bands_lists_its_values() -> None:
    sex = Taxonomy({"*": None, "F": "*", "M": "*"}, name="sex")
    with pytest.raises(ValidationError, match="no numeric bands.*'F', 'M'"):
        parse_target("sex=1", (QidInfo("sex", "categorical", sex),))
