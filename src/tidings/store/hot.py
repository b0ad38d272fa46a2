"""The hot store: feeds in Redis (or Redis Cluster), everything else in a store of records.

Events, the graph, settings, mail state and jobs stay in the store of records (SQL, composed
in ``tidings.wiring``; any store that keeps :class:`tidings.ports.hot.RecordsStore`); inbox
rows, read watermarks, unread counts and timelines live in Redis, and live updates go
through Redis pub/sub. Each unit of work is one unit of the store of records whose Redis
writes wait in a buffer until the work has returned and go out just before the commit; every
Redis write is idempotent, so a unit sent but not committed and run again (a retried job)
writes nothing twice. The writes are also journaled in the unit
(:meth:`tidings.ports.hot.FeedRecords.journal`), so ``tidings rebuild-hot-store`` gives an
emptied Redis back exactly what it held (``tidings.store.redis.journal``, ``docs/redis.md``);
the retention job keeps the journal bounded (:meth:`~tidings.ports.hot.FeedRecords.compact`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from tidings.ports import AsyncStore, JobAdmin
from tidings.ports.hot import RecordsStore, RecordsTx
from tidings.store.base import StoreBase
from tidings.store.redis import journal
from tidings.store.redis.client import Redis
from tidings.store.redis.inbox import RedisInbox
from tidings.store.redis.notifier import RedisNotifier
from tidings.store.redis.timeline import RedisTimeline
from tidings.store.redis.writes import WriteBuffer

T = TypeVar("T")
REMEMBERED = 200_000  # users known to be registered, per process (Registered)


class Registered:
    """The users this process has seen registered in the store of records (by a committed
    unit), so that a delivery registers only the others: a registration is never undone,
    and one of a user registered already changes nothing. At most :data:`REMEMBERED` users; past
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


class HotErasure:
    """Erasure over both stores: the store of records' rows, then the user's Redis keys and
    their place in the events' indexes of holders (deleted at once, outside the unit's
    buffer: a journaled delete would name them), and the journal folded without them."""

    def __init__(self, records: RecordsTx, redis: Redis, buffer: WriteBuffer,
                 registered: Registered | None) -> None:
        self.records = records
        self.redis = redis
        self.buffer = buffer
        self.registered = registered

    def authored(self, user: str, *, after_id: int, limit: int) -> list[int]:
        return self.records.erasure.authored(user, after_id=after_id, limit=limit)

    def forget(self, user: str, addresses: Sequence[str]) -> dict[str, int]:
        gone = self.records.erasure.forget(user, addresses)
        keys = journal.forget(self.redis, self.redis.prefix, user)
        if keys:
            gone["hot_key"] = keys
        if self.registered is not None:  # registered again by their next delivery
            memo = self.registered
            self.records.after_commit(lambda: memo.users.discard(user))
        return gone

    def unlist(self, user: str, *, spare: int | None = None) -> dict[str, int]:
        changed = self.records.erasure.unlist(user, spare=spare)
        held = journal.unhold(self.redis, self.redis.prefix, user)
        if held:
            changed["holder_index"] = held
        # the rows of the journal replayed with the writes this unit holds (the retraction
        # of their events), then folded without the user
        pending = None if self.buffer.empty else self.buffer.dumps()
        rows = self.records.feed_records.fold_all(functools.partial(
            journal.folded, self.redis, pending=pending, without=user), naming=user)
        if rows:
            changed["journal_row"] = rows
        return changed


class HotTx:
    """One unit: the ports of the store of records' unit, the Redis inbox and timeline."""

    def __init__(self, records: RecordsTx, redis: Redis, buffer: WriteBuffer,
                 registered: Registered | None = None) -> None:
        self.records = records
        self.buffer = buffer
        self.events = records.events
        self.graph = records.graph
        self.settings = records.settings
        self.mail = records.mail
        self.push = records.push
        self.jobs = records.jobs
        feed = records.feed_records
        self.inbox = RedisInbox(
            redis, buffer, feed.payloads, copy_marker=records.inbox.set_marker,
            copy_position=records.inbox.set_position,
            register=(registered or Registered()).register(feed.register,
                                                           records.after_commit),
            compact=lambda now: feed.compact(now, functools.partial(journal.folded, redis)))
        self.timeline = RedisTimeline(redis, buffer, feed.bodies, feed.actors)
        self.erasure = HotErasure(records, redis, buffer, registered)

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.records.after_commit(callback)


class HotStore(StoreBase):
    """A store of records with its inboxes, counters and timelines in Redis."""

    def __init__(self, records: RecordsStore, hot_url: str) -> None:
        self.records = records
        self.redis = Redis(hot_url)
        self.backend = f"{records.backend}+{'redis-cluster' if self.redis.cluster else 'redis'}"
        self.notifier: RedisNotifier = RedisNotifier(self.redis)
        self.registered = Registered()
        self.adopted = False  # the ready marks were seen (or written) by this process

    def _adopt(self) -> None:
        """Once a process: a hot store used for the first time is marked ready. A journal
        that has rows means Redis lost its data: nothing is adopted then, and the scripts
        refuse until a rebuild."""
        if not self.adopted:
            if not journal.ready(self.redis) and self.records.journal.adopt():
                journal.mark_ready(self.redis)
            self.adopted = True

    @property
    def queue(self) -> JobAdmin:
        return self.records.queue

    @property
    def on_enqueue(self) -> Callable[[int], None] | None:
        return self.records.on_enqueue

    @on_enqueue.setter
    def on_enqueue(self, value: Callable[[int], None] | None) -> None:
        self.records.on_enqueue = value

    def transact(self, work: Callable[[HotTx], T]) -> T:
        self._adopt()

        def unit(tx: RecordsTx) -> T:
            buffer = WriteBuffer()
            result = work(HotTx(tx, self.redis, buffer, self.registered))
            if not buffer.empty:  # durable with the unit: a rebuild replays it
                tx.feed_records.journal(buffer.dumps())
            buffer.flush(self.redis)  # before the commit: a failed send rolls the unit back
            return result

        return self.records.transact(unit)

    @contextlib.contextmanager
    def read(self) -> Iterator[HotTx]:
        self._adopt()
        with self.records.read() as tx:
            yield HotTx(tx, self.redis, WriteBuffer(writable=False))

    # unread_count and mark_all_read: StoreBase's units (the counts and the watermarks live
    # in Redis, the watermarks copied to the store of records)

    @functools.cached_property
    def aio(self) -> AsyncStore:
        # the reads in a thread (Redis); a publish the records store's native way, if any
        return self.records.publishing(self)

    def take_tokens(self, bucket: str, cost: float, *, rate: float, capacity: float) -> float:
        return self.records.take_tokens(bucket, cost, rate=rate, capacity=capacity)

    def ping(self) -> None:
        self.records.ping()
        self.redis.ping()

    def migrate(self) -> None:
        self.records.migrate()

    def check_schema(self) -> None:
        self.records.check_schema()

    def rebuild(self) -> tuple[int, int]:
        """Refill Redis from the journal after it lost its data: every key under the prefix
        goes, the journaled writes are replayed in order (the scripts refuse meanwhile),
        then Redis is marked ready. Returns (units replayed, baseline event id): events up
        to the baseline predate the journal, and are delivered again by the back-fill path
        (:meth:`restore_markers`, ``Tidings.redeliver_retained``)."""
        raw = Redis(self.redis.url, check_ready=False)
        try:
            for _ in range(3):  # a compaction that committed meanwhile: again, from the start
                seen = self.records.journal.newest_checkpoint()
                journal.wipe(raw)
                sender = journal.Replay(raw)
                self.records.journal.replay(sender.row)
                sender.flush()
                if self.records.journal.newest_checkpoint() == seen:
                    break
            journal.mark_ready(raw)
        finally:
            raw.close()
        self.adopted = True
        return sender.units, sender.baseline

    def restore_markers(self) -> int:
        """Copy every durable watermark from the store of records into Redis (after a Redis
        loss); returns how many were copied. Watermarks only move forward, so this is safe at
        any time."""
        copied = 0
        for marks in self.records.journal.watermarks():
            buffer = WriteBuffer()
            inbox = RedisInbox(self.redis, buffer, lambda ids: {})
            for mark in marks:
                if mark.position is not None:
                    inbox.set_position(mark.user, mark.position, mark.until)
                else:
                    inbox.set_marker(mark.user, mark.scope, mark.until)
            buffer.flush(self.redis)
            copied += len(marks)
        return copied

    def close(self) -> None:
        self.notifier.close()
        self.redis.close()
        self.records.close()
