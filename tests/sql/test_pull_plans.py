"""The pull model's read uses an index of ``events`` by actor: on PostgreSQL one LATERAL
statement, on SQLite one UNION ALL of per-followee subqueries, on MariaDB each followee's newest
time and then the events after the page's floor, none scanning the table (on SQLite and MariaDB
none reading a row but the page's). Each followee's events come in the timeline's order
(created_at, id) from the index itself, as a push mailbox's page does from its key: no sort but
the merge of the followees' parts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.schema import events, follows, timelines

ACTORS = [f"a{i}" for i in range(1000)]
PER_ACTOR = 30
FOLLOWED = ACTORS[::25]  # 40 followees among 1,000 actors


@pytest.fixture(params=["postgresql", "mysql", "sqlite"])
def loaded(request: pytest.FixtureRequest) -> Iterator[Tidings]:
    databases: Any = request.getfixturevalue(f"{request.param}_stores")
    url = databases.clone()
    t = Tidings(Config(database_url=url, timeline_model="pull"),
                types=[EventType("post", audience=("actor_followers",))], clock=FrozenClock())
    with t.store.db.write() as conn:
        t.store.db.insert_many(conn, events, [
            {"id": n * len(ACTORS) + i + 1, "type": "post", "actor": actor, "object": None,
             "payload": "{}", "recipients": "[]", "exclude": "[]", "idempotency_key": None,
             "body_hash": "", "created_at": n} for n in range(PER_ACTOR)
            for i, actor in enumerate(ACTORS)])
        t.store.db.insert_many(conn, follows, [
            {"follower": "reader", "followee": actor, "created_at": 0} for actor in FOLLOWED])
    with t.store.db.engine.connect() as conn:
        conn.execute(text("ANALYZE TABLE events" if request.param == "mysql" else "ANALYZE"))
        conn.commit()
    yield t
    t.close()
    databases.drop(url)


def _plans(t: Tidings, call: Any) -> list[str]:
    """EXPLAIN every query that reads events by actor during ``call``."""
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        reads = re.search(r"\b(events|e)\.actor = |FROM events( INDEXED BY \w+)? WHERE actor = "
                          r"|FROM events FORCE INDEX \(\w+\) WHERE actor IN \(", statement)
        if reads and statement.lstrip().upper().startswith(("SELECT", "WITH")):
            captured.append((statement, parameters))

    event.listen(t.store.db.engine, "before_cursor_execute", capture)
    try:
        call()
    finally:
        event.remove(t.store.db.engine, "before_cursor_execute", capture)
    plans = []
    with t.store.db.engine.connect() as conn:
        for statement, parameters in captured:
            explain = "EXPLAIN QUERY PLAN " if t.store.db.backend == "sqlite" else "EXPLAIN "
            args = tuple(parameters) if isinstance(parameters, list) else parameters
            rows = conn.exec_driver_sql(explain + statement, args).all()
            plans.append("\n".join(" ".join(str(v) for v in r) for r in rows))
    return plans


def _no_sort_under_an_index_read(backend: str, plan: str) -> None:
    """No index read of one followee (or of the mailbox) sorts its rows: the index's order is
    the timeline's."""
    lines = plan.splitlines()
    if backend == "postgresql":
        # each followee's own read, in the lateral parts: backwards through the actor's index
        reads = [line for line in lines if re.search(r" on events e_\d+ ", line)]
        assert all("Index Only Scan Backward using ix_events_actor_created_at_id" in line
                   for line in reads), plan
        assert "Incremental Sort" not in plan, plan
    elif backend == "sqlite":  # a temp b-tree directly in a followee's subquery (co-routine)
        routines = {line.split()[0] for line in lines if "CO-ROUTINE" in line}
        assert not [line for line in lines if "TEMP B-TREE" in line
                    and line.split()[1] in routines], plan
    else:
        assert not [line for line in lines if " timelines " in f" {line} "
                    and "filesort" in line], plan


def test_a_pulled_page_reads_each_followee_through_the_actor_id_index(loaded: Tidings) -> None:
    page = loaded.timeline("reader", limit=20)
    every = [n * len(ACTORS) + ACTORS.index(a) + 1 for n in range(PER_ACTOR) for a in FOLLOWED]
    assert [e.id for e in page.items] == sorted(every, reverse=True)[:20]
    later = loaded.timeline("reader", limit=20, cursor=page.next_cursor)
    assert [e.id for e in later.items] == sorted(every, reverse=True)[20:40]
    plans = _plans(loaded, lambda: loaded.timeline("reader", limit=20,
                                                   cursor=page.next_cursor))
    assert plans
    for plan in plans:
        _no_sort_under_an_index_read(loaded.store.db.backend, plan)
        if loaded.store.db.backend == "sqlite":  # each followee's ids from the index alone
            parts = [line for line in plan.splitlines() if "SEARCH events" in line]
            assert len(parts) == len(FOLLOWED), plan
            covered = "COVERING INDEX ix_events_actor_type_retracted_at_created_at"
            assert all(covered in line for line in parts), plan
            continue
        if loaded.store.db.backend == "mysql":
            continue
        assert "ix_events_actor_created_at_id" in plan, plan
        assert "Seq Scan on events" not in plan, plan
        # the followees' ids from the index alone
        assert "Index Only Scan Backward using ix_events_actor_created_at_id" in plan, plan
    if loaded.store.db.backend == "mysql":
        # each followee's newest id by skipping through the (actor, type, retracted_at) index,
        # then the ids above the floor from the same index alone, the page's rows read after
        newest, page_ids = plans
        assert "ix_events_actor_type_retracted_at_created_at" in newest, newest
        assert "Using index for group-by" in newest, newest
        (ids,) = [line for line in page_ids.splitlines() if " events " in f" {line} "]
        assert "range ix_events_actor_type_retracted_at_created_at" in ids, page_ids
        assert "Using index" in ids, page_ids
        (joined,) = [line for line in page_ids.splitlines() if "page.id" in line]
        assert "eq_ref PRIMARY" in joined, page_ids


def test_a_mailbox_page_reads_its_key_in_order(loaded: Tidings) -> None:
    """A push mailbox's page, an imported (old) post among today's: the rows come from the
    mailbox's key (user_id, created_at, event_id) in the timeline's order, no sort."""
    t = loaded
    with t.store.db.write() as conn:
        t.store.db.insert_many(conn, timelines, [
            {"user_id": "reader", "event_id": n * len(ACTORS) + ACTORS.index(a) + 1,
             "created_at": n} for n in range(PER_ACTOR) for a in FOLLOWED])
    backend = t.store.db.backend
    with t.store.db.engine.connect() as conn:
        conn.execute(text("ANALYZE TABLE timelines" if backend == "mysql" else "ANALYZE"))
        conn.commit()
    with t.store.read() as tx:
        _, first = tx.timeline.head("reader", limit=20, before=None, after=None)
    later = (first[-1].created_at, first[-1].id)
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if re.search(r"\btimelines\b", statement):
            captured.append((statement, parameters))

    event.listen(t.store.db.engine, "before_cursor_execute", capture)
    try:
        with t.store.read() as tx:
            assert [e.id for e in tx.timeline.page("reader", limit=20, before=later)] == [
                e.id for e in tx.timeline.page("reader", limit=40, before=None)][20:]
    finally:
        event.remove(t.store.db.engine, "before_cursor_execute", capture)
    assert captured
    with t.store.db.engine.connect() as conn:
        for statement, parameters in captured:
            explain = "EXPLAIN QUERY PLAN " if backend == "sqlite" else "EXPLAIN "
            args = tuple(parameters) if isinstance(parameters, list) else parameters
            rows = conn.exec_driver_sql(explain + statement, args).all()
            plan = "\n".join(" ".join(str(v) for v in r) for r in rows)
            _no_sort_under_an_index_read(backend, plan)
            if backend == "sqlite":
                assert "TEMP B-TREE" not in plan, plan
            elif backend == "postgresql":
                assert "Sort" not in plan and "pk_timelines" in plan, plan
            else:
                assert "filesort" not in plan, plan
