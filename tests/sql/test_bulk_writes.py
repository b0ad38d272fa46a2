"""Bulk writes (``Database.insert_many`` / ``add_rows``, and the timeline entries of a fan-out):
the same rows whatever the shape of the values. On PostgreSQL a column every row shares goes
as one value, so a fan-out's rows send only their users as an array."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from engines import table_rows
from statements import statements
from tidings.engine import Tidings
from tidings.exceptions import StoreRejected
from tidings.store.sql.schema import event_types, timeline_sources


def test_shared_and_varying_columns_write_the_same_rows(t: Tidings) -> None:
    db = t.store.db  # type: ignore[attr-defined]
    rows = [{"actor": f"u{i}", "followers": 7, "push_from": None} for i in range(3)]
    rows += [{"actor": "v", "followers": 8, "push_from": 2}]
    with db.write() as conn:
        db.insert_many(conn, timeline_sources, rows)
        db.insert_many(conn, timeline_sources, [{"actor": "w", "followers": 9, "push_from": 1}] * 3,
                       ignore=True)  # three alike: one row, the others ignored
        db.add_rows(conn, timeline_sources, ["actor"], "push_from",
                    [{"actor": "v", "followers": 8, "push_from": 5},
                     {"actor": "u0", "followers": 8, "push_from": 5}])
    assert [(r["actor"], r["followers"], r["push_from"]) for r in table_rows(t, "timeline_sources")
            ] == [("u0", 7, 5), ("u1", 7, None), ("u2", 7, None), ("v", 8, 7), ("w", 9, 1)]


def test_any_text_goes_in_as_it_is_and_a_value_too_long_is_refused(t: Tidings) -> None:
    """Quotes, backslashes, characters beyond the BMP, empty and long texts, NULLs, large and
    negative numbers are stored as given (on MariaDB the rows go as one JSON text
    read by ``JSON_TABLE``); a value too long for its column fails the statement, as a VALUES
    list does, and writes nothing."""
    db = t.store.db  # type: ignore[attr-defined]
    odd = ["q'\"\\x", "é🎉 ü", "", "x" * 250]
    rows = [{"actor": text, "followers": number, "push_from": bound}
            for text, number, bound in zip(odd, [2**62, -5, 0, 1], [None, 3, 1, 0],
                                           strict=True)]
    with db.write() as conn:
        db.insert_many(conn, timeline_sources, rows)
        db.add_rows(conn, timeline_sources, ["actor"], "push_from",
                    [{"actor": odd[1], "followers": 1, "push_from": 4},
                     {"actor": "new", "followers": 1, "push_from": 4}])
        db.insert_many(conn, event_types, [{"name": "t", "definition": "d" * 60_000,
                                            "updated_at": 1}])
    assert sorted((r["actor"], r["followers"], r["push_from"])
                  for r in table_rows(t, "timeline_sources")) == sorted(
        [(odd[0], 2**62, None), (odd[1], -5, 7), (odd[2], 0, 1), (odd[3], 1, 0),
         ("new", 1, 4)])
    assert [len(r["definition"]) for r in table_rows(t, "event_types")
            if r["name"] == "t"] == [60_000]
    if db.backend == "sqlite":  # SQLite does not check a VARCHAR's length
        return
    with pytest.raises(StoreRejected), db.write() as conn:
        db.insert_many(conn, timeline_sources, [{"actor": "ok", "followers": 1, "push_from": None},
                                     {"actor": "y" * 300, "followers": 1,
                                      "push_from": None}])
    assert "ok" not in {r["actor"] for r in table_rows(t, "timeline_sources")}


def test_a_fanout_sends_its_users_as_the_one_array(t: Tidings) -> None:
    for follower in ("bob", "carol", "dave"):
        t.follow(follower, "alice")
    event = t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
    with statements(t) as seen:
        t.run_jobs()
    entries = [(r["user_id"], r["event_id"]) for r in table_rows(t, "timelines")]
    assert entries == [(u, int(event.id)) for u in ("bob", "carol", "dave")]
    assert {r["user_id"] for r in table_rows(t, "notifications")} == {"bob", "carol", "dave"}
    if t.store.db.backend == "postgresql":  # type: ignore[attr-defined]
        (insert,) = [s for s in seen if "INSERT INTO notifications" in s]
        assert insert.count("json_array_elements_text") == 1  # the users; the rest one value
        # the users are registered in the same statement, by the rows that went in
        assert "INSERT INTO users" in insert and "DO NOTHING" in insert.split("INTO users")[1]
        assert not [s for s in seen if "INTO users" in s and s != insert]
    if t.store.db.backend == "mysql":  # type: ignore[attr-defined]  # the rows as one JSON text
        (insert,) = [s for s in seen if "INTO notifications" in s]
        assert "JSON_TABLE" in insert and insert.count("%(") == 1


def test_a_fanout_meeting_an_entry_already_there_writes_each_entry_once(t: Tidings) -> None:
    """A follow's back-fill can put a post into a mailbox before the post's own fan-out gets
    there. On PostgreSQL the fan-out's insert is a plain one (one descent of the primary key a
    row); meeting the entry, it fails and runs again, from a savepoint, in the form that skips
    what is there, so each mailbox ends with the entry once and the others get theirs."""
    t.follow("carol", "alice")
    first = t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()
    event = t.publish({"type": "post", "actor": "alice", "object": "page:Oslo"})
    t.follow("bob", "alice")  # the back-fill gives bob both posts, before the fan-out runs
    with statements(t) as seen:
        t.run_jobs()
    if t.store.db.backend == "postgresql":  # type: ignore[attr-defined]
        pushes = [s for s in seen if "INSERT INTO timelines" in s and "RETURNING" in s]
        assert ["ON CONFLICT DO NOTHING" in s for s in pushes] == [False, True]
        assert any(s.startswith("ROLLBACK TO SAVEPOINT") for s in seen)
    entries = sorted((r["user_id"], r["event_id"]) for r in table_rows(t, "timelines"))
    assert entries == sorted([("bob", int(first.id)), ("bob", int(event.id)),
                              ("carol", int(first.id)), ("carol", int(event.id))])
    assert [i.id for i in t.timeline("bob").items] == [int(event.id), int(first.id)]


def test_a_fresh_fanout_inserts_its_entries_without_looking_them_up_first(t: Tidings) -> None:
    for follower in ("bob", "carol"):
        t.follow(follower, "alice")
    with statements(t) as seen:
        t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()
    pushes = [s for s in seen if "INSERT INTO timelines" in s]
    assert len(table_rows(t, "timelines")) == 2
    if t.store.db.backend == "postgresql":  # type: ignore[attr-defined]
        assert len(pushes) == 1 and "ON CONFLICT DO NOTHING" not in pushes[0]


def _holder_lookups(seen: list[str]) -> list[str]:
    """The per-user "who already has this event?" lookups among ``seen``."""
    return [s for s in seen if "FROM notifications" in s and "user_id" in s
            and ("JOIN LATERAL" in s or " IN (" in s or " IN(" in s)]


def test_a_first_delivery_looks_up_no_user_one_by_one(t: Tidings) -> None:
    """Before a chunk's users are looked up one by one, one probe of the delivery records'
    primary key asks whether anyone received the event: on a first delivery, the usual case,
    nobody has and no user is looked up."""
    for follower in ("bob", "carol", "dave", "erin"):
        t.follow(follower, "alice")
    with statements(t) as seen:
        t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()
    assert sorted(r["user_id"] for r in table_rows(t, "notifications")) == [
        "bob", "carol", "dave", "erin"]
    assert _holder_lookups(seen) == []


def test_only_recorded_users_are_looked_up_and_their_rows_decide(t: Tidings) -> None:
    """The records name who received the event; a user they name is confirmed by their row
    (one lookup for the chunk), a user they do not name is not looked up, and a user whose
    row was removed since (a recipient's own deletion) no longer holds the event."""
    for follower in ("carol", "erin"):
        t.follow(follower, "alice")
    event = t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()
    assert [r["user_id"] for r in table_rows(t, "notifications")] == ["carol", "erin"]
    with t.store.read() as tx:
        with statements(t) as seen:
            assert tx.inbox.delivered(int(event.id), ["ann", "bob", "zed"]) == set()
        assert _holder_lookups(seen) == []  # none of them recorded
        with statements(t) as seen:
            assert tx.inbox.delivered(int(event.id), ["bob", "carol", "dave"]) == {"carol"}
        assert len(_holder_lookups(seen)) == 1
    t.delete_notification("erin", event.id)
    with t.store.read() as tx:
        assert tx.inbox.delivered(int(event.id), ["carol", "erin"]) == {"carol"}
        assert tx.inbox.held([int(event.id), int(event.id) + 1]) == {int(event.id)}


def test_the_holder_check_reads_the_event_s_records_by_primary_key(t: Tidings) -> None:
    """The check reads the records of one event: a prefix of the records' primary key
    (event, chunk) on every backend, not a scan of the records or of the notifications."""
    for n in range(30):
        t.follow(f"u{n:02d}", "alice")
    for n in range(5):  # earlier events, each with its record
        t.publish({"type": "post", "actor": "alice", "object": f"page:Earlier{n}"})
    t.run_jobs()
    engine = t.store.db.engine  # type: ignore[attr-defined]
    captured: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
        if "FROM deliveries" in sql and sql.lstrip().upper().startswith("SELECT"):
            captured.append((sql, params))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        t.publish({"type": "post", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    ((sql, params),) = captured
    backend = t.store.db.backend  # type: ignore[attr-defined]
    explain = "EXPLAIN QUERY PLAN " if backend == "sqlite" else "EXPLAIN "
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE deliveries" if backend == "postgresql"
                             else "ANALYZE TABLE deliveries" if backend == "mysql"
                             else "ANALYZE")
        if backend == "postgresql":  # a table this small is read whole once known
            conn.exec_driver_sql("SET enable_seqscan = off")
        if isinstance(params, list):  # positional, as the driver took them
            params = tuple(params)
        plan = " | ".join(str(cell) for row in conn.exec_driver_sql(explain + sql, params).all()
                          for cell in row)
    if backend == "postgresql":
        assert "pk_deliveries" in plan and "event_id" in plan, plan
    elif backend == "sqlite":
        assert "SEARCH deliveries USING" in plan and "event_id=?" in plan, plan
    else:
        assert "PRIMARY" in plan and "| ref |" in plan, plan
