"""PostgreSQL: a page's group members from the index alone, newest first

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-25 00:45:00.000000

An inbox page lists, for each bundled row, the newest actors of its display group: the
members' actors in (created_at, event_id) order, newest first. The (user, display hash,
created_at) index found the members, but each member's actor was read from its row and the
rows were sorted again for the event id that breaks ties. On PostgreSQL the index now ends
with the event id and carries the actor (``INCLUDE``): the members come in order from the
index alone. The first page's statement on W2's data (``--scale 0.1``) went from 1.75-2.06 to
1.46-1.54 times the baseline's page query, alternately on two copies of the same database.
MariaDB's secondary indexes carry the primary key (user, event id) already; SQLite keeps its
index as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0021'
down_revision: str | Sequence[str] | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = 'ix_notifications_user_id_display_hash_created_at'
NEW = 'ix_notifications_user_id_display_hash_created_at_event_id'


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(NEW, 'notifications', ['user_id', 'display_hash', 'created_at', 'event_id'],
                    unique=False, postgresql_include=['actor'])
    op.drop_index(OLD, table_name='notifications')


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(OLD, 'notifications', ['user_id', 'display_hash', 'created_at'],
                    unique=False)
    op.drop_index(NEW, table_name='notifications')
