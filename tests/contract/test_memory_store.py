"""What is particular to the memory store (its contract is checked with every other store)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tidings.clock import FrozenClock
from tidings.store.memory import MemoryStore
from tidings.store.memory.state import ReadOnlyUnit
from tidings.wiring import open_store


def test_it_needs_no_sqlalchemy_nor_a_driver() -> None:
    code = ("import sys, tidings.wiring as f, tidings.clock as c;"
            "f.open_store('memory://x', c.FrozenClock());"
            "loaded = [m for m in ('sqlalchemy', 'psycopg', 'pymysql', 'sqlite3')"
            "          if m in sys.modules];"
            "print(','.join(loaded))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == ""


def test_every_memory_url_is_a_new_store() -> None:
    clock = FrozenClock()
    first, second = open_store("memory://a", clock), open_store("memory://a", clock)
    assert isinstance(first, MemoryStore) and isinstance(second, MemoryStore)
    first.transact(lambda tx: tx.graph.add_user("ann", 1))
    assert second.transact(lambda tx: tx.graph.add_user("ann", 1)) is True
    assert first.backend == "memory"


def test_a_read_unit_refuses_writes() -> None:
    store = open_store("memory://", FrozenClock())
    with store.read() as tx, pytest.raises(ReadOnlyUnit):
        tx.graph.add_user("ann", 1)
    assert store.transact(lambda tx: tx.graph.add_user("ann", 1)) is True
