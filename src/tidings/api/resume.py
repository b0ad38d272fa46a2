"""Where a live stream is, written into every event it sends (``id:``) and read back from the
``Last-Event-ID`` a client sends when it reconnects, so the stream replays what it missed.

A stream follows two lists, so its place is two positions: the inbox's, the
``(created_at, event id)`` of the newest item it has announced (the order the list and its
cursors have: a bundle that takes a new member moves up with it), and the timeline's, the
newest event id it has announced there. The id is the three numbers joined by dashes
(``1764379200123456-42-43``; ``0-0-0`` for an empty inbox and timeline). Clients keep it as
an opaque string: browsers' ``EventSource`` sends it back by itself.

On reconnect the stream sends, before anything else, the inbox items placed after its inbox
position and the timeline entries above its timeline position, oldest first, when there are at
most :data:`REPLAY_BOUND` of each; beyond that it sends one ``resync`` event instead (refetch
the lists) and goes on from where the lists are now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REPLAY_BOUND = 100  # the most items (and timeline entries) a reconnecting stream replays

_ID = re.compile(r"(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,18})")
_MAX = 2**63 - 1  # BIGINT columns: anything larger is no position of ours


class BadLastEventId(ValueError):
    """A ``Last-Event-ID`` that no stream of this server sent."""


@dataclass(frozen=True)
class Position:
    """A stream's place: the inbox's newest announced ``(created_at, event id)`` and the
    timeline's newest announced event id."""

    inbox: tuple[int, int] = (0, 0)
    timeline: int = 0

    def event_id(self) -> str:
        """The ``id:`` of an event sent at this position."""
        return f"{self.inbox[0]}-{self.inbox[1]}-{self.timeline}"

    def at_inbox(self, position: tuple[int, int] | None) -> Position:
        """This place with the inbox's moved to ``position`` if that is newer."""
        if position is None or position <= self.inbox:
            return self
        return Position(position, self.timeline)

    def at_timeline(self, event_id: int) -> Position:
        """This place with the timeline's moved to ``event_id`` if that is newer."""
        return self if event_id <= self.timeline else Position(self.inbox, event_id)


def parse_last_event_id(text: str) -> Position:
    """The position a stream wrote as ``text``; :class:`BadLastEventId` for anything else."""
    found = _ID.fullmatch(text.strip())
    # a number past the columns' range is a place ahead of every inbox: the stream goes on
    # from the newest item, as for any id ahead
    numbers = [min(int(part), _MAX) for part in found.groups()] if found else []
    if not numbers:
        raise BadLastEventId("Last-Event-ID is not an id this server's stream sent (three "
                             "numbers joined by dashes, as the stream's `id:` lines give)")
    return Position((numbers[0], numbers[1]), numbers[2])
