"""The SQL statements a store runs, heard on its engine: for tests that count round trips."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from tidings.engine import Tidings


@contextmanager
def statements(t: Tidings) -> Iterator[list[str]]:
    """The statements run on ``t``'s database meanwhile."""
    seen: list[str] = []
    engine = t.store.db.engine  # type: ignore[attr-defined]

    def statement(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        seen.append(sql)

    event.listen(engine, "before_cursor_execute", statement)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", statement)
