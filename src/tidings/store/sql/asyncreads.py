"""A badge's counts awaited on the caller's event loop (PostgreSQL), with no hop to a thread.

Served over HTTP, an unread count cost more in its trip to Starlette's thread pool and back
(about 190 µs on a 2-core box, for a function that returns at once) than in the database. On
PostgreSQL the plain count (no narrowing) is the one statement of
:func:`tidings.store.sql.readmarkers.count_statement`, so the API can await it on an
asyncio connection of psycopg instead (:meth:`SqlStore.unread_counts_now`).

The same connections run a group of ``POST /v1/events`` as its one statement
(:mod:`tidings.store.sql.publishnow`): autocommit makes that statement its own transaction.

Connections belong to the event loop that opened them: each loop has its own, at most
``size``, opened as needed and kept idle between reads (autocommit, each statement on its
own, prepared by psycopg after a few runs). A read that finds every connection of its loop
busy is not served here: it returns None and the caller reads in a thread, as before. A
driver error is raised as its kind's :class:`tidings.exceptions.TidingsError` (an unreachable
database as ``StoreUnavailable``: a 503), and the connection that failed is dropped, so the
next read opens a new one once the database is back. Their waits are bounded as the pool's are
(:mod:`.timeouts`).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any

import psycopg
from sqlalchemy import exc as sa_exc

from tidings.store.sql.boundedpg import AsyncBoundedConnection
from tidings.store.sql.database import Database
from tidings.store.sql.driver_errors import classify


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
