"""The README documents every command, option group and setting (sqlite-utils' rule)."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from tidings.cli import app

ROOT = Path(__file__).resolve().parents[2]
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


def test_every_option_the_command_table_lists_is_one_each_command_takes() -> None:
    """A row naming several commands (`tidings bench timelines`, `tidings bench inbox`, …)
    lists only options every one of them takes."""
    group = typer.main.get_command(app)
    by_name: dict[str, set[str]] = {}
    for name in _commands():
        command = group
        for part in name.split():
            command = command.commands[part]  # type: ignore[attr-defined]
        by_name[name] = {opt for param in command.params
                         for opt in (*param.opts, *param.secondary_opts)}
    rows = [line for line in README.splitlines() if line.startswith("| `tidings ")]
    assert rows
    wrong = []
    for row in rows:
        cell = row.split(" | ")[0]
        named = [n for n in re.findall(r"`tidings ([a-z -]+?)(?: \[|`)", cell) if n in by_name]
        for option in re.findall(r"(--[a-z-]+)", cell):
            wrong += [f"tidings {n} {option}" for n in named if option not in by_name[n]]
    assert not wrong, f"README lists options these commands refuse: {wrong}"
