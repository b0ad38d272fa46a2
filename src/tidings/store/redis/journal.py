"""The hot store's journal on the Redis side: ready marks, the replay, the snapshot.

Inbox rows, marks by id, deletions, bundles, watermarks and timelines live in Redis; Redis
may lose them (no persistence, a restart, ``FLUSHALL``, a replaced server). Each unit that
writes to Redis also journals the writes its buffer sends (``WriteBuffer.dumps``) in its
store of records (:class:`tidings.ports.hot.FeedRecords`; in SQL ``hot_journal``,
``tidings.store.sql.journal``): the writes are decided by the unit (which groups are marked,
which rows go, which users an event reaches, at what time), and every script decides the
rest from the state before it, so replaying the rows in order (:class:`Replay`) into an empty
key space gives back exactly what was there (``tidings rebuild-hot-store``).

Whether Redis still holds its data is told by its ready marks (``Redis.ready_key``): one key
on a server, one per slot on a cluster, written when a hot store is first used or rebuilt.
Every script checks its slot's mark first, so an emptied Redis refuses reads and writes
(``HotStoreEmptied``, HTTP 503) instead of answering with rows missing.

The first row of a journal is its baseline: the newest event id when the hot store was first
used with a journal. Events up to it (a hot store written before the journal existed) are
delivered again by the back-fill path after the replay, as before the journal.

Older rows are folded by the retention job into the state they make (:func:`folded`): they
are replayed, as a rebuild would, into a scratch key space under the prefix
(``<prefix>~<token>:``, each key keeping its hash tag, hence its slot), every key there is
read back (:func:`dump`) for the store of records to keep in their place, and the scratch
keys go. A rebuild writes the snapshot back (:func:`restore`), then replays the rows after it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator
from typing import Any

from tidings.ports.hot import BASELINE, SNAPSHOT, SnapshotPart
from tidings.store.redis.client import Redis, guard
from tidings.store.redis.writes import WriteBuffer

SENT = 5_000  # writes sent in one round of pipelines
RESTORED = 1_000  # members (or fields) a restoring command writes at most
KEYS_A_ROW = 2_000  # keys of the snapshot in one journal row
READ = 500  # keys read back at once


def ready(redis: Redis) -> bool:
    """Whether Redis holds its ready mark (of one slot: enough to tell a first use)."""
    with guard("ready mark"):
        return bool(redis.client.exists(redis.ready_keys()[0]))


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


def forget(redis: Redis, prefix: str, user: str) -> int:
    """Delete every key of ``user``'s under ``prefix`` (their inbox rows, watermarks,
    timeline: the keys of their hash tag); returns how many went."""
    return wipe(redis, f"{prefix}{{u:{user}}}")


def unhold(redis: Redis, prefix: str, user: str) -> int:
    """Take ``user`` out of every event's index of who holds it under ``prefix``; returns
    how many indexes named them."""
    taken = 0
    batch: list[str] = []
    for key in keys_under(redis, prefix + "{e:"):
        if key.endswith("}:u"):
            batch.append(key)
        if len(batch) >= 1000:
            taken += _take(redis, batch, user)
            batch = []
    return taken + _take(redis, batch, user)


def _take(redis: Redis, keys: list[str], user: str) -> int:
    calls = [("", "SREM", [key, user]) for key in keys]
    return sum(int(n) for n in redis.pipeline(calls, "erasing")) if keys else 0


def _unlink(redis: Redis, keys: list[str]) -> int:
    return len(redis.pipeline([("", "UNLINK", [key]) for key in keys], "wiping")) if keys else 0


class Replay:
    """Journal rows sent, in order, with ``redis`` (a client whose scripts skip the ready
    mark's check), into its own key space or, ``into``, a scratch prefix under it (a
    fold's: :func:`folded`). A many-user script's users are grouped by node again: the
    cluster's slots may have moved since."""

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
        part of a snapshot)."""
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
    """The commands that write a key a snapshot holds (:func:`dump`) back."""
    if kind == "string":
        return [("", "SET", [key, data])]
    command = {"hash": "HSET", "zset": "ZADD", "set": "SADD"}[kind]
    step = 2 * RESTORED if kind != "set" else RESTORED
    return [("", command, [key, *data[i:i + step]]) for i in range(0, len(data), step)]


@contextlib.contextmanager
def folded(redis: Redis, rows: Iterator[str], *, pending: str | None = None,
           without: str | None = None) -> Iterator[tuple[int, Iterator[SnapshotPart]]]:
    """The state ``rows`` make (:data:`tidings.ports.hot.Fold`): replayed into a scratch key
    space, read back (their baseline, :func:`dump`'s parts) while the context is open, then
    deleted. An erasure's fold replays the writes its unit holds (``pending``, journaled
    after the snapshot too: every write is idempotent) and leaves the user ``without`` out:
    their keys and their place in the index of who holds an event."""
    raw = Redis(redis.url, check_ready=False)
    scratch = f"{redis.prefix}~{secrets.token_hex(6)}:"
    try:
        replay = Replay(raw, into=scratch)
        for writes in rows:
            replay.row(writes)
        if pending is not None:
            replay.row(pending)
        replay.flush()
        if without is not None:
            forget(raw, scratch, without)
            unhold(raw, scratch, without)
        yield replay.baseline, dump(raw, scratch)
    finally:
        wipe(raw, scratch)
        raw.close()


def dump(redis: Redis, prefix: str) -> Iterator[SnapshotPart]:
    """Every key under ``prefix``, by name, in parts of up to KEYS_A_ROW keys: [name after
    the prefix, type, data] (a hash's fields and values, a sorted set's scores and members,
    a set's members, a string)."""
    names = sorted(keys_under(redis, prefix))
    for start in range(0, len(names), KEYS_A_ROW):
        yield _read(redis, prefix, names[start:start + KEYS_A_ROW])


def _read(redis: Redis, prefix: str, names: list[str]) -> SnapshotPart:
    entries: SnapshotPart = []
    for start in range(0, len(names), READ):
        batch = names[start:start + READ]
        kinds = redis.pipeline([("", "TYPE", [key]) for key in batch], "compacting")
        reads = {"hash": ("HGETALL", []), "zset": ("ZRANGE", [0, -1, "WITHSCORES"]),
                 "set": ("SMEMBERS", []), "string": ("GET", [])}
        values = redis.pipeline([("", reads[kind][0], [key, *reads[kind][1]])
                                 for key, kind in zip(batch, kinds, strict=True)], "compacting")
        for key, kind, value in zip(batch, kinds, values, strict=True):
            entries.append([key[len(prefix):], kind, _flat(kind, value)])
    return entries


def _flat(kind: str, value: Any) -> Any:
    if kind == "hash":
        return [x for pair in sorted(value.items()) for x in pair]
    if kind == "zset":  # [(member, score), ...] or [member, score, ...]: scores first
        pairs = (value if value and isinstance(value[0], (list, tuple))
                 else list(zip(value[::2], value[1::2], strict=True)))
        return [x for member, score in pairs for x in (_score(score), member)]
    if kind == "set":
        return sorted(value)
    return value


def _score(score: Any) -> str:
    if isinstance(score, float):
        return repr(int(score)) if score.is_integer() else repr(score)
    return str(score)
