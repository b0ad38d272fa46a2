"""the pull model's read on MariaDB: the (actor, type, retracted_at) index SQLite has

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-24 22:05:00.000000

A pull read takes each followee's newest ids of the timeline's types among unretracted events.
On MariaDB the (actor, id) index found them, but the type and the retraction were read from
each row: about 20 rows a followee, 860 for a read of 43. InnoDB's secondary index entries
carry the primary key, so with the retraction in the (actor, type) index the read's ids come
from the index alone, in id order within each (actor, type), and only the page's rows are
read (0018 made the same index for SQLite). PostgreSQL keeps its partial (actor, id) index.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0020'
down_revision: str | Sequence[str] | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = 'ix_events_actor_type_retracted_at'


def upgrade() -> None:
    if op.get_bind().dialect.name in ("mysql", "mariadb"):
        op.create_index(NAME, 'events', ['actor', 'type', 'retracted_at'], unique=False)


def downgrade() -> None:
    if op.get_bind().dialect.name in ("mysql", "mariadb"):
        op.drop_index(NAME, table_name='events')
