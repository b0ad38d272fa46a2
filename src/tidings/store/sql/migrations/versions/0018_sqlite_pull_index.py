"""the pull model's read on SQLite: an index of (actor, type, retracted_at)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24 10:00:00.000000

A pull read takes each followee's newest ids of the timeline's types among unretracted events.
On SQLite the (actor, type) index found them, its entries carrying the id (the row id), but
the retraction had to be read from each row: about 860 rows for a read of 43 followees. With
the retraction in the index, the index answers the read alone and only the page's rows are
read (with the read as one ``UNION ALL`` of ids: about 0.3 ms for 43 followees against 1.3 to
1.6 ms). A partial index (``WHERE retracted_at IS NULL``) would not do: SQLite still reads the
row to check the condition. PostgreSQL and MariaDB are unchanged (their own indexes: 0014).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0018'
down_revision: str | Sequence[str] | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = 'ix_events_actor_type_retracted_at'


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index(NAME, 'events', ['actor', 'type', 'retracted_at'], unique=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index(NAME, table_name='events')
