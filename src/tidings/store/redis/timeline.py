"""``TimelineStore`` on Redis: each user's mailbox is a sorted set of event ids (score = id),
the push model of the timelines seed, with its floor beside it; event bodies (and, for an
unfollow, actors) are read from SQL by primary key."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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

    def push(self, event_id: int, users: Sequence[str], now: int) -> None:
        for user in users:
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", event_id, event_id])

    def push_many(self, entries: Sequence[tuple[int, Sequence[str], int]]) -> None:
        # one ZADD per mailbox, whatever the events
        for user, mine in _by_mailbox(entries).items():
            pairs = [value for event_id in mine for value in (event_id, event_id)]
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", *pairs])

    def push_capped(self, entries: Sequence[tuple[int, Sequence[str], int]], cap: int) -> None:
        """The entries and the cap over every mailbox they grow, one script call per node for
        up to 256 mailboxes (``tl_push.lua``), where a ZADD and a ``tl_cap.lua`` call per
        mailbox were two commands for each."""
        ids = _by_mailbox(entries)
        users = sorted(ids)
        prefixes = [self.keys.user(user) for user in users]
        for group in self.redis.by_node(prefixes):
            self.buffer.script_users("tl_push", tuple(prefixes[i] for i in group), [
                cap, *(",".join(map(str, ids[users[i]])) for i in group)], [])

    def fill(self, user: str, entries: Sequence[tuple[int, int]]) -> None:
        if entries:
            pairs = [value for event_id, _ in entries for value in (event_id, event_id)]
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", *pairs])

    def page(self, user: str, *, limit: int, before: int | None,
             after: int | None = None) -> list[TimelineEntry]:
        out: list[TimelineEntry] = []
        top = f"({before}" if before is not None else "+inf"
        bottom = f"({after}" if after is not None else "-inf"
        while len(out) < limit:
            want = limit - len(out)
            with self.redis.guarded("timeline", self.keys.timeline(user)):
                ids = [int(i) for i in self.redis.client.zrevrangebyscore(
                    self.keys.timeline(user), top, bottom, start=0, num=want)]
            bodies = self.bodies(ids) if ids else {}
            # retracted and deleted events are not shown
            out += [bodies[i] for i in ids if i in bodies]
            if len(ids) < want:
                break
            top = f"({ids[-1]}"
        return out

    def head(self, user: str, *, limit: int, before: int | None,
             after: int | None) -> tuple[int, list[TimelineEntry]]:
        """The floor and the page above it in one round trip (``tl_head.lua``), where the
        steps' :meth:`floor` then :meth:`page` took two."""
        top = f"({before}" if before is not None else "+inf"
        (found,) = self.redis.pipeline([("tl_head", self.keys.user(user),
                                         [top, after or 0, limit])], "timeline")
        floor, ids = int(found[0]), [int(i) for i in found[1]]
        bodies = self.bodies(ids) if ids else {}
        out = [bodies[i] for i in ids if i in bodies]  # retracted and deleted: not shown
        if len(ids) == limit and len(out) < limit:  # those left the page short
            out += self.page(user, limit=limit - len(out), before=ids[-1],
                             after=max(floor, after or 0) or None)
        return floor, out

    def trim(self, user: str, cap: int) -> int:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            size = int(self.redis.client.zcard(self.keys.timeline(user)))
        self.buffer.script("tl_cap", self.keys.user(user), [cap])
        return max(size - cap, 0)

    def cap(self, users: Sequence[str], cap: int) -> int:
        # the pushes of this unit are still in the buffer: the script, sent after them,
        # counts them; what it removes is not known here
        for user in sorted(set(users)):
            self.buffer.script("tl_cap", self.keys.user(user), [cap])
        return 0

    def floor(self, user: str) -> int:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            found = self.redis.client.get(self.keys.timeline_floor(user))
        return int(found or 0)

    def raise_floor(self, user: str, floor: int) -> None:
        self.buffer.script("tl_floor", self.keys.user(user), [floor])

    def remove_source(self, user: str, actor: str) -> int:
        with self.redis.guarded("timeline", self.keys.timeline(user)):
            ids = [int(i) for i in self.redis.client.zrange(self.keys.timeline(user), 0, -1)]
        actors = self.actors(ids) if ids else {}
        doomed = [i for i in ids if actors.get(i) == actor]
        if doomed:
            self.buffer.command("ZREM", [self.keys.timeline(user), *doomed])
        return len(doomed)


def _by_mailbox(entries: Sequence[tuple[int, Sequence[str], int]]) -> dict[str, list[int]]:
    """(event id, users, time) entries as each mailbox's event ids."""
    ids: dict[str, list[int]] = {}
    for event_id, users, _ in entries:
        for user in users:
            ids.setdefault(user, []).append(event_id)
    return ids
