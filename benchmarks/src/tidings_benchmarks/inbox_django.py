"""W2 storage's baseline in the same run: the same notifications as django-notifications-hq
keeps them, measured beside tidings' tables (PostgreSQL, where BENCH.md's 195 B/row anchor was
measured).

django-notifications-hq 1.8's ``notifications_notification`` table, as its migrations leave it
on PostgreSQL: an ``integer`` id, the recipient as an ``integer`` foreign key, the actor, target
and action object as (content type, object id) generic foreign keys, the verb, a timestamp, four
flags, a ``jsonb`` ``data`` and 11 indexes (the primary key, the four foreign keys', the five
indexed fields' and ``(recipient_id, unread)``). It is filled from tidings' own rows in one
``INSERT … SELECT``: one row per notification, the type as the verb, the actor and object as
generic keys of one content type each, the event's payload as ``data`` (NULL when empty), a
recipient number per user; then ``VACUUM ANALYZE``-ed, measured, and dropped.
"""

from __future__ import annotations

from typing import Any

from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.storage import relation_bytes, table_bytes

TABLE = "notifications_notification"
WHAT = ("django-notifications-hq 1.8's notifications_notification (11 indexes) filled with the "
        "same rows, in the same database")

DDL = (
    f"CREATE TABLE {TABLE} ("
    "id serial PRIMARY KEY, level varchar(20) NOT NULL, unread boolean NOT NULL, "
    "actor_object_id varchar(255) NOT NULL, verb varchar(255) NOT NULL, description text, "
    "target_object_id varchar(255), action_object_object_id varchar(255), "
    "timestamp timestamp with time zone NOT NULL, public boolean NOT NULL, "
    "action_object_content_type_id integer, actor_content_type_id integer NOT NULL, "
    "recipient_id integer NOT NULL, target_content_type_id integer, deleted boolean NOT NULL, "
    "emailed boolean NOT NULL, data jsonb)",
    *(f"CREATE INDEX {TABLE}_{column} ON {TABLE} ({column})" for column in (
        "action_object_content_type_id", "actor_content_type_id", "recipient_id",
        "target_content_type_id", "unread", "timestamp", "public", "deleted", "emailed")),
    f"CREATE INDEX {TABLE}_recipient_id_unread ON {TABLE} (recipient_id, unread)",
)

FILL = (
    f"INSERT INTO {TABLE} (level, unread, actor_object_id, verb, description, "
    "target_object_id, action_object_object_id, timestamp, public, "
    "action_object_content_type_id, actor_content_type_id, recipient_id, "
    "target_content_type_id, deleted, emailed, data) "
    "SELECT 'info', n.read_at IS NULL, coalesce(n.actor, ''), e.type, NULL, n.object, NULL, "
    "to_timestamp(n.created_at / 1000000.0), TRUE, NULL, 1, r.id, "
    "CASE WHEN n.object IS NULL THEN NULL ELSE 2 END, FALSE, FALSE, "
    "nullif(e.payload, '{}')::jsonb "
    "FROM notifications n JOIN events e ON e.id = n.event_id "
    "JOIN (SELECT user_id, row_number() OVER (ORDER BY user_id) AS id FROM users) r "
    "ON r.user_id = n.user_id ORDER BY n.created_at, n.event_id"
)


def measure(url: str) -> dict[str, Any] | None:
    """The django-like table's rows, bytes and bytes per row, split by relation; None but on
    PostgreSQL."""
    with RawConnection(url, autocommit=True) as raw:
        if raw.backend != "postgresql":
            return None
        for statement in DDL:
            raw.execute(statement)
        try:
            rows = raw.execute(FILL)
            raw.execute(f"VACUUM ANALYZE {TABLE}")
            size = table_bytes(url, [TABLE])[TABLE]
            parts = relation_bytes(url, TABLE)
        finally:
            raw.execute(f"DROP TABLE {TABLE}")
    return {"what": WHAT, "rows": rows, "bytes": size,
            "bytes_per_row": round(size / rows, 1) if rows else None,
            "indexes": len(parts) - 1,
            "profile": [{"relation": name, "bytes": b,
                         "bytes_per_row": round(b / rows, 1) if rows else None}
                        for name, b in sorted(parts.items(), key=lambda item: -item[1])]}
