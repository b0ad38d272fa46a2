"""``TimelineStore`` on Redis: each user's mailbox is a sorted set of its events in the
timeline's order (score = the event's created_at in microseconds, exact in a double; member =
the id after a letter for its length, so equal times sort by id), the push model of the
timelines seed, with its floor beside it (a position, "created_at:id"); event bodies (and, for an
unfollow, actors) are read from SQL by primary key."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidings.domain.timeline import START, Position, high_water
from tidings.domain.views import TimelineEntry
from tidings.store.redis.client import Redis
from tidings.store.redis.keys import Keys
from tidings.store.redis.writes import WriteBuffer
from tidings.store.timeline_steps import StepwiseTimeline

Bodies = Callable[[Sequence[int]], dict[int, TimelineEntry]]
Actors = Callable[[Sequence[int]], dict[int, str | None]]


class RedisTimeline(StepwiseTimeline):
    """Timelines within one unit: pushes, trims and floors wait in the unit's buffer."""

    def __init__(self, redis: Redis, buffer: WriteBuffer, bodies: Bodies,
                 actors: Actors) -> None:
        self.redis = redis
        self.keys = Keys(redis.prefix)
        self.buffer = buffer
        self.bodies = bodies
        self.actors = actors

    def push(self, event_id: int, users: Sequence[str], created_at: int) -> None:
        for user in users:
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", created_at,
                                         enc(event_id)])

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        # one ZADD per mailbox, whatever the events
        for user, mine in _by_mailbox(entries).items():
            pairs = [value for at, event_id in mine for value in (at, enc(event_id))]
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", *pairs])

    def push_capped(self, entries: Sequence[tuple[int, Sequence[str], int]], cap: int) -> None:
        """The entries and the cap over every mailbox they grow past its high-water mark,
        one script call per node for up to 256 mailboxes (``tl_push.lua``), where a ZADD and
        a ``tl_cap.lua`` call per mailbox were two commands for each."""
        mine = _by_mailbox(entries)
        users = sorted(mine)
        prefixes = [self.keys.user(user) for user in users]
        for group in self.redis.by_node(prefixes):
            self.buffer.script_users("tl_push", tuple(prefixes[i] for i in group), [
                cap, high_water(cap),
                *(",".join(f"{at}:{event_id}" for at, event_id in mine[users[i]])
                  for i in group)], [])

    def fill(self, user: str, entries: Sequence[tuple[int, int]]) -> None:
        if entries:
            pairs = [value for event_id, at in entries for value in (at, enc(event_id))]
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", *pairs])

    def _read(self, user: str, limit: int, before: Position | None, after: Position | None,
              above_floor: bool, cap: int | None) -> tuple[Position, list[TimelineEntry]]:
        """``tl_head.lua``'s page (the floor, then the entries in range; with ``cap``, among
        the newest ``cap`` only, the floor raised under them), the bodies read from SQL; more
        pages while retracted or deleted events (not shown) left it short."""
        out: list[TimelineEntry] = []
        floor = START
        while True:
            want = limit - len(out)
            (found,) = self.redis.pipeline([("tl_head", self.keys.user(user), [
                *(before if before is not None else ("", "")),
                *(after if after is not None else ("", "")), want,
                1 if above_floor else 0, "" if cap is None else cap])], "timeline")
            floor = _position(str(found[0]))
            places = [(int(float(found[k + 1])), int(found[k]))
                      for k in range(1, len(found), 2)]
            ids = [i for _, i in places]
            bodies = self.bodies(ids) if ids else {}
            out += [bodies[i] for i in ids if i in bodies]  # retracted and deleted: not shown
            if len(ids) < want or len(out) >= limit:
                return floor, out
            before = places[-1]

    def page(self, user: str, *, limit: int, before: Position | None,
             after: Position | None = None, cap: int | None = None) -> list[TimelineEntry]:
        return self._read(user, limit, before, after, False, cap)[1]

    def head(self, user: str, *, limit: int, before: Position | None,
             after: Position | None, cap: int | None = None
             ) -> tuple[Position, list[TimelineEntry]]:
        """The floor and the page above it in one round trip (``tl_head.lua``), where the
        steps' :meth:`floor` then :meth:`page` took two."""
        return self._read(user, limit, before, after, True, cap)

    def trim(self, user: str, cap: int) -> int:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            size = int(self.redis.client.zcard(self.keys.timeline(user)))
        self.buffer.script("tl_cap", self.keys.user(user), [cap, cap])
        return max(size - cap, 0)

    def cap(self, users: Sequence[str], cap: int) -> int:
        # the pushes of this unit are still in the buffer: the script, sent after them,
        # counts them; what it removes is not known here
        for user in sorted(set(users)):
            self.buffer.script("tl_cap", self.keys.user(user), [cap, high_water(cap)])
        return 0

    def floor(self, user: str) -> Position:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            found = self.redis.client.get(self.keys.timeline_floor(user))
        return START if found is None else _position(str(found))

    def raise_floor(self, user: str, floor: Position) -> None:
        self.buffer.script("tl_floor", self.keys.user(user), [floor[0], floor[1]])

    def remove_source(self, user: str, actor: str) -> int:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            ids = [int(str(m)[1:]) for m in self.redis.client.zrange(
                self.keys.timeline(user), 0, -1)]
        actors = self.actors(ids) if ids else {}
        doomed = [i for i in ids if actors.get(i) == actor]
        if doomed:
            self.buffer.command("ZREM", [self.keys.timeline(user), *map(enc, doomed)])
        return len(doomed)


def enc(event_id: int) -> str:
    """A mailbox member: the id after a letter for its length (common.lua's ``enc``), so
    that entries of one time sort by id."""
    text = str(event_id)
    return chr(96 + len(text)) + text


def _position(text: str) -> Position:
    """A floor as stored, "created_at:id"."""
    at, _, id_ = text.partition(":")
    return (int(at), int(id_ or 0))


def _by_mailbox(entries: Sequence[tuple[int, Sequence[str], int]]
                ) -> dict[str, list[tuple[int, int]]]:
    """(event id, users, created_at) entries as each mailbox's (created_at, event id)."""
    mine: dict[str, list[tuple[int, int]]] = {}
    for event_id, users, at in entries:
        for user in users:
            mine.setdefault(user, []).append((at, event_id))
    return mine
