"""The safety checks read a fact of the private data only when they need it (issue 43): the
store's vocabulary and longest case span are scans of every ingested record, which a release
whose method names no θ term and has no life span need not pay. Given as values or as the
functions that read them, the checks decide the same."""

from __future__ import annotations

import pytest

from medanon.anonymize import PPMSPlusPlus
from medanon.errors import ValidationError
from medanon.models.theta import ProtectedTheta, base_of
from medanon.pipeline.checks import check_lifespan, check_theta_terms, run_checks


def _never() -> object:
    raise AssertionError("a fact the checks do not need was read")


def test_a_method_naming_no_term_without_lifespan_reads_neither_fact() -> None:
    method = PPMSPlusPlus(k=5, theta="frequency")
    assert run_checks(method, ["2020Q1"], published={}, vocabulary=_never,
                      reports={"2020Q1": 10}, longest_span=_never) == []


def _protecting(term: str) -> PPMSPlusPlus:
    method = PPMSPlusPlus(k=5, theta="frequency")
    return PPMSPlusPlus(k=5, theta=ProtectedTheta(base_of(method.theta), {term: 0.3}))


@pytest.mark.parametrize("lazy", [False, True])
def test_a_named_term_reads_the_vocabulary_as_a_value_or_a_function(lazy: bool) -> None:
    read: list[str] = []

    def vocabulary() -> set[str]:
        read.append("vocabulary")
        return {"Death", "Nausea"}

    given = vocabulary if lazy else vocabulary()
    assert check_theta_terms(_protecting("Death"), given, allow_unknown_terms=False) == []
    with pytest.raises(ValidationError, match="'Deaht' \\(did you mean 'Death'"):
        check_theta_terms(_protecting("Deaht"), given, allow_unknown_terms=False)
    assert check_theta_terms(_protecting("Deaht"), given, allow_unknown_terms=True) == ["Deaht"]
    assert read == ["vocabulary"] * (3 if lazy else 1)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_lifespan_reads_the_longest_span_as_a_value_or_a_function(lazy: bool) -> None:
    method = PPMSPlusPlus(k=5, theta="frequency", lifespan=2)
    for span, refused in ((2, False), (3, True)):
        given = (lambda span=span: span) if lazy else span
        if refused:
            with pytest.raises(ValidationError, match="shorter than the data's own follow-up"):
                check_lifespan(method, given, allow_short_lifespan=False)
        else:
            check_lifespan(method, given, allow_short_lifespan=False)
    # acknowledged: the span is not read at all
    check_lifespan(method, _never, allow_short_lifespan=True)  # type: ignore[arg-type]
