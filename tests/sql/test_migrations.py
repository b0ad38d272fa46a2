"""The migrations build exactly the declared schema (``schema.metadata``), on every SQL backend."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import delete, func, insert, inspect, select, text

from stores import SqlStores
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.bundling import bundle_hash
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import IdempotencyConflict, SchemaOutOfDate
from tidings.store.sql.core import recipients
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import to_sql
from tidings.store.sql.core.migrate import (
    check_schema_current,
    current_revision,
    declared_for,
    downgrade,
    head_revision,
    upgrade,
)
from tidings.store.sql.schema import (
    deliveries,
    email_batch,
    email_bundle_status,
    events,
    inbox_open,
    inbox_types,
    job_failures,
    jobs,
    metadata,
    notifications,
    timelines,
    users,
)


def schema_diffs(url: str) -> list[Any]:
    """What Alembic's autogenerate would change to make the database match the declaration."""
    db = Database(url, pool_size=0)
    try:
        with db.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True,
                            "include_object": declared_for(conn.dialect.name)}
            )
            return list(compare_metadata(context, metadata))
    finally:
        db.dispose()


def test_upgrade_from_nothing_gives_the_declared_schema(empty_store_url: str) -> None:
    assert current_revision(empty_store_url) is None
    upgrade(empty_store_url)
    assert current_revision(empty_store_url) == head_revision()
    assert schema_diffs(empty_store_url) == []


def test_check_schema_current_wants_head(empty_store_url: str) -> None:
    db = Database(empty_store_url, pool_size=0)
    try:
        with pytest.raises(SchemaOutOfDate, match=r"run `tidings migrate`"):
            check_schema_current(db)
        upgrade(empty_store_url)
        check_schema_current(db)
    finally:
        db.dispose()


def test_downgrade_to_base_then_upgrade_again(empty_store_url: str) -> None:
    upgrade(empty_store_url)
    downgrade(empty_store_url, "base")
    assert current_revision(empty_store_url) is None
    db = Database(empty_store_url, pool_size=0)
    try:
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        with pytest.raises(SchemaOutOfDate):
            check_schema_current(db)
    finally:
        db.dispose()
    upgrade(empty_store_url)
    assert schema_diffs(empty_store_url) == []


def test_store_url_is_an_empty_database_at_head(store_url: str) -> None:
    assert schema_diffs(store_url) == []
    db = Database(store_url, pool_size=0)
    try:
        check_schema_current(db)
        with db.read() as conn:
            for table in metadata.sorted_tables:
                assert conn.execute(select(func.count()).select_from(table)).scalar_one() == 0
    finally:
        db.dispose()


def test_ids_count_from_one(store_url: str) -> None:
    row = {"func": "f", "args": "{}", "priority": 0, "run_after": 0, "grabbed_until": 0,
           "attempts": 0, "created_at": 0}
    db = Database(store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(insert(jobs), [row, row])
        with db.read() as conn:
            assert conn.execute(select(jobs.c.id).order_by(jobs.c.id)).scalars().all() == [1, 2]
    finally:
        db.dispose()


def test_a_revision_from_a_newer_tidings_is_named(store_url: str) -> None:
    db = Database(store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(SchemaOutOfDate, match="does not know"):
            check_schema_current(db)
    finally:
        db.dispose()


def test_mysql_tables_are_innodb_utf8mb4_bin(mysql_stores: SqlStores) -> None:
    # compare_metadata does not look at table options, so check them here, on a migrated
    # database and on a per-test clone of one.
    migrated = mysql_stores.empty()
    try:
        upgrade(migrated)
        cloned = mysql_stores.clone()
        try:
            for url in (migrated, cloned):
                assert mysql_options(url) == {
                    (table.name, "InnoDB", "utf8mb4_bin") for table in metadata.sorted_tables
                }
                assert mysql_column_collations(url) == {"utf8mb4_bin"}
        finally:
            mysql_stores.drop(cloned)
    finally:
        mysql_stores.drop(migrated)


def mysql_options(url: str) -> set[tuple[str, str, str]]:
    db = Database(url, pool_size=0)
    try:
        with db.read() as conn:
            rows = conn.execute(
                text(
                    "SELECT table_name, engine, table_collation FROM information_schema.tables "
                    "WHERE table_schema = DATABASE() AND table_name <> 'alembic_version'"
                )
            ).all()
        return {(name, engine, collation) for name, engine, collation in rows}
    finally:
        db.dispose()


def mysql_column_collations(url: str) -> set[str]:
    db = Database(url, pool_size=0)
    try:
        with db.read() as conn:
            return set(
                conn.execute(
                    text(
                        "SELECT DISTINCT collation_name FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND table_name <> 'alembic_version' "
                        "AND collation_name IS NOT NULL"
                    )
                ).scalars()
            )
    finally:
        db.dispose()



def test_postgresql_per_user_counters_leave_room_for_updates(
        postgresql_stores: SqlStores) -> None:
    # compare_metadata does not look at storage parameters either: the fill factor the
    # per-user rows fan-out chunks update are kept at (migration 0017), as declared; users'
    # rows are not updated by fan-out any more (0034)
    migrated = postgresql_stores.empty()
    try:
        upgrade(migrated)
        db = Database(migrated, pool_size=0)
        try:
            with db.read() as conn:
                options = dict(conn.execute(text(
                    "SELECT relname, reloptions FROM pg_class WHERE relname IN "
                    "('users', 'timeline_state', 'notifications')")).all())
        finally:
            db.dispose()
        assert options == {"users": None, "timeline_state": ["fillfactor=70"],
                           "notifications": None}
        assert {t.name for t in metadata.sorted_tables
                if t.dialect_options["postgresql"]["with"]} == {"timeline_state"}
    finally:
        postgresql_stores.drop(migrated)


def test_holders_of_notifications_are_registered_with_their_inbox_rows(
        empty_store_url: str) -> None:
    upgrade(empty_store_url, "0006")
    row = {"event_id": 0, "created_at": 0, "fresh_at": 0, "type": "t", "category": "c",
           "section": "alert", "bundle_hash": "ab" * 16, "display_hash": "cd" * 16,
           "bundle_base": True}
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(insert(users).values(user_id="carol", created_at=5))
            conn.execute(text(  # 0006's columns, hashes as text
                "INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
                "category, section, bundle_hash, display_hash, bundle_base) VALUES (:user_id, "
                ":event_id, :created_at, :fresh_at, :type, :category, :section, :bundle_hash, "
                ":display_hash, :bundle_base)"), [
                {**row, "user_id": user, "event_id": i, "created_at": 10 * i}
                for i, user in enumerate(["bob", "bob", "bob", "carol"], start=1)])
        upgrade(empty_store_url, "0030")  # the last with the column
        with db.read() as conn:
            found = {r.user_id: (r.created_at, r.inbox_rows)
                     for r in conn.execute(text("SELECT user_id, created_at, inbox_rows "
                                                "FROM users"))}
        # bob, sent notifications before ever touching anything, is not new any more
        assert found == {"bob": (10, 3), "carol": (5, 1)}
    finally:
        db.dispose()


def test_events_keep_their_ids_and_a_deleted_newest_id_stays_spent(empty_store_url: str) -> None:
    upgrade(empty_store_url, "0009")
    row = {"type": "t", "payload": "{}", "recipients": "[]", "exclude": "[]", "body_hash": "h"}
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:  # the columns of 0009's events table
            conn.execute(text(
                "INSERT INTO events (type, payload, recipients, exclude, body_hash, created_at) "
                "VALUES ('t', '{}', '[]', '[]', 'h', 1), ('t', '{}', '[]', '[]', 'h', 2), "
                "('t', '{}', '[]', '[]', 'h', 3)"))
            conn.execute(insert(timelines).values(user_id="bob", event_id=3, created_at=3))
            conn.execute(delete(events).where(events.c.id == 3))
        upgrade(empty_store_url)
        with db.write() as conn:
            conn.execute(insert(events).values(**row, created_at=9))
            found = [(r.id, r.created_at) for r in conn.execute(
                select(events.c.id, events.c.created_at).order_by(events.c.id))]
        # on every database the deleted newest id (3), still named by a timeline, is never
        # handed out again
        assert found[:2] == [(1, 1), (2, 2)] and found[2][0] > 3 and found[2][1] == 9
    finally:
        db.dispose()


def test_job_ids_stay_spent_once_completed(empty_store_url: str) -> None:
    """0028: a completed job's id — or one that only a failure on record still names — is
    never handed out again (on SQLite AUTOINCREMENT; the other databases never reuse one)."""
    upgrade(empty_store_url, "0027")
    db = Database(empty_store_url, pool_size=0)
    job = {"func": "f", "args": "{}", "priority": 5, "run_after": 0, "grabbed_until": 0,
           "attempts": 0, "created_at": 0}
    try:
        with db.write() as conn:
            conn.execute(insert(jobs), [job, job, job])  # ids 1, 2, 3
            conn.execute(insert(job_failures).values(
                job_id=3, func="f", args="{}", error="no", attempt=8, final=True,
                failed_at=0))
            conn.execute(delete(jobs).where(jobs.c.id == 3))  # failed for good
        upgrade(empty_store_url)
        with db.write() as conn:
            conn.execute(insert(jobs).values(**job))
            conn.execute(delete(jobs).where(jobs.c.id > 3))  # completed: the newest id
            conn.execute(insert(jobs).values(**job))
            ids = list(conn.execute(select(jobs.c.id).order_by(jobs.c.id)).scalars())
        assert ids[:2] == [1, 2] and ids[2] > 4
    finally:
        db.dispose()


def test_stored_idempotency_keys_move_into_the_default_scope(empty_store_url: str) -> None:
    upgrade(empty_store_url, "0009")
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "idempotency_key, body_hash, created_at) VALUES ('note', NULL, NULL, '{}', "
                "'[\"bob\"]', '[]', 'k1', 'old-body', 1)"))
        upgrade(empty_store_url)
        with db.read() as conn:
            assert conn.execute(text(
                "SELECT idempotency_scope, idempotency_key FROM events")).all() == [
                ("default", "k1")]
    finally:
        db.dispose()
    with Tidings(Config(database_url=empty_store_url), types=[EventType("note")]) as t:
        # the library's scope holds the stored key (a different body: a conflict); another
        # scope does not
        with pytest.raises(IdempotencyConflict):
            t.publish({"type": "note", "idempotency_key": "k1"})
        assert t.publish({"type": "note", "idempotency_key": "k1"},
                         idempotency_scope="key:other").created


def test_mailboxes_floors_and_push_from_move_to_the_events_order(empty_store_url: str) -> None:
    """0027: a mailbox entry takes its event's time (it held the delivery
    time); a floor or push_from id X becomes (the latest time of the events up to X, X), so
    every event at or below the old bound stays at or below the new one; 0 stays (0, 0), a
    pulled source (NULL) stays NULL."""
    upgrade(empty_store_url, "0023")
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:  # ids 1..4, times out of order (4: an import dated early)
            conn.execute(text(
                "INSERT INTO events (id, type, actor, payload, recipients, exclude, body_hash, "
                "created_at) VALUES (1, 'post', 'ann', '{}', '[]', '[]', 'h', 100), "
                "(2, 'post', 'ann', '{}', '[]', '[]', 'h', 300), "
                "(3, 'post', 'ann', '{}', '[]', '[]', 'h', 200), "
                "(4, 'post', 'ann', '{}', '[]', '[]', 'h', 50)"))
            conn.execute(text("INSERT INTO timelines (user_id, event_id, created_at) VALUES "
                              "('bob', 3, 7000), ('bob', 4, 8000)"))
            conn.execute(text("INSERT INTO timeline_state (user_id, entries, floor_id) VALUES "
                              "('bob', 2, 3), ('cat', 0, 0)"))
            conn.execute(text(
                "INSERT INTO timeline_sources (actor, followers, model, push_from) VALUES "
                "('ann', 1, NULL, 3), ('eve', 1, NULL, 0), ('dan', 1, NULL, NULL)"))
        upgrade(empty_store_url)
        with db.read() as conn:
            assert conn.execute(text("SELECT event_id, created_at FROM timelines "
                                     "ORDER BY event_id")).all() == [(3, 200), (4, 50)]
            assert conn.execute(text("SELECT user_id, floor_at, floor_id FROM timeline_state "
                                     "ORDER BY user_id")).all() == [("bob", 300, 3),
                                                                    ("cat", 0, 0)]
            assert conn.execute(text(
                "SELECT actor, push_from_at, push_from FROM timeline_sources ORDER BY actor"
            )).all() == [("ann", 300, 3), ("dan", None, None), ("eve", 0, 0)]
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()


def test_hashes_become_64_bit_integers_with_their_data(empty_store_url: str) -> None:
    """0030: every stored bundle and display hash (32 hex characters) becomes the BIGINT of
    its first 16, which reads back as those 16 characters: what the same key hashes to now,
    so an open bundle is joined across the upgrade. The downgrade gives back the 16."""
    upgrade(empty_store_url, "0029")
    old = [hashlib.sha1(str(i).encode()).hexdigest()[:32] for i in range(4)]
    old[3] = "0" * 32  # the least and the greatest hash: the ends of the signed range
    old[2] = "f" * 32
    bundle = bundle_hash("object", "link", None, "page", 1)
    old[0] = hashlib.sha1(b"object\x00link\x00page").hexdigest()[:32]  # before 0030
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:  # the columns of 0029's tables, hashes as text
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES ('link', 'cat', 'page', '{}', '[]', '[]', 'h', "
                "10), ('link', 'dan', 'page', '{}', '[]', '[]', 'h', 10)"))  # ids 1 and 2
            conn.execute(text(
                "INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
                "category, section, bundle_hash, display_hash, bundle_base, joined) VALUES "
                "(:u, :e, 10, 10, 'link', 'link', 'alert', :b, :d, :base, :base)"),
                [{"u": "ann", "e": 1, "b": old[0], "d": old[1], "base": False},
                 {"u": "ann", "e": 2, "b": old[0], "d": old[1], "base": True},
                 {"u": "bob", "e": 2, "b": old[2], "d": old[3], "base": True}])
            conn.execute(text("INSERT INTO bundle_locks (user_id, bundle_hash, created_at) "
                              "VALUES ('ann', :a, 1), ('bob', :b, 1)"),
                         {"a": old[0], "b": old[2]})
            conn.execute(text(
                "INSERT INTO email_batch (user_id, event_id, kind, bundle_hash, priority, "
                "created_at) VALUES ('ann', 1, 'bundle', :h, 5, 1), "
                "('bob', 26, 'digest', '', 5, 1)"), {"h": old[3]})  # past the daily cap
            conn.execute(text("INSERT INTO email_bundle_status (user_id, bundle_hash, "
                              "last_email_at) VALUES ('ann', :h, 7)"), {"h": old[2]})
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        with db.read() as conn:
            found = conn.execute(select(notifications.c.user_id, notifications.c.event_id,
                                        notifications.c.bundle_hash, notifications.c.display_hash)
                                 .order_by(notifications.c.user_id,
                                           notifications.c.event_id)).all()
            assert found == [("ann", 1, bundle, old[1][:16]), ("ann", 2, bundle, old[1][:16]),
                             ("bob", 2, "f" * 16, "0" * 16)]
            # stored as the hash's value minus 2**63: the integers sort as the hex did
            assert conn.execute(text("SELECT display_hash FROM notifications "
                                     "WHERE user_id = 'bob'")).scalar_one() == -(2 ** 63)
            assert conn.execute(text("SELECT bundle_hash FROM notifications WHERE user_id = "
                                     "'bob'")).scalar_one() == 2 ** 63 - 1
            assert conn.execute(select(inbox_open.c.bundle_hash)  # bundle_locks' after 0032
                                .order_by(inbox_open.c.user_id)).scalars().all() == [
                bundle, "f" * 16]
            assert conn.execute(select(email_batch.c.bundle_hash)
                                .order_by(email_batch.c.user_id)).scalars().all() == [
                "0" * 16, "000000000000001a"]  # an empty hash: the event id's own
            assert conn.execute(select(email_bundle_status.c.bundle_hash)
                                ).scalar_one() == "f" * 16
        with Tidings(Config(database_url=empty_store_url), types=[
                EventType("link", bundle="object", audience=("recipients",))]) as t:
            t.publish({"type": "link", "actor": "eve", "object": "page",
                       "recipients": ["ann"]})
            t.run_jobs()
            rows = t.notifications("ann").items
            with t.store.read() as tx:  # a bundle email job queued before: its 32 characters
                assert [r.event_id for r in tx.mail.batch("ann", "bundle",
                                                          bundle_hash=old[3])] == [1]
        # the new notification joins the group its bundle started before the upgrade
        assert len(rows) == 1 and rows[0].count == 3
        downgrade(empty_store_url, "0029")
        with db.read() as conn:
            assert conn.execute(text(
                "SELECT user_id, bundle_hash, display_hash FROM notifications WHERE "
                "event_id = 2 ORDER BY user_id")).all() == [("ann", bundle, old[1][:16]),
                                                           ("bob", "f" * 16, "0" * 16)]
            assert conn.execute(text("SELECT bundle_hash FROM email_batch ORDER BY user_id")
                                ).scalars().all() == ["0" * 16, "000000000000001a"]
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()


def _fill_notifications(conn: Any, dialect: str, event: int, users: int) -> None:
    """``users`` notifications of ``event`` (users u000001, u000002, …) written by the server,
    in 0030's columns."""
    columns = ("INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
               "category, section, bundle_hash, display_hash, bundle_base, joined) ")
    row = f"{event}, 10, 10, 'link', 'link', 'alert', 0, 0"
    if dialect == "postgresql":
        conn.execute(text(columns + f"SELECT 'u' || lpad(g::text, 6, '0'), {row}, true, true "
                          f"FROM generate_series(1, {users}) g"))
    elif dialect == "sqlite":
        conn.execute(text(f"WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g "
                          f"WHERE x < {users}) " + columns
                          + f"SELECT 'u' || printf('%06d', x), {row}, 1, 1 FROM g"))
    else:
        conn.execute(text(columns + f"SELECT CONCAT('u', LPAD(seq, 6, '0')), {row}, 1, 1 "
                          f"FROM seq_1_to_{users}"))


def test_delivery_records_replace_the_event_user_index(empty_store_url: str) -> None:
    """0031: the notifications of each event become its delivery records (sorted users, at
    most PART a record, read back exactly), the (event, user) index goes, and fan-out's and
    retraction's "who holds event e" read the records. The events cross the batches the
    conversion reads (50,000 rows): one is cut by a batch's end, one is larger than a batch.
    The downgrade builds the index again. Once the conversion is checked, the rows past each
    event's first ten users go (their records stay), so that the later migrations, which rewrite
    every row and have tests of their own, and the downgrade run on a few rows."""
    upgrade(empty_store_url, "0030")
    sizes = {1: 30_000, 2: 30_000, 3: 60_000, 4: 3}
    db = Database(empty_store_url, pool_size=0)
    dialect = db.engine.dialect.name
    try:
        with db.write() as conn:
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES " + ", ".join(
                    ["('link', 'cat', 'page', '{}', '[]', '[]', 'h', 10)"] * 5)))  # ids 1-5
            for event, users in sizes.items():
                _fill_notifications(conn, dialect, event, users)
        upgrade(empty_store_url, "0031")
        assert "ix_notifications_event_id_user_id" not in {
            i["name"] for i in inspect(db.engine).get_indexes("notifications")}
        with db.read() as conn:
            records = conn.execute(select(deliveries).order_by(deliveries.c.event_id)).all()
        by_event: dict[int, list[str]] = {}
        for event, chunk, value in records:
            users = recipients.decode(value)
            assert users == sorted(users) and 0 < len(users) <= recipients.PART
            assert chunk == recipients.chunk_key(users[0])
            by_event.setdefault(event, []).extend(users)
        assert {e: len(u) for e, u in by_event.items()} == sizes
        assert {e: len(set(u)) for e, u in by_event.items()} == sizes  # each user once
        assert sorted(by_event[4]) == ["u000001", "u000002", "u000003"]
        assert len([r for r in records if r.event_id == 3]) == 60
        with db.write() as conn:
            conn.execute(text("DELETE FROM notifications WHERE user_id > 'u000010'"))
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        with Tidings(Config(database_url=empty_store_url), types=[
                EventType("link", audience=("recipients",))]) as t:
            with t.store.read() as tx:
                assert tx.inbox.held([1, 4, 5]) == {1, 4}
                assert tx.inbox.delivered(3, ["u000007", "u060001", "zed"]) == {"u000007"}
                assert tx.inbox.delivered(5, ["u000007"]) == set()
            t.retract(event_id="4")
            with db.read() as conn:
                assert conn.execute(text("SELECT count(*) FROM notifications "
                                         "WHERE event_id = 4")).scalar_one() == 0
                assert conn.execute(text("SELECT count(*) FROM deliveries "
                                         "WHERE event_id = 4")).scalar_one() == 0
        downgrade(empty_store_url, "0030")
        assert "ix_notifications_event_id_user_id" in {
            i["name"] for i in inspect(db.engine).get_indexes("notifications")}
        assert "deliveries" not in inspect(db.engine).get_table_names()
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()


def test_open_groups_take_each_bundles_newest_base(empty_store_url: str) -> None:
    """0032: ``inbox_open`` holds the newest base of every (user, bundle) pair of a bundling
    type (not a type that never bundles: its hash is its event's own), replacing
    ``bundle_locks`` and the (user, bundle hash) index; a bundle open before the upgrade is
    joined after it. The downgrade gives the index and an empty ``bundle_locks`` back."""
    upgrade(empty_store_url, "0030")
    bundle = bundle_hash("object", "link", None, "page", 1)
    own = bundle_hash("none", "mention", "cat", None, 4)
    groups = [hashlib.sha1(str(i).encode()).hexdigest()[:16] for i in range(4)]
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES (:t, 'cat', 'page', '{}', '[]', '[]', 'h', 10)"),
                [{"t": t} for t in ("link", "link", "link", "mention")])  # ids 1 to 4
            conn.execute(text(
                "INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
                "category, section, bundle_hash, display_hash, bundle_base, joined, read_at) "
                "VALUES (:u, :e, :at, :at, 'link', 'link', 'alert', :b, :d, :base, :joined, "
                ":read)"),
                [{"u": "ann", "e": 1, "at": 10, "b": to_sql(bundle), "d": to_sql(groups[0]),
                  "base": True, "joined": False, "read": 11},  # an older group, read
                 {"u": "ann", "e": 2, "at": 20, "b": to_sql(bundle), "d": to_sql(groups[1]),
                  "base": False, "joined": False, "read": None},
                 {"u": "ann", "e": 3, "at": 30, "b": to_sql(bundle), "d": to_sql(groups[1]),
                  "base": True, "joined": True, "read": None},  # the newest group
                 {"u": "ann", "e": 4, "at": 40, "b": to_sql(own), "d": to_sql(groups[2]),
                  "base": True, "joined": False, "read": None},  # never bundles
                 {"u": "bob", "e": 2, "at": 20, "b": to_sql(bundle), "d": to_sql(groups[3]),
                  "base": True, "joined": False, "read": None}])
            conn.execute(text("INSERT INTO bundle_locks (user_id, bundle_hash, created_at) "
                              "VALUES ('ann', :b, 1)"), {"b": to_sql(bundle)})
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        with db.read() as conn:
            assert conn.execute(select(inbox_open).order_by(inbox_open.c.user_id)).all() == [
                ("ann", bundle, 30, 3), ("bob", bundle, 20, 2)]
            assert "bundle_locks" not in inspect(conn).get_table_names()
        with Tidings(Config(database_url=empty_store_url), types=[
                EventType("link", bundle="object", audience=("recipients",)),
                EventType("mention", audience=("recipients",))]) as t:
            t.publish({"type": "link", "actor": "eve", "object": "page",
                       "recipients": ["ann", "bob"]})  # event 5
            t.run_jobs()
            assert [(i.id, i.count) for i in t.notifications("ann").items] == [
                ("5", 3), ("4", 1), ("1", 1)]
            assert [(i.id, i.count) for i in t.notifications("bob").items] == [("5", 2)]
        downgrade(empty_store_url, "0030")
        with db.read() as conn:
            names = {i["name"] for i in inspect(conn).get_indexes("notifications")}
            assert ("ix_notifications_user_id_bundle_hash" if db.backend == "postgresql"
                    else "ix_notifications_user_id_bundle_hash_bundle_base") in names
            assert conn.execute(text("SELECT count(*) FROM bundle_locks")).scalar_one() == 0
            assert "inbox_open" not in inspect(conn).get_table_names()
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        with db.read() as conn:
            assert conn.execute(select(inbox_open).order_by(inbox_open.c.user_id)).all() == [
                ("ann", bundle, conn.execute(select(notifications.c.created_at).where(
                    notifications.c.event_id == 5, notifications.c.user_id == "ann")
                ).scalar_one(), 5), ("bob", bundle, conn.execute(
                    select(notifications.c.created_at).where(
                        notifications.c.event_id == 5, notifications.c.user_id == "bob")
                ).scalar_one(), 5)]
    finally:
        db.dispose()


def test_notifications_name_their_type_by_id_with_their_data(empty_store_url: str) -> None:
    """0033: the dictionary holds each stored type once (ids in name order), with the category
    and section of its newest rows; every row takes its type's id. A type added later takes
    the next id. The downgrade gives every row its type's category and section back."""
    upgrade(empty_store_url, "0031")
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:  # the columns of 0031's notifications
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES " + ", ".join(
                    f"('{kind}', 'cat', 'page', '{{}}', '[]', '[]', 'h', 10)"
                    for kind in ("link", "link", "mention", "poke", "poke"))))  # ids 1..5
            conn.execute(text(
                "INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
                "category, section, bundle_hash, display_hash, bundle_base, joined) VALUES "
                "(:u, :e, :at, :at, :type, :category, :section, :e, :e, true, false)"), [
                    {"u": "ann", "e": 1, "at": 10, "type": "link", "category": "links",
                     "section": "alert"},
                    # the type declared again: its newest rows' category and section win
                    {"u": "ann", "e": 2, "at": 20, "type": "link", "category": "pages",
                     "section": "message"},
                    {"u": "bob", "e": 2, "at": 20, "type": "link", "category": "pages",
                     "section": "message"},
                    {"u": "bob", "e": 3, "at": 5, "type": "mention", "category": "people",
                     "section": "alert"},
                    # a tie on the time: the greater event id wins
                    {"u": "bob", "e": 5, "at": 30, "type": "poke", "category": "b",
                     "section": "alert"},
                    {"u": "cat", "e": 4, "at": 30, "type": "poke", "category": "a",
                     "section": "alert"}])
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        with db.read() as conn:
            assert conn.execute(select(inbox_types).order_by(inbox_types.c.id)).all() == [
                (1, "link", "pages", "message"), (2, "mention", "people", "alert"),
                (3, "poke", "b", "alert")]
            assert conn.execute(select(
                notifications.c.user_id, notifications.c.event_id, notifications.c.type_id)
                .order_by(notifications.c.user_id, notifications.c.event_id)).all() == [
                ("ann", 1, 1), ("ann", 2, 1), ("bob", 2, 1), ("bob", 3, 2), ("bob", 5, 3),
                ("cat", 4, 3)]
        with Tidings(Config(database_url=empty_store_url), types=[
                EventType("link", category="links", audience=("recipients",)),
                EventType("note", category="notes", section="message",
                          audience=("recipients",)), EventType("mention"), EventType("poke")]
                     ) as t:
            assert [(i.type, i.category, i.section) for i in t.notifications("ann").items] == [
                ("link", "pages", "message")] * 2
            for kind in ("link", "note"):
                t.publish({"type": kind, "actor": "eve", "recipients": ["ann"]})
            t.run_jobs()
            # the link's row now holds its declaration's category: its older rows follow it
            assert [(i.type, i.category, i.section) for i in t.notifications("ann").items] == [
                ("note", "notes", "message")] + [("link", "links", "alert")] * 3
        with db.read() as conn:
            assert conn.execute(select(inbox_types).order_by(inbox_types.c.id)).all()[::3] == [
                (1, "link", "links", "alert"), (4, "note", "notes", "message")]
        downgrade(empty_store_url, "0031")
        with db.read() as conn:
            assert conn.execute(text(
                "SELECT user_id, event_id, type, category, section FROM notifications "
                "WHERE event_id < 6 ORDER BY user_id, event_id")).all() == [
                ("ann", 1, "link", "links", "alert"), ("ann", 2, "link", "links", "alert"),
                ("bob", 2, "link", "links", "alert"), ("bob", 3, "mention", "people", "alert"),
                ("bob", 5, "poke", "b", "alert"), ("cat", 4, "poke", "b", "alert")]
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()


def test_the_inbox_bound_goes_and_comes_back_counted(empty_store_url: str) -> None:
    """0034: ``users.inbox_rows`` is dropped with the room kept for its updates (PostgreSQL);
    the users and their notifications stay as they were, and a capped delivery works on the
    converted database. The downgrade adds the column back with each holder's true count
    (NULL for a user who holds none) and the room."""
    upgrade(empty_store_url, "0030")
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:  # 0030's columns: the bounds as fan-out left them
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES ('mention', 'cat', 'page', '{}', '[]', '[]', "
                "'h', 10), ('mention', 'cat', 'page', '{}', '[]', '[]', 'h', 20), "
                "('mention', 'cat', 'page', '{}', '[]', '[]', 'h', 30)"))
            conn.execute(text("INSERT INTO users (user_id, created_at, inbox_rows) VALUES "
                              "('ann', 10, 7), ('bob', 20, 1), ('dan', 5, NULL)"))
            conn.execute(text(
                "INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, "
                "category, section, bundle_hash, display_hash, bundle_base) VALUES "
                "(:u, :e, :at, :at, 'mention', 'mention', 'alert', :e, :e, :base)"),
                [{"u": "ann", "e": 1, "at": 10, "base": True},
                 {"u": "ann", "e": 2, "at": 20, "base": True},
                 {"u": "ann", "e": 3, "at": 30, "base": True},
                 {"u": "bob", "e": 2, "at": 20, "base": True}])
        upgrade(empty_store_url)  # through 0035 too: the rows take flags 0
        assert schema_diffs(empty_store_url) == []
        with db.read() as conn:
            assert "inbox_rows" not in {c["name"] for c in inspect(conn).get_columns("users")}
            assert conn.execute(select(users).order_by(users.c.user_id)).all() == [
                ("ann", 10), ("bob", 20), ("dan", 5)]
            assert conn.execute(select(func.count()).select_from(notifications)
                                ).scalar_one() == 4
            assert conn.execute(select(notifications.c.flags).distinct()).all() == [(0,)]
            if db.backend == "postgresql":
                assert conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = "
                                         "'users'")).scalar_one() is None
        with Tidings(Config(database_url=empty_store_url, inbox_cap=2), types=[
                EventType("mention", audience=("recipients",))]) as t:
            t.publish({"type": "mention", "actor": "eve", "recipients": ["ann", "eve2"]})
            t.run_jobs()
            assert len(t.notifications("ann").items) == 2  # a cap under 20: exact
            assert len(t.notifications("eve2").items) == 1
        downgrade(empty_store_url, "0030")
        with db.read() as conn:
            found = dict(conn.execute(text("SELECT user_id, inbox_rows FROM users")).all())
            assert found == {"ann": 2, "bob": 1, "dan": None, "eve2": 1}
            if db.backend == "postgresql":
                assert conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = "
                                         "'users'")).scalar_one() == ["fillfactor=70"]
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()


def test_snooze_times_and_the_inbox_s_unread_index(empty_store_url: str) -> None:
    """0037: ``inbox_snoozes`` keeps a snoozed group's time to return; the unread count's
    index takes the inbox's state (PostgreSQL: its partial condition; elsewhere: ``flags`` as
    its last column). Rows stored with flags keep them: an archived or snoozed unread row
    leaves the count, a saved one stays. The downgrade drops the table and the indexes go
    back; upgraded again, the schema is the declared one."""
    upgrade(empty_store_url, "0035")
    db = Database(empty_store_url, pool_size=0)
    try:
        with db.write() as conn:
            conn.execute(text(
                "INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                "body_hash, created_at) VALUES " + ", ".join(
                    "('mention', 'cat', 'page', '{}', '[]', '[]', 'h', 10)"
                    for _ in range(4))))  # ids 1..4
            conn.execute(insert(inbox_types).values(id=1, name="mention", category="mention",
                                                    section="alert"))
            conn.execute(insert(notifications), [
                {"user_id": "ann", "event_id": e, "created_at": 10 + e, "fresh_at": 10 + e,
                 "type_id": 1, "bundle_hash": f"{e:016x}", "display_hash": f"{e:016x}",
                 "bundle_base": True, "joined": False,
                 "flags": flags} for e, flags in ((1, 0), (2, 4), (3, 128), (4, 8))])
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
        clock = FrozenClock()
        with Tidings(Config(database_url=empty_store_url), types=[EventType("mention")],
                     clock=clock) as t:
            assert t.unread_count("ann").count == 2
            assert [i.id for i in t.notifications("ann").items] == ["4", "1"]
            assert [i.id for i in t.notifications("ann", state="archived").items] == ["2"]
            assert [i.id for i in t.notifications("ann", state="saved").items] == ["4"]
            until = clock.now_us() + 60_000_000
            assert t.snooze("ann", ["1"], until) == 1
            assert t.unread_count("ann").count == 1
        with db.read() as conn:
            assert conn.execute(text("SELECT user_id, until_at FROM inbox_snoozes")).all() == [
                ("ann", until)]
        downgrade(empty_store_url, "0035")
        with db.read() as conn:
            assert "inbox_snoozes" not in inspect(conn).get_table_names()
        upgrade(empty_store_url)
        assert schema_diffs(empty_store_url) == []
    finally:
        db.dispose()
