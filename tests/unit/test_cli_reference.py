"""docs/cli.md is the CLI's own help, so the command reference cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

from medanon.cli.reference import command_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_command_reference_is_the_clis_help() -> None:
    assert DOC.read_text(encoding="utf-8") == command_reference(), (
        "docs/cli.md is stale: regenerate it with `python -m medanon.cli.reference > docs/cli.md`")


def test_the_reference_holds_every_command_and_subcommand() -> None:
    text = command_reference()
    for name in ("ingest", "plan", "release", "verify", "export", "report", "signals",
                 "evaluate", "synth faers", "synth table", "synth ehr"):
        assert f"\n## medanon {name}\n" in text
        assert f"Usage: medanon {name} [OPTIONS]" in text


def test_help_lists_the_commands_in_workflow_order() -> None:
    """`medanon --help` reads as the holder meets the commands (issue 44): try it, then a
    quarter from ingest to report, then the analyst's, evaluator's and one-off commands."""
    from medanon.cli.app import WORKFLOW_ORDER

    text = command_reference()
    listed = [line.split()[0] for line in text.split("Commands:\n", 1)[1].split("```")[0]
              .splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(WORKFLOW_ORDER)
    assert listed.index("ingest") < listed.index("plan") < listed.index("release") \
        < listed.index("verify") < listed.index("export") < listed.index("report")
