"""``tidings bench``: the command group of the benchmarks package (``tidings_benchmarks``, in the
repository's ``benchmarks/``), loaded only when it runs: the bench pulls in the whole engine, the
drivers and the load generators, which ``tidings --help`` or ``tidings migrate`` never need
(start-up stays well under a second). Without the package, ``tidings bench …`` says in one line
how to install it."""

from __future__ import annotations

import importlib.util
from collections.abc import MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup

from tidings.cli_errors import CommandError

PACKAGE = "tidings_benchmarks"
NOT_INSTALLED = ("the benchmarks are not installed: from a checkout of tidings, "
                 "pip install -e ./benchmarks (or run scripts/_venv.sh, which does)")


def installed() -> bool:
    """Whether the benchmarks package can be imported (found, not yet imported)."""
    return importlib.util.find_spec(PACKAGE) is not None


class LazyBench(TyperGroup):
    """``tidings bench``, whose commands are imported only when they are asked for."""

    _loaded: TyperGroup | None = None

    @property
    def commands(self) -> MutableMapping[str, Any]:
        if self._loaded is None:
            if not installed():
                return {}
            from tidings_benchmarks.cli import bench_app

            group = typer.main.get_command(bench_app)
            assert isinstance(group, TyperGroup)
            self._loaded = group
        return self._loaded.commands

    @commands.setter
    def commands(self, _value: MutableMapping[str, Any]) -> None:
        """The bench's own commands stand for those typer registers (none)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # before the group's own options (--help among them) are read
        if not installed():
            raise CommandError(NOT_INSTALLED)
        return super().parse_args(ctx, args)


def bench_help() -> str:
    """The bench's one-line help, or a note that this installation has no bench."""
    if not installed():
        return "Benchmarks (not installed: pip install -e ./benchmarks)."
    from tidings_benchmarks import HELP

    return HELP
