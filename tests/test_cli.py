"""The command line as a new user meets it: --version, and help that reads cleanly."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from tidings import __version__
from tidings.cli import app

runner = CliRunner()
COMMANDS = [[], ["serve"], ["worker"], ["demo"], ["migrate"], ["import"], ["jobs"], ["bounce"],
            ["types"], ["bench"], ["bench", "inbox"], ["bench", "fanout"], ["bench", "http"]]


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"tidings {__version__}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "tidings")
def test_help_shows_no_type_placeholders(command: list[str]) -> None:
    """Options read `--port PORT`, flags `--clear`: never `--help <bool>` or `--store <str>`."""
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    options = [line for line in result.output.splitlines() if line.lstrip().startswith("--")]
    assert options
    assert not [line for line in options if re.search(r"<[a-z ]+>", line)], result.output


def test_bench_help_explains_the_workload_names() -> None:
    result = runner.invoke(app, ["bench", "--help"])
    for name, meaning in (("W2", "inbox"), ("W3", "fanout"), ("W4", "http")):
        assert re.search(rf"{meaning} is {name}", result.output), result.output
