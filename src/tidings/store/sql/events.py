"""Stored events (``EventStore`` on SQL): insert with idempotency keys, look up, retract;
and on PostgreSQL events and their jobs stored by one statement (:func:`unit`), for a publish
awaited on an event loop (:class:`tidings.store.sql.onloop.PublishOnLoop`).

A publish as a unit of work is a transaction of five round trips — ``BEGIN``, the read of
the idempotency keys, the insert of the events, the insert of their jobs, ``COMMIT`` — run
in a thread. Here one statement does it all in autocommit, so it commits alone (one round
trip, one flush of the log): the events go in only if none of their keys is taken yet (all
or none: nothing to decide row by row), and each new event's job is built from its id in
the server. A key taken by a concurrent publish after the check fails the statement on the
unique index, and nothing is stored.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, TextClause, select, text, update

from tidings.domain.events import DEFAULT_SCOPE, Event
from tidings.domain.views import StoredEvent
from tidings.jobs.model import EventJob
from tidings.store.sql.core.bulk import column_arrays, probes, unnest_insert
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import deliveries, event_fields, events
from tidings.store.sql.timeline import pull

# PostgreSQL: one lookup of (scope, key) per key, each an equality on both columns of the
# unique index (:func:`.bulk.probes`)
_PG_BY_KEYS = probes(events, ("idempotency_scope",), "idempotency_key",
                     tuple(c.name for c in pull.COLUMNS))  # rows as pull.stored_event reads


COLUMNS = ("type", "actor", "object", "payload", "recipients", "exclude", "idempotency_scope",
            "idempotency_key", "body_hash", "created_at")  # what event_row() gives


def _stored(row: Any) -> StoredEvent:
    return StoredEvent(
        id=row.id, type=row.type, actor=row.actor, object=row.object,
        payload=json.loads(row.payload), recipients=json.loads(row.recipients),
        exclude=json.loads(row.exclude), idempotency_key=row.idempotency_key,
        body_hash=row.body_hash, created_at=row.created_at, retracted_at=row.retracted_at,
    )


def event_row(event: Event, payload_json: str, now: int, scope: str) -> dict[str, Any]:
    return {
        "type": event.type, "actor": event.actor, "object": event.object,
        "payload": payload_json, "recipients": json.dumps(list(event.recipients)),
        "exclude": json.dumps(list(event.exclude)), "idempotency_scope": scope,
        "idempotency_key": event.idempotency_key, "body_hash": event.body_hash(),
        "created_at": event.created_at if event.created_at is not None else now,
    }


class SqlEvents:
    """The ``events`` table within one transaction."""

    def __init__(self, conn: Connection, db: Database) -> None:
        self.conn = conn
        self.db = db

    def insert(self, event: Event, payload_json: str, now: int, *,
               scope: str = DEFAULT_SCOPE) -> int:
        row = event_row(event, payload_json, now, scope)
        result = self.conn.execute(events.insert().values(row))
        key = result.inserted_primary_key
        assert key is not None
        return int(key[0])

    def insert_many(self, rows: Sequence[tuple[Event, str]], now: int, *,
                    scope: str = DEFAULT_SCOPE) -> list[int]:
        if self.db.backend == "postgresql" and rows:
            # one INSERT of column arrays, run on the driver: its text is the same for any
            # number of rows (SQLAlchemy's multi-row VALUES is a new text per row count, which
            # psycopg parses again each time once it passes 4 kB: a group of 16 events)
            values = [event_row(e, p, now, scope) for e, p in rows]
            single, params = column_arrays(values, COLUMNS)
            found = self.db.fetch(self.conn, unnest_insert(
                events, COLUMNS, False, returning=("id",), single=single, ordered=True),
                params)
            return sorted(int(r[0]) for r in found)  # taken in the rows' order
        dialect = self.conn.dialect
        if len(rows) < 2 or not dialect.insert_executemany_returning_sort_by_parameter_order:
            return [self.insert(event, payload, now, scope=scope) for event, payload in rows]
        # one multi-row INSERT … RETURNING id, the ids handed back in the rows' order
        stmt = events.insert().returning(events.c.id, sort_by_parameter_order=True)
        result = self.conn.execute(stmt, [event_row(e, p, now, scope) for e, p in rows])
        return [int(r[0]) for r in result]

    def get(self, event_id: int, *, lock: bool = False) -> StoredEvent | None:
        query = select(events).where(events.c.id == event_id)
        if lock and self.conn.dialect.name != "sqlite":
            query = query.with_for_update(read=True)
        row = self.conn.execute(query).first()
        return _stored(row) if row is not None else None

    def position_near(self, event_id: int) -> tuple[int, int] | None:
        row = self.conn.execute(select(events.c.created_at, events.c.id)
                                .where(events.c.id <= event_id)
                                .order_by(events.c.id.desc()).limit(1)).first()
        return None if row is None else (int(row.created_at), int(row.id))

    def get_many(self, event_ids: Sequence[int], *, lock: bool = False
                 ) -> dict[int, StoredEvent]:
        found: dict[int, StoredEvent] = {}
        wanted = sorted(set(event_ids))
        for part in self.db.parts(wanted):
            query = select(events).where(self.db.among(events.c.id, part))
            if lock and self.conn.dialect.name != "sqlite":
                query = query.order_by(events.c.id).with_for_update(read=True)
            found.update((row.id, _stored(row)) for row in self.conn.execute(query))
        return found

    def get_by_keys(self, keys: Sequence[str], *, scope: str = DEFAULT_SCOPE
                    ) -> dict[str, StoredEvent]:
        found: dict[str, StoredEvent] = {}
        if self.db.backend == "postgresql" and keys:
            found_rows = self.db.fetch(self.conn, _PG_BY_KEYS, {  # on the driver: built once
                "idempotency_scope": scope, "values": json.dumps(sorted(set(keys)))})
            stored = [pull.stored_event(r) for r in found_rows]
            return {e.idempotency_key: e for e in stored if e.idempotency_key is not None}
        for part in self.db.parts(sorted(set(keys))):
            rows = self.conn.execute(select(events).where(
                events.c.idempotency_scope == scope, self.db.among(events.c.idempotency_key,
                                                                   part)))
            found.update((row.idempotency_key, _stored(row)) for row in rows)
        return found

    def get_by_key(self, key: str, *, scope: str = DEFAULT_SCOPE) -> StoredEvent | None:
        row = self.conn.execute(select(events).where(
            events.c.idempotency_scope == scope, events.c.idempotency_key == key)).first()
        return _stored(row) if row is not None else None

    def find_ids(self, *, type: str | None, actor: str | None, object: str | None,
                 after_id: int = 0, limit: int = 1000) -> list[int]:
        query = select(events.c.id).where(events.c.id > after_id,
                                          events.c.retracted_at.is_(None))
        if type is not None:
            query = query.where(events.c.type == type)
        if actor is not None:
            query = query.where(events.c.actor == actor)
        if object is not None:
            query = query.where(events.c.object == object)
        return [r.id for r in self.conn.execute(query.order_by(events.c.id).limit(limit))]

    def mark_retracted(self, event_ids: Sequence[int], now: int) -> None:
        if event_ids:
            self.conn.execute(update(events).where(events.c.id.in_(list(event_ids)))
                              .values(retracted_at=now))

    def expired_ids(self, *, types: Sequence[str] | None, other_than: Sequence[str] | None,
                    before: int, limit: int, after: int = 0) -> list[int]:
        query = (select(events.c.id).where(events.c.created_at < before, events.c.id > after)
                 .order_by(events.c.id))
        if types is not None:
            query = query.where(events.c.type.in_(list(types)))
        if other_than:
            query = query.where(events.c.type.not_in(list(other_than)))
        return [r.id for r in self.conn.execute(query.limit(limit))]

    def delete(self, event_ids: Sequence[int]) -> None:
        if event_ids:
            self.conn.execute(events.delete().where(events.c.id.in_(list(event_ids))))
            self.conn.execute(event_fields.delete().where(
                event_fields.c.event_id.in_(list(event_ids))))
            self.conn.execute(deliveries.delete().where(  # who received them
                deliveries.c.event_id.in_(list(event_ids))))

    def actors_of(self, event_ids: Sequence[int]) -> list[str]:
        if not event_ids:
            return []
        rows = self.conn.execute(select(events.c.actor).where(events.c.id.in_(list(event_ids)))
                                 .order_by(events.c.id.desc()))
        return list(dict.fromkeys(r.actor for r in rows if r.actor))

    def pull_page(self, sources: Sequence[tuple[str, tuple[int, int]]], *,
                  types: Sequence[str], limit: int, below: tuple[int, int] | None,
                  above: tuple[int, int] | None) -> list[StoredEvent]:
        return pull.pull_page(self.db, self.conn, sources, types=types, limit=limit, below=below,
                              above=above)


_JOB_ARRAYS = ("jfunc", "jtail", "jkey", "jpriority")


@functools.lru_cache(maxsize=64)
def _statement(single: tuple[bool, ...]) -> TextClause:
    """The statement for events whose columns have the ``single`` shape of
    :func:`column_arrays`; its rows are the new events' ids, in the rows' order."""
    insert = unnest_insert(events, COLUMNS, False, returning=("id",), single=single,
                           ordered=True, where="NOT EXISTS (SELECT 1 FROM taken)").text
    arrays = ", ".join(f"json_array_elements_text(CAST(:{name} AS JSON))"
                       for name in _JOB_ARRAYS)
    return text(
        # one probe of the unique index per key (as tidings.store.sql.core.bulk.probes reads them)
        "WITH taken AS MATERIALIZED (SELECT 1 FROM json_array_elements_text(CAST(:keys AS JSON))"
        " AS k(value) CROSS JOIN LATERAL (SELECT 1 FROM events"
        " WHERE events.idempotency_scope = CAST(:scope AS VARCHAR)"
        " AND events.idempotency_key = k.value LIMIT 1) AS p LIMIT 1),"
        f" new AS ({insert}),"
        " numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM new),"
        " queued AS (INSERT INTO jobs (func, args, unique_key, priority, run_after,"
        " grabbed_until, attempts, created_at)"
        " SELECT j.func, '{\"event_id\":' || numbered.id || j.tail, j.key || numbered.id,"
        " CAST(j.priority AS SMALLINT), CAST(:now AS BIGINT), 0, 0, CAST(:now AS BIGINT)"
        f" FROM numbered JOIN ROWS FROM ({arrays}) WITH ORDINALITY"
        " AS j(func, tail, key, priority, n) ON j.n = numbered.n"
        " ON CONFLICT DO NOTHING)"
        " SELECT id FROM new ORDER BY id")


def unit(rows: Sequence[tuple[Event, str]], jobs: Sequence[EventJob], now: int,
         scope: str) -> tuple[TextClause, dict[str, Any]]:
    """The statement that stores ``rows`` (event, payload JSON) in ``scope`` with
    ``jobs[i]`` for the i-th event, and its parameters."""
    single, params = column_arrays([event_row(e, p, now, scope) for e, p in rows], COLUMNS)
    keys = [e.idempotency_key for e, _ in rows if e.idempotency_key is not None]
    params.update(
        keys=json.dumps(keys), scope=scope, now=now,
        jfunc=json.dumps([j.func for j in jobs]),
        # the args' JSON after the event id: ``}``, or ``,"at":…}``
        jtail=json.dumps(["," + _args(j)[1:] if j.args else "}" for j in jobs]),
        jkey=json.dumps([j.key_prefix for j in jobs]),
        jpriority=json.dumps([j.priority for j in jobs]))
    return _statement(single), params


def _args(job: EventJob) -> str:
    return json.dumps(dict(job.args), separators=(",", ":"))
