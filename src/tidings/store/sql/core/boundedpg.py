"""psycopg connections whose every wait for the server is bounded (:mod:`.timeouts`).

psycopg has no read timeout, and a socket timeout on libpq's descriptor does not apply (libpq
waits with ``poll``, psycopg with its own wait functions). But every wait of a psycopg
connection on its socket, a cursor's and a commit's alike, goes through
:meth:`psycopg.Connection.wait`, which takes a timeout: these connections give each wait the
answer timeout when the caller gave none (``notifies`` gives its own), and close the
connection when it expires, so that SQLAlchemy sees it lost and never pools it again.
Connecting is bounded by libpq's ``connect_timeout``, which psycopg enforces itself.
"""

from __future__ import annotations

from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.errors import _WaitTimeout  # internal: psycopg asks callers to convert it
from sqlalchemy import Engine, event

RV = TypeVar("RV")

WAIT_INTERVAL = 0.1  # s, psycopg's own: how often a wait wakes to let Ctrl-C in


def _hung(conn: psycopg.BaseConnection[Any], limit: float) -> Exception:
    """Close ``conn``, whose server did not answer within ``limit`` seconds, and say so. The
    connection is left *broken* (not closed cleanly), which SQLAlchemy takes for a lost one:
    it is invalidated, never returned to the pool."""
    conn.pgconn.finish()
    return psycopg.OperationalError(
        f"the database did not answer within {limit:g} s (hung server or network); "
        "the connection is closed")


class BoundedConnection(psycopg.Connection[Any]):
    """A psycopg connection whose waits for the server end after ``answer_timeout`` s."""

    answer_timeout: float | None = None

    @classmethod
    def open(cls, answer_timeout: float | None, *args: Any, **kwargs: Any
             ) -> BoundedConnection:
        """Connect (``connect_timeout`` bounds that) and bound every later wait."""
        conn = cls.connect(*args, **kwargs)
        conn.answer_timeout = answer_timeout
        return conn

    def wait(self, gen: PQGen[RV], interval: float = WAIT_INTERVAL,
             timeout: float | None = None) -> RV:
        limit = self.answer_timeout if timeout is None else None
        if limit is None:  # the caller's own timeout (notifies), or no bound at all
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, limit)
        except _WaitTimeout as exc:
            raise _hung(self, limit) from exc


class AsyncBoundedConnection(psycopg.AsyncConnection[Any]):
    """:class:`BoundedConnection` for asyncio."""

    answer_timeout: float | None = None

    @classmethod
    async def open(cls, answer_timeout: float | None, *args: Any, **kwargs: Any
                   ) -> AsyncBoundedConnection:
        conn = await cls.connect(*args, **kwargs)
        conn.answer_timeout = answer_timeout
        return conn

    async def wait(self, gen: PQGen[RV], interval: float = WAIT_INTERVAL,
                   timeout: float | None = None) -> RV:
        limit = self.answer_timeout if timeout is None else None
        if limit is None:
            return await super().wait(gen, interval, timeout)
        try:
            return await super().wait(gen, interval, limit)
        except _WaitTimeout as exc:
            raise _hung(self, limit) from exc


def connect_bounded(engine: Engine, answer_timeout: float | None) -> None:
    """Have ``engine`` (PostgreSQL) connect through :class:`BoundedConnection`."""

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return BoundedConnection.open(answer_timeout, *cargs, **cparams)
