"""Live updates across processes on PostgreSQL: LISTEN/NOTIFY.

A committed change is announced with ``pg_notify`` on one channel; every process that has
listeners keeps one extra connection that LISTENs and calls them. A process that only writes
(a worker) never opens that connection; the first listener waits until its LISTEN is in place.
When the listening connection drops, it is opened again and every listener is called once,
since changes may have gone unheard meanwhile. The listening connection also LISTENs on a
channel of its own, on which :meth:`PgNotifier.close` wakes it to end at once rather than at
its next second's poll.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Sequence

import psycopg
from sqlalchemy import text

from tidings.store.notifier import LocalNotifier
from tidings.store.sql.core.database import Database

log = logging.getLogger("tidings.notifier")

CHANNEL = "tidings_changed"
PAYLOAD_BYTES = 7900  # NOTIFY takes at most 8,000 bytes
READY_SECONDS = 5.0  # how long a first listener waits for the LISTEN connection


def payloads(users: Sequence[str]) -> list[str]:
    """Users joined by newlines into payloads that fit NOTIFY."""
    batches: list[list[str]] = [[]]
    size = 0
    for user in sorted(set(users)):
        cost = len(user.encode()) + 1
        if size + cost > PAYLOAD_BYTES and batches[-1]:
            batches.append([])
            size = 0
        batches[-1].append(user)
        size += cost
    return ["\n".join(batch) for batch in batches if batch]


class PgNotifier(LocalNotifier):
    """A notifier whose listeners hear of changes committed by any process."""

    cross_process = True

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self._ready = threading.Event()  # set once the first LISTEN is in place
        self._wake = f"tidings_wake_{secrets.token_hex(8)}"  # this notifier's own channel

    def changed(self, users: Sequence[str]) -> None:
        if not users:
            return
        try:
            with self.db.engine.connect() as conn:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                for payload in payloads(users):
                    conn.execute(text("SELECT pg_notify(:channel, :payload)"),
                                 {"channel": CHANNEL, "payload": payload})
        except Exception as exc:  # the change is committed; only its announcement is lost
            log.warning("could not announce a change (%s); local listeners only", exc)
            super().changed(users)

    def subscribe(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, name="tidings-listen",
                                                daemon=True)
                self._thread.start()
        # A change committed before the LISTEN is in place would go unheard: the first
        # listener waits for it (a listener that gives up waiting is called once it is).
        self._ready.wait(READY_SECONDS)
        return super().subscribe(user, callback)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            if self._ready.is_set():  # wake the listening connection from its wait
                try:
                    with self.db.engine.connect() as conn:
                        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                        conn.execute(text("SELECT pg_notify(:channel, '')"),
                                     {"channel": self._wake})
                except Exception:  # the server is away: the listener ends within a second
                    pass
            self._thread.join(timeout=5)

    def _dsn(self) -> str:
        url = self.db.engine.url.set(drivername="postgresql")
        return url.render_as_string(hide_password=False)

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn(), autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    conn.execute(f"LISTEN {self._wake}")
                    # changes may have gone unheard while disconnected, or before the first
                    # LISTEN by a listener that stopped waiting for it
                    self._call_everyone()
                    self._ready.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            if note.channel == self._wake:
                                break
                            LocalNotifier.changed(self, note.payload.split("\n"))
            except Exception as exc:
                if self._stop.is_set():
                    return
                log.warning("listening for changes failed (%s); trying again", exc)
                self._stop.wait(1.0)

    def _call_everyone(self) -> None:
        LocalNotifier.changed(self, self.users())
