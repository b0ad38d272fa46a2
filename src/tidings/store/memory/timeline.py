"""TimelineStore in memory: per user, the events pushed into their timeline (the push model),
and each mailbox's floor; a mailbox is trimmed back to its cap once past the high-water
mark."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tidings.domain.timeline import START, Position, high_water
from tidings.domain.views import TimelineEntry
from tidings.store.memory.state import Journal, State
from tidings.store.timeline_steps import StepwiseTimeline


class MemoryTimeline(StepwiseTimeline):
    """The timelines of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def push(self, event_id: int, users: Sequence[str], created_at: int) -> None:
        for user in users:
            if event_id not in self._s.timelines.get(user, {}):
                self._j.put_in(self._s.timelines, user, event_id, created_at)

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        for event_id, users, created_at in entries:
            self.push(event_id, users, created_at)

    def fill(self, user: str, entries: Sequence[tuple[int, int]]) -> None:
        for event_id, created_at in entries:
            if event_id not in self._s.timelines.get(user, {}):
                self._j.put_in(self._s.timelines, user, event_id, created_at)

    def _newest_first(self, user: str) -> list[Position]:
        return sorted(((at, event_id) for event_id, at in self._s.timelines.get(user, {}).items()),
                      reverse=True)

    def hidden(self, user: str, cap: int | None) -> Position:
        if cap is None:
            return START
        newest = self._newest_first(user)
        return newest[cap] if len(newest) > cap else START

    def page(self, user: str, *, limit: int, before: Position | None,
             after: Position | None = None, cap: int | None = None) -> list[TimelineEntry]:
        hidden = self.hidden(user, cap)
        if hidden != START:
            after = max(after or START, hidden)
        entries: list[TimelineEntry] = []
        for place in self._newest_first(user):
            if len(entries) >= limit:
                break
            if before is not None and place >= before:
                continue
            if after is not None and place <= after:
                break
            event = self._s.events.get(place[1])
            if event is None or event.retracted_at is not None:
                continue
            entries.append(TimelineEntry(
                id=event.id, type=event.type, actor=event.actor, object=event.object,
                payload=json.loads(event.payload), created_at=event.created_at))
        return entries

    def trim(self, user: str, cap: int) -> int:
        doomed = self._newest_first(user)[cap:]
        for _, event_id in doomed:
            self._j.drop_in(self._s.timelines, user, event_id)
        if doomed:
            self.raise_floor(user, doomed[0])
        return len(doomed)

    def cap(self, users: Sequence[str], cap: int) -> int:
        mark = high_water(cap)
        return sum(self.trim(user, cap) for user in sorted(set(users))
                   if len(self._s.timelines.get(user, {})) > mark)

    def floor(self, user: str) -> Position:
        return self._s.timeline_floors.get(user, START)

    def raise_floor(self, user: str, floor: Position) -> None:
        if floor > self.floor(user):
            self._j.put(self._s.timeline_floors, user, floor)

    def remove_source(self, user: str, actor: str) -> int:
        doomed = [i for i in self._s.timelines.get(user, {})
                  if (row := self._s.events.get(i)) is not None and row.actor == actor]
        for event_id in doomed:
            self._j.drop_in(self._s.timelines, user, event_id)
        return len(doomed)
