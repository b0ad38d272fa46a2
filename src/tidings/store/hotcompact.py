"""The hot store's journal kept bounded: its older rows folded into a snapshot.

The journal (``tidings.store.hotjournal``) gets one row per unit that wrote to Redis, for
ever. The hourly retention job calls :func:`compact` in its unit: at most once a day (by the
store's clock) it writes a *checkpoint* row, and folds every row before the previous
checkpoint (a day old, so no unit that journaled before it is still running) into a
snapshot. The rows before the checkpoint are replayed, as a rebuild would, into a scratch key
space under the prefix (``<prefix>~<token>:``, each key keeping its hash tag, hence its
slot); every key there is read back (``dump``) and stored in place of those rows, as
``{"snapshot": [[key after the prefix, type, data], ...]}`` rows with the lowest ids; the
scratch keys go. A rebuild writes the snapshot back (``hotjournal.restore``), then replays
the rows after it: the same state as replaying every row, since the snapshot is exactly the
state those rows made, whatever they were (deliveries since removed by retention, bundles
whose first members are gone, marks, watermarks, timelines). The journal then holds the
state of a day ago (bounded like Redis itself, by retention and the caps) and a day or two of
units.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from tidings.store import hotjournal
from tidings.store.redis.client import Redis
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import hot_journal

DAY_US = 86_400 * 1_000_000
EVERY = DAY_US  # the time between checkpoints (store clock, µs)
CHECKPOINT = "checkpoint"
KEYS_A_ROW = 2_000  # keys of the snapshot in one journal row
READ = 500  # keys read back at once


def checkpoints(conn: Connection) -> list[tuple[int, int]]:
    """(row id, store time) of every checkpoint, oldest first. A checkpoint's
    ``written_at`` is minus its store time (every other row's is a positive wall clock):
    found without reading any row's writes."""
    j = hot_journal.c
    rows = conn.execute(select(j.id, j.written_at).where(j.written_at < 0).order_by(j.id)).all()
    return [(row.id, -row.written_at) for row in rows]


def newest_checkpoint(db: Database) -> int:
    """The newest checkpoint's row id (0: none): a rebuild that sees it change while it
    replays met a compaction, and starts again."""
    with db.read() as conn:
        marks = checkpoints(conn)
    return marks[-1][0] if marks else 0


def compact(conn: Connection, redis: Redis, now: int) -> int:
    """Once a day (``now`` a day past the newest checkpoint, or none yet): fold the rows
    before the newest checkpoint into a snapshot, then write a checkpoint. Runs in the
    caller's unit (``conn``); returns how many rows went."""
    marks = checkpoints(conn)
    if marks and marks[-1][1] > now - EVERY:
        return 0
    gone = fold(conn, redis, marks[-1][0]) if marks else 0
    conn.execute(insert(hot_journal).values(written_at=-now,
                                            writes=json.dumps({CHECKPOINT: now})))
    return gone


def fold(conn: Connection, redis: Redis, upto: int) -> int:
    """Replace the rows before row ``upto`` by the snapshot of the state they make."""
    j = hot_journal.c
    ids = list(conn.execute(select(j.id).where(j.id < upto).order_by(j.id)).scalars())
    if len(ids) < 2:
        return 0  # a snapshot alone (or nothing) already
    raw = Redis(redis.url, check_ready=False)
    scratch = f"{redis.prefix}~{secrets.token_hex(6)}:"
    try:
        replay = hotjournal.Replay(raw, into=scratch)
        after = 0
        while True:
            rows = conn.execute(select(j.id, j.writes).where(j.id > after, j.id < upto)
                                .order_by(j.id).limit(hotjournal.PAGE)).all()
            if not rows:
                break
            for row in rows:
                replay.row(row.writes)
            after = rows[-1].id
        replay.flush()
        kept = _store(conn, ids, replay.baseline, dump(raw, scratch))
    finally:
        hotjournal.wipe(raw, scratch)
        raw.close()
    conn.execute(delete(hot_journal).where(j.id > ids[kept - 1], j.id < upto))
    return len(ids) - kept


def _store(conn: Connection, ids: list[int], baseline: int,
           parts: Iterator[list[list[Any]]]) -> int:
    """Write the snapshot's parts over the rows of ``ids``, in order (few rows that made many
    keys: the last row takes the rest); returns how many rows hold it."""
    def write(n: int, part: list[list[Any]]) -> None:
        head: dict[str, Any] = {hotjournal.BASELINE: baseline} if n == 0 else {}
        conn.execute(update(hot_journal).where(hot_journal.c.id == ids[n])
                     .values(writes=json.dumps({**head, hotjournal.SNAPSHOT: part},
                                               separators=(",", ":"))))

    n, held = 0, None
    for part in parts:
        if held is None:
            held = part
        elif n < len(ids) - 1:
            write(n, held)
            n, held = n + 1, part
        else:
            held += part
    write(n, held or [])
    return n + 1


def dump(redis: Redis, prefix: str) -> Iterator[list[list[Any]]]:
    """Every key under ``prefix``, by name, in parts of up to KEYS_A_ROW keys: [name after
    the prefix, type, data] (a hash's fields and values, a sorted set's scores and members,
    a set's members, a string)."""
    names = sorted(hotjournal.keys_under(redis, prefix))
    for start in range(0, len(names), KEYS_A_ROW):
        yield _read(redis, prefix, names[start:start + KEYS_A_ROW])


def _read(redis: Redis, prefix: str, names: list[str]) -> list[list[Any]]:
    entries: list[list[Any]] = []
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
