"""Reader connections kept by their thread between reads (:meth:`Database.read`).

A hot read (a timeline or inbox page, a count) costs a fraction of a millisecond in the
database; checking a connection out of the pool and back in, with its isolation level set
and reset each time, costs a good part of that again in Python. So a thread keeps the
autocommit connection of its last read for the next one, under these rules:

* at most ``limit`` connections are kept at once (half the pool), so kept connections never
  starve the pool: other threads (and a thread's nested read) check out as before;
* a connection idle longer than ``idle()`` seconds (the pool's ping threshold) goes back to
  the pool, and the read checks one out (the pool pings a connection that sat idle);
* one that failed (invalidated, closed) is dropped; one kept by a thread that ended is
  closed when its slot is wanted; one kept before a fork is forgotten in the child;
* :meth:`Kept.close_all` (``Database.dispose``) closes every one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import Connection


@dataclass
class _Slot:
    conn: Connection
    thread: threading.Thread
    pid: int
    used: float
    busy: bool = False


class Kept:
    """The kept reader connections of one engine."""

    def __init__(self, connect: Callable[[], Connection], limit: int,
                 idle: Callable[[], float]) -> None:
        self._connect = connect
        self._idle = idle
        self._limit = max(1, limit)
        self._slots: dict[int, _Slot] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        me = threading.get_ident()
        slot = self._slots.get(me)
        now = time.monotonic()
        if slot is not None and (slot.busy or slot.pid != os.getpid()):
            if slot.pid != os.getpid():
                self._slots.pop(me, None)  # the parent's: not ours to close
            with self._connect() as conn:  # nested, or forked: an ordinary checkout
                yield conn
            return
        if slot is not None and (slot.conn.closed or slot.conn.invalidated
                                 or now - slot.used > self._idle()):
            self._drop(me)
            slot = None
        if slot is None:
            slot = self._take(me, now)
            if slot is None:  # no room: an ordinary checkout
                with self._connect() as conn:
                    yield conn
                return
        slot.busy = True
        try:
            yield slot.conn
        except BaseException:
            self._drop(me)  # whatever state it was left in, it goes back to the pool
            raise
        else:
            slot.used = time.monotonic()
            slot.busy = False

    def _take(self, me: int, now: float) -> _Slot | None:
        with self._lock:
            if len(self._slots) >= self._limit:
                for ident, held in list(self._slots.items()):
                    if not held.thread.is_alive():
                        self._slots.pop(ident)
                        _close(held.conn)
            if len(self._slots) >= self._limit:
                return None
            slot = _Slot(self._connect(), threading.current_thread(), os.getpid(), now)
            self._slots[me] = slot
            return slot

    def _drop(self, me: int) -> None:
        with self._lock:
            slot = self._slots.pop(me, None)
        if slot is not None:
            _close(slot.conn)

    def close_all(self) -> None:
        with self._lock:
            slots = [s for s in self._slots.values() if s.pid == os.getpid()]
            self._slots.clear()
        for slot in slots:
            _close(slot.conn)


def _close(conn: Connection) -> None:
    with contextlib.suppress(Exception):
        conn.close()
