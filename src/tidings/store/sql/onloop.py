"""A badge's counts awaited on the caller's event loop (PostgreSQL), with no hop to a thread.

Served over HTTP, an unread count cost more in its trip to Starlette's thread pool and back
(about 190 µs on a 2-core box, for a function that returns at once) than in the database. On
PostgreSQL the plain count (no narrowing) is the one statement of
:func:`tidings.store.sql.inbox.markers.count_statement`, so the API can await it on an
asyncio connection of psycopg instead (:class:`OnLoop`, the SQL store's
:class:`tidings.ports.AsyncStore`). So is the first page (:func:`.pageview.unfiltered`).

The same connections run a group of ``POST /v1/events`` as its one statement
(:mod:`tidings.store.sql.events`): autocommit makes that statement its own transaction.

Connections belong to the event loop that opened them: each loop has its own, at most
``size``, opened as needed and kept idle between reads (autocommit, each statement on its
own, prepared by psycopg after a few runs). A read that finds every connection of its loop
busy is not served here: :meth:`AsyncReads.fetch` returns None and :class:`OnLoop` reads in
a thread, as every store without such connections does (:class:`tidings.store.base.InThreads`). A
driver error is raised as its kind's :class:`tidings.exceptions.TidingsError` (an unreachable
database as ``StoreUnavailable``: a 503), and the connection that failed is dropped, so the
next read opens a new one once the database is back. Their waits are bounded as the pool's are
(:mod:`.timeouts`).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from sqlalchemy import exc as sa_exc

from tidings.domain.readstate import Markers
from tidings.domain.views import PageView, Published
from tidings.exceptions import IdempotencyConflict, StoreRejected
from tidings.ports import Publication, Store
from tidings.store.base import InThreads, Units
from tidings.store.sql import events
from tidings.store.sql.core.boundedpg import AsyncBoundedConnection
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.errors import classify
from tidings.store.sql.inbox import markers as readmarkers
from tidings.store.sql.inbox import page as pageview


class AsyncReads:
    """Per-event-loop asyncio connections of psycopg to ``db``'s database."""

    def __init__(self, db: Database, size: int) -> None:
        self.db = db
        self.size = max(1, size)
        url = db.engine.url
        connect = db.timeouts.postgresql()
        self._conninfo = psycopg.conninfo.make_conninfo(
            host=url.host, port=url.port, user=url.username, password=url.password,
            dbname=url.database, **{k: v for k, v in url.query.items() if isinstance(v, str)},
            **connect)
        self._lock = threading.Lock()
        self._idle: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                              list[psycopg.AsyncConnection[Any]]] = \
            weakref.WeakKeyDictionary()
        self._busy: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = \
            weakref.WeakKeyDictionary()
        self._open: list[psycopg.AsyncConnection[Any]] = []
        self._closed = False

    async def fetch(self, statement: Any, params: dict[str, Any]) -> list[tuple[Any, ...]] | None:
        """The rows of a statement built once, or None when every connection of this loop is
        busy (the caller then reads in a thread)."""
        loop = asyncio.get_running_loop()
        allowed, conn = self._take(loop)
        if not allowed:
            return None
        sql, args = self.db.driver_form(statement, params)
        kept = False
        try:
            if conn is None:
                conn = await self._connect()
            cursor = await conn.execute(sql, args)
            rows = await cursor.fetchall()
            kept = True
            return rows
        except psycopg.Error as exc:
            wrapped = sa_exc.DBAPIError.instance(
                sql, args, exc, psycopg.Error,
                connection_invalidated=isinstance(exc, psycopg.OperationalError))
            error = classify(wrapped) if isinstance(wrapped, sa_exc.DBAPIError) else None
            if error is None:
                raise wrapped from exc
            raise error from exc
        finally:
            self._give_back(loop, conn, kept)

    def _take(self, loop: asyncio.AbstractEventLoop
              ) -> tuple[bool, psycopg.AsyncConnection[Any] | None]:
        """Whether ``loop`` may read now, and its idle connection (None: open one)."""
        with self._lock:
            if self._closed:
                return False, None
            idle = self._idle.setdefault(loop, [])
            busy = self._busy.get(loop, 0)
            if not idle and busy >= self.size:
                return False, None
            self._busy[loop] = busy + 1
            return True, idle.pop() if idle else None

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        conn = await AsyncBoundedConnection.open(self.db.timeouts.answer, self._conninfo,
                                                 autocommit=True)
        with self._lock:
            self._open.append(conn)
        return conn

    def _give_back(self, loop: asyncio.AbstractEventLoop,
                   conn: psycopg.AsyncConnection[Any] | None, kept: bool) -> None:
        with self._lock:
            self._busy[loop] = self._busy.get(loop, 1) - 1
            if conn is None:  # it could not be opened
                return
            if kept and not self._closed and not conn.closed:
                self._idle.setdefault(loop, []).append(conn)
                return
            if conn in self._open:
                self._open.remove(conn)
        _finish(conn)

    def close(self) -> None:
        """Close every connection (from any thread: the libpq connection is ended at once)."""
        with self._lock:
            self._closed = True
            conns, self._open = self._open, []
            self._idle.clear()
        for conn in conns:
            _finish(conn)


def _finish(conn: psycopg.AsyncConnection[Any]) -> None:
    if not conn.closed:
        conn.pgconn.finish()


class PublishOnLoop(InThreads):
    """A group of events published by one statement on ``sql``'s asyncio connections
    (:mod:`.events`) where it can answer the group: one scope, no key repeated, none
    taken, a connection free, every value accepted (else it stores nothing). Everything else
    is ``store``'s own, in a thread (:class:`InThreads`): ``store`` is the SQL store itself,
    or a store that keeps its events in it (:class:`tidings.store.hot.HotStore`)."""

    def __init__(self, store: Units, sql: Store, reads: AsyncReads) -> None:
        super().__init__(store)
        self.sql = sql
        self.reads = reads  # sql's connections

    async def publish(self, items: Sequence[Publication], now: Callable[[], int]
                      ) -> list[Published | IdempotencyConflict]:
        ids = await self._in_one_statement(items, now) if _one_statement(items) else None
        if ids is None:
            return await super().publish(items, now)
        on_enqueue = self.sql.on_enqueue
        if on_enqueue is not None:
            on_enqueue(len(ids))
        return [Published(str(event_id), created=True) for event_id in ids]

    async def _in_one_statement(self, items: Sequence[Publication], now: Callable[[], int]
                                ) -> list[int] | None:
        """The new events' ids, or None where the statement stored nothing."""
        statement, params = events.unit([(i.event, i.payload) for i in items],
                                            [i.job for i in items], now(), items[0].scope)
        try:
            found = await self.reads.fetch(statement, params)
        except (sa_exc.DBAPIError, StoreRejected):
            # a key taken meanwhile, a value refused, a defect: nothing was stored, and the
            # unit of work in a thread answers it as it always has
            return None
        if found is None or len(found) != len(items):  # busy, or a key already taken
            return None
        return [int(row[0]) for row in found]


def _one_statement(items: Sequence[Publication]) -> bool:
    """Whether the statement may answer ``items``: some, of one scope, no key repeated."""
    keys = [i.event.idempotency_key for i in items if i.event.idempotency_key is not None]
    return bool(items) and len({i.scope for i in items}) == 1 and len(keys) == len(set(keys))


class OnLoop(PublishOnLoop):
    """The SQL store's :class:`tidings.ports.AsyncStore` on PostgreSQL: a badge's counts and
    the first page in one statement each too; in a thread where a narrower watermark makes
    the count inexact, or every connection of the loop is busy."""

    def __init__(self, sql: Store, reads: AsyncReads) -> None:
        super().__init__(sql, sql, reads)

    async def unread_counts(self, user: str) -> tuple[int, int]:
        found = await self.reads.fetch(readmarkers.count_statement(
            self.reads.db.backend, False, False, False, both=True), {"user": user})
        if found is not None:
            ((unread, unseen, narrower),) = found
            if not narrower:
                return int(unread), int(unseen)
        return await super().unread_counts(user)

    async def page_view(self, user: str, *, limit: int,
                        bundles: Callable[[str], bool]) -> PageView:
        found = await self.reads.fetch(pageview.unfiltered(False, limit), {"user": user})
        if not found:  # busy
            return await super().page_view(user, limit=limit, bundles=bundles)
        return pageview.view(pageview.from_driver(found), bundles, Markers)
