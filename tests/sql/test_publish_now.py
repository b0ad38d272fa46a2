"""A group of ``POST /v1/events`` published on the event loop in one statement (PostgreSQL,
``tidings.store.sql.events``): the same events and fan-out jobs as the unit of work in a
thread; where the statement cannot answer the group (a key used before, a key repeated, several
scopes, a type not loaded, a key a concurrent publish takes meanwhile) it stores nothing and the
unit in a thread answers, as it does on every other store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import insert, select, text

from engines import open_tidings
from tidings.api.groupcommit import GroupCommit
from tidings.domain.events import Event
from tidings.domain.views import Published
from tidings.engine import Tidings
from tidings.exceptions import IdempotencyConflict, UnknownEventType
from tidings.fanout.specs import fanout_spec
from tidings.store.sql.events import event_row
from tidings.store.sql.schema import events, jobs

BACKFILLED = 1_600_000_000_000_000  # a time in the past an event may be published with


@pytest.fixture
def pg(store_url: str, backend: str) -> Iterator[Tidings]:
    with open_tidings(store_url) as tidings:
        yield tidings


def mention(actor: str, to: str, key: str | None = None, **more: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "mention", "actor": actor, "recipients": [to],
                             "object": "page:Fog", "payload": {"n": 1}, **more}
    if key is not None:
        event["idempotency_key"] = key
    return event


def stored(t: Tidings, ids: list[int]) -> list[tuple[Any, ...]]:
    """Each event's row (but its id, key and time) with its job's (the args' id taken out);
    the times are checked here: the job runs from when it was queued, not before its event
    (a back-filled event keeps its own time)."""
    db = t.store.db  # type: ignore[attr-defined]
    out = []
    with db.read() as conn:
        for event_id in ids:
            event = conn.execute(select(
                events.c.type, events.c.actor, events.c.object, events.c.payload,
                events.c.recipients, events.c.exclude, events.c.idempotency_scope,
                events.c.body_hash).where(events.c.id == event_id)).one()
            created = conn.execute(select(events.c.created_at).where(
                events.c.id == event_id)).scalar_one()
            job = conn.execute(select(
                jobs.c.func, jobs.c.args, jobs.c.unique_key, jobs.c.priority, jobs.c.run_after,
                jobs.c.grabbed_until, jobs.c.attempts, jobs.c.created_at).where(
                jobs.c.unique_key == f"fanout:{event_id}")).one()
            spec = fanout_spec(event_id, 2, json.loads(job.args).get("at"))
            assert (job.func, json.loads(job.args), job.unique_key, job.priority) == (
                spec.func, dict(spec.args), spec.unique_key, spec.priority)
            assert job.args == json.dumps(dict(spec.args), separators=(",", ":"))
            assert job.run_after == job.created_at
            assert created == BACKFILLED or created <= job.created_at
            out.append((*event, created == BACKFILLED, job.func, job.grabbed_until,
                        job.attempts))
    return out


def count(t: Tidings, table: str) -> int:
    with t.store.db.read() as conn:  # type: ignore[attr-defined]
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


@pytest.mark.parametrize("backend", ["postgresql"])
def test_the_statement_stores_what_the_unit_stores(pg: Tidings) -> None:
    items = [mention("amy", "bob", "k1"), mention("carol", "bob"),
             mention("erin", "bob", "k3", created_at=BACKFILLED)]
    on_engine: list[str] = []  # statements run through SQLAlchemy (the unit's path)
    engine = pg.store.db.engine  # type: ignore[attr-defined]

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        on_engine.append(statement)

    sa_event.listen(engine, "before_cursor_execute", seen)
    try:
        fast = asyncio.run(pg.publishing.commit_group([(i, "default") for i in items]))
    finally:
        sa_event.remove(engine, "before_cursor_execute", seen)
    assert on_engine == []  # one statement on the loop's own connection, nothing in a unit
    assert all(isinstance(p, Published) and p.created for p in fast)
    slow = pg.publish_each([({**i, "idempotency_key": f"other-{n}"}, "default")
                            for n, i in enumerate(items)])
    fast_ids = [int(p.id) for p in fast if isinstance(p, Published)]
    slow_ids = [int(p.id) for p in slow if isinstance(p, Published)]

    assert fast_ids == sorted(fast_ids) and len(set(fast_ids + slow_ids)) == 6
    assert stored(pg, fast_ids) == stored(pg, slow_ids)
    assert pg.publish({**items[0]}).id == str(fast_ids[0])  # its key is taken: the same event
    pg.run_jobs()
    assert pg.unread_count("bob").count == 6


@pytest.mark.parametrize("backend", ["postgresql"])
def test_the_unit_answers_where_the_statement_cannot(pg: Tidings) -> None:
    first = pg.publish(mention("amy", "bob", "used"))
    cannot = [
        [(mention("amy", "bob", "used"), "default"), (mention("carol", "bob", "new"), "default")],
        [(mention("amy", "bob", "twice"), "default"), (mention("amy", "bob", "twice"), "default")],
        [(mention("amy", "bob", "a"), "default"), (mention("carol", "bob", "b"), "other")],
        [(mention("amy", "bob", "c"), "default"), ({**mention("x", "bob"), "type": "nope"},
                                                    "default")],
    ]
    answers = []
    for group in cannot:
        before = count(pg, "events")
        with on_engine(pg) as statements:
            answers.append(asyncio.run(pg.publishing.commit_group(group)))
        assert statements  # the unit's, in a thread
        created = [o for o in answers[-1] if isinstance(o, Published) and o.created]
        assert count(pg, "events") == before + len(created)
    (again, new), (twice, repeated), (a, b), (c, refused) = answers
    assert isinstance(again, Published) and (again.id, again.created) == (first.id, False)
    assert isinstance(new, Published) and new.created
    assert isinstance(twice, Published) and isinstance(repeated, Published)
    assert twice.created and (repeated.id, repeated.created) == (twice.id, False)
    assert all(isinstance(p, Published) and p.created for p in (a, b, c))
    assert isinstance(refused, UnknownEventType)
    # the same answers as publish_each gives them, which the group commit awaits
    assert pg.publish_each(cannot[0]) == [Published(first.id, created=False),
                                          Published(new.id, created=False)]

    commits = GroupCommit(pg)

    async def publish_all() -> list[Published]:
        return list(await asyncio.gather(*(commits.publish(event, scope)
                                           for event, scope in cannot[1])))

    assert asyncio.run(publish_all()) == [Published(twice.id, created=False)] * 2


@contextlib.contextmanager
def on_engine(t: Tidings) -> Iterator[list[str]]:
    """The statements run through SQLAlchemy (the unit's path) meanwhile."""
    engine = t.store.db.engine  # type: ignore[attr-defined]
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    sa_event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa_event.remove(engine, "before_cursor_execute", note)


@pytest.mark.parametrize("backend", ["postgresql"])
def test_a_key_taken_by_a_concurrent_publish_stores_nothing(pg: Tidings) -> None:
    """The key is free when the statement checks it, then another transaction commits it:
    the statement fails on the unique index as a whole, nothing of it is stored, and the unit
    in a thread answers the group: the key's earlier event refuses the other body, the other
    event is stored."""
    db = pg.store.db  # type: ignore[attr-defined]
    racer = Event("mention", actor="zed", recipients=["bob"], idempotency_key="race")
    outcome: list[Any] = []
    with db.engine.connect() as other:
        other.execute(insert(events).values(event_row(racer, "{}", 1, "default")))

        def publish() -> None:
            outcome.append(asyncio.run(pg.publishing.commit_group(
                [(mention("amy", "bob", "race"), "default"),
                 (mention("carol", "bob", "free"), "default")])))

        thread = threading.Thread(target=publish)
        thread.start()
        time.sleep(0.5)  # the statement waits on the racer's uncommitted key
        assert thread.is_alive()
        other.commit()
        thread.join(10)
    ((conflict, free),) = outcome
    assert isinstance(conflict, IdempotencyConflict)
    assert isinstance(free, Published) and free.created
    assert count(pg, "events") == 2 and count(pg, "jobs") == 1


@pytest.mark.parametrize("any_backend", ["memory", "sqlite", "mysql"])
def test_other_stores_answer_in_a_thread_as_the_unit_does(any_store_url: str) -> None:
    with open_tidings(any_store_url) as t:
        group = [(mention("amy", "bob", "k"), "default"), (mention("amy", "bob"), "default")]
        first, other = asyncio.run(t.publishing.commit_group(group))
        assert isinstance(first, Published) and first.created
        assert isinstance(other, Published) and other.created
        assert t.publish_each(group)[0] == Published(first.id, created=False)
