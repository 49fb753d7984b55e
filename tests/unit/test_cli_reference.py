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
