"""W1 on the Redis hot store (``tidings bench timelines --store redis://…`` or
``redis+cluster://…``), beside ``../shared/bench-anchors/raw_redis.py`` on the same server.

The events and follows live in a temporary SQLite file (the source of truth); the mailboxes in
Redis under a fresh key prefix, deleted at the end (no other key is touched). The history's
mailboxes are written in bulk (pipelined ``ZADD`` of each follower's newest ``timeline_cap``,
computed by one windowed ``SELECT`` a block of followers), then each model is timed through the
engine as on SQL. The baseline, run right after each of tidings' phases on the same users and
messages, is raw_redis.py's: the message as a hash plus its server-side Lua fan-out (``ZADD`` and
trim at 800 into each follower's sorted set, one message a pipeline) for a submit, and a
``ZREVRANGEBYSCORE`` page of ids (below the cursor for a later page) for the reads; raw_redis.py
has no pull, so every model is compared with it. Storage is ``MEMORY USAGE`` of the mailboxes.
"""

from __future__ import annotations

import random
import secrets
import tempfile
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from rich.progress import Progress

from tidings.engine import Tidings
from tidings.store.redis.client import Redis
from tidings.store.redis.keys import Keys
from tidings.store.redis.timeline import enc
from tidings_benchmarks import timeline_data as tl
from tidings_benchmarks.hot import RAW_LUA
from tidings_benchmarks.measure import frozen_heap
from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.report import environment
from tidings_benchmarks.storage import table_bytes
from tidings_benchmarks.timeline_report import REDIS_GOALS, summarise
from tidings_benchmarks.timelines import (
    Phases,
    TimelineSettings,
    check,
    due_rows,
    engine,
    reads,
    submits,
)

CAP = 800
ANCHOR = "bench-anchors/raw_redis.py"
FANOUT_LUA = RAW_LUA  # raw_redis.py's server-side fan-out, shared with the W2 Redis bench
SUBMIT = ("HSET msg:<id> u <sender> b <body>; EVALSHA <Lua: SMEMBERS followers:<sender>, then "
          "ZADD tl:<follower> <id> <id> and trim to 800 for each>", f"{ANCHOR}: Lua server-side "
                                                                    "fan-out, 1 msg/pipeline")
FIRST = ("ZREVRANGEBYSCORE tl:<user> +inf -inf LIMIT 0 20", f"{ANCHOR}: id page (1 RTT)")
LATER = ("ZREVRANGEBYSCORE tl:<user> (<last id> -inf LIMIT 0 20",
         f"{ANCHOR}: id page by score cursor (1 RTT)")
STATEMENTS = {f"{m}: {f}": s for m in ("push", "pull")
              for f, s in (("submit", SUBMIT), ("first page", FIRST), ("later page", LATER))}


class RawRedis:
    """raw_redis.py's push timelines under the bench's prefix (one hash slot on a cluster,
    as its Lua script touches the author's followers and their timelines at once)."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self.redis = redis
        self.client = redis.client
        tag = "{raw}" if redis.cluster else ""
        self.base = f"{prefix}{tag}raw:"
        self.script = self.client.register_script(FANOUT_LUA)
        self.pipeline = not redis.cluster  # a cluster pipeline refuses scripts
        self.next_id = 0

    def timeline(self, user: int) -> str:
        return f"{self.base}tl:{user}"

    def load(self, data: tl.Data, mailboxes: dict[int, list[int]]) -> None:
        followers: dict[int, list[int]] = {}
        for a, b in data.edges:
            followers.setdefault(b, []).append(a)
        calls = [(f"{self.base}followers:{a}", ["SADD", f"{self.base}followers:{a}", *fs])
                 for a, fs in followers.items()]
        calls += [zadd(self.timeline(user), ids) for user, ids in mailboxes.items() if ids]
        commands(self.redis, calls)
        self.next_id = data.messages

    def push_submit(self, sender: int, body: str) -> int:
        self.next_id += 1
        m = self.next_id
        args = [m, CAP, f"{self.base}tl:"]
        keys = [f"{self.base}followers:{sender}"]
        if not self.pipeline:
            self.client.hset(f"{self.base}msg:{m}", mapping={"u": sender, "b": body})
            return int(self.script(keys=keys, args=args))
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(f"{self.base}msg:{m}", mapping={"u": sender, "b": body})
        self.script(keys=keys, args=args, client=pipe)
        return int(pipe.execute()[-1])

    pull_submit = push_submit

    def push_page(self, user: int, below: int | None = None) -> list[tuple[int]]:
        top = "+inf" if below is None else f"({below}"
        return [(int(i),) for i in self.client.zrevrangebyscore(
            self.timeline(user), top, "-inf", start=0, num=20)]

    pull_page = push_page

    def remove_submitted(self, data: tl.Data) -> None:
        _each_user(self.redis, [self.timeline(u) for u in range(1, data.users + 1)],
                   "ZREMRANGEBYSCORE", "KEY", f"({data.messages}", "+inf")


def capped_mailboxes(url: str, data: tl.Data, cap: int, celebrities: Sequence[int]
                     ) -> Iterator[tuple[int, list[tuple[int, int]], str]]:
    """(user, the (created_at, event id) entries push would have left in its mailbox, its
    floor as stored, "created_at:id" or '' for none), from the SQL history."""
    with RawConnection(url) as raw:
        spread = tl.spread_of(cap)
        select = tl.mailbox_select(celebrities, spread, raw.backend)
        state = tl.state_select(celebrities, spread, raw.backend)
        for first, last in tl.blocks(data):
            block = (tl.POST.name, tl.user_id(first), tl.user_id(last))
            found: dict[int, list[tuple[int, int]]] = {n: [] for n in range(first, last + 1)}
            for follower, event_id, at in raw.fetch(raw.sql(select), (cap, *block)):
                found[int(str(follower)[1:])].append((int(str(at)), int(str(event_id))))
            floors = {int(str(f)[1:]): f"{at}:{floor}" for f, _, at, floor in raw.fetch(
                raw.sql(state), (cap, *block)) if int(str(floor))}
            for user, entries in found.items():
                yield user, entries, floors.get(user, "")


def history_end(url: str, messages: int) -> int:
    """The time of the history's last event (the submit rounds' posts are dated after it)."""
    with RawConnection(url) as raw:
        rows = raw.fetch(raw.sql("SELECT created_at FROM events WHERE id = %s"), (messages,))
    return int(str(rows[0][0]))


def commands(redis: Redis, calls: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
    """Run ``(key, command)`` pairs in pipelines, one per server (grouped by the node of each
    key on a cluster)."""
    groups: dict[str, tuple[Any, list[int]]] = {}
    for index, (key, _) in enumerate(calls):
        if redis.cluster:
            node = redis.client.get_node_from_key(key)
            client, members = groups.setdefault(node.name, (node.redis_connection, []))
        else:
            client, members = groups.setdefault("", (redis.client, []))
        members.append(index)
    results: list[Any] = [None] * len(calls)
    for client, members in groups.values():
        for start in range(0, len(members), 5000):
            pipe = client.pipeline(transaction=False)
            part = members[start:start + 5000]
            for index in part:
                pipe.execute_command(*calls[index][1])
            for index, result in zip(part, pipe.execute(), strict=True):
                results[index] = result
    return results


def _each_user(redis: Redis, keys: Sequence[str], *command: Any) -> list[Any]:
    """``command`` (``KEY`` standing for each key) on every key of ``keys``."""
    return commands(redis, [(k, [k if c == "KEY" else c for c in command]) for k in keys])


def zadd(key: str, ids: Sequence[int]) -> tuple[str, list[Any]]:
    """The seed's mailbox entries: score and member the id."""
    return key, ["ZADD", key, *(x for i in ids for x in (i, i))]


def zadd_entries(key: str, entries: Sequence[tuple[int, int]]) -> tuple[str, list[Any]]:
    """tidings' mailbox entries (created_at, id) as its store writes them (score the time,
    member the id after a letter for its length)."""
    return key, ["ZADD", key, *(x for at, i in entries for x in (at, enc(i)))]


def one_model(sql_url: str, redis: Redis, raw: RawRedis | None, data: tl.Data, model: str,
              settings: TimelineSettings, hot_url: str, rng: random.Random,
              progress: Progress) -> dict[str, Any] | None:
    celebrities = data.celebrities(settings.threshold()) if model == "hybrid" else []
    t = engine(sql_url, model, settings, hot_url=hot_url)
    if t is None:
        return None
    keys = [Keys(redis.prefix).timeline(tl.user_id(n)) for n in range(1, data.users + 1)]
    try:
        started = time.perf_counter()
        floors = [Keys(redis.prefix).timeline_floor(tl.user_id(n))
                  for n in range(1, data.users + 1)]
        _each_user(redis, keys + floors, "DEL", "KEY")
        tl.prepare_model(sql_url, data, model, t.config.timeline_cap, settings.threshold(),
                         lambda _: None, mailboxes=False)
        rows = 0
        if model != "pull":
            task = progress.add_task(f"{data.graph}/{model}: mailboxes", total=data.users)
            calls = []
            for user, entries, floor in capped_mailboxes(sql_url, data,
                                                         t.config.timeline_cap, celebrities):
                if entries:
                    calls.append(zadd_entries(keys[user - 1], entries))
                    rows += len(entries)
                if floor:
                    calls.append((floors[user - 1], ["SET", floors[user - 1], floor]))
                progress.advance(task)
            commands(redis, calls)
            progress.remove_task(task)
        load_seconds = tl.elapsed(started)
        check(t, sql_url, data, raw if model != "pull" else None, model, rng)
        sizes = table_bytes(sql_url, ["events", "follows"])
        sizes["timelines"] = sum(int(x or 0) for x in _each_user(
            redis, keys, "MEMORY", "USAGE", "KEY"))
        seed_sizes = None
        if raw is not None:
            raw_keys = [raw.timeline(n) for n in range(1, data.users + 1)]
            seed_sizes = {"mailbox": sum(int(x or 0) for x in _each_user(
                redis, raw_keys, "MEMORY", "USAGE", "KEY"))}
        phases = Phases()

        # tidings' mailboxes are scored by time: the submitted posts are those dated after
        # the history's last
        after = f"({history_end(sql_url, data.messages)}"

        def count() -> int:
            return sum(int(x) for x in _each_user(redis, keys, "ZCOUNT", "KEY", after, "+inf"))

        task = progress.add_task(f"{data.graph}/{model}: rounds", total=settings.rounds)
        for _ in range(settings.rounds):
            users = [rng.randint(1, data.users) for _ in range(settings.ops)]
            reads(t, raw, model, users, phases)
            messages = tl.new_messages(data, settings.submits, rng)
            due, raw_due = due_rows(data, "push" if model == "pull" else model, messages,
                                    celebrities)
            timed = submits(t, count, model, messages,
                            (0 if model == "pull" else due, raw_due), settings.submit_batch,
                            [] if raw is None else [raw], their_model="push")
            phases.tidings["submit"].append(timed[0])
            tl.remove_submitted(sql_url, data.messages)
            _each_user(redis, keys, "ZREMRANGEBYSCORE", "KEY", after, "+inf")
            if raw is not None:
                phases.baseline["submit"].append(timed[1])
                raw.remove_submitted(data)
            progress.advance(task)
        progress.remove_task(task)
    finally:
        t.close()
    return {"model": model, "graph": data.graph, "phases": phases, "mailbox_rows": rows,
            "celebrities": len(celebrities), "load_seconds": load_seconds, "storage": sizes,
            "seed_storage": seed_sizes}


def run(settings: TimelineSettings, url: str, progress: Progress) -> dict[str, Any]:
    rng = random.Random(settings.seed)
    hot_url, prefix = with_prefix(url, f"tidings_bench_{secrets.token_hex(4)}:")
    redis = Redis(hot_url)
    graphs: list[dict[str, Any]] = []
    measured: list[dict[str, Any]] = []
    notes: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="tidings-bench-") as folder:
            for graph in settings.graphs:
                sql_url = f"sqlite:///{folder}/{graph}.db"
                Tidings.open(sql_url, migrate=True, hot_store_url=None).close()
                data = tl.generate(graph, settings.scale, settings.seed)
                task = progress.add_task(f"{graph}: loading {data.messages:,} messages",
                                         total=data.messages)
                tl.load_history(sql_url, data, time.time_ns() // 1000,
                                partial(progress.advance, task))
                progress.remove_task(task)
                raw = None
                if settings.baseline:
                    raw = RawRedis(redis, prefix)
                    raw.load(data, {user: [i for _, i in entries]
                                    for user, entries, _ in capped_mailboxes(
                                        sql_url, data, CAP, ())})
                graphs.append({
                    "graph": graph, "users": data.users, "messages": data.messages,
                    "follows": len(data.edges),
                    "followees_per_user": round(len(data.edges) / data.users, 2),
                    "max_followers": max(data.followers().values()),
                    "celebrity_followers": settings.threshold(),
                    "celebrities": len(data.celebrities(settings.threshold()))})
                with frozen_heap():
                    for model in settings.models:
                        done = one_model(sql_url, redis, raw, data, model, settings, hot_url,
                                         rng, progress)
                        if done is None:
                            notes.append(f"{model}: not in this build of tidings; skipped")
                        else:
                            measured.append(done)
                if raw is not None:
                    _delete(redis, f"{raw.base}")
    finally:
        _delete(redis, prefix)
        redis.close()
    out: dict[str, Any] = {
        "workload": "timelines", "store": urlunsplit(urlsplit(url)._replace(query="")),
        "backend": "redis-cluster" if redis.cluster else "redis",
        "settings": {"scale": settings.scale, "graphs": list(settings.graphs),
                     "models": list(settings.models), "rounds": settings.rounds,
                     "ops": settings.ops, "submits": settings.submits, "seed": settings.seed,
                     "baseline": settings.baseline, "submit_batch": settings.submit_batch,
                     "celebrity_followers": settings.threshold()},
        "environment": environment(), "notes": sorted(set(notes)), "data": graphs,
        "baseline_label": "raw_redis.py"}
    # issue 11 sets no storage goal on Redis (W1's is against the seed's SQL tables)
    out.update(summarise(measured, STATEMENTS, settings.baseline, goals=REDIS_GOALS,
                         storage_goals={}))
    return out


def with_prefix(url: str, prefix: str) -> tuple[str, str]:
    """``url`` with its key prefix (if any) followed by ``prefix``, and that whole prefix."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    whole = query.get("prefix", "") + prefix
    query["prefix"] = whole
    return urlunsplit(parts._replace(query=urlencode(query))), whole


def _delete(redis: Redis, prefix: str) -> None:
    client = redis.client
    nodes = client.get_primaries() if redis.cluster else [None]
    for node in nodes:
        extra = {"target_nodes": node} if redis.cluster else {}
        for key in list(client.scan_iter(match=f"{prefix}*", count=1000, **extra)):
            client.delete(key)
