"""The hot paths make as few round trips as the work allows, on every SQL backend: an unread
count (or an unseen one) is one statement and no transaction; the first page of an inbox reads
watermarks, base rows and bundle members and nothing else. Counted with SQLAlchemy's events,
not timed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from tidings.engine import Tidings
from tidings.store.sql import database


@contextmanager
def counted(t: Tidings) -> Iterator[dict[str, int]]:
    """Statements and transactions (BEGIN … COMMIT) run on ``t``'s database meanwhile."""
    counts = {"statements": 0, "transactions": 0}
    engine = t.store.db.engine  # type: ignore[attr-defined]

    def statement(*_: Any) -> None:
        counts["statements"] += 1

    def begin(conn: Any) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            counts["transactions"] += 1

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "begin", begin)
    try:
        yield counts
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine, "begin", begin)


def _inbox(t: Tidings) -> None:
    t.subscribe("bob", "page-linked", "page:Rome")
    for actor in ("alice", "carol", "dave"):
        t.publish({"type": "page-linked", "actor": actor, "object": "page:Rome"})
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    t.run_jobs()


def test_an_unread_count_is_one_statement_and_no_transaction(t: Tidings) -> None:
    _inbox(t)
    with counted(t) as counts:
        assert t.unread_count("bob").count == 2
    assert counts == {"statements": 1, "transactions": 0}
    t.mark_all_read("bob")
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    with counted(t) as counts:
        assert t.unread_count("bob").count == 1
    assert counts == {"statements": 1, "transactions": 0}


def test_an_unseen_count_is_one_statement_too(t: Tidings) -> None:
    _inbox(t)
    with counted(t) as counts:
        assert t.unseen_count("bob").count == 2
    assert counts == {"statements": 1, "transactions": 0}
    t.mark_seen("bob")
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    with counted(t) as counts:
        assert t.unseen_count("bob").count == 1
        assert t.unread_count("bob").count == 3
    assert counts == {"statements": 2, "transactions": 0}


def test_a_narrower_watermark_costs_two_more_statements_and_counts_right(t: Tidings) -> None:
    _inbox(t)
    t.mark_all_read("bob", types=["mention"])
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    with counted(t) as counts:
        assert t.unread_count("bob").count == 2
        assert t.unread_count("bob", types=["mention"]).count == 1
    assert counts == {"statements": 6, "transactions": 0}


def test_a_first_page_is_three_statements_and_no_transaction(t: Tidings) -> None:
    _inbox(t)
    with counted(t) as counts:
        page = t.notifications("bob", limit=20)
    assert sorted(item.count for item in page.items) == [1, 3]
    assert counts == {"statements": 3, "transactions": 0}


def test_mark_all_read_is_a_count_and_one_upsert(t: Tidings) -> None:
    _inbox(t)
    with counted(t) as counts:
        assert t.mark_all_read("bob") == 2
    # the count and the watermark upsert; SQLite's BEGIN IMMEDIATE is a statement of its own,
    # PostgreSQL announces the change (pg_notify) once committed
    expected = {"sqlite": 3, "postgresql": 3, "mysql": 2}[t.store.backend]
    assert counts == {"statements": expected, "transactions": 1}
    assert t.unread_count("bob").count == 0


def test_a_connection_is_pinged_only_after_sitting_idle(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    if t.store.backend == "sqlite":
        pytest.skip("SQLite has no server connection to ping")
    dialect = t.store.db.engine.dialect  # type: ignore[attr-defined]
    pings: list[int] = []
    ping = dialect.do_ping
    monkeypatch.setattr(dialect, "do_ping", lambda dbapi: pings.append(1) or ping(dbapi))
    for _ in range(5):
        t.unread_count("bob")
    assert pings == []  # reused within the second: no round trip for a ping
    monkeypatch.setattr(database, "IDLE_PING_SECONDS", 0.0)
    t.unread_count("bob")
    assert pings == [1]
