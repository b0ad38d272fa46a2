"""Bulk writes (``Database.insert_many`` / ``add_rows``, and the timeline entries of a fan-out):
the same rows whatever the shape of the values. On PostgreSQL a column every row shares goes
as one value, so a fan-out's rows send only their users as an array."""

from __future__ import annotations

from engines import table_rows
from statements import statements
from tidings.engine import Tidings
from tidings.store.sql.schema import users


def test_shared_and_varying_columns_write_the_same_rows(t: Tidings) -> None:
    db = t.store.db  # type: ignore[attr-defined]
    rows = [{"user_id": f"u{i}", "created_at": 7, "inbox_rows": None} for i in range(3)]
    rows += [{"user_id": "v", "created_at": 8, "inbox_rows": 2}]
    with db.write() as conn:
        db.insert_many(conn, users, rows)
        db.insert_many(conn, users, [{"user_id": "w", "created_at": 9, "inbox_rows": 1}] * 3,
                       ignore=True)  # three alike: one row, the others ignored
        db.add_rows(conn, users, ["user_id"], "inbox_rows",
                    [{"user_id": "v", "created_at": 8, "inbox_rows": 5},
                     {"user_id": "u0", "created_at": 8, "inbox_rows": 5}])
    assert [(r["user_id"], r["created_at"], r["inbox_rows"]) for r in table_rows(t, "users")
            ] == [("u0", 7, 5), ("u1", 7, None), ("u2", 7, None), ("v", 8, 7), ("w", 9, 1)]


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
        (insert,) = [s for s in seen if s.startswith("INSERT INTO notifications")]
        assert insert.count("json_array_elements_text") == 1  # the users; the rest one value
