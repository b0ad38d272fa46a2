"""Fan-out jobs run in batches (``Handler.run_many``: one unit for the fan-out jobs of a claim)
end exactly as one by one: the same inboxes (bundles, counts, read state), the same timelines
(pushed, pulled, capped), the same source states — on memory, SQLite, PostgreSQL, MariaDB
and SQLite with Redis for inboxes and timelines. A job that fails in a batch holds up none
of the others."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any

import pytest

from engines import TYPES, drop_memory_store, open_tidings
from redis_servers import hot_url_of
from stores import SqlStores
from tidings.clock import FrozenClock
from tidings.domain.readstate import Markers
from tidings.domain.types import EventType, Templates
from tidings.domain.views import Filters
from tidings.engine import Tidings
from tidings.jobs.context import DEFERRED
from tidings.jobs.worker import Worker

KINDS = ["memory", "sqlite", "postgresql", "mysql", "redis"]
EXTRA = (
    EventType(name="liked", category="liked", bundle="object", audience=("recipients",),
              templates=Templates(title="{{ actor }} liked {{ object_title }}")),
    EventType(name="shared", category="shared", bundle="object",
              audience=("recipients", "actor_followers"),
              templates=Templates(title="{{ actor }} shared {{ object_title }}")),
    EventType(name="secret", category="secret", audience=("recipients",),
              privacy="rule:nobody-registered",
              templates=Templates(title="{{ actor }} whispered")),
)
USERS = [f"u{i}" for i in range(8)]
SETTINGS: dict[str, Any] = {"chunk_size": 5, "timeline_model": "hybrid",
                            "celebrity_followers": 5, "timeline_cap": 3, "inbox_cap": 9}
SAMPLED_CAP = 20  # a margin of 2: about one delivery in two checks an inbox


@contextlib.contextmanager
def _store(kind: str, request: pytest.FixtureRequest) -> Iterator[tuple[str, str | None]]:
    if kind == "memory":
        url = f"memory://batch-{secrets.token_hex(6)}"
        try:
            yield url, None
        finally:
            drop_memory_store(url)
        return
    stores: SqlStores = request.getfixturevalue(
        "sqlite_stores" if kind == "redis" else f"{kind}_stores")
    url = stores.clone()
    try:
        if kind == "redis":
            with hot_url_of("redis", request) as hot:
                yield url, hot
        else:
            yield url, None
    finally:
        stores.drop(url)


@contextlib.contextmanager
def _engines(request: pytest.FixtureRequest, settings: dict[str, Any]
             ) -> Iterator[tuple[Tidings, Tidings]]:
    """Two engines on two clean stores of one kind, same settings and clock start."""
    with contextlib.ExitStack() as stack:
        engines = []
        for _ in range(2):
            url, hot = stack.enter_context(_store(request.param, request))
            engines.append(stack.enter_context(open_tidings(
                url, types=TYPES + EXTRA, clock=FrozenClock(), hot_store_url=hot,
                **settings)))
        yield engines[0], engines[1]


@pytest.fixture(params=KINDS)
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Tidings, Tidings]]:
    with _engines(request, SETTINGS) as engines:
        yield engines


@pytest.fixture(params=KINDS)
def sampled_pair(request: pytest.FixtureRequest) -> Iterator[tuple[Tidings, Tidings]]:
    """As :func:`pair`, with an inbox cap a check of about one delivery in two keeps (20)."""
    with _engines(request, {**SETTINGS, "inbox_cap": SAMPLED_CAP}) as engines:
        yield engines


def _counting(t: Tidings, deferred: list[int] | None = None) -> list[int]:
    """Wrap the fan-out handler's run_many: the sizes of the batches it ran (and, in
    ``deferred``, how many jobs of each it left for a later unit)."""
    sizes: list[int] = []
    handler = t.handlers["fanout"]
    assert handler.run_many is not None
    many = handler.run_many

    def counted(ctx: Any, tx: Any, jobs: Any) -> Any:
        sizes.append(len(jobs))
        results = many(ctx, tx, jobs)
        if deferred is not None:
            deferred.append(sum(r is DEFERRED for r in results))
        return results

    t.handlers["fanout"] = replace(handler, run_many=counted)
    return sizes


def _history(t: Tidings) -> list[str]:
    """Follows, mutes, overrides, then events of every shape; returns the retracted id."""
    for i, user in enumerate(USERS):
        for actor in ("a1", "a2", "a3"):
            if (i + len(actor) + int(actor[1])) % 3 != 0:
                t.follow(user, actor)
    for user in USERS[:6]:
        t.follow(user, "big")  # more followers than a chunk: the chunked route
    t.mute("u2", actor="a2")
    t.mute("u3", object="page:x")
    t.set_timeline_model("a3", "pull")
    t.subscribe("u5", "page-linked", "page:x")
    events: list[dict[str, Any]] = []
    for n in range(14):
        actor = ("a1", "a2", "a3", "big")[n % 4]
        events.append({"type": "post", "actor": actor, "object": f"page:{'x' if n % 3 else 'y'}",
                       "payload": {"n": n}})
        events.append({"type": "liked", "actor": actor, "object": "page:x",
                       "recipients": ["u1", "u3", "u4"], "payload": {"n": n}})
        if n % 5 == 0:
            events.append({"type": "shared", "actor": actor, "object": "page:y",
                           "recipients": ["u6"], "exclude": ["u0"], "payload": {"n": n}})
            events.append({"type": "page-linked", "actor": actor, "object": "page:x",
                           "recipients": ["u7"], "payload": {"n": n}})
            events.append({"type": "mention", "actor": actor, "recipients": ["u0", actor],
                           "payload": {"n": n}})
    ids = [p.id for p in t.publish_many(events[:20])]
    ids += [p.id for p in t.publish_many(events[20:])]
    t.retract(event_id=ids[7])
    return ids


def _state(t: Tidings) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for user in [*USERS, "a1", "a2", "a3", "big"]:
        page = t.notifications(user, limit=100)
        # the same items in the same order; their times differ by the clock's ticks
        seen[f"inbox:{user}"] = [{**asdict(item), "created_at": None} for item in page.items]
        seen[f"unread:{user}"] = t.unread_count(user).count
        seen[f"timeline:{user}"] = [e.id for e in t.timeline(user, limit=100).items]
    with t.store.read() as tx:
        seen["sources"] = {a: asdict(s) for a, s in sorted(
            tx.graph.timeline_sources(["a1", "a2", "a3", "big"]).items())}
    return seen


def test_a_batch_of_fanouts_ends_as_one_by_one(pair: tuple[Tidings, Tidings]) -> None:
    """Also when a claim holds more users than a unit takes (two chunks' worth): the jobs
    past that are put back and run in later units, in their order."""
    batched, single = pair
    deferred: list[int] = []
    sizes = _counting(batched, deferred)
    assert _history(batched) == _history(single)
    Worker(single.job_context, single.handlers, batch=1).drain()
    batched.run_jobs()
    assert max(sizes) > 10  # the fan-out jobs did run together
    assert max(n - d for n, d in zip(sizes, deferred, strict=True)) > 1
    assert sum(deferred) > 0  # and the budget left some for later units
    assert batched.queue.stats()["queued"] == single.queue.stats()["queued"] == 0
    one, other = _state(batched), _state(single)
    assert one == other
    assert one["timeline:u1"] and one["inbox:u1"]  # the history did reach people
    # a1 is pushed, a2 (more followers than celebrity_followers) flipped to pull at its first
    # post, a3 pulled by its override
    assert [one["sources"][a]["push_from"] for a in ("a1", "a2", "a3")] == [(0, 0), None, None]


def test_a_batch_past_a_sampled_inbox_cap_ends_as_one_by_one(
        sampled_pair: tuple[Tidings, Tidings]) -> None:
    """With a cap that about one delivery in a margin checks, a batch whose users pass the
    cap within it — trims between two of a user's deliveries, bundled and not — ends with the
    same inboxes as its jobs one by one."""
    batched, single = sampled_pair
    sizes = _counting(batched)
    for t in (batched, single):
        events: list[dict[str, Any]] = []
        for n in range(90):
            recipients = [USERS[(n + k) % 4] for k in range(1 + n % 3)]
            if n % 3:
                events.append({"type": "liked", "actor": f"a{n % 5}",
                               "object": f"page:{n % 4}", "recipients": recipients,
                               "payload": {"n": n}})
            else:
                events.append({"type": "mention", "actor": f"a{n % 5}",
                               "recipients": recipients, "payload": {"n": n}})
        t.publish_many(events[:40])
        t.publish_many(events[40:])
    Worker(single.job_context, single.handlers, batch=1).drain()
    batched.run_jobs()
    assert max(sizes) > 10  # the fan-out jobs did run together
    one, other = _state(batched), _state(single)
    assert one == other
    held = [sum(i["count"] for i in one[f"inbox:{u}"]) for u in USERS[:4]]
    assert all(h >= SAMPLED_CAP for h in held)  # each got more than the cap: trimmed
    assert any(h > SAMPLED_CAP for h in held)  # and the margin shows


def test_a_bad_job_in_a_batch_holds_up_none_of_the_others(
        pair: tuple[Tidings, Tidings]) -> None:
    """An event whose privacy rule no process registered fails its own job (retried later);
    the other fan-out jobs of its batch are delivered, in one run."""
    t, _ = pair
    t.follow("u1", "a1")
    ids = [int(p.id) for p in t.publish_many([
        {"type": "post", "actor": "a1", "payload": {"n": 1}},
        {"type": "secret", "actor": "a1", "recipients": ["u1"]},
        {"type": "liked", "actor": "a1", "object": "page:x", "recipients": ["u1"]},
        {"type": "post", "actor": "a1", "payload": {"n": 2}},
    ])]
    t.run_jobs(max_jobs=4)
    assert [str(e.id) for e in t.timeline("u1").items] == [str(ids[3]), str(ids[0])]
    assert [item.id for item in t.notifications("u1").items] == [
        str(i) for i in (ids[3], ids[2], ids[0])]
    failures = t.queue.failures()
    assert [f.args["event_id"] for f in failures] == [ids[1]]
    assert t.queue.stats()["queued"] == 1  # only the bad job waits for its retry


def test_after_a_unit_puts_jobs_back_the_next_claims_ask_for_what_a_unit_takes(
        pair: tuple[Tidings, Tidings]) -> None:
    """Jobs run on their own (here: events whose subscribers need more than one chunk) count
    a fifth of a chunk each, so ten make a unit; a claim of 40 puts 30 back, and the claims
    after it ask for about ten, not 40 again, so few jobs go back each time. Every event is
    delivered."""
    t, _ = pair
    for user in USERS[:6]:  # more than a chunk (5)
        t.subscribe(user, "page-linked", "page:x")
    t.publish_many([{"type": "page-linked", "actor": "a1", "object": "page:x",
                     "recipients": ["u7"], "payload": {"n": n}} for n in range(60)])
    deferred: list[int] = []
    sizes = _counting(t, deferred)
    Worker(t.job_context, t.handlers, batch=40).drain()
    assert (sizes[0], deferred[0]) == (40, 30)
    assert max(sizes[1:]) <= 13, sizes
    assert sum(deferred[1:]) < len(sizes), (sizes, deferred)
    assert t.queue.stats()["queued"] == 0
    with t.store.read() as tx:
        assert len(tx.inbox.page("u5", Filters(), Markers(), limit=100, before=None)) >= 1
    assert sum(n - d for n, d in zip(sizes, deferred, strict=True)) == 60
