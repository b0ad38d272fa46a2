"""First contact: what a person gets wrong at the command line is one clear line on standard
error and exit code 2 — an unreachable database, a role it refuses, a port already taken, no
API key — with the traceback only under ``tidings --debug``. And ``tidings --help`` starts
without importing the bench, the web framework or the database layer. Each case runs the real
``tidings`` command in a process of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from backends import postgres_server
from stores import SqlStores

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/tidings"  # nothing listens on port 1
KEY = "cli-test-key-0123456789"


def tidings(*args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
    return subprocess.run([sys.executable, "-m", "tidings.cli", *args],
                          env={**clean, **settings}, capture_output=True, text=True,
                          timeout=120, check=False)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line the command printed on standard error, checking exit code 2."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def wrong_role(postgresql_stores: SqlStores) -> str:
    """A URL of the running PostgreSQL server, with a role it does not have."""
    return make_url(postgres_server()).set(username="no_such_role_for_tidings",
                                           database="postgres").render_as_string()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("command", ["migrate", "serve", "worker"])
def test_an_unreachable_database_is_one_line(command: str) -> None:
    line = one_line(tidings(command, "--database-url", UNREACHABLE, TIDINGS_API_KEY=KEY))
    assert "cannot be reached" in line and "port 1" in line


@pytest.mark.parametrize("command", ["migrate", "serve", "worker"])
def test_a_role_the_database_refuses_is_one_line(command: str, wrong_role: str) -> None:
    line = one_line(tidings(command, "--database-url", wrong_role, TIDINGS_API_KEY=KEY))
    assert 'role "no_such_role_for_tidings" does not exist' in line


def test_a_taken_port_is_one_line(taken_port: int, tmp_path: object) -> None:
    line = one_line(tidings("serve", "--port", str(taken_port), "--database-url",
                            f"sqlite:///{tmp_path}/t.db", TIDINGS_API_KEY=KEY))
    assert f"127.0.0.1:{taken_port}" in line and "in use" in line


def test_no_api_key_is_one_line(tmp_path: object) -> None:
    line = one_line(tidings("serve", "--database-url", f"sqlite:///{tmp_path}/t.db"))
    assert "TIDINGS_API_KEY is not set" in line


def test_debug_shows_the_traceback(wrong_role: str) -> None:
    done = tidings("--debug", "migrate", "--database-url", wrong_role)
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")


def without_benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    """``tidings *args`` in a process whose ``sys.path`` hides the benchmarks package (as an
    installation without it)."""
    import tidings_benchmarks

    hidden = str(Path(tidings_benchmarks.__file__).resolve().parents[1])
    probe = ("import os, sys\n"
             f"sys.path[:] = [p for p in sys.path if os.path.realpath(p or '.') != {hidden!r}]\n"
             f"sys.argv = ['tidings', *{list(args)!r}]\n"
             "import tidings.cli\n"
             "tidings.cli.main()\n")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("args", [["bench"], ["bench", "--help"], ["bench", "inbox", "--help"],
                                  ["bench", "fanout", "--scale", "0.01"]])
def test_bench_without_the_benchmarks_says_how_to_install_them(args: list[str]) -> None:
    line = one_line(without_benchmarks(*args))
    assert line == ("error: the benchmarks are not installed: from a checkout of tidings, "
                    "pip install -e ./benchmarks (or run scripts/_venv.sh, which does)")


def test_help_without_the_benchmarks_still_lists_bench() -> None:
    done = without_benchmarks("--help")
    assert done.returncode == 0, done.stderr
    assert "bench" in done.stdout and "not installed" in done.stdout
    installed = tidings("--help")
    assert installed.returncode == 0 and "not installed" not in installed.stdout


def test_help_imports_neither_the_bench_nor_the_server() -> None:
    probe = ("import sys; sys.argv = ['tidings', '--help']\n"
             "import tidings.cli\n"
             "try:\n    tidings.cli.main()\nexcept SystemExit:\n    pass\n"
             "heavy = ('tidings_benchmarks.cli', 'tidings.engine', 'fastapi', 'uvicorn', "
             "'sqlalchemy', 'alembic', 'httpx')\n"
             "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert "migrate" in done.stdout  # the help was shown
    assert done.stderr.strip() == "[]"
