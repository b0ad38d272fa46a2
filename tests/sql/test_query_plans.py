"""The hot reads use their indexes on PostgreSQL: no sort, no GROUP BY, no scan of an inbox."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from stores import MysqlStores, PostgresStores
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.bundling import ACTOR_SCAN
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.core.hashes import to_sql
from tidings.store.sql.inbox.groups import GROUP_INDEX, members_statement
from tidings.store.sql.inbox.holders import HOLDERS, RECORDS, record
from tidings.store.sql.schema import events, inbox_types, notifications, users


def key(label: str) -> str:
    """A bundle or display hash named by ``label``: 16 hex characters, as the domain's."""
    return hashlib.sha1(label.encode()).hexdigest()[:16]

USERS = [f"u{i}" for i in range(8)]
# the rows' one type, in the types dictionary (a row holds its id)
LINK = {"id": 1, "name": "link", "category": "general", "section": "alert"}
PER_USER = 2000


@pytest.fixture
def loaded(postgresql_stores: PostgresStores) -> Iterator[Tidings]:
    url = postgresql_stores.clone()
    t = Tidings(Config(database_url=url), types=[EventType("link", bundle="object")],
                clock=FrozenClock())
    rows: list[dict[str, Any]] = []
    with t.store.db.write() as conn:
        t.store.db.insert_many(conn, events, [
            {"id": i, "type": "link", "actor": "a", "object": f"page:{i % 50}", "payload": "{}",
             "recipients": "[]", "exclude": "[]", "idempotency_key": None, "body_hash": "",
             "created_at": i} for i in range(1, PER_USER + 1)])
        for user in USERS:
            rows += [{
                "user_id": user, "event_id": i, "created_at": i, "fresh_at": i, "type_id": 1,
                "actor": "a",
                "object": f"page:{i % 50}", "bundle_hash": key(f"h{i % 50}"),
                "display_hash": key(f"d{i}"),
                "bundle_base": i % 3 == 0, "read_at": i if i % 2 else None,
            } for i in range(1, PER_USER + 1)]
        t.store.db.insert_many(conn, inbox_types, [LINK])
        t.store.db.insert_many(conn, notifications, rows)
        record(t.store.db, conn, [(r["event_id"], r["user_id"]) for r in rows])
    with t.store.db.engine.connect() as conn:
        conn.execute(text("ANALYZE"))
        conn.commit()
    yield t
    t.close()
    postgresql_stores.drop(url)


def _plans(t: Tidings, call: Any) -> list[str]:
    """EXPLAIN every query that reads notifications during ``call``."""
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "FROM notifications" in statement and statement.lstrip().upper().startswith(
                ("SELECT", "WITH")):
            captured.append((statement, parameters))

    event.listen(t.store.db.engine, "before_cursor_execute", capture)
    try:
        call()
    finally:
        event.remove(t.store.db.engine, "before_cursor_execute", capture)
    plans = []
    with t.store.db.engine.connect() as conn:
        for statement, parameters in captured:
            rows = conn.exec_driver_sql("EXPLAIN " + statement, parameters).all()
            plans.append("\n".join(r[0] for r in rows))
    return plans


def _statements(engine: Any, needle: str, call: Any) -> list[tuple[str, Any]]:
    """The statements (with their parameters) holding ``needle`` that ``call`` runs."""
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if needle in statement:
            captured.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        call()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    return captured


def test_inbox_list_reads_base_rows_through_the_index(loaded: Tidings) -> None:
    plans = _plans(loaded, lambda: loaded.notifications("u3", limit=20))
    found = next(p for p in plans if "Limit" in p and "events" in p)
    # the listing itself; on PostgreSQL the page statement also carries, per listed row, a
    # subplan reading that row's display group (its newest members) through the group index
    listing, _, members = found.partition("SubPlan")
    assert "ix_notifications_user_id_bundle_base_created_at_event_id" in listing, found
    assert "Sort" not in listing and "Group" not in listing and "Unique" not in listing, found
    assert "Seq Scan on notifications" not in found, found
    if members:
        assert "ix_notifications_display_hash_user_id_created_at_event_id_actor" in members, found


def test_unread_count_is_a_capped_index_scan(loaded: Tidings) -> None:
    plans = _plans(loaded, lambda: loaded.unread_count("u3"))
    (count,) = plans
    # a partial index of the unread base rows in the inbox (neither archived nor snoozed: its
    # condition names the flags, 0037), read alone in its own order (no sort of the rows)
    assert "Index Only Scan using ix_notifications_user_id_fresh_at" in count, count
    assert "Sort" not in count, count
    # the watermark lookup rides in the same statement (a seq scan of an empty read_markers
    # in this fixture is the planner's choice for an empty table, not a scan of an inbox)
    assert "Limit" in count and "Group" not in count, count
    assert "Seq Scan on notifications" not in count, count


def test_group_members_use_the_display_index(loaded: Tidings) -> None:
    plans = _plans(loaded, lambda: loaded.notifications("u3", limit=5))
    # a statement of their own, or (PostgreSQL) the page statement's per-row subplan
    members = [p for p in plans if "display_hash" in p and "events" not in p] + [
        p.partition("SubPlan")[2] for p in plans if "events" in p and "SubPlan" in p]
    assert members, plans
    for plan in members:
        assert "ix_notifications_display_hash_user_id_created_at_event_id_actor" in plan, plan


def test_idempotency_keys_are_looked_up_by_both_columns(
        postgresql_stores: PostgresStores) -> None:
    # the statistics saw one scope only; a new API key's scope then looks like a handful of
    # rows, and a plan keyed on the scope alone would read every event of that scope
    url = postgresql_stores.clone()
    t = Tidings(Config(database_url=url), types=[EventType("link")], clock=FrozenClock())
    try:
        with t.store.db.write() as conn:
            t.store.db.insert_many(conn, events, [
                {"type": "link", "actor": "a", "object": None, "payload": "{}",
                 "recipients": "[]", "exclude": "[]", "idempotency_key": f"k{i}",
                 "body_hash": "", "created_at": i} for i in range(3000)])
        with t.store.db.engine.connect() as conn:
            conn.execute(text("ANALYZE events"))
            conn.commit()
        with t.store.db.write() as conn:
            t.store.db.insert_many(conn, events, [
                {"type": "link", "actor": "a", "object": None, "payload": "{}",
                 "recipients": "[]", "exclude": "[]", "idempotency_scope": "key:new",
                 "idempotency_key": f"k{i}", "body_hash": "", "created_at": i}
                for i in range(3000)])
        captured: list[tuple[str, Any]] = []

        def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any,
                    *_: Any) -> None:
            if "idempotency_key" in statement and "FROM events" in statement:
                captured.append((statement, parameters))

        event.listen(t.store.db.engine, "before_cursor_execute", capture)
        try:
            with t.store.read() as tx:
                found = tx.events.get_by_keys(["k7", "k9", "nope"], scope="key:new")
        finally:
            event.remove(t.store.db.engine, "before_cursor_execute", capture)
        assert sorted(found) == ["k7", "k9"]
        (statement, parameters), = captured
        with t.store.db.engine.connect() as conn:
            plan = "\n".join(r[0] for r in conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, COSTS OFF) " + statement, parameters))
        assert "idempotency_key)::text = k.value" in plan, plan
        assert "Rows Removed" not in plan, plan
    finally:
        t.close()
        postgresql_stores.drop(url)


def test_the_holders_of_an_event_are_probed_user_by_user(loaded: Tidings) -> None:
    # the fan-out's "who already has this event?": one index probe per user, never a read
    # of every row of the event (which a big fan-out's later chunks would pay again and again)
    with loaded.store.read() as tx:
        found = tx.inbox.delivered(7, ["u1", "u2", "nobody"])
    assert found == {"u1", "u2"}
    sql, params = loaded.store.db.driver_form(  # type: ignore[attr-defined]
        HOLDERS, {"values": json.dumps(["u1", "u2", "nobody"]), "event_id": 7})
    with loaded.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
    assert "Nested Loop" in plan and "Hash" not in plan, plan
    assert "Index Only Scan" in plan or "Index Scan" in plan, plan
    assert "Seq Scan on notifications" not in plan, plan


def test_group_members_are_probed_user_by_user(postgresql_stores: PostgresStores) -> None:
    # a group the statistics have not seen looks like a handful of rows: a plan keyed on the
    # group alone would read every member for each chunk of a group-private fan-out
    url = postgresql_stores.clone()
    t = Tidings(Config(database_url=url), types=[EventType("link")], clock=FrozenClock())
    try:
        for n in range(300):
            t.add_member("old", f"u{n}")
        with t.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
            conn.execute(text("ANALYZE group_members"))
            conn.commit()
        with t.store.db.write() as conn:  # type: ignore[attr-defined]
            conn.execute(text("INSERT INTO group_members SELECT 'fresh', 'u' || g, 0 "
                              "FROM generate_series(1, 3000) g"))
        engine = t.store.db.engine  # type: ignore[attr-defined]

        def among() -> None:
            with t.store.read() as tx:
                assert tx.graph.members_among("fresh", ["u7", "u9", "nobody"]) == {"u7", "u9"}

        (sql, params), = _statements(engine, "FROM group_members", among)
        with engine.connect() as conn:
            plan = "\n".join(r[0] for r in conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, COSTS OFF) " + sql, params))
        (condition,) = [line for line in plan.splitlines() if "Index Cond" in line]
        assert "group_name" in condition and "k.value" in condition, plan
        assert "Rows Removed" not in plan, plan
    finally:
        t.close()
        postgresql_stores.drop(url)


def test_a_first_delivery_s_check_is_one_probe_of_the_records(loaded: Tidings) -> None:
    """Whether anyone received an event yet: its records, read by the prefix of their primary
    key (event, chunk), one probe whatever the number of events, users or chunks; a first
    delivery finds none and looks nobody up."""
    with loaded.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
        assert conn.execute(RECORDS, {"event_id": 5}).first() is not None
        assert conn.execute(RECORDS, {"event_id": PER_USER + 1}).first() is None
        sql = str(RECORDS.compile(dialect=conn.dialect))
        plan = "\n".join(r[0] for r in conn.exec_driver_sql(
            "EXPLAIN " + sql, {"event_id": PER_USER + 1}).all())
    assert "pk_deliveries" in plan and "Index Cond: (event_id =" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_the_holders_probe_is_planned_for_each_call(loaded: Tidings) -> None:
    """Never a prepared statement: with statistics from one large fan-out (few distinct
    events), a generic plan of the per-user probe could take the primary key's range of the
    chunk's users, every notification they hold, instead of one entry a user."""
    with loaded.store.read() as tx:
        for n in range(12):  # past psycopg's threshold for preparing a statement
            assert tx.inbox.delivered(PER_USER + 1 + n, ["u1", "u6"]) == set()
            assert tx.inbox.delivered(5 + n, ["u1", "u6", "nobody"]) == {"u1", "u6"}
        prepared = [r[0] for r in tx.conn.exec_driver_sql(  # type: ignore[attr-defined]
            "SELECT statement FROM pg_prepared_statements").all()]
    assert not [s for s in prepared if "LATERAL" in s], prepared


def test_a_big_groups_members_are_read_from_the_index_end_up_to_the_limit(
        postgresql_stores: PostgresStores) -> None:
    """A page lists a group of 3,000 notifications: its newest ACTOR_SCAN members' actors come
    off the (display hash, user, created_at, event id, actor) index in order, the read
    stopping at the limit, where a sort of every member took the group whole on every page."""
    url = postgresql_stores.clone()
    t = Tidings(Config(database_url=url), types=[EventType("link", bundle="object")],
                clock=FrozenClock())
    try:
        size = 3000
        with t.store.db.write() as conn:
            t.store.db.insert_many(conn, events, [
                {"id": i, "type": "link", "actor": f"a{i % 7}", "object": "page:Fog",
                 "payload": "{}", "recipients": "[]", "exclude": "[]",
                 "idempotency_key": None, "body_hash": "", "created_at": i // 3}
                for i in range(1, size + 1)])
            t.store.db.insert_many(conn, inbox_types, [LINK])
            t.store.db.insert_many(conn, notifications, [{
                "user_id": "u", "event_id": i, "created_at": i // 3, "fresh_at": i // 3,
                "type_id": 1, "actor": f"a{i % 7}", "object": "page:Fog", "bundle_hash": key("h"),
                "display_hash": key("g"), "bundle_base": i == size, "read_at": None,
                "joined": True} for i in range(1, size + 1)])
        with t.store.db.engine.connect().execution_options(
                isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))  # the visibility map, as autovacuum keeps it
        page = t.notifications("u", limit=20)
        assert [(n.count, n.actors) for n in page.items] == [
            (ACTOR_SCAN, [f"a{i % 7}" for i in (size, size - 1, size - 2)])]
        engine = t.store.db.engine
        (sql, params), = _statements(engine, "member", lambda: t.notifications("u", limit=20))
        with engine.connect() as conn:
            plan = "\n".join(r[0] for r in conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, params))
        members = plan.partition("SubPlan")[2]
        assert "ix_notifications_display_hash_user_id_created_at_event_id_actor" in members, plan
        assert "Sort" not in members, plan
        # the actors come from the index itself: no member's row is read
        scanned = [line for line in members.splitlines() if "Index Only Scan" in line]
        assert scanned and all(f"rows={ACTOR_SCAN} " in line for line in scanned), plan
        assert "Heap Fetches: 0" in members, plan
    finally:
        t.close()
        postgresql_stores.drop(url)


def test_sqlite_reads_each_listed_group_off_the_covering_index(tmp_path: Any) -> None:
    """SQLite (and MariaDB) read a page's groups as one limited range each: the group index
    covers the read (no table row per member) and gives its order (no sort within a group;
    only the few hundred rows kept are put in group order)."""
    t = Tidings(Config(database_url=f"sqlite:///{tmp_path / 'plans.db'}"))
    try:
        t.migrate()
        statement = members_statement(2)
        with t.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
            compiled = statement.compile(dialect=conn.dialect)
            values = {**compiled.params, "u0": "u", "g0": "a", "u1": "u", "g1": "b"}
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + str(compiled),
                tuple(values[k] for k in compiled.positiontup or ())).all()
        inner = {row[0] for row in plan if re.fullmatch(r"CO-ROUTINE m\d+", str(row[3]))}
        reads = [str(row[3]) for row in plan if row[1] in inner]
        assert len(reads) == 2, plan
        assert all("COVERING INDEX ix_notifications_display_hash_user_id_created_at_event_id_"
                   "actor" in read for read in reads), plan
        assert not any("TEMP B-TREE" in str(row[3]) for row in plan if row[1] in inner), plan
    finally:
        t.close()


def test_mariadb_reads_a_big_group_off_the_group_index(mysql_stores: MysqlStores) -> None:
    """Where a user's rows are mostly one group, MariaDB's estimates took the primary key's
    range of the user's rows and sorted them all: the group index is named, and the read is
    that index's range alone (no sort, no row read)."""
    url = mysql_stores.clone()
    t = Tidings(Config(database_url=url))
    try:
        with t.store.db.write() as conn:  # type: ignore[attr-defined]
            t.store.db.insert_many(conn, inbox_types, [LINK])  # type: ignore[attr-defined]
            t.store.db.insert_many(conn, notifications, [{  # type: ignore[attr-defined]
                "user_id": "u", "event_id": i, "created_at": i // 3, "fresh_at": i,
                "type_id": 1, "actor": f"a{i % 7}", "object": "page:Fog", "bundle_hash": key("h"),
                "display_hash": key("g"), "bundle_base": i == 3000, "read_at": None,
                "joined": True} for i in range(1, 3001)])
        with t.store.db.engine.connect() as conn:  # type: ignore[attr-defined]
            conn.execute(text("ANALYZE TABLE notifications"))
            compiled = members_statement(2).compile(dialect=conn.dialect)
            values = {**compiled.params, "u0": "u", "g0": to_sql(key("g")), "u1": "u",
                      "g1": to_sql(key("other"))}
            plan = conn.exec_driver_sql("EXPLAIN " + str(compiled), values).all()
            newest = conn.exec_driver_sql(str(compiled), values).all()
        reads = [row for row in plan if row[2] == "notifications"]
        assert len(reads) == 2, plan
        for row in reads:
            assert row[5] == GROUP_INDEX and "Using index" in str(row[9]), plan
            assert "filesort" not in str(row[9]), plan
        assert len(newest) == ACTOR_SCAN
        assert [row[2] for row in newest[:3]] == ["a4", "a3", "a2"]  # 3000, 2999, 2998
    finally:
        t.close()
        mysql_stores.drop(url)


def test_mariadb_counts_the_unread_off_their_index(mysql_stores: MysqlStores) -> None:
    """Where one user holds most of the rows, MariaDB's estimates took the primary key's range
    of the user's rows and filtered them oldest first to find the unread ones (18.6 ms for
    100,000 rows, 30 % read); the count names its index and reads it alone."""
    url = mysql_stores.clone()
    t = Tidings(Config(database_url=url))
    try:
        size = 3000
        with t.store.db.write() as conn:  # type: ignore[attr-defined]
            t.store.db.insert_many(conn, inbox_types, [LINK])  # type: ignore[attr-defined]
            t.store.db.insert_many(conn, notifications, [{  # type: ignore[attr-defined]
                "user_id": "u", "event_id": i, "created_at": i, "fresh_at": i,
                "type_id": 1, "actor": "a", "object": f"page:{i}", "bundle_hash": key(f"h{i}"),
                "display_hash": key(f"g{i}"),
                "bundle_base": True, "read_at": i if i < size * 0.3 else None,
                "joined": False} for i in range(1, size + 1)])
        statements: list[tuple[str, Any]] = []
        engine = t.store.db.engine  # type: ignore[attr-defined]
        event.listen(engine, "before_cursor_execute",
                     lambda _c, _cur, sql, params, *_: statements.append((sql, params)))
        assert t.unread_count("u").count == 100
        ((count, params),) = [s for s in statements if "read_at IS NULL" in s[0]]
        with engine.connect() as conn:
            conn.execute(text("ANALYZE TABLE notifications"))
            plan = conn.exec_driver_sql("EXPLAIN " + count, params).all()
        (read,) = [row for row in plan if row[2] == "notifications"]
        assert read[5] == "ix_notifications_user_id_bundle_base_read_at_fresh_at_flags", plan
        assert "Using index" in str(read[9]), plan
    finally:
        t.close()
        mysql_stores.drop(url)


def test_the_inbox_cap_reads_an_inbox_through_its_indexes(loaded: Tidings) -> None:
    """The exact size check (``over_cap``: is there a (cap + 1)-th row) reads an index range
    of each user, no sort; the trim (the newest cap + 1 positions, then what is older) reads
    the user's rows through an index (at a cap near the user's size, the planner may sort
    them rather than walk the index in order), never the table."""
    with loaded.store.db.write() as conn:
        loaded.store.db.insert_many(conn, users, [{"user_id": u, "created_at": 1}
                                                  for u in USERS])

    def check_and_trim(tx: Any) -> None:
        assert tx.inbox.over_cap(USERS[:3], PER_USER - 1) == USERS[:3]
        assert tx.inbox.over_cap(USERS[:3], PER_USER) == []
        assert tx.inbox.trim("u3", PER_USER - 10) == 10

    plans = _plans(loaded, lambda: loaded.store.transact(check_and_trim))
    assert len(plans) >= 4, plans  # two checks, the newest of both kinds, what is older
    for plan in plans:
        assert "Seq Scan on notifications" not in plan, plan
    checks = [p for p in plans if "users" in p]
    assert len(checks) == 2, plans
    for plan in checks:
        assert "Index" in plan.partition("SubPlan")[2] and "Sort" not in plan, plan
