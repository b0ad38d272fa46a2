"""The hot store: SQL as the source of truth, Redis (or Redis Cluster) for the hot parts.

Events, the graph, settings, mail state and jobs stay in SQL; inbox rows, read watermarks,
unread counts and timelines live in Redis, and live updates go through Redis pub/sub. Each
unit of work is one SQL transaction whose Redis writes wait in a buffer until the work has
returned and go out just before the commit; every Redis write is idempotent, so a unit sent
but not committed and run again (a retried job) writes nothing twice. Watermarks are also
written through to SQL's ``read_markers`` so ``tidings rebuild-hot-store`` can restore them
(``docs/redis.md``).
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
from tidings.store.redis.client import Redis
from tidings.store.redis.inbox import RedisInbox
from tidings.store.redis.notifier import RedisNotifier
from tidings.store.redis.timeline import RedisTimeline
from tidings.store.redis.writes import WriteBuffer
from tidings.store.sql import inboxcap
from tidings.store.sql.queue import SqlJobAdmin
from tidings.store.sql.schema import events, read_markers
from tidings.store.sql.store import SqlStore, SqlTx

T = TypeVar("T")
IN_LIST = 1000


# The reads by event id of every page, in two forms: the driver's own statement, made once
# per number of ids and run with nothing to compile (exec_driver_sql), for the positional
# paramstyles of our drivers (sqlite3: qmark; psycopg and PyMySQL: pyformat, which also takes
# %s with a tuple); and the same query in SQLAlchemy's terms for any other.
MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}
PAYLOADS = ("id", "payload")
BODIES = ("id", "type", "actor", "object", "payload", "created_at")
ACTORS = ("id", "actor")
LIVE = "retracted_at IS NULL"


@functools.lru_cache(maxsize=256)
def _by_ids_sql(columns: tuple[str, ...], live: bool, mark: str, count: int) -> str:
    return (f"SELECT {', '.join(columns)} FROM {events.name} "
            f"WHERE id IN ({', '.join([mark] * count)}){f' AND {LIVE}' if live else ''}")


@functools.lru_cache(maxsize=8)
def _by_ids_select(columns: tuple[str, ...], live: bool) -> Select[Any]:
    query = select(*(events.c[name] for name in columns)).where(
        events.c.id.in_(bindparam("ids", expanding=True)))
    return query.where(events.c.retracted_at.is_(None)) if live else query


def _by_ids(conn: Connection, columns: tuple[str, ...], *, live: bool = False
            ) -> Callable[[Sequence[int]], list[Any]]:
    """Rows of ``columns`` (the id first) of the events of these ids (``live``: not
    retracted), at most IN_LIST ids a statement."""
    mark = MARKS.get(conn.dialect.paramstyle)

    def load(ids: Sequence[int]) -> list[Any]:  # rows, unpacked as tuples
        found: list[Any] = []
        for start in range(0, len(ids), IN_LIST):
            chunk = list(ids[start:start + IN_LIST])
            if mark is None:
                found += conn.execute(_by_ids_select(columns, live), {"ids": chunk}).all()
            else:
                found += conn.exec_driver_sql(_by_ids_sql(columns, live, mark, len(chunk)),
                                              tuple(chunk)).all()
        return found

    return load


def _payloads(conn: Connection) -> Callable[[Sequence[int]], dict[int, str]]:
    load = _by_ids(conn, PAYLOADS)
    return lambda ids: {i: payload for i, payload in load(ids)}


def _bodies(conn: Connection) -> Callable[[Sequence[int]], dict[int, TimelineEntry]]:
    load = _by_ids(conn, BODIES, live=True)
    return lambda ids: {i: TimelineEntry(id=i, type=t, actor=a, object=o, payload=json.loads(p),
                                         created_at=c)
                        for i, t, a, o, p, c in load(ids)}


def _actors(conn: Connection) -> Callable[[Sequence[int]], dict[int, str | None]]:
    load = _by_ids(conn, ACTORS)
    return lambda ids: {i: actor for i, actor in load(ids)}


class HotTx:
    """One unit: the SQL ports of its transaction, the Redis inbox and timeline."""

    def __init__(self, sql: SqlTx, redis: Redis, buffer: WriteBuffer) -> None:
        self.sql = sql
        self.buffer = buffer
        self.events = sql.events
        self.graph = sql.graph
        self.settings = sql.settings
        self.mail = sql.mail
        self.jobs = sql.jobs
        self.inbox = RedisInbox(
            redis, buffer, _payloads(sql.conn), copy_marker=sql.inbox.set_marker,
            copy_position=sql.inbox.set_position,
            register=lambda written: inboxcap.register(sql.inbox.db, sql.conn, written))
        self.timeline = RedisTimeline(redis, buffer, _bodies(sql.conn), _actors(sql.conn))

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.sql.after_commit(callback)


class HotStore:
    """A SQL store with its inboxes, counters and timelines in Redis."""

    def __init__(self, sql: SqlStore, hot_url: str) -> None:
        self.sql = sql
        self.redis = Redis(hot_url)
        self.backend = f"{sql.backend}+{'redis-cluster' if self.redis.cluster else 'redis'}"
        self.clock = sql.clock
        self.notifier = RedisNotifier(self.redis)

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
        def unit(tx: SqlTx) -> T:
            buffer = WriteBuffer()
            result = work(HotTx(tx, self.redis, buffer))
            buffer.flush(self.redis)  # before the commit: a failed send rolls the unit back
            return result

        return self.sql.transact(unit)

    @contextlib.contextmanager
    def read(self) -> Iterator[HotTx]:
        with self.sql.read() as tx:
            yield HotTx(tx, self.redis, WriteBuffer(writable=False))

    def mark_all_read_at_once(self, user: str, until: int) -> int | None:
        return None  # the watermark lives in Redis (and is copied to SQL): a unit of work

    def ping(self) -> None:
        self.sql.ping()
        self.redis.ping()

    def migrate(self) -> None:
        self.sql.migrate()

    def check_schema(self) -> None:
        self.sql.check_schema()

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
