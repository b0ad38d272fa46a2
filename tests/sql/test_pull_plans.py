"""The pull model's read uses an index of ``events`` by actor: on PostgreSQL one LATERAL
statement, on SQLite one UNION ALL of per-followee subqueries, on MariaDB each followee's newest
id and then the ids above the page's floor, none scanning the table (on SQLite and MariaDB none
reading a row but the page's)."""

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
from tidings.store.sql.schema import events, follows

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
        if loaded.store.db.backend == "sqlite":  # each followee's ids from the index alone
            parts = [line for line in plan.splitlines() if "SEARCH events" in line]
            assert len(parts) == len(FOLLOWED), plan
            covered = "COVERING INDEX ix_events_actor_type_retracted_at"
            assert all(covered in line for line in parts), plan
            continue
        if loaded.store.db.backend == "mysql":
            continue
        assert "ix_events_actor_id" in plan, plan
        assert "Seq Scan on events" not in plan, plan
        # the followees' ids from the index alone
        assert "Index Only Scan Backward using ix_events_actor_id" in plan, plan
    if loaded.store.db.backend == "mysql":
        # each followee's newest id by skipping through the (actor, type, retracted_at) index,
        # then the ids above the floor from the same index alone, the page's rows read after
        newest, page_ids = plans
        assert "ix_events_actor_type_retracted_at" in newest, newest
        assert "Using index for group-by" in newest, newest
        (ids,) = [line for line in page_ids.splitlines() if " events " in f" {line} "]
        assert "range ix_events_actor_type_retracted_at" in ids, page_ids
        assert "Using index" in ids, page_ids
        (joined,) = [line for line in page_ids.splitlines() if "page.id" in line]
        assert "eq_ref PRIMARY" in joined, page_ids
