"""Publisher's typed keywords (issue 44): one publisher per family (SeriesPublisher,
TablePublisher, EhrPublisher), each constructor showing every parameter its family's factory
takes, with the same defaults; Publisher's overloads are those constructors; the name and choice
aliases equal the registries they mirror. What a type checker makes of them is checked by mypy
on tests/typing (.ci/run)."""

import inspect
from pathlib import Path
import warnings
import typing

import pytest

import medanon
from medanon import api
from medanon.anonymize.common import GROUPINGS, ON_INFEASIBLE
from medanon.anonymize.ha import ON_UNPLACEABLE
from medanon.anonymize.ipa import SELECTIONS
from medanon.anonymize.ppms_dp import VARIANTS
from medanon.mechanisms.coarsening import LABEL_MECHANISMS
from medanon.pipeline.case_ids import CASE_ID_MODES
from medanon.pipeline.ehr import TIME_RESOLUTIONS
from medanon.pipeline.methods import (EHR_METHODS, PERIODIC_METHODS, TABLE_METHODS, ehr_method,
                                      periodic_method, table_method)

#: keywords every overload of a family shows beside its factory's own
_COMMON = {"seed", "rng"}
_CASE_IDS = {"case_ids", "case_key"}


def _hints(candidate) -> dict[str, object]:
    # api imports these for annotations only (TYPE_CHECKING), so they are given here
    from medanon.anonymize.base import Anonymizer
    from medanon.pipeline.policy import SeriesPolicy

    return typing.get_type_hints(candidate, globalns={**vars(api), "Anonymizer": Anonymizer,
                                                      "SeriesPolicy": SeriesPolicy})


def _literals(annotation) -> set[object]:
    """The values of every Literal in ``annotation`` (a Literal, or a union holding some)."""
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    return {v for arg in typing.get_args(annotation) for v in _literals(arg)}


def _overload_for(first_name: str) -> inspect.Signature:
    """The overload of Publisher whose ``method`` takes the name ``first_name``."""
    for candidate in typing.get_overloads(medanon.Publisher.__new__):
        if first_name in _literals(_hints(candidate)["method"]):
            return inspect.signature(candidate)
    raise AssertionError(f"no overload of Publisher takes {first_name!r}")


def _keywords(signature: inspect.Signature) -> dict[str, object]:
    return {p.name: p.default for p in signature.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


@pytest.mark.parametrize("alias, registry", [
    (api.PeriodicMethodName, PERIODIC_METHODS), (api.TableMethodName, TABLE_METHODS),
    (api.EhrMethodName, EHR_METHODS)])
def test_name_aliases_are_the_registry_in_either_case(alias, registry):
    assert set(typing.get_args(alias)) == {n for m in registry for n in (m, m.upper())}


@pytest.mark.parametrize("alias, choices", [
    (api.OnInfeasible, ON_INFEASIBLE), (api.Grouping, GROUPINGS),
    (api.OnUnplaceable, ON_UNPLACEABLE), (api.DpVariant, VARIANTS),
    (api.LabelMechanism, LABEL_MECHANISMS), (api.CaseIdMode, CASE_ID_MODES),
    (api.TimeResolution, tuple(TIME_RESOLUTIONS)), (api.IpaSelection, SELECTIONS)])
def test_choice_aliases_are_the_choices_the_checks_take(alias, choices):
    assert set(typing.get_args(alias)) == set(choices)


FAMILIES = [("ppms++", periodic_method, _CASE_IDS, api.SeriesPublisher),
            ("ipa", table_method, set(), api.TablePublisher),
            ("clinsimrr", ehr_method, set(api._EHR_RUN) | set(api._EHR_PUBLISH), api.EhrPublisher)]


@pytest.mark.parametrize("name, factory, extra, family", FAMILIES)
def test_each_family_publisher_shows_every_parameter_with_its_default(name, factory, extra,
                                                                      family):
    shown = _keywords(inspect.signature(family))
    # Publisher's overload for the family is the family's constructor, keyword for keyword
    assert _keywords(_overload_for(name)) == shown
    taken = _keywords(inspect.signature(factory))
    assert set(shown) == set(taken) | _COMMON | extra
    defaults = {**taken, **api._EHR_RUN, **api._EHR_PUBLISH} if name == "clinsimrr" else taken
    for keyword, default in defaults.items():
        assert shown[keyword] == default, keyword
    # every name of the family is covered by this overload, and no other overload claims it
    for method in {"ppms++": PERIODIC_METHODS, "ipa": TABLE_METHODS,
                   "clinsimrr": EHR_METHODS}[name]:
        assert _overload_for(method) == _overload_for(name)


@pytest.mark.parametrize("name, factory, extra, family", FAMILIES)
def test_publisher_makes_the_familys_publisher(name, factory, extra, family):
    made = medanon.Publisher(name.upper(), epsilon=1) if family is not api.SeriesPublisher else \
        medanon.Publisher(name.upper(), k=5, theta=0.5)
    assert type(made) is family and isinstance(made, medanon.Publisher)
    assert made.family == {"ppms++": "periodic", "ipa": "table", "clinsimrr": "ehr"}[name]
    # the family's constructor, called directly, makes the same publisher
    direct = family(name, epsilon=1) if family is not api.SeriesPublisher else \
        family(name, k=5, theta=0.5)
    assert direct.parameters == made.parameters and direct.name == made.name
    # a keyword of another family is refused by name, through either door
    with pytest.raises(medanon.ValidationError, match="'threshold' parameter of Publisher does "
                                                      "not apply" if name != "ipa" else
                                                      "'theta' parameter of Publisher does not"):
        medanon.Publisher(name, **({"threshold": 3} if name != "ipa" else {"theta": 0.5}))


def test_a_configured_policy_has_an_overload_without_method_parameters():
    from medanon.pipeline.policy import SeriesPolicy

    for candidate in typing.get_overloads(medanon.Publisher.__new__):
        hints = _hints(candidate)
        if SeriesPolicy in typing.get_args(hints["method"]):
            assert set(_keywords(inspect.signature(candidate))) == _COMMON | _CASE_IDS
            return
    raise AssertionError("no overload of Publisher takes a SeriesPolicy")


@pytest.mark.parametrize("make, told", [
    (lambda: medanon.Publisher("ppms++", k=-3, theta=0.2), "The 'k' parameter of Publisher"),
    (lambda: medanon.Publisher("PPMS++", k=5), "The 'theta' parameter of Publisher"),
    (lambda: medanon.Publisher("ppms-dp-all", k=5, theta=0.2, epsilon=1, dp_variant="x"),
     "The 'dp_variant' parameter of Publisher"),
    (lambda: medanon.Publisher("ppms++", k=5, theta=2), "The 'theta' parameter of Publisher"),
    (lambda: medanon.Publisher("dphist"), "The 'epsilon' parameter of Publisher"),
    (lambda: medanon.Publisher("clinsimrr", epsilon=1, gamma=-1),
     "The 'gamma' parameter of Publisher")])
def test_errors_name_the_callers_keyword(make, told):
    with pytest.raises(medanon.ValidationError) as raised:
        make()
    assert str(raised.value).startswith(told)
    for internal in ("periodic_method", "table_method", "ehr_method", "PPMS", "ClinSimRR"):
        assert f"parameter of {internal}" not in str(raised.value)


def test_publish_warns_of_terms_left_at_theta_one(tmp_path):
    data = medanon.Dataset.synthetic_faers(tmp_path / "faers", periods=1, cases=300, seed=3)
    with pytest.warns(api.UnboundedTermsWarning, match=r"theta = 1 \(no limit\) leaves") as caught:
        series = medanon.Publisher("ppms++", k=5, theta="frequency", seed=1).publish(data)
    (release,) = series.releases_published
    assert release.unbounded_terms, "the frequency rule leaves the most frequent terms at 1"
    message = str(caught[0].message)
    assert all(repr(t) in message for t in release.unbounded_terms[:10])
    assert caught[0].filename == __file__  # told at the caller's line, not inside medanon
    # a uniform theta below 1 leaves none: no warning (any warning fails the test here)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        medanon.Publisher("ppms++", k=5, theta=0.5, seed=1).publish(data)


def test_type_checkers_see_every_public_name():
    """``medanon``'s names are imported lazily at run time; its stub (__init__.pyi) imports the
    same names from the modules _PUBLIC says, so that a type checker sees each one."""
    import ast

    tree = ast.parse((Path(medanon.__file__).parent / "__init__.pyi").read_text())
    seen = {alias.asname or alias.name: "medanon." + (node.module or "")
            for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == medanon._PUBLIC
