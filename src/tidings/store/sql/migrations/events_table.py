"""What migrations that rebuild the ``events`` table on SQLite must keep.

SQLite alters most things by copying a table into a new one (Alembic's batch mode). For
``events`` that copy must be declared AUTOINCREMENT again (revision 0010), and its id counter,
which lives in ``sqlite_sequence`` under the table's name, must not fall back to the highest id
left in the table: a deleted newest event may still be named by notifications, timelines,
waiting mail or webhook deliveries.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# batch_alter_table(..., table_kwargs=KEEP_AUTOINCREMENT) for the events table
KEEP_AUTOINCREMENT = {"sqlite_autoincrement": True}

# Tables that name events by id, besides ``events`` itself.
NAMING_EVENTS = ("notifications", "timelines", "email_batch", "webhook_deliveries")


def spent_ids() -> int:
    """SQLite: the highest event id ever handed out, as far as the database still knows
    (elsewhere 0: sequences never go back)."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return 0
    named = " UNION ALL ".join(f"SELECT MAX(event_id) FROM {t}" for t in NAMING_EVENTS)
    sources = f"SELECT MAX(id) AS m FROM events UNION ALL {named}"
    if bind.execute(sa.text(
            "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'")).first():
        sources += " UNION ALL SELECT seq FROM sqlite_sequence WHERE name = 'events'"
    return int(bind.execute(sa.text(f"SELECT MAX(m) FROM ({sources}) AS spent")).scalar() or 0)


def keep_counter(spent: int) -> None:
    """SQLite: start the events id counter after ``spent`` (taken before the rebuild)."""
    if op.get_bind().dialect.name != "sqlite" or not spent:
        return
    op.execute("DELETE FROM sqlite_sequence WHERE name = 'events'")
    op.get_bind().execute(sa.text(
        "INSERT INTO sqlite_sequence (name, seq) VALUES ('events', :seq)"), {"seq": spent})
