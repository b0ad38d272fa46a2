"""W2 on the Redis hot store: the floor of the seed's layout, beside ``raw_redis.py``.

Issue 11's goals put the hot store's fan-out and page within 80 % of ``raw_redis.py``'s Lua
fan-out (a ``ZADD`` and a ``ZCARD`` per follower) and of its id page (one
``ZREVRANGEBYSCORE``). The layout the store must keep (the Jiepang seed's) does more for each
notification, whoever writes it: a hash of its own per recipient, the user's id set and unread
set (the unread count by type), a check that the row is not there already (a retried job
writes nothing twice), the cap. This side does only that, in one Lua call per message as the
raw script does, with three fields a row; and a page as one Lua call returning the 20 newest
rows with their fields (a page returns notifications, not ids). Nothing tidings adds is in it:
no bundling, read markers, type index, holder index, SQL unit or Python between calls. So it is
what the layout costs Redis at least, and the ratio it reaches beside the raw script bounds
what any store keeping that layout can reach.

The keys sit under the bench's prefix (``fl:``, one slot with the raw keys on a cluster).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FIELDS = 3  # fields of a floor row: type, actor, date
FANOUT = """
local id, created, cap, prefix = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local written = 0
for i = 7, #ARGV do
  local p = prefix .. ARGV[i]
  local row = p .. ':n:' .. id
  if redis.call('EXISTS', row) == 0 then
    redis.call('HSET', row, 't', ARGV[5], 'a', ARGV[6], 'c', created)
    redis.call('ZADD', p .. ':ids', created, id)
    redis.call('ZADD', p .. ':unread', created, id)
    if redis.call('ZCARD', p .. ':ids') > cap then
      local old = redis.call('ZRANGE', p .. ':ids', 0, 0)[1]
      redis.call('ZREM', p .. ':ids', old)
      redis.call('ZREM', p .. ':unread', old)
      redis.call('DEL', p .. ':n:' .. old)
    end
    written = written + 1
  end
end
return written
"""
PAGE = """
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1] .. ':ids', ARGV[1], '-inf', 'LIMIT', 0,
                       tonumber(ARGV[2]))
local rows = {}
for i = 1, #ids do rows[i] = redis.call('HGETALL', KEYS[1] .. ':n:' .. ids[i]) end
return {ids, rows}
"""


class Floor:
    """The floor's two scripts on ``client`` under ``prefix`` (+ ``tag`` on a cluster)."""

    def __init__(self, client: Any, prefix: str, tag: str, cap: int, page: int) -> None:
        self.keys = f"{prefix}{tag}fl:"
        self.cap, self.limit = cap, page
        self._fanout = client.register_script(FANOUT)
        self._page = client.register_script(PAGE)
        self.written = 0

    def fan_out(self, event_id: int, created: int, users: Sequence[str]) -> None:
        """One message's rows for ``users``, one call."""
        self.written += int(self._fanout(
            keys=[f"{self.keys}{users[0]}:ids"],
            args=[event_id, created, self.cap, self.keys, "mention", "a", *users]))

    def page(self, user: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """The newest ``page`` rows of ``user`` with their fields, one call."""
        ids, rows = self._page(keys=[f"{self.keys}{user}"], args=["+inf", self.limit])
        return [(i, dict(zip(row[::2], row[1::2], strict=True)))
                for i, row in zip(ids, rows, strict=True)]


def table(result: dict[str, Any]) -> Any:
    """tidings, the layout's floor and ``raw_redis.py``, as ratios to the raw script."""
    from rich.table import Table

    out = Table(title="W2 on the Redis hot store, beside the floor of the seed's layout (a "
                      "hash per recipient, id and unread sets, the idempotency check, the cap: "
                      "one Lua call a message or a page, nothing else; the same rounds)",
                title_justify="left")
    for column in ("figure", "tidings", "layout floor", "raw_redis.py", "tidings / raw",
                   "floor / raw", "goal"):
        out.add_column(column, justify="left" if column == "figure" else "right")
    goals = {c["figure"]: c.get("goal_ratio") for c in result.get("comparisons", ())}
    figures = result["data"]["figures"]
    for name, floor in result["data"]["floors"].items():
        row, goal = figures[name], goals.get(name)
        out.add_row(name, f"{row['tidings']:,.0f}", f"{floor:,.0f}", f"{row['baseline']:,.0f}",
                    f"{row['tidings'] / row['baseline']:.2f}x",
                    f"{floor / row['baseline']:.2f}x", f"≥ {goal:g}x" if goal else "")
    return out
