"""EventStore in memory: accepted events by id, and the idempotency-key index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from tidings.domain.events import DEFAULT_SCOPE, Event
from tidings.domain.views import StoredEvent
from tidings.exceptions import StoreConflict
from tidings.store.memory.state import EventRow, Journal, State


def stored(row: EventRow) -> StoredEvent:
    """A fresh value for a reader: its payload and lists are its own to change."""
    return StoredEvent(
        id=row.id, type=row.type, actor=row.actor, object=row.object,
        payload=json.loads(row.payload), recipients=list(row.recipients),
        exclude=list(row.exclude), idempotency_key=row.idempotency_key,
        body_hash=row.body_hash, created_at=row.created_at, retracted_at=row.retracted_at,
    )


class MemoryEvents:
    """Events of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def insert(self, event: Event, payload_json: str, now: int, *,
               scope: str = DEFAULT_SCOPE) -> int:
        key = event.idempotency_key
        if key is not None and (scope, key) in self._s.event_keys:
            # as the SQL store's unique index: the unit fails, the caller looks the key up again
            raise StoreConflict(f"idempotency_key {key!r} is already stored")
        event_id = self._j.next_id(self._s.seq, "events")
        self._j.put(self._s.events, event_id, EventRow(
            id=event_id, type=event.type, actor=event.actor, object=event.object,
            payload=payload_json, recipients=tuple(event.recipients),
            exclude=tuple(event.exclude), idempotency_key=key, body_hash=event.body_hash(),
            created_at=event.created_at if event.created_at is not None else now,
            retracted_at=None, idempotency_scope=scope,
        ))
        if key is not None:
            self._j.put(self._s.event_keys, (scope, key), event_id)
        return event_id

    def get(self, event_id: int, *, lock: bool = False) -> StoredEvent | None:
        # one unit at a time holds the store: there is nothing to lock
        row = self._s.events.get(event_id)
        return stored(row) if row is not None else None

    def position_near(self, event_id: int) -> tuple[int, int] | None:
        found = max((i for i in self._s.events if i <= event_id), default=None)
        return None if found is None else (self._s.events[found].created_at, found)

    def insert_many(self, rows: Sequence[tuple[Event, str]], now: int, *,
                    scope: str = DEFAULT_SCOPE) -> list[int]:
        return [self.insert(event, payload, now, scope=scope) for event, payload in rows]

    def get_many(self, event_ids: Sequence[int], *, lock: bool = False
                 ) -> dict[int, StoredEvent]:
        return {i: stored(self._s.events[i]) for i in set(event_ids) if i in self._s.events}

    def get_by_keys(self, keys: Sequence[str], *, scope: str = DEFAULT_SCOPE
                    ) -> dict[str, StoredEvent]:
        found = {key: self.get_by_key(key, scope=scope) for key in set(keys)}
        return {key: event for key, event in found.items() if event is not None}

    def get_by_key(self, key: str, *, scope: str = DEFAULT_SCOPE) -> StoredEvent | None:
        event_id = self._s.event_keys.get((scope, key))
        return self.get(event_id) if event_id is not None else None

    def find_ids(self, *, type: str | None, actor: str | None, object: str | None,
                 after_id: int = 0, limit: int = 1000) -> list[int]:
        found: list[int] = []
        for event_id in sorted(self._s.events):
            if event_id <= after_id:
                continue
            row = self._s.events[event_id]
            if row.retracted_at is not None:
                continue
            if ((type is not None and row.type != type)
                    or (actor is not None and row.actor != actor)
                    or (object is not None and row.object != object)):
                continue
            found.append(event_id)
            if len(found) >= limit:
                break
        return found

    def mark_retracted(self, event_ids: Sequence[int], now: int) -> None:
        for event_id in event_ids:
            row = self._s.events.get(event_id)
            if row is not None:
                self._j.put(self._s.events, event_id, replace(row, retracted_at=now))

    def expired_ids(self, *, types: Sequence[str] | None, other_than: Sequence[str] | None,
                    before: int, limit: int, after: int = 0) -> list[int]:
        wanted = set(types) if types is not None else None
        unwanted = set(other_than) if other_than is not None else None
        found: list[int] = []
        for event_id in sorted(self._s.events):
            row = self._s.events[event_id]
            if row.created_at >= before or event_id <= after:
                continue
            if wanted is not None and row.type not in wanted:
                continue
            if unwanted is not None and row.type in unwanted:
                continue
            found.append(event_id)
            if len(found) >= limit:
                break
        return found

    def delete(self, event_ids: Sequence[int]) -> None:
        for event_id in event_ids:
            row = self._j.drop(self._s.events, event_id)
            if row is not None and row.idempotency_key is not None:
                self._j.drop(self._s.event_keys, (row.idempotency_scope, row.idempotency_key))

    def actors_of(self, event_ids: Sequence[int]) -> list[str]:
        actors: list[str] = []
        for event_id in sorted(set(event_ids), reverse=True):
            row = self._s.events.get(event_id)
            if row is not None and row.actor and row.actor not in actors:
                actors.append(row.actor)
        return actors


    def pull_page(self, sources: Sequence[tuple[str, tuple[int, int]]], *,
                  types: Sequence[str], limit: int, below: tuple[int, int] | None,
                  above: tuple[int, int] | None) -> list[StoredEvent]:
        cuts = dict(sources)
        wanted = set(types)
        found: list[StoredEvent] = []
        newest_first = sorted(((row.created_at, i) for i, row in self._s.events.items()),
                              reverse=True)
        for place in newest_first:
            if len(found) >= limit or (above is not None and place <= above):
                break
            row = self._s.events[place[1]]
            if below is not None and place >= below:
                continue
            if (row.actor is None or row.actor not in cuts or place > cuts[row.actor]
                    or row.type not in wanted or row.retracted_at is not None):
                continue
            found.append(stored(row))
        return found
