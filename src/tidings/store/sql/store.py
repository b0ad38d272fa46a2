"""The SQL store: units of work over one SQLAlchemy connection, every port bound to it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc

from tidings import tracing
from tidings.clock import Clock
from tidings.domain.views import Filters
from tidings.exceptions import StoreConflict
from tidings.ports import AsyncStore, Store
from tidings.store.base import InThreads, StoreBase
from tidings.store.notifier import AfterCommit, LocalNotifier
from tidings.store.sql import ratebuckets
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.heldread import HeldReads
from tidings.store.sql.core.timeouts import SqlTimeouts
from tidings.store.sql.erasure import SqlErasure
from tidings.store.sql.events import SqlEvents
from tidings.store.sql.feedrecords import SqlFeedRecords
from tidings.store.sql.graph import SqlGraph
from tidings.store.sql.inbox import SqlInbox, markers
from tidings.store.sql.jobs import SqlJobAdmin, SqlJobs
from tidings.store.sql.journal import SqlJournal
from tidings.store.sql.mail import SqlMail
from tidings.store.sql.notify import CHANNEL, PgNotifier
from tidings.store.sql.onloop import AsyncReads, OnLoop, PublishOnLoop
from tidings.store.sql.push import SqlPush
from tidings.store.sql.settings import SqlSettings
from tidings.store.sql.timeline import SqlTimeline

T = TypeVar("T")


class SqlTx(AfterCommit):
    """Every port of the SQL store on one connection (one transaction); each port is built
    when first used (a count touches one of seven)."""

    def __init__(self, store: SqlStore, conn: Connection) -> None:
        super().__init__()
        self._store = store
        self._db = store.db
        self.conn = conn
        self._prefetched: dict[tuple[str, str], Any] = {}  # one read's statement for another

    @cached_property
    def events(self) -> SqlEvents:
        return SqlEvents(self.conn, self._db)

    @cached_property
    def graph(self) -> SqlGraph:
        return SqlGraph(self._db, self.conn, self._prefetched)

    @cached_property
    def inbox(self) -> SqlInbox:
        return SqlInbox(self._db, self.conn, self._store.clock, self.after_commit)

    @cached_property
    def timeline(self) -> SqlTimeline:
        return SqlTimeline(self._db, self.conn, self._prefetched)

    @cached_property
    def settings(self) -> SqlSettings:
        return SqlSettings(self._db, self.conn)

    @cached_property
    def mail(self) -> SqlMail:
        return SqlMail(self._db, self.conn)

    @cached_property
    def push(self) -> SqlPush:
        return SqlPush(self.conn)

    @cached_property
    def erasure(self) -> SqlErasure:
        return SqlErasure(self._db, self.conn)

    @cached_property
    def jobs(self) -> SqlJobs:
        return SqlJobs(self._db, self.conn, self._store.clock,
                       self._enqueued if self._store.on_enqueue is not None else None)

    @cached_property
    def feed_records(self) -> SqlFeedRecords:
        return SqlFeedRecords(self._db, self.conn)

    def _enqueued(self, count: int) -> None:
        """Jobs were queued in this unit: the store's ``on_enqueue`` hears of them once it
        has committed (a worker it wakes then finds them; a unit rolled back queued none)."""
        on_enqueue = self._store.on_enqueue
        if on_enqueue is not None:
            self.after_commit(lambda: on_enqueue(count))


class SqlStore(StoreBase):
    """SQLite, PostgreSQL or MariaDB/MySQL behind the ports."""

    def __init__(self, url: str, clock: Clock, *, lease_seconds: float = 60.0,
                 max_attempts: int = 8, backoff_seconds: float = 2.0,
                 pool_size: int = 5, timeouts: SqlTimeouts | None = None) -> None:
        self.db = Database(url, pool_size=pool_size, timeouts=timeouts)
        tracing.instrument_engine(self.db.engine)  # tracing on: its statements' spans
        self.held = HeldReads(self.db, pool_size)  # the hot reads' per-thread connections
        # the badge's counts and the first page awaited on an event loop (PostgreSQL): as many
        # connections per loop as the pool may open (its size and its overflow), so that a
        # load of concurrent requests is not sent to threads
        self.async_reads = (AsyncReads(self.db, pool_size * 3) if self.db.backend == "postgresql"
                            else None)
        self.backend = self.db.backend
        self.clock = clock
        self.queue = SqlJobAdmin(self.db, clock, lease_seconds=lease_seconds,
                                 max_attempts=max_attempts, backoff_seconds=backoff_seconds)
        self.notifier: LocalNotifier = (PgNotifier(self.db) if self.backend == "postgresql"
                                         else LocalNotifier())
        # told how many jobs each enqueue added (metrics)
        self.on_enqueue: Callable[[int], None] | None = None

    def transact(self, work: Callable[[SqlTx], T]) -> T:
        last: list[SqlTx] = []

        def attempt(conn: Connection) -> T:
            tx = SqlTx(self, conn)
            last[:] = [tx]  # a retried attempt's callbacks are dropped with it
            return work(tx)

        try:
            result = self.db.transact(attempt)
        except sa_exc.IntegrityError as exc:
            raise StoreConflict(f"a concurrent write won: {exc.orig}") from exc
        last[0].run_after_commit()
        return result

    @contextlib.contextmanager
    def read(self) -> Iterator[SqlTx]:
        with self.held.read() as conn:
            yield SqlTx(self, conn)

    def unread_count(self, user: str, filters: Filters, *, unseen: bool = False) -> int:
        # SqlInbox's own count on the thread's held connection, without the read's unit
        # (SqlTx and its cached ports) around it
        with self.held.read() as conn:
            return SqlInbox(self.db, conn, self.clock).unread_count(user, filters,
                                                                    unseen=unseen)

    def mark_all_read(self, user: str, until: int) -> int:
        # one statement (PostgreSQL) or one short transaction on the held connection's driver;
        # the unit of work where a narrower watermark makes their count inexact
        if isinstance(self.notifier, PgNotifier):
            covered = markers.mark_all_read(self.db, self.held.read, user, until, CHANNEL)
        elif self.db.backend in markers.BEGIN:
            covered = markers.in_one_transaction(self.db, self.held.read, user, until)
            if covered is not None:
                self.notifier.changed([user])
        else:
            covered = None
        return super().mark_all_read(user, until) if covered is None else covered

    @cached_property
    def aio(self) -> InThreads:
        # the badge's counts, the first page and a publish awaited on the loop (PostgreSQL)
        return InThreads(self) if self.async_reads is None else OnLoop(self, self.async_reads)

    @cached_property
    def journal(self) -> SqlJournal:
        return SqlJournal(self.db)

    def publishing(self, store: Store) -> AsyncStore:
        # a group of events in one statement on the loop (PostgreSQL), else in a thread
        return (InThreads(store) if self.async_reads is None
                else PublishOnLoop(store, self, self.async_reads))

    def take_tokens(self, bucket: str, cost: float, *, rate: float, capacity: float) -> float:
        return ratebuckets.take(self.db, bucket, cost, rate=rate, capacity=capacity,
                                now=self.clock.now_us())

    def ping(self) -> None:
        self.db.ping()
        self.queue.next_run_after()

    def migrate(self) -> None:
        from tidings.store.sql.core.migrate import upgrade

        upgrade(self.db.url)

    def check_schema(self) -> None:
        from tidings.store.sql.core.migrate import check_schema_current

        check_schema_current(self.db)

    def close(self) -> None:
        if isinstance(self.notifier, PgNotifier):
            self.notifier.close()
        self.held.close()
        if self.async_reads is not None:
            self.async_reads.close()
        self.db.dispose()
