"""event ids are never handed out twice, on SQLite too (AUTOINCREMENT)

Without AUTOINCREMENT SQLite gives a new row the highest rowid plus one, so once the newest
event is deleted (retention) its id comes back while timelines, waiting mail and jobs may still
name it. The other databases never reuse a sequence value. SQLite can't alter a primary key in
place: the table is copied into one declared with AUTOINCREMENT, whose counter then starts
after the highest id that any table still names (a deleted newest event may live on in
notifications, timelines, waiting mail or webhook deliveries).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 17:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from tidings.store.sql.migrations.events_table import (
    KEEP_AUTOINCREMENT,
    keep_counter,
    spent_ids,
)

revision: str = '0010'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    spent = spent_ids()
    with op.batch_alter_table("events", recreate="always", table_kwargs=KEEP_AUTOINCREMENT):
        pass
    keep_counter(spent)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("events", recreate="always",
                              table_kwargs={"sqlite_autoincrement": False}):
        pass
