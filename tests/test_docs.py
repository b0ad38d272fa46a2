"""The README documents every command, option group and setting (sqlite-utils' rule)."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from tidings.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    group = typer.main.get_command(app)
    names = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None)
        if subcommands:
            names += [f"{name} {sub}" for sub in subcommands]
        else:
            names.append(name)
    return names


def test_every_command_is_in_the_readme() -> None:
    missing = [name for name in _commands() if f"tidings {name}" not in README]
    assert not missing, f"README does not document: {missing}"


def test_every_setting_is_in_the_readme() -> None:
    source = (ROOT / "src" / "tidings" / "config.py").read_text(encoding="utf-8")
    settings = set(re.findall(r'"(TIDINGS_[A-Z_]+)"', source))
    assert settings, "config.py reads no TIDINGS_* settings?"
    missing = sorted(s for s in settings if s not in README)
    assert not missing, f"README does not document: {missing}"


def test_readme_starts_with_the_two_commands() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    assert "scripts/demo" in first_block and "scripts/test" in first_block
    for script in ("scripts/demo", "scripts/test"):
        assert (ROOT / script).exists(), script


def test_docs_links_resolve() -> None:
    for link in re.findall(r"\]\((docs/[^)]+)\)", README):
        assert (ROOT / link).exists(), link
