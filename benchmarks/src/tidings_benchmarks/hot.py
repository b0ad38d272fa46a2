"""W2 on the Redis hot store (``tidings bench inbox --store redis://…`` or
``redis+cluster://…``), beside ``../shared/bench-anchors/raw_redis.py`` run in the same command.

The events live in a temporary SQLite file; the inboxes under a fresh key prefix on the named
server, deleted at the end (no other key is touched). Figures, each timed in the same run, the
two sides in alternating blocks of :data:`BLOCK` items (:func:`_paired`) so that both meet the
same load:

=========================  ===============================================================
tidings                    baseline (raw_redis.py, re-implemented on the same server)
=========================  ===============================================================
fan-out: rows/s through    server-side Lua fan-out: ZADD + ZCARD/trim per follower, 43
``InboxStore.deliver``     followers a message, one message a round trip (rows/s): the
(one unit per event, 43    anchor's 3,364 msg/s figure, like for like with one unit of
users)                     work per event; the same with 100 messages a pipeline is reported
                           beside it (``raw_batched``)
page of 20: ``page_view``  ZREVRANGEBYSCORE id page below a score cursor (pages/s): ids only
(watermarks, 21 rows with
their payloads, group
info), as the service
reads a page
the same page              raw_redis.py's other read: ZREVRANGE of 20 ids, then HGETALL of
                           each message in one pipeline (2 RTT): ids and bodies, the job
                           tidings' page does (without its bundling and read state)
unread count (capped, as   ZCOUNT of the unread index (counts/s)
the service asks it)
=========================  ===============================================================

The fan-out and the page also run beside the floor of the seed's layout
(:mod:`tidings_benchmarks.hot_floor`), a third side in the same turns.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from rich.progress import Progress

from tidings.clock import SystemClock
from tidings.domain.bundling import bundle_hash
from tidings.domain.events import Event
from tidings.domain.views import Delivery, Filters
from tidings.engine import Tidings
from tidings.store.hot import HotStore
from tidings.store.sql.store import SqlStore
from tidings_benchmarks import BenchFailure
from tidings_benchmarks.hot_floor import FIELDS, Floor

FOLLOWERS = 43
CAP = 800
PAGE = 20
# the page beside raw_redis.py's other read: ZREVRANGE of 20 ids, then their message hashes
# (HGETALL, one pipeline): ids and bodies, as tidings' page returns rows with their payloads
BODIES = "page of 20, vs ids + bodies /s"
BODY = "x" * 100  # raw_redis.py's message body
BLOCK = 20  # items (messages, users) a side runs before the other: _paired
T = TypeVar("T")
RAW_LUA = """
local m = ARGV[1]
local fs = redis.call('SMEMBERS', KEYS[1])
for i = 1, #fs do
  local k = ARGV[3] .. fs[i]
  redis.call('ZADD', k, m, m)
  if redis.call('ZCARD', k) > tonumber(ARGV[2]) then
    redis.call('ZREMRANGEBYRANK', k, 0, -tonumber(ARGV[2]) - 1)
  end
end
return #fs
"""


def _rate(count: int, work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return count / (time.perf_counter() - started)


def run(url: str, scale: float, rounds: int, ops: int, seed: int, folder: str,
        progress: Progress) -> dict[str, Any]:
    rng = random.Random(seed)
    users = [f"user{i:05d}" for i in range(max(100, round(10_000 * scale)))]
    events = max(100, round(20_000 * scale))
    prefix = f"tidings_bench_{secrets.token_hex(4)}:"
    sql_url = f"sqlite:///{folder}/bench.db"
    Tidings.open(sql_url, migrate=True, hot_store_url=None).close()
    store = HotStore(SqlStore(sql_url, SystemClock()), _with_prefix(url, prefix))
    client = store.redis.client
    try:
        task = progress.add_task("events", total=events)
        ids: list[int] = []
        for start in range(0, events, 500):
            batch = [Event("mention", actor=rng.choice(users), object="page:X")
                     for _ in range(min(500, events - start))]
            def insert(tx: Any, b: list[Event] = batch) -> list[int]:
                return [tx.events.insert(e, json.dumps({}), 1) for e in b]

            ids += store.transact(insert)
            progress.advance(task, len(batch))
        progress.remove_task(task)
        audiences = [rng.sample(users, FOLLOWERS) for _ in ids]
        figures: dict[str, list[tuple[float, ...]]] = {
            "fan-out rows/s": [], "page of 20 /s": [], BODIES: [], "unread count /s": []}
        per_round = max(1, len(ids) // rounds)
        batched: list[float] = []
        floors: dict[str, list[float]] = {"fan-out rows/s": [], "page of 20 /s": []}
        tag = "{raw}" if store.redis.cluster else ""  # one slot for the raw keys on a cluster
        script = client.register_script(RAW_LUA)
        floor = Floor(client, prefix, tag, CAP, PAGE)
        for r in range(rounds):
            part = list(range(r * per_round, (r + 1) * per_round))
            _raw_setup(client, prefix, tag, audiences, part)

            def fan_tidings(chunk: list[int]) -> None:
                for i in chunk:
                    d = Delivery(event_id=ids[i], created_at=1_000_000 + ids[i], type="mention",
                                 category="mention", section="alert", actor="a", object="o",
                                 bundle_hash=bundle_hash("none", "mention", "a", "o", ids[i]),
                                 bundled=False)
                    users = audiences[i]

                    def work(tx: Any, d: Delivery = d, users: list[str] = users) -> list[str]:
                        return tx.inbox.deliver_many([(d, users)])[0]  # type: ignore[no-any-return]

                    store.transact(work)

            def fan_raw(chunk: list[int], tag: str = tag) -> None:
                for i in chunk:  # one message a round trip
                    script(keys=[f"{prefix}{tag}raw:f:{i}"],
                           args=[i, CAP, f"{prefix}{tag}raw:tl:"])

            def fan_floor(chunk: list[int]) -> None:
                for i in chunk:
                    floor.fan_out(ids[i], 1_000_000 + ids[i], audiences[i])

            tidings_fan, raw_fan, floor_fan = _paired(part, fan_tidings, fan_raw, fan_floor,
                                                      weight=FOLLOWERS)
            if floor.written != FOLLOWERS * (r + 1) * per_round:
                raise BenchFailure(f"the layout floor wrote {floor.written:,} rows for "
                                   f"{FOLLOWERS * (r + 1) * per_round:,} due")
            figures["fan-out rows/s"].append((tidings_fan, raw_fan))
            floors["fan-out rows/s"].append(floor_fan)
            batched.append(_raw_batched(client, script, store.redis.cluster, prefix, part))
            sample = [rng.choice(users) for _ in range(ops)]

            def page(chunk: list[str]) -> None:
                with store.read() as tx:  # as InboxService.notifications reads a page
                    for user in chunk:
                        tx.inbox.page_view(user, Filters(), limit=PAGE + 1, before=None,
                                           bundles=_no_bundles)

            def raw_page(chunk: list[str], tag: str = tag) -> None:
                for user in chunk:
                    client.zrevrangebyscore(f"{prefix}{tag}raw:tl:{user}", "+inf", "-inf",
                                            start=0, num=PAGE)

            def raw_bodies(chunk: list[str], tag: str = tag) -> None:
                for user in chunk:
                    found = client.zrevrange(f"{prefix}{tag}raw:tl:{user}", 0, PAGE - 1)
                    pipe = client.pipeline(transaction=False)
                    for i in found:
                        pipe.hgetall(f"{prefix}{tag}raw:msg:{i}")
                    pipe.execute()

            def floor_page(chunk: list[str]) -> None:
                for user in chunk:
                    floor.page(user)

            if any(len(fields) != FIELDS for _, fields in floor.page(audiences[part[0]][0])):
                raise BenchFailure("the layout floor's page lost its rows' fields")
            tidings_page, raw_ids, floor_rows = _paired(sample, page, raw_page, floor_page)
            figures["page of 20 /s"].append((tidings_page, raw_ids))
            floors["page of 20 /s"].append(floor_rows)
            figures[BODIES].append(_paired(sample, page, raw_bodies))

            def count(chunk: list[str]) -> None:
                with store.read() as tx:
                    for user in chunk:
                        tx.inbox.unread_count(user, Filters())  # as InboxService asks

            def raw_count(chunk: list[str]) -> None:
                for user in chunk:
                    client.zcount(f"{prefix}{{u:{user}}}:unread", "(0", "+inf")

            figures["unread count /s"].append(_paired(sample, count, raw_count))
        return {"users": len(users), "events": len(ids), "raw_batched": _median(batched),
                "floors": {name: _median(rates) for name, rates in floors.items()},
                "figures": {
            name: {"tidings": _median([t for t, _ in values]),
                   "baseline": _median([b for _, b in values])}
            for name, values in figures.items()}}
    finally:
        _delete(client, store.redis.cluster, prefix)
        store.close()


def _paired(items: Sequence[T], *sides: Callable[[list[T]], None],
            weight: int = 1) -> tuple[float, ...]:
    """Each side's rate (``weight`` per item) over the same items, timed in alternating
    blocks of :data:`BLOCK` items (which side goes first alternates too), so that all meet
    the same load on a busy machine: a side timed whole after another may meet another."""
    spent = [0.0] * len(sides)
    for n, start in enumerate(range(0, len(items), BLOCK)):
        chunk = list(items[start:start + BLOCK])
        order = list(enumerate(sides))
        for side, work in order if n % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            work(chunk)
            spent[side] += time.perf_counter() - started
    done = len(items) * weight
    return tuple(done / seconds for seconds in spent)


def _raw_setup(client: Any, prefix: str, tag: str, audiences: list[list[str]],
               part: list[int]) -> None:
    """raw_redis.py's follower sets of the round's messages (their audiences) and the
    messages as hashes; untimed, as tidings' events are in SQL before its fan-out."""
    for i in part:
        client.sadd(f"{prefix}{tag}raw:f:{i}", *audiences[i])
        client.hset(f"{prefix}{tag}raw:msg:{i}", mapping={"u": "a", "b": BODY})


def _raw_batched(client: Any, script: Any, cluster: bool, prefix: str,
                 part: list[int]) -> float:
    """raw_redis.py's Lua fan-out with 100 messages a pipeline (into timelines of their own,
    so both raw runs write the same rows), rows/s; printed beside the table."""
    def batched() -> None:
        if cluster:  # a cluster pipeline refuses scripts: one call each, as tidings' own
            for i in part:
                script(keys=[f"{prefix}{{raw}}raw:f:{i}"],
                       args=[i, CAP, f"{prefix}{{raw}}raw:b:"])
            return
        pipe = client.pipeline(transaction=False)
        for n, i in enumerate(part):
            script(keys=[f"{prefix}raw:f:{i}"], args=[i, CAP, f"{prefix}raw:b:"], client=pipe)
            if (n + 1) % 100 == 0:
                pipe.execute()
        pipe.execute()

    return _rate(len(part) * FOLLOWERS, batched)


def _no_bundles(event_type: str) -> bool:
    return False  # the bench's notifications are mentions, delivered unbundled


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _with_prefix(url: str, prefix: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


def _delete(client: Any, cluster: bool, prefix: str) -> None:
    nodes: list[Any] = client.get_primaries() if cluster else [None]
    for node in nodes:
        extra = {"target_nodes": node} if cluster else {}
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000, **extra))
        own = node.redis_connection if cluster else client  # keys of one node: one pipeline
        for start in range(0, len(keys), 1000):
            pipe = own.pipeline(transaction=False)
            for key in keys[start:start + 1000]:
                pipe.unlink(key)
            pipe.execute()


def table(result: dict[str, Any]) -> Any:
    from rich.table import Table

    out = Table(title=f"W2 inbox on the Redis hot store — {result['store']}: "
                      f"{result['data']['users']:,} users, {result['data']['events']:,} events "
                      f"to {FOLLOWERS} users each (median of {result['rounds']} rounds)",
                title_justify="left")
    for column in ("figure", "tidings", "baseline (raw_redis.py)", "ratio", "goal"):
        out.add_column(column, justify="left" if column == "figure" else "right")
    goals = {c["figure"]: c.get("goal_ratio") for c in result.get("comparisons", ())}
    for name, row in result["data"]["figures"].items():
        goal = goals.get(name)
        out.add_row(name, f"{row['tidings']:,.0f}", f"{row['baseline']:,.0f}",
                    f"{row['tidings'] / row['baseline']:.2f}x", f"≥ {goal:g}x" if goal else "")
    batched = result["data"].get("raw_batched")
    if batched:
        out.caption = (f"fan-out baseline: one message a round trip (the anchor's figure); "
                       f"with 100 messages a pipeline the raw script writes {batched:,.0f} "
                       "rows/s")
    return out
