"""The hot store: SQL as the source of truth, Redis (or Redis Cluster) for the hot parts.

Events, the graph, settings, mail state and jobs stay in SQL; inbox rows, read watermarks,
unread counts and timelines live in Redis, and live updates go through Redis pub/sub. Each
unit of work is one SQL transaction whose Redis writes wait in a buffer until the work has
returned and go out just before the commit; every Redis write is idempotent, so a unit sent
but not committed and run again (a retried job) writes nothing twice. The writes are also
journaled in the unit's transaction (``tidings.store.hotjournal``), so ``tidings
rebuild-hot-store`` gives an emptied Redis back exactly what it held (``docs/redis.md``);
the retention job keeps the journal bounded (``tidings.store.hotcompact``).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, Select, bindparam, select

from tidings.domain.readstate import POSITION
from tidings.domain.views import TimelineEntry
from tidings.store import hotcompact, hotjournal
from tidings.store.base import InThreads, StoreBase
from tidings.store.redis.client import Redis
from tidings.store.redis.inbox import RedisInbox
from tidings.store.redis.notifier import RedisNotifier
from tidings.store.redis.timeline import RedisTimeline
from tidings.store.redis.writes import WriteBuffer
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox import cap as inboxcap
from tidings.store.sql.jobs import SqlJobAdmin
from tidings.store.sql.onloop import PublishOnLoop
from tidings.store.sql.schema import events, read_markers
from tidings.store.sql.store import SqlStore, SqlTx

T = TypeVar("T")
IN_LIST = 1000
REMEMBERED = 200_000  # users known to be registered, per process (Registered)


# The reads by event id of every page: up to FETCHED ids (a page's), a statement of their
# own per number of ids, built and compiled once and run straight on the driver
# (Database.fetch: nothing compiled or wrapped per call); more ids (a rebuild, an unfollow)
# go through SQLAlchemy's expanding IN.
FETCHED = 64
PAYLOADS = ("id", "payload")
BODIES = ("id", "type", "actor", "object", "payload", "created_at")
ACTORS = ("id", "actor")


@functools.lru_cache(maxsize=4 * (FETCHED + 1))  # every (columns, count): none is dropped
def _by_ids_select(columns: tuple[str, ...], live: bool, count: int | None) -> Select[Any]:
    """The read of ``count`` ids (``i0``, ``i1``, …), or of any number (``ids``, expanding)."""
    ids = (events.c.id.in_(bindparam("ids", expanding=True)) if count is None
           else events.c.id.in_([bindparam(f"i{k}") for k in range(count)]))
    query = select(*(events.c[name] for name in columns)).where(ids)
    return query.where(events.c.retracted_at.is_(None)) if live else query


def _by_ids(db: Database, conn: Connection, columns: tuple[str, ...], *, live: bool = False
            ) -> Callable[[Sequence[int]], list[Any]]:
    """Rows of ``columns`` (the id first) of the events of these ids (``live``: not
    retracted), at most IN_LIST ids a statement."""
    def load(ids: Sequence[int]) -> list[Any]:  # rows, unpacked as tuples
        if 0 < len(ids) <= FETCHED:
            return db.fetch(conn, _by_ids_select(columns, live, len(ids)),
                            {f"i{k}": i for k, i in enumerate(ids)})
        found: list[Any] = []
        for start in range(0, len(ids), IN_LIST):
            found += conn.execute(_by_ids_select(columns, live, None),
                                  {"ids": list(ids[start:start + IN_LIST])}).all()
        return found

    return load


def _payloads(db: Database, conn: Connection) -> Callable[[Sequence[int]], dict[int, str]]:
    load = _by_ids(db, conn, PAYLOADS)
    return lambda ids: {i: payload for i, payload in load(ids)}


def _bodies(db: Database, conn: Connection
            ) -> Callable[[Sequence[int]], dict[int, TimelineEntry]]:
    load = _by_ids(db, conn, BODIES, live=True)
    return lambda ids: {i: TimelineEntry(id=i, type=t, actor=a, object=o, payload=json.loads(p),
                                         created_at=c)
                        for i, t, a, o, p, c in load(ids)}


def _actors(db: Database, conn: Connection
            ) -> Callable[[Sequence[int]], dict[int, str | None]]:
    load = _by_ids(db, conn, ACTORS)
    return lambda ids: {i: actor for i, actor in load(ids)}


class Registered:
    """The users this process has seen registered in SQL's ``users`` (by a committed unit),
    so that a delivery registers only the others: a row there is never deleted, and an
    insert of one that exists changes nothing. At most :data:`REMEMBERED` users; past
    that the memo starts again, which only costs a few inserts that change nothing."""

    def __init__(self) -> None:
        self.users: set[str] = set()

    def register(self, insert: Callable[[Sequence[tuple[str, int]]], None],
                 after_commit: Callable[[Callable[[], None]], None]
                 ) -> Callable[[Sequence[tuple[str, int]]], None]:
        """``insert`` (a unit's registration) for the users not known to be registered,
        who are remembered once the unit has committed."""
        def register(written: Sequence[tuple[str, int]]) -> None:
            new = [(user, at) for user, at in written if user not in self.users]
            if new:
                insert(new)
                after_commit(lambda: self._remember({user for user, _ in new}))

        return register

    def _remember(self, users: set[str]) -> None:
        if len(self.users) + len(users) > REMEMBERED:
            self.users = set()
        self.users |= users


class HotTx:
    """One unit: the SQL ports of its transaction, the Redis inbox and timeline."""

    def __init__(self, sql: SqlTx, redis: Redis, buffer: WriteBuffer,
                 registered: Registered | None = None) -> None:
        self.sql = sql
        self.buffer = buffer
        self.events = sql.events
        self.graph = sql.graph
        self.settings = sql.settings
        self.mail = sql.mail
        self.push = sql.push
        self.jobs = sql.jobs
        db = sql.inbox.db
        self.inbox = RedisInbox(
            redis, buffer, _payloads(db, sql.conn), copy_marker=sql.inbox.set_marker,
            copy_position=sql.inbox.set_position,
            register=(registered or Registered()).register(
                lambda written: inboxcap.register(db, sql.conn, written), sql.after_commit),
            compact=lambda now: hotcompact.compact(sql.conn, redis, now))
        self.timeline = RedisTimeline(redis, buffer, _bodies(db, sql.conn),
                                      _actors(db, sql.conn))

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.sql.after_commit(callback)


class HotStore(StoreBase):
    """A SQL store with its inboxes, counters and timelines in Redis."""

    def __init__(self, sql: SqlStore, hot_url: str) -> None:
        self.sql = sql
        self.redis = Redis(hot_url)
        self.backend = f"{sql.backend}+{'redis-cluster' if self.redis.cluster else 'redis'}"
        self.clock = sql.clock
        self.notifier: RedisNotifier = RedisNotifier(self.redis)
        self.registered = Registered()
        self.adopted = False  # the ready marks were seen (or written) by this process

    def _adopt(self) -> None:
        """Once a process: a hot store used for the first time is marked ready."""
        if not self.adopted:
            if not hotjournal.ready(self.redis):
                hotjournal.adopt(self.sql.db, self.redis)
            self.adopted = True

    @property
    def queue(self) -> SqlJobAdmin:
        return self.sql.queue

    @property
    def on_enqueue(self) -> Callable[[int], None] | None:
        return self.sql.on_enqueue

    @on_enqueue.setter
    def on_enqueue(self, value: Callable[[int], None] | None) -> None:
        self.sql.on_enqueue = value

    def transact(self, work: Callable[[HotTx], T]) -> T:
        self._adopt()

        def unit(tx: SqlTx) -> T:
            buffer = WriteBuffer()
            result = work(HotTx(tx, self.redis, buffer, self.registered))
            if not buffer.empty:  # durable with the unit: a rebuild replays it
                hotjournal.append(tx.conn, buffer)
            buffer.flush(self.redis)  # before the commit: a failed send rolls the unit back
            return result

        return self.sql.transact(unit)

    @contextlib.contextmanager
    def read(self) -> Iterator[HotTx]:
        self._adopt()
        with self.sql.read() as tx:
            yield HotTx(tx, self.redis, WriteBuffer(writable=False))

    # unread_count and mark_all_read: StoreBase's units (the counts and the watermarks live
    # in Redis, the watermarks copied to SQL)

    @functools.cached_property
    def aio(self) -> InThreads:
        # the reads in a thread (Redis); a publish in one statement where the SQL store can
        reads = self.sql.async_reads
        return InThreads(self) if reads is None else PublishOnLoop(self, self.sql, reads)

    def take_tokens(self, bucket: str, cost: float, *, rate: float, capacity: float) -> float:
        return self.sql.take_tokens(bucket, cost, rate=rate, capacity=capacity)  # in SQL

    def ping(self) -> None:
        self.sql.ping()
        self.redis.ping()

    def migrate(self) -> None:
        self.sql.migrate()

    def check_schema(self) -> None:
        self.sql.check_schema()

    def rebuild(self) -> tuple[int, int]:
        """Refill Redis from the journal after it lost its data: every key under the prefix
        goes, the journaled writes are replayed in order (the scripts refuse meanwhile),
        then Redis is marked ready. Returns (units replayed, baseline event id): events up
        to the baseline predate the journal, and are delivered again by the back-fill path
        (:meth:`restore_markers`, ``Tidings.redeliver_retained``)."""
        raw = Redis(self.redis.url, check_ready=False)
        try:
            for _ in range(3):  # a compaction that committed meanwhile: again, from the start
                seen = hotcompact.newest_checkpoint(self.sql.db)
                hotjournal.wipe(raw)
                replayed = hotjournal.replay(self.sql.db, raw)
                if hotcompact.newest_checkpoint(self.sql.db) == seen:
                    break
            hotjournal.mark_ready(raw)
        finally:
            raw.close()
        self.adopted = True
        return replayed

    def restore_markers(self) -> int:
        """Copy every durable watermark from SQL into Redis (after a Redis loss); returns
        how many were copied. Watermarks only move forward, so this is safe at any time."""
        copied = 0
        after = ("", "")
        m = read_markers.c
        while True:
            with self.sql.db.read() as conn:
                rows = conn.execute(
                    select(m.user_id, m.scope, m.until_at, m.position_at, m.position_id)
                    .where((m.user_id > after[0])
                           | ((m.user_id == after[0]) & (m.scope > after[1])))
                    .order_by(m.user_id, m.scope).limit(IN_LIST)).all()
            if not rows:
                return copied
            buffer = WriteBuffer()
            inbox = RedisInbox(self.redis, buffer, lambda ids: {})
            for r in rows:
                if r.scope == POSITION and r.position_at is not None:
                    inbox.set_position(r.user_id, (r.position_at, r.position_id), r.until_at)
                else:
                    inbox.set_marker(r.user_id, r.scope, r.until_at)
            buffer.flush(self.redis)
            copied += len(rows)
            after = (rows[-1].user_id, rows[-1].scope)

    def close(self) -> None:
        self.notifier.close()
        self.redis.close()
        self.sql.close()
