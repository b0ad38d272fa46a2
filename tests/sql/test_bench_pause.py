"""The bench's worker processes pause at a point where they hold no SQLite write lock."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tidings_benchmarks.processes import _sqlite_writable


def test_a_held_write_lock_is_seen_and_its_release_too(tmp_path: Path) -> None:
    path = tmp_path / "bench.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    url = f"sqlite:///{path}"
    assert _sqlite_writable(url)
    holder.execute("BEGIN IMMEDIATE")
    assert not _sqlite_writable(url)
    holder.execute("ROLLBACK")
    assert _sqlite_writable(url)
    holder.close()
    assert _sqlite_writable("postgresql://postgres@127.0.0.1:5432/test")
