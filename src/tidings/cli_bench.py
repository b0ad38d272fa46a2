"""``tidings bench`` as a command group loaded only when it runs: the bench pulls in the whole
engine, the drivers and the load generators, which ``tidings --help`` or ``tidings migrate``
never need (start-up stays well under a second)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup


class LazyBench(TyperGroup):
    """``tidings bench``, whose commands are imported only when they are asked for: the
    bench pulls in the whole engine, the drivers and the load generators, which
    ``tidings --help`` or ``tidings migrate`` never need."""

    _loaded: TyperGroup | None = None

    @property
    def commands(self) -> MutableMapping[str, Any]:
        if self._loaded is None:
            try:
                from tidings.bench.cli import bench_app
            except ImportError:  # the bench package is optional in trimmed installs
                return {}
            group = typer.main.get_command(bench_app)
            assert isinstance(group, TyperGroup)
            self._loaded = group
        return self._loaded.commands

    @commands.setter
    def commands(self, _value: MutableMapping[str, Any]) -> None:
        """The bench's own commands stand for those typer registers (none)."""


def bench_help() -> str:
    """The bench's one-line help, or a note that this installation has no bench."""
    try:
        from tidings.bench import HELP
    except ImportError:
        return "Benchmarks (not in this installation)."
    return HELP
