"""Fan-out's reads keep to their indexes on PostgreSQL whatever plan the statement gets: a
prepared statement's generic plan (``plan_cache_mode = force_generic_plan``, which psycopg's
prepared statements come to) must not walk a whole table."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from stores import PostgresStores
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.audience import OBJECT_SUBSCRIBERS, AudienceSource
from tidings.engine import Tidings
from tidings.store.sql.core.hashes import to_sql
from tidings.store.sql.graph.audience import ranged
from tidings.store.sql.inbox.bundles import BASES_AT, DEMOTE, LOCK_PAIRS, newest_before_query
from tidings.store.sql.schema import inbox_open, inbox_types, notifications, subscriptions


def key(label: str) -> str:
    """A bundle or display hash named by ``label``: 16 hex characters, as the domain's."""
    return hashlib.sha1(label.encode()).hexdigest()[:16]

PAGES = 300
WATCHERS = 10


@pytest.fixture
def loaded(postgresql_stores: PostgresStores) -> Iterator[Tidings]:
    url = postgresql_stores.clone()
    t = Tidings(Config(database_url=url), clock=FrozenClock())
    with t.store.db.write() as conn:  # type: ignore[attr-defined]
        t.store.db.insert_many(conn, subscriptions, [  # type: ignore[attr-defined]
            {"user_id": f"u{(p * 7 + w * 31) % 2000:04d}", "type": "linked",
             "object": f"page:{p}", "channels": "", "created_at": 0}
            for p in range(PAGES) for w in range(WATCHERS)])
        t.store.db.insert_many(conn, inbox_types, [  # type: ignore[attr-defined]
            {"id": 1, "name": "linked", "category": "general", "section": "alert"}])
        t.store.db.insert_many(conn, notifications, [  # type: ignore[attr-defined]
            {"user_id": f"u{i % 2000:04d}", "event_id": i, "created_at": i, "fresh_at": i,
             "type_id": 1, "actor": "ann",
             "object": f"page:{i % PAGES}", "bundle_hash": key(f"h{i % PAGES}"),
             "display_hash": key(f"d{i}"), "bundle_base": True, "read_at": None, "joined": False}
            for i in range(1, 20_001)])
        newest = {(f"u{i % 2000:04d}", key(f"h{i % PAGES}")): i for i in range(1, 20_001)}
        t.store.db.insert_many(conn, inbox_open, [  # type: ignore[attr-defined]
            {"user_id": u, "bundle_hash": h, "created_at": i, "event_id": i}
            for (u, h), i in sorted(newest.items())])
    with t.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(text("ANALYZE"))
        conn.commit()
    yield t
    t.close()
    postgresql_stores.drop(url)


def _generic_plan(t: Tidings, sql: str, params: Any) -> str:
    with t.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
        conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
        conn.rollback()
    return plan


def _scans(plan: str) -> list[str]:
    """The sequential scans of ``plan`` but the dictionary of types' (a row a type, read by
    its key where it has more than a page)."""
    return [line for line in plan.splitlines() if "Seq Scan" in line and "inbox_types" not in line]


def test_an_objects_subscribers_are_read_from_their_index_ranges(loaded: Tidings) -> None:
    source = AudienceSource(OBJECT_SUBSCRIBERS, "linked", "ann", "page:5")
    with loaded.store.read() as tx:
        first = tx.graph.audience(source, after="", upto=None, limit=WATCHERS + 1)
        assert len(first) == WATCHERS and first == sorted(first)
        assert tx.graph.nth_after(source, "", 3) == first[2]
    query = ranged(source, "postgresql", "", None, WATCHERS + 1)
    assert query is not None
    compiled = query.compile(dialect=loaded.store.db.engine.dialect)  # type: ignore[attr-defined]
    plan = _generic_plan(loaded, compiled.string, compiled.params)
    assert "ix_subscriptions_type_object_user_id" in plan, plan
    assert "uq_subscriptions_user_id_type_object" not in plan, plan
    assert "Seq Scan" not in plan, plan


def test_bundle_bases_and_demotions_probe_a_pair_at_a_time(loaded: Tidings) -> None:
    pairs = json.dumps([[f"u{i:04d}", to_sql(key(f"h{i}"))] for i in range(50)])
    places = json.dumps([[f"u{i:04d}", i] for i in range(1, 51)])
    db = loaded.store.db  # type: ignore[attr-defined]
    for statement, params in ((LOCK_PAIRS, {"pairs": pairs}), (BASES_AT, {"places": places}),
                              (DEMOTE, {"groups": pairs})):
        sql, args = db.driver_form(statement, params)
        plan = _generic_plan(loaded, sql, args)
        assert "Nested Loop" in plan, plan
        assert not _scans(plan), plan
    # a base row is found by its (user, event id) place: one probe, no bundle hash index
    plan = _generic_plan(loaded, *db.driver_form(BASES_AT, {"places": places}))
    condition = next(line for line in plan.splitlines() if "Index Cond:" in line)
    assert "event_id = " in condition and "user_id)::text = " in condition, plan


def test_a_bundles_newest_base_below_a_place_reads_the_users_base_rows(loaded: Tidings) -> None:
    """A back-fill's decision, or a bundle whose newest base went: the user's base rows newest
    first through the (user, base, created_at, event id) index from the place down (where a
    user holds a few, the planner may sort them), each checked for the bundle; no index of
    bundle hashes, no scan of the table."""
    query = newest_before_query("u0007", key("h7"), (15_000, 15_000), "postgresql")
    compiled = query.compile(dialect=loaded.store.db.engine.dialect)  # type: ignore[attr-defined]
    params = {name: to_sql(value) if name.startswith("bundle_hash") else value
              for name, value in compiled.params.items()}  # as the column's type sends it
    plan = _generic_plan(loaded, compiled.string, params)
    assert "ix_notifications_user_id_bundle_base_created_at_event_id" in plan, plan
    assert not _scans(plan), plan
    with loaded.store.db.read() as conn:  # type: ignore[attr-defined]
        found = conn.execute(newest_before_query("u0007", key("h7"), (15_000, 15_000),
                                                 "sqlite")).first()
    # u0007's rows are the events 7, 2007, …; of them, bundle h7 are those = 7 mod 300
    assert found is not None and found.event_id == max(
        i for i in range(7, 15_000, 2000) if i % PAGES == 7)
