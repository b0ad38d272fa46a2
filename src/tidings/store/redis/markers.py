"""The read watermarks of ``InboxStore`` on Redis (Gazelle's witness rows: one small hash
per user, ``{u:<user>}:m``), each copied to SQL's ``read_markers`` in the same unit so
``tidings rebuild-hot-store`` can restore them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidings.domain.readstate import Markers
from tidings.store.redis.client import Redis
from tidings.store.redis.keys import Keys
from tidings.store.redis.queries import PLACE, markers_of, place_of
from tidings.store.redis.writes import WriteBuffer

MarkerCopy = Callable[[str, str, int], None]
PositionCopy = Callable[[str, tuple[int, int], int], bool]


class RedisMarkers:
    """The watermark part of :class:`tidings.store.redis.inbox.RedisInbox`."""

    redis: Redis
    keys: Keys
    buffer: WriteBuffer
    copy_marker: MarkerCopy | None
    copy_position: PositionCopy | None

    def load_markers(self, user: str) -> Markers:
        return self.load_markers_many([user]).get(user, Markers())

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        results = self.redis.pipeline(
            [("", "HGETALL", [self.keys.markers(u)]) for u in users], "markers")
        return {u: markers_of(raw) for u, raw in zip(users, results, strict=True) if raw}

    def set_marker(self, user: str, scope: str, until: int) -> None:
        if self.copy_marker is not None:
            self.copy_marker(user, scope, until)  # the durable copy, in the SQL unit
        self.buffer.script("marker", self.keys.user(user), [scope, until], user=user)

    def set_position(self, user: str, position: tuple[int, int], until: int) -> bool:
        with self.redis.guarded("markers", self.keys.markers(user)):
            current = place_of(self.redis.client.hget(self.keys.markers(user), PLACE))
        if current is not None and position < current:
            return False
        if self.copy_position is not None:
            self.copy_position(user, position, until)  # the durable copy, in the SQL unit
        self.buffer.script("position", self.keys.user(user), [until, *position], user=user)
        return True
