"""A badge's counts and an inbox's first page awaited on the event loop, without a thread
(PostgreSQL, ``tidings.store.sql.onloop``): the same answer as the unit read in a thread,
on the loop where the statement answers and in a thread where it cannot (a narrower
watermark, every connection busy, another store: ``tidings.store.base.InThreads``), a 503
when the database drops the connection and recovery on the next read."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import event as sa_event

from engines import open_tidings
from tidings.engine import Tidings
from tidings.exceptions import StoreUnavailable
from tidings.store.sql.inbox.markers import unread_count_statement


@pytest.fixture
def pg(store_url: str, backend: str) -> Iterator[Tidings]:
    with open_tidings(store_url) as tidings:
        yield tidings


def mentions(t: Tidings, count: int) -> None:
    for n in range(count):
        t.publish({"type": "mention", "actor": "alice", "object": f"page:{n}",
                   "recipients": ["bob"]})
    t.run_jobs()


@pytest.mark.parametrize("backend", ["postgresql"])
def test_the_badge_read_on_the_loop_answers_as_the_unit_does(pg: Tidings) -> None:
    mentions(pg, 3)
    pg.mark_seen("bob")
    mentions(pg, 2)

    engine = pg.store.db.engine  # type: ignore[attr-defined]
    with on_engine(engine) as statements:
        assert asyncio.run(pg.inbox.badge_counts("bob")) == pg.unread_counts("bob")
        assert asyncio.run(pg.inbox.badge_counts("nobody")) == pg.unread_counts("nobody")
    assert len(statements) == 2  # the two unread_counts: the loop's reads ran none
    assert [c.count for c in pg.unread_counts("bob")] == [5, 2]

    pg.mark_all_read("bob", types=["mention"])  # a narrower watermark: the unit, in a thread
    with on_engine(engine) as statements:
        assert [c.count for c in asyncio.run(pg.inbox.badge_counts("bob"))] == [0, 0]
    assert statements
    assert pg.unread_counts("bob")[0].count == 0


@contextlib.contextmanager
def on_engine(engine: Any) -> Iterator[list[str]]:
    """The statements run through SQLAlchemy (a unit's, in a thread) meanwhile."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    sa_event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa_event.remove(engine, "before_cursor_execute", note)


@pytest.mark.parametrize("backend", ["postgresql"])
def test_a_busy_loop_falls_back_and_a_dropped_connection_is_a_503_then_recovers(
        pg: Tidings) -> None:
    mentions(pg, 2)
    reads: Any = pg.store.async_reads  # type: ignore[attr-defined]
    reads.size = 1
    statement = unread_count_statement(False, False, False, both=True)

    async def two_at_once() -> list[Any]:
        return await asyncio.gather(reads.fetch(statement, {"user": "bob"}),
                                    reads.fetch(statement, {"user": "bob"}))

    first, second = asyncio.run(two_at_once())
    assert first == [(2, 2, 0)] and second is None

    async def badges_at_once() -> list[Any]:  # the second in a thread
        return await asyncio.gather(pg.inbox.badge_counts("bob"), pg.inbox.badge_counts("bob"),
                                    pg.inbox.first_page("bob"), pg.inbox.first_page("bob"))

    one, other, page, again = asyncio.run(badges_at_once())
    assert one == other == pg.unread_counts("bob")
    assert page == again == pg.notifications("bob")

    async def dropped_then_again() -> tuple[BaseException | None, Any]:
        found = await reads.fetch(statement, {"user": "bob"})  # opens this loop's connection
        assert found == [(2, 2, 0)]
        url = pg.store.db.engine.url  # type: ignore[attr-defined]
        with psycopg.connect(url.render_as_string(hide_password=False).replace(
                "+psycopg", ""), autocommit=True) as admin:  # what a restart does to it
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        failure: BaseException | None = None
        try:
            await reads.fetch(statement, {"user": "bob"})
        except StoreUnavailable as exc:
            failure = exc
        return failure, await reads.fetch(statement, {"user": "bob"})

    failure, after = asyncio.run(dropped_then_again())
    assert isinstance(failure, StoreUnavailable)
    assert after == [(2, 2, 0)]


@pytest.mark.parametrize("backend", ["postgresql"])
def test_the_first_page_read_on_the_loop_is_the_units(pg: Tidings) -> None:
    mentions(pg, 3)
    for n in range(4):  # one bundle of four links, its members' actors and count drawn
        pg.publish({"type": "page-linked", "actor": f"user{n}", "object": "page:SF",
                    "recipients": ["bob"]})
    pg.run_jobs()
    pg.mark_read("bob", [pg.notifications("bob", limit=1).items[0].id])
    for limit in (2, 20):
        for locale in (None, "de"):
            found = asyncio.run(pg.inbox.first_page("bob", limit=limit, locale=locale))
            assert found == pg.notifications("bob", limit=limit, locale=locale)
    assert pg.notifications("bob").items[0].count == 4
    # nothing to list: the page's one row of watermarks answers on the loop too
    pg.mark_all_read("nobody")
    empty = asyncio.run(pg.inbox.first_page("nobody"))
    assert empty == pg.notifications("nobody") and empty.items == []


def test_every_store_answers_on_the_loop_as_the_unit_does(any_store_url: str) -> None:
    with open_tidings(any_store_url) as t:
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
        t.run_jobs()
        found = asyncio.run(t.inbox.badge_counts("bob"))
        assert found == t.unread_counts("bob") and found[0].count == 1
        page = asyncio.run(t.inbox.first_page("bob"))
        assert page == t.notifications("bob") and len(page.items) == 1
