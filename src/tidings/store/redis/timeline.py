"""``TimelineStore`` on Redis: each user's mailbox is a sorted set of event ids (score = id),
the push model of the timelines seed; event bodies are read from SQL by primary key."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidings.domain.views import TimelineEntry
from tidings.store.redis.client import Redis, guard
from tidings.store.redis.keys import Keys
from tidings.store.redis.writes import WriteBuffer

Bodies = Callable[[Sequence[int]], dict[int, TimelineEntry]]


class RedisTimeline:
    """Timelines within one unit: pushes and trims wait in the unit's buffer."""

    def __init__(self, redis: Redis, buffer: WriteBuffer, bodies: Bodies) -> None:
        self.redis = redis
        self.keys = Keys(redis.prefix)
        self.buffer = buffer
        self.bodies = bodies

    def push(self, event_id: int, users: Sequence[str], now: int) -> None:
        for user in users:
            self.buffer.command("ZADD", [self.keys.timeline(user), "NX", event_id, event_id])

    def page(self, user: str, *, limit: int, before: int | None) -> list[TimelineEntry]:
        out: list[TimelineEntry] = []
        top = f"({before}" if before is not None else "+inf"
        while len(out) < limit:
            want = limit - len(out)
            with guard("timeline"):
                ids = [int(i) for i in self.redis.client.zrevrangebyscore(
                    self.keys.timeline(user), top, "-inf", start=0, num=want)]
            bodies = self.bodies(ids) if ids else {}
            # retracted and deleted events are not shown
            out += [bodies[i] for i in ids if i in bodies]
            if len(ids) < want:
                break
            top = f"({ids[-1]}"
        return out

    def trim(self, user: str, cap: int) -> int:
        with guard("timeline"):
            size = int(self.redis.client.zcard(self.keys.timeline(user)))
        if size <= cap:
            return 0
        self.buffer.command("ZREMRANGEBYRANK", [self.keys.timeline(user), 0, -(cap + 1)])
        return size - cap
