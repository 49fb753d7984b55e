"""What a type checker makes of Publisher's keywords (issue 44). Not a pytest module: `mypy`
checks this file with src/medanon (pyproject's [tool.mypy] files), and warn_unused_ignores turns
each `# type: ignore[...]` below into an assertion: if the call stopped being an error, the
ignore would be unused and mypy would fail."""

from medanon import Publisher
from medanon.api import PeriodicMethodName
from medanon.pipeline.policy import SeriesPolicy

# accepted: each family's own keywords, in either case of the name
Publisher("ppms++", k=5, theta="frequency", protect={"Death": 0.3}, seed=1)
Publisher("PPMS++", k=5, theta=0.2, on_infeasible="raise-theta")
Publisher("ha", k=5, theta=0.2, alpha=0.25, on_unplaceable="withhold")
Publisher("ppms-dp-all", k=5, theta=0.2, epsilon=1, dp_variant="paper")
Publisher("ipa", epsilon=1, threshold=2)
Publisher("clinsimrr", epsilon=1, gamma=0.05, sensitive="va-7332", time_resolution="hour")
Publisher(SeriesPolicy.ppms_plus_plus(k=5, theta=0.2), case_ids="real")


def by_name(name: str) -> Publisher:
    # a name known only at run time is typed as the alias it must be
    from typing import cast

    return Publisher(cast(PeriodicMethodName, name), k=5, theta=0.2)


# refused: a misspelt keyword, another family's keyword, a choice that does not exist
Publisher("ppms++", kk=5, theta=0.2)  # type: ignore[call-overload]  # the check under test
Publisher("ipa", epsilon=1, gamma=0.1)  # type: ignore[call-overload]  # the check under test
Publisher("ppms++", k=5, theta=0.2, on_infeasible="raise")  # type: ignore[call-overload]  # the check under test
Publisher("clinsimrr", epsilon=1, k=5)  # type: ignore[call-overload]  # the check under test
Publisher(SeriesPolicy.ppms_plus_plus(k=5, theta=0.2), k=3)  # type: ignore[call-overload]  # the check under test
