"""The hot paths make as few round trips as the work allows, on every SQL backend: an unread
count (or an unseen one) is one statement and no transaction; the first page of an inbox reads
watermarks, base rows and their groups' summaries, and nothing else. Counted with SQLAlchemy's
events, not timed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from engines import open_tidings
from tidings.domain.views import Filters
from tidings.engine import Tidings
from tidings.store.sql.core import database


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


def test_a_badge_reads_unread_and_unseen_counts_in_one_statement(t: Tidings) -> None:
    _inbox(t)
    t.mark_seen("bob")
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    with counted(t) as counts:
        unread, unseen = t.unread_counts("bob")
    assert (unread.count, unseen.count) == (3, 1)
    assert (unread.display, unseen.display) == ("3", "1")
    assert counts == {"statements": 1, "transactions": 0}
    # a narrower watermark beyond "all": the exact counts (markers, then one count each)
    t.mark_all_read("bob", types=["mention"])
    with counted(t) as counts:
        unread, unseen = t.unread_counts("bob")
    assert (unread.count, unseen.count) == (
        t.unread_count("bob").count, t.unseen_count("bob").count) == (1, 0)
    assert counts["statements"] == 4  # the one-statement try, the markers, one count each


def test_a_narrower_watermark_costs_two_more_statements_and_counts_right(t: Tidings) -> None:
    _inbox(t)
    t.mark_all_read("bob", types=["mention"])
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    with counted(t) as counts:
        assert t.unread_count("bob").count == 2
        assert t.unread_count("bob", types=["mention"]).count == 1
    assert counts == {"statements": 6, "transactions": 0}


def test_a_first_page_is_one_statement_and_no_transaction(t: Tidings) -> None:
    """A page reads watermarks, base rows and their groups' summaries in one statement (the
    groups' members too on PostgreSQL, where a base row keeps no summary; elsewhere a second
    statement reads those)."""
    _inbox(t)
    first, second = t.notifications("bob", limit=20).items
    t.mark_read("bob", [first.id])
    cursor = t.notifications("bob", limit=1).next_cursor
    one = t.store.backend == "postgresql"
    with counted(t) as counts:
        page = t.notifications("bob", limit=20)
    assert [(i.id, i.count, i.read) for i in page.items] == [
        (first.id, first.count, True), (second.id, second.count, False)]
    assert sorted(item.count for item in page.items) == [1, 3]
    assert counts == {"statements": 1, "transactions": 0}
    with counted(t) as counts:  # a later page (keyset cursor) too
        page = t.notifications("bob", limit=1, cursor=cursor)
    assert [(i.id, i.count, i.read) for i in page.items] == [(second.id, second.count, False)]
    assert counts == {"statements": 1, "transactions": 0}
    stepwise = 3 if second.type == "page-linked" else 2
    # filtered by read state: the watermarks first, then the page that depends on them
    with counted(t) as counts:
        assert [i.id for i in t.notifications("bob", unread=True).items] == [second.id]
    assert counts == {"statements": stepwise, "transactions": 0}
    # an empty page still reads the watermarks: on PostgreSQL in the page's statement
    t.mark_all_read("nobody")
    with counted(t) as counts:
        assert t.notifications("nobody", limit=20).items == []
    assert counts == {"statements": 1 if one else 2, "transactions": 0}


def test_mark_all_read_is_a_count_and_one_upsert(t: Tidings) -> None:
    _inbox(t)
    with counted(t) as counts:
        assert t.mark_all_read("bob") == 2
    # PostgreSQL: the count, the upsert and the announcement (pg_notify) in one statement
    # committed on its own; elsewhere the count and the upsert in a transaction begun by a
    # statement (BEGIN IMMEDIATE, START TRANSACTION) on the driver of the held connection and
    # committed there, with no unit of work (no SQLAlchemy transaction)
    expected = {"sqlite": {"statements": 3, "transactions": 0},
                "postgresql": {"statements": 1, "transactions": 0},
                "mysql": {"statements": 3, "transactions": 0}}[t.store.backend]
    assert counts == expected
    assert t.unread_count("bob").count == 0
    assert t.mark_all_read("bob") == 0


def test_mark_all_read_beyond_a_narrower_watermark_counts_exactly(t: Tidings) -> None:
    _inbox(t)
    t.mark_all_read("bob", types=["mention"])  # narrower than "all", and beyond it
    assert t.unread_count("bob").count == 1
    assert t.mark_all_read("bob") == 1
    assert t.unread_count("bob").count == 0
    assert t.unread_count("bob", types=["mention"]).count == 0


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


def _fan_out_statements(url: str, clock: Any, followers: int) -> int:
    """Statements of one post's fan-out to ``followers`` whose mailboxes are full."""
    with open_tidings(url, clock=clock, timeline_cap=2) as tl:
        for n in range(followers):
            tl.follow(f"f{n:03}", "ann")
        for n in range(3):  # every mailbox at the cap, then each new post trims each one
            tl.publish({"type": "post", "actor": "ann", "object": f"blog:{n}"})
            tl.run_jobs()
        tl.publish({"type": "post", "actor": "ann", "object": "blog:last"})
        with counted(tl) as counts:
            tl.run_jobs()
        with tl.store.read() as tx:
            assert all(len(tx.timeline.page(f"f{n:03}", limit=10, before=None)) == 2
                       for n in range(followers))
        return counts["statements"]


def test_a_post_to_full_mailboxes_costs_the_same_statements_for_any_follower_count(
        store_url: str, clock: Any) -> None:
    assert _fan_out_statements(store_url, clock, 3) == _fan_out_statements(
        store_url, clock, 15)


@contextmanager
def checkouts(t: Tidings) -> Iterator[list[int]]:
    """Connections checked out of ``t``'s pool meanwhile."""
    engine = t.store.db.engine  # type: ignore[attr-defined]
    taken: list[int] = []

    def checkout(*_: Any) -> None:
        taken.append(1)

    event.listen(engine, "checkout", checkout)
    try:
        yield taken
    finally:
        event.remove(engine, "checkout", checkout)


def test_hot_reads_reuse_the_thread_s_connection_without_a_pool_checkout(t: Tidings) -> None:
    _inbox(t)
    t.unread_count("bob")  # the thread takes its connection
    with checkouts(t) as taken, counted(t) as counts:
        for _ in range(5):
            assert t.unread_count("bob").count == 2
            t.unread_counts("bob")
            assert len(t.notifications("bob", limit=20).items) == 2
    assert taken == []
    assert counts["transactions"] == 0
    with checkouts(t) as taken:  # a write still takes a pooled connection
        t.mark_seen("bob")
    assert taken


def test_a_read_nested_in_a_read_takes_a_pooled_connection(t: Tidings) -> None:
    _inbox(t)
    t.unread_count("bob")
    with t.store.read() as outer, checkouts(t) as taken:  # type: ignore[attr-defined]
        assert t.unread_count("bob").count == 2
        assert outer.inbox.unread_count("bob", Filters(unread=True)) == 2
    assert len(taken) == 1


def test_a_badge_scans_the_inbox_once_for_both_counts(t: Tidings) -> None:
    _inbox(t)
    t.mark_seen("bob")
    t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"]})
    t.run_jobs()
    seen: list[str] = []

    def statement(_conn: Any, _cursor: Any, text: str, *_: Any) -> None:
        seen.append(text)

    engine = t.store.db.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", statement)
    try:
        unread, unseen = t.unread_counts("bob")
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert (unread.count, unseen.count) == (3, 1)
    assert len(seen) == 1 and seen[0].count("FROM notifications") == 1, seen


def test_a_held_connection_the_server_dropped_is_replaced(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    if t.store.backend == "sqlite":
        pytest.skip("SQLite has no server connection to drop")
    own, end = (("SELECT pg_backend_pid()", "SELECT pg_terminate_backend({})")
                if t.store.backend == "postgresql" else ("SELECT CONNECTION_ID()", "KILL {}"))
    _inbox(t)
    t.unread_count("bob")
    with t.store.read() as tx:  # type: ignore[attr-defined]
        pid = tx.conn.exec_driver_sql(own).scalar_one()
    with t.store.db.engine.connect() as admin:  # type: ignore[attr-defined]
        admin.exec_driver_sql(end.format(int(pid)))
        admin.commit()
    monkeypatch.setattr(database, "IDLE_PING_SECONDS", 0.0)  # pinged before its next use
    assert t.unread_count("bob").count == 2
    with t.store.read() as tx:  # type: ignore[attr-defined]
        assert tx.conn.exec_driver_sql(own).scalar_one() != pid
