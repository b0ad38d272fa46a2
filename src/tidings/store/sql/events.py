"""Stored events: insert with idempotency, look up, find for retraction."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select, update

from tidings.domain.events import Event
from tidings.store.sql.schema import events


@dataclass(frozen=True)
class StoredEvent:
    id: int
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    recipients: list[str]
    exclude: list[str]
    idempotency_key: str | None
    body_hash: str
    created_at: int
    retracted_at: int | None


def _stored(row: Any) -> StoredEvent:
    return StoredEvent(
        id=row.id, type=row.type, actor=row.actor, object=row.object,
        payload=json.loads(row.payload), recipients=json.loads(row.recipients),
        exclude=json.loads(row.exclude), idempotency_key=row.idempotency_key,
        body_hash=row.body_hash, created_at=row.created_at, retracted_at=row.retracted_at,
    )


def insert_event(conn: Connection, event: Event, payload_json: str, now: int) -> int:
    result = conn.execute(events.insert().values(
        type=event.type, actor=event.actor, object=event.object, payload=payload_json,
        recipients=json.dumps(list(event.recipients)), exclude=json.dumps(list(event.exclude)),
        idempotency_key=event.idempotency_key, body_hash=event.body_hash(),
        created_at=event.created_at if event.created_at is not None else now,
    ))
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def get_event(conn: Connection, event_id: int, *, lock: bool = False) -> StoredEvent | None:
    """Fetch one event; ``lock`` takes a shared row lock so a retraction waits for us."""
    query = select(events).where(events.c.id == event_id)
    if lock and conn.dialect.name != "sqlite":
        query = query.with_for_update(read=True)
    row = conn.execute(query).first()
    return _stored(row) if row is not None else None


def get_by_key(conn: Connection, key: str) -> StoredEvent | None:
    row = conn.execute(select(events).where(events.c.idempotency_key == key)).first()
    return _stored(row) if row is not None else None


def find_event_ids(conn: Connection, *, type: str | None, actor: str | None,
                   object: str | None, after_id: int = 0, limit: int = 1000) -> list[int]:
    """Ids of unretracted events matching every given field, ascending from ``after_id``."""
    query = select(events.c.id).where(events.c.id > after_id, events.c.retracted_at.is_(None))
    if type is not None:
        query = query.where(events.c.type == type)
    if actor is not None:
        query = query.where(events.c.actor == actor)
    if object is not None:
        query = query.where(events.c.object == object)
    return [r.id for r in conn.execute(query.order_by(events.c.id).limit(limit))]


def mark_retracted(conn: Connection, event_ids: list[int], now: int) -> None:
    if event_ids:
        conn.execute(update(events).where(events.c.id.in_(event_ids)).values(retracted_at=now))
