"""Autocommit read connections held by their threads, for the hot reads (a count, a page).

A read through :meth:`Database.read` checks a connection out of the pool, switches it to
autocommit, and on the way back resets it and returns it: measured on PostgreSQL, that was a
fifth of an unread count's time (the pool's bookkeeping, the isolation-level switch there and
back, the reset), more than the statement's own Python work. Here each thread keeps the
connection of its last read, already in autocommit, and reuses it: a read is then the
statement and nothing else.

* At most ``limit`` connections are held (the pool's size): a thread beyond that, or a read
  nested in another on the same thread, reads through the pool as before.
* A held connection that sat idle longer than :data:`database.IDLE_PING_SECONDS` is pinged
  first, as the pool's checkout does; one that fails is dropped (returned to the pool,
  invalidated if the driver lost it), so the next read starts on a fresh one.
* Connections of threads that ended are returned when a new thread needs a place;
  :meth:`HeldReads.close` returns them all (the store's ``close``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc

from tidings.exceptions import StoreRejected, StoreUnavailable
from tidings.store.sql.core import database
from tidings.store.sql.core.database import Database

# errors after which a held connection is not trusted for the next read
_DROP_ON = (sa_exc.SQLAlchemyError, StoreUnavailable, StoreRejected)


def _from_sql(exc: BaseException) -> bool:
    """Whether ``exc`` came from the database (a driver error, or one turned into a
    :class:`TidingsError` by :meth:`Database.errors`), not from elsewhere in the read."""
    return isinstance(exc, sa_exc.SQLAlchemyError) or isinstance(exc.__cause__,
                                                                  sa_exc.SQLAlchemyError)


class _Slot(threading.local):
    conn: Connection | None = None
    used: float = 0.0
    busy: bool = False


class HeldReads:
    """Per-thread autocommit connections of ``db``'s pool (see the module's text)."""

    def __init__(self, db: Database, limit: int) -> None:
        self.db = db
        self.limit = limit
        self._slot = _Slot()
        self._lock = threading.Lock()
        self._held: dict[Connection, threading.Thread] = {}
        self._opening = 0  # places taken by threads still connecting

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """What :meth:`Database.read` gives (autocommit, each statement on its own), on this
        thread's held connection when it has or may take one."""
        slot = self._slot
        if slot.busy or (slot.conn is None and not self._take_place()):
            with self.db.read() as conn:
                yield conn
            return
        slot.busy = True
        try:
            conn = self._ready(slot)
            try:
                with self.db.errors():
                    yield conn
            except _DROP_ON as exc:
                if _from_sql(exc):  # not another store's outage met during the read (Redis)
                    self._drop(slot)
                raise
            finally:
                if slot.conn is conn and conn.in_transaction():
                    conn.rollback()  # SQLAlchemy's autobegin: nothing open on the server
            slot.used = time.monotonic()
        finally:
            slot.busy = False

    def _take_place(self) -> bool:
        with self._lock:
            if len(self._held) + self._opening >= self.limit:
                for conn, thread in list(self._held.items()):
                    if not thread.is_alive():  # its thread ended: give the place back
                        del self._held[conn]
                        conn.close()
            if len(self._held) + self._opening >= self.limit:
                return False
            self._opening += 1  # the place is this thread's while it connects
        try:
            self._new()
        finally:
            with self._lock:
                self._opening -= 1
        return True

    def _new(self) -> None:
        """Open this thread's connection, outside the lock: on a database that hangs a
        connect waits out its timeout, and the other threads must not queue behind it."""
        with self.db.errors():
            conn = self.db.reader.connect()
        self._slot.conn = conn
        self._slot.used = time.monotonic()
        with self._lock:
            self._held[conn] = threading.current_thread()

    def _ready(self, slot: _Slot) -> Connection:
        conn = slot.conn
        assert conn is not None
        if time.monotonic() - slot.used > database.IDLE_PING_SECONDS and not self._alive(conn):
            self._drop(slot)
            self._new()
            conn = slot.conn
            assert conn is not None
        return conn

    def _alive(self, conn: Connection) -> bool:
        if conn.invalidated or conn.closed:
            return False
        try:
            dbapi = conn.connection.dbapi_connection
            return dbapi is not None and bool(self.db.engine.dialect.do_ping(dbapi))
        except Exception:  # any failure means: not usable
            with contextlib.suppress(Exception):
                conn.invalidate()
            return False

    def _drop(self, slot: _Slot) -> None:
        conn, slot.conn = slot.conn, None
        if conn is None:
            return
        with self._lock:
            self._held.pop(conn, None)
        with contextlib.suppress(Exception):
            conn.close()

    def close(self) -> None:
        """Return every held connection to the pool (before the engine is disposed)."""
        with self._lock:
            held, self._held = list(self._held), {}
        for conn in held:
            with contextlib.suppress(Exception):
                conn.close()
        self._slot = _Slot()
