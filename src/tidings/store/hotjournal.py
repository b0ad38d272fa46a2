"""The hot store's journal: every Redis write a committed unit of work made, kept in SQL.

Inbox rows, marks by id, deletions, bundles, watermarks and timelines live in Redis; Redis
may lose them (no persistence, a restart, ``FLUSHALL``, a replaced server). Each unit that
writes to Redis also inserts one ``hot_journal`` row in its own SQL transaction holding the
writes its buffer sends (``WriteBuffer.dumps``): the writes are decided by the unit (which
groups are marked, which rows go, which users an event reaches, at what time), and every
script decides the rest from the state before it, so replaying the rows in order into an
empty key space gives back exactly what was there (``tidings rebuild-hot-store``).

Whether Redis still holds its data is told by its ready marks (``Redis.ready_key``): one key
on a server, one per slot on a cluster, written when a hot store is first used or rebuilt.
Every script checks its slot's mark first, so an emptied Redis refuses reads and writes
(``HotStoreEmptied``, HTTP 503) instead of answering with rows missing.

The first row of a journal is its baseline: the newest event id when the hot store was first
used with a journal. Events up to it (a hot store written before the journal existed) are
delivered again by the back-fill path after the replay, as before the journal.

Rows older than a day or two are folded by the retention job into a snapshot of the state
they made (``tidings.store.hotcompact``), which a replay writes back before the rows after it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, func, insert, select

from tidings.store.redis.client import Redis, guard
from tidings.store.redis.writes import WriteBuffer
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import events, hot_journal

PAGE = 500  # journal rows read at once
SENT = 5_000  # writes sent in one round of pipelines
RESTORED = 1_000  # members (or fields) a restoring command writes at most
BASELINE = "baseline"
SNAPSHOT = "snapshot"


def wall_clock_us() -> int:
    # the wall clock, not the store's: a row's time is for people reading the journal, and
    # the store's clock (a test's frozen one ticks on every reading) dates what tidings shows
    return time.time_ns() // 1000


def append(conn: Connection, buffer: WriteBuffer) -> None:
    """Journal a unit's writes, in the unit's transaction."""
    conn.execute(insert(hot_journal).values(written_at=wall_clock_us(), writes=buffer.dumps()))


def ready(redis: Redis) -> bool:
    """Whether Redis holds its ready mark (of one slot: enough to tell a first use)."""
    with guard("ready mark"):
        return bool(redis.client.exists(redis.ready_keys()[0]))


def adopt(db: Database, redis: Redis) -> None:
    """First use of a hot store without a journal: take Redis as it is (empty for a new
    deployment), note the baseline and mark Redis ready. A journal that has rows means
    Redis lost its data: nothing is adopted then, and the scripts refuse until a rebuild."""
    with db.write() as conn:
        if conn.execute(select(hot_journal.c.id).limit(1)).first() is not None:
            return
        newest = conn.execute(select(func.max(events.c.id))).scalar() or 0
        conn.execute(insert(hot_journal).values(
            written_at=wall_clock_us(), writes=json.dumps({BASELINE: int(newest)})))
    mark_ready(redis)


# Sets (ARGV[1] a run id) or deletes (ARGV[1] '') the ready marks ARGV[2..] of one node's
# slots in one call; KEYS[1], the first of them, routes it (a cluster wants declared keys of
# one slot: the others are reached through allow-cross-slot-keys, as common.lua's users_of).
MARKS = """#!lua flags=allow-cross-slot-keys
for i = 2, #ARGV do
  if ARGV[1] ~= '' then redis.call('SET', ARGV[i], ARGV[1]) else redis.call('DEL', ARGV[i]) end
end
return #ARGV - 1
"""


def _marks(redis: Redis, run: str | None) -> None:
    """Write (or delete) every ready mark: one call a node, as a cluster has one a slot."""
    keys = redis.ready_keys()
    with guard("ready marks"):
        if not redis.cluster:
            redis.client.eval(MARKS, 1, keys[0], run or "", *keys)
            return
        by_node: dict[str, tuple[Any, list[str]]] = {}
        for key in keys:
            node = redis.client.get_node_from_key(key)
            by_node.setdefault(node.name, (node.redis_connection, []))[1].append(key)
        for client, mine in by_node.values():
            client.eval(MARKS, 1, mine[0], run or "", *mine)


def mark_ready(redis: Redis) -> None:
    """Write every ready mark (the scripts answer again)."""
    _marks(redis, secrets.token_hex(8))


def keys_under(redis: Redis, prefix: str) -> Iterator[str]:
    """Every key whose name starts with ``prefix``, on every primary."""
    pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
    with guard("listing keys"):
        nodes = redis.client.get_primaries() if redis.cluster else [None]
        for node in nodes:
            yield from (redis.client.scan_iter(match=pattern, count=1000, target_nodes=node)
                        if node is not None
                        else redis.client.scan_iter(match=pattern, count=1000))


def wipe(redis: Redis, prefix: str | None = None) -> int:
    """Delete every key under the prefix (or under ``prefix``, a scratch key space there),
    the ready marks first (so the scripts refuse while the rest goes); returns how many
    keys went."""
    if prefix is None:
        _marks(redis, None)
    gone = 0
    batch: list[str] = []
    for key in keys_under(redis, redis.prefix if prefix is None else prefix):
        batch.append(key)
        if len(batch) >= 1000:
            gone += _unlink(redis, batch)
            batch = []
    return gone + _unlink(redis, batch)


def _unlink(redis: Redis, keys: list[str]) -> int:
    return len(redis.pipeline([("", "UNLINK", [key]) for key in keys], "wiping")) if keys else 0


class Replay:
    """Journal rows sent, in order, with ``redis`` (a client whose scripts skip the ready
    mark's check), into its own key space or, ``into``, a scratch prefix under it (the
    compaction's: ``tidings.store.hotcompact``). A many-user script's users are grouped by
    node again: the cluster's slots may have moved since."""

    def __init__(self, redis: Redis, into: str | None = None) -> None:
        self.redis = redis
        self.into = into
        self.units = self.baseline = 0
        self.pending: list[Any] = []
        redis.load_scripts()

    def _key(self, key: str) -> str:
        if self.into is None or not key.startswith(self.redis.prefix):
            return key
        return self.into + key[len(self.redis.prefix):]

    def row(self, writes: str) -> None:
        """One journal row: a unit's writes, or an object (the baseline, a checkpoint, a
        part of a snapshot: ``hotcompact``)."""
        if writes.startswith("{"):
            head = json.loads(writes)
            self.baseline = max(self.baseline, int(head.get(BASELINE, 0)))
            for rest, kind, data in head.get(SNAPSHOT, ()):
                self.pending += restore(self._key(self.redis.prefix + rest), kind, data)
        else:
            self.units += 1
            for calls in WriteBuffer.loads(writes).phases:
                for name, first, args in calls:
                    if not name:  # a command: its key first
                        self.pending.append((name, first, [self._key(str(args[0])), *args[1:]]))
                    elif isinstance(first, tuple):
                        prefixes = [self._key(p) for p in first]
                        self.pending += [(name, tuple(prefixes[i] for i in group), args)
                                         for group in self.redis.by_node(prefixes)]
                    else:
                        self.pending.append((name, self._key(first), args))
        if len(self.pending) >= SENT:
            self.flush()

    def flush(self) -> None:
        self.redis.pipeline(self.pending, "rebuilding")
        self.pending = []


def restore(key: str, kind: str, data: Any) -> list[Any]:
    """The commands that write a key a snapshot holds (``hotcompact.dump``) back."""
    if kind == "string":
        return [("", "SET", [key, data])]
    command = {"hash": "HSET", "zset": "ZADD", "set": "SADD"}[kind]
    step = 2 * RESTORED if kind != "set" else RESTORED
    return [("", command, [key, *data[i:i + step]]) for i in range(0, len(data), step)]


def replay(db: Database, redis: Redis) -> tuple[int, int]:
    """Send every journaled write, in order, with ``redis`` (a client whose scripts skip
    the ready mark's check); returns (units replayed, baseline event id)."""
    sender = Replay(redis)
    after = 0
    while True:
        with db.read() as conn:
            rows = conn.execute(select(hot_journal.c.id, hot_journal.c.writes)
                                .where(hot_journal.c.id > after)
                                .order_by(hot_journal.c.id).limit(PAGE)).all()
        if not rows:
            break
        for row in rows:
            sender.row(row.writes)
        after = rows[-1].id
    sender.flush()
    return sender.units, sender.baseline
