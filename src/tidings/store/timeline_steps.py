"""``TimelineStore.head`` and ``merged`` for stores that read a timeline step by step (memory,
Redis): the head is the floor and the page above it, and there is no one-read merge, so the
reader takes the steps one by one. Their ``push_capped`` is the two steps too."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.timeline import START, Candidate, Position, ReadPlan
from tidings.domain.views import TimelineEntry


class StepwiseTimeline:
    """The two reads, on a store's own ``floor`` and ``page``."""

    def floor(self, user: str) -> Position:
        raise NotImplementedError

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        raise NotImplementedError

    def cap(self, users: Sequence[str], cap: int) -> int:
        raise NotImplementedError

    def push_capped(self, entries: Sequence[tuple[int, Sequence[str], int]], cap: int) -> None:
        self.push_many(entries)
        self.cap(sorted({user for _, users, _ in entries for user in users}), cap)

    def page(self, user: str, *, limit: int, before: Position | None,
             after: Position | None = None, cap: int | None = None) -> list[TimelineEntry]:
        raise NotImplementedError

    def hidden(self, user: str, cap: int | None) -> Position:
        """The newest entry beyond the mailbox's newest ``cap`` (:data:`START`: none; none
        either without a cap): a read with the cap sees nothing at or below it."""
        raise NotImplementedError

    def head(self, user: str, *, limit: int, before: Position | None,
             after: Position | None, cap: int | None = None
             ) -> tuple[Position, list[TimelineEntry]]:
        floor = max(self.floor(user), self.hidden(user, cap))
        lowest = max(floor, after or START)
        return floor, self.page(user, limit=limit, before=before,
                                after=None if lowest == START else lowest)

    def merged(self, user: str, plan: ReadPlan, *, limit: int, below: Position | None,
               above: Position | None
               ) -> tuple[list[Candidate], list[tuple[str, str]]] | None:
        return None
