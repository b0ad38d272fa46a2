"""TimelineStore in memory: per user, the events pushed into their timeline (the push model)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tidings.domain.views import TimelineEntry
from tidings.store.memory.state import Journal, State


class MemoryTimeline:
    """The timelines of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def push(self, event_id: int, users: Sequence[str], now: int) -> None:
        for user in users:
            if event_id not in self._s.timelines.get(user, {}):
                self._j.put_in(self._s.timelines, user, event_id, now)

    def page(self, user: str, *, limit: int, before: int | None) -> list[TimelineEntry]:
        entries: list[TimelineEntry] = []
        for event_id in sorted(self._s.timelines.get(user, {}), reverse=True):
            if len(entries) >= limit:
                break
            if before is not None and event_id >= before:
                continue
            event = self._s.events.get(event_id)
            if event is None or event.retracted_at is not None:
                continue
            entries.append(TimelineEntry(
                id=event.id, type=event.type, actor=event.actor, object=event.object,
                payload=json.loads(event.payload), created_at=event.created_at))
        return entries

    def trim(self, user: str, cap: int) -> int:
        newest_first = sorted(self._s.timelines.get(user, {}), reverse=True)
        doomed = newest_first[cap:]
        for event_id in doomed:
            self._j.drop_in(self._s.timelines, user, event_id)
        return len(doomed)
