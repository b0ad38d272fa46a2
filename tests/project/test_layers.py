"""The layering holds: import-linter's contracts (pyproject.toml), no import circle inside the
package, no private name used across packages, the pure layers load no template files, and only
the tests of ``tests/sql`` read tables."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import grimp
import pytest

from parsing import parse

SRC = Path(__file__).resolve().parents[2] / "src" / "tidings"
ROOT = SRC.parent.parent
TESTS = ROOT / "tests"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def test_import_linter_contracts_are_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is not installed (it is in the test extras)"
    done = subprocess.run([lint, "--no-logo", "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _cycle(graph: grimp.ImportGraph, modules: set[str]) -> list[str] | None:
    """One import cycle among ``modules`` (direct imports, lazy ones included), if any."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module) & modules):
            if state.get(imported) == 1:
                return [*stack[stack.index(imported):], imported]
            if imported not in state:
                found = visit(imported)
                if found:
                    return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(modules):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_import_circle_in_the_package() -> None:
    graph = grimp.build_graph("tidings", cache_dir=None)
    modules = {m for m in graph.modules if m.startswith("tidings.")
               and ".migrations" not in m}
    assert _cycle(graph, modules) is None, " -> ".join(_cycle(graph, modules) or [])


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("x.a", "x.b", "x.c"):
        graph.add_module(name)
    graph.add_import(importer="x.a", imported="x.b")
    graph.add_import(importer="x.b", imported="x.c")
    assert _cycle(graph, {"x.a", "x.b", "x.c"}) is None
    graph.add_import(importer="x.c", imported="x.a")
    assert _cycle(graph, {"x.a", "x.b", "x.c"}) is not None


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def _private_uses(module: str, path: Path) -> list[str]:
    """Names starting with one underscore that ``module`` takes from another package."""
    tree = parse(path)
    aliases: dict[str, str] = {}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tidings"):
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if alias.name.startswith("_") and not alias.name.startswith("__") \
                        and _package(node.module) != _package(module):
                    uses.append(f"{module}: from {node.module} import {alias.name}")
                aliases[alias.asname or alias.name] = target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tidings"):
                    aliases[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__") and isinstance(node.value, ast.Name):
            owner = aliases.get(node.value.id)
            if owner and _package(owner) != _package(module):
                uses.append(f"{module}: {node.value.id}.{node.attr}")
    return uses


def test_no_private_name_is_used_across_packages() -> None:
    uses = [use for module, path in _modules().items() for use in _private_uses(module, path)]
    assert uses == []


def test_the_private_name_check_finds_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from tidings.store.sql.core.errors import _first_line\n"
                     "from tidings.channels import email\nemail._templates()\n")
    assert len(_private_uses("tidings.api.probe", probe)) == 2


@pytest.mark.parametrize("layer", ["domain", "services", "ports", "fanout", "jobs"])
def test_pure_layers_load_no_template_files(layer: str) -> None:
    paths = [SRC / layer] if layer.endswith(".py") else list((SRC / layer).rglob("*.py"))
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for loader in ("PackageLoader", "FileSystemLoader"):
            assert loader not in text, f"{path.relative_to(SRC)} uses Jinja's {loader}"


def test_no_module_reaches_the_split_line() -> None:
    """The house rule (STYLE.md, rule 1): one concept per module, split because a module holds two
    concepts, not because it crossed a number. 100-300 lines is normal and 500 a reason to look;
    only the line the rule draws — split before 800 — is checked here (generated code and
    migrations aside)."""
    big = {str(path.relative_to(SRC)): n for path in _modules().values()
           if (n := len(path.read_text(encoding="utf-8").splitlines())) >= 800}
    assert big == {}


def test_the_http_client_loads_no_engine() -> None:
    """An application that only talks HTTP imports tidings.client without the engine."""
    probe = ("import sys, tidings.client; "
             "print(sorted(m for m in ('tidings.engine', 'sqlalchemy', 'fastapi') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_every_port_is_small() -> None:
    """The ports are cut by concept, about a dozen methods each (``InboxStore`` and
    ``GraphStore`` only put small ports together, as a unit of work hands them out): a port
    that grows past that holds two concepts."""
    import tidings.ports as ports

    sizes = {}
    for name in ports.__all__:
        port = getattr(ports, name)
        if isinstance(port, type) and Protocol in port.__mro__:
            sizes[name] = len([k for k, v in vars(port).items() if not k.startswith("_")
                               and (callable(v) or isinstance(v, property))])
    assert sizes["InboxStore"] == sizes["GraphStore"] == 0
    assert {name: n for name, n in sizes.items() if n > 14} == {}


# -- only tests/sql reads tables --------------------------------------------------------------

# SQLAlchemy's statement builders: importing one is reading or writing tables
STATEMENTS = {"select", "insert", "update", "delete", "func", "table", "column", "inspect",
              "literal_column", "Table", "MetaData"}
# a statement in a string that reads or writes a table (not CREATE/DROP DATABASE, SELECT 1…)
RAW_SQL = re.compile(r"\b(FROM|INTO|UPDATE|TABLE|TRIGGER)\b", re.IGNORECASE)
# helpers at tests/ that read tables, and why; any other helper must not
TABLE_HELPERS = {
    "stores.py": "builds the test databases: clones, empties and drops them",
    "engines.py": "table_counts / table_rows: 'nothing written' on a SQL store (API tests); "
                  "stored_texts: a value nowhere in a store (a person's erasure)",
    "hooks.py": "deliveries / queued: the webhook log and jobs (no port reads them back)",
}


def _table_reads(path: Path) -> list[str]:
    """Where ``path`` reads or writes tables: the SQL schema or a statement builder imported,
    or a raw statement naming a table passed to ``text()`` or ``execute()``."""
    found: dict[int, str] = {}
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {alias.name for alias in node.names}
            if node.module == "tidings.store.sql.schema" or (
                    node.module == "tidings.store.sql" and "schema" in names):
                found[node.lineno] = "the SQL schema"
            elif node.module.split(".")[0] == "sqlalchemy" and names & STATEMENTS:
                found[node.lineno] = f"sqlalchemy's {sorted(names & STATEMENTS)}"
        elif isinstance(node, ast.Import):
            if any(a.name.startswith("tidings.store.sql.schema") for a in node.names):
                found[node.lineno] = "the SQL schema"
        elif isinstance(node, ast.Call) and node.args and _runs_sql(node.func):
            strings = [n.value for n in ast.walk(node.args[0])
                       if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if any(RAW_SQL.search(string) for string in strings):
                found[node.lineno] = "raw SQL"
    return [f"{line}: {what}" for line, what in sorted(found.items())]


def _runs_sql(func: ast.expr) -> bool:
    """``text(…)``, ``….text(…)``, ``….execute(…)`` or ``….exec_driver_sql(…)``."""
    if isinstance(func, ast.Name):
        return func.id == "text"
    return isinstance(func, ast.Attribute) and func.attr in ("text", "execute",
                                                             "exec_driver_sql")


def test_only_the_sql_tests_read_tables() -> None:
    """Every test outside ``tests/sql`` reads a store through the library and its ports, so
    it holds on every store; a helper at ``tests/`` reads tables only if listed above."""
    reads = {}
    for path in sorted(TESTS.rglob("*.py")):
        where = path.relative_to(TESTS)
        if where.parts[0] == "sql" or "django_site" in where.parts \
                or (len(where.parts) == 1 and where.name in TABLE_HELPERS):
            continue
        if found := _table_reads(path):
            reads[str(where)] = found
    assert reads == {}
    assert all((TESTS / name).exists() for name in TABLE_HELPERS)


def test_the_table_read_check_finds_each_kind(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from tidings.store.sql.schema import jobs\n"
        "from tidings.store.sql import schema\n"
        "from sqlalchemy import event, select\n"
        "import tidings.store.sql.schema\n"
        "conn.execute(text('SELECT count(*) FROM events'))\n"
        "admin.execute(f'INSERT INTO {table} VALUES (1)')\n"
        "conn.execute(text('DROP DATABASE x'))\n"  # not a table
        "from sqlalchemy import make_url, event\n")  # nothing read
    assert [f.split(":")[0] for f in _table_reads(probe)] == ["1", "2", "3", "4", "5", "6"]
