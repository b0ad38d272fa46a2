"""inbox_snoozes: when a snoozed group returns; PostgreSQL's unread index holds inbox rows only

Revision ID: 0037
Revises: 0035
Create Date: 2026-11-29 12:30:00.000000

Archived and snoozed items (``flags`` bits 2 and 7, ``tidings.domain.flags``) leave the
inbox and its unread count. The count reads a user's unread base rows through PostgreSQL's
partial index of them (0019); its condition now also names the inbox's state,
``(flags & 132) = 0``, so an archived or snoozed row leaves the index as a read one does and
the count stays an index-only scan of the rows it counts (the query names the same
condition). The list reads its rows in the index's order under the same condition: PostgreSQL
keeps statistics of it (``CREATE STATISTICS`` on the expression, PostgreSQL 14 and later), so
the planner knows nearly every row meets it. SQLite and MariaDB, whose index of the unread rows is not partial, take ``flags``
as its last column, so the count still reads that index alone (MariaDB: "Using index").

A snoozed group's time to return is kept apart, one row per snoozed (user, display group):
``inbox_snoozes``, sparse where a column on every notification would cost every row.
The downgrade drops the table and puts back the indexes as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = '0037'
down_revision: str | Sequence[str] | None = '0035'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNREAD = 'ix_notifications_user_id_fresh_at'  # PostgreSQL: partial (0019)
UNREAD_FULL = 'ix_notifications_user_id_bundle_base_read_at_fresh_at'  # SQLite, MariaDB
UNREAD_FLAGS = UNREAD_FULL + '_flags'
# PostgreSQL's statistics of the inbox's condition: without them the planner takes
# (flags & 132) = 0 for a rare value (0.5 % of the rows) and sorts a page's rows instead of
# walking its index in order
STATE = 'stat_notifications_in_inbox'
MYSQL: dict[str, Any] = {'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin',
                         'mysql_engine': 'InnoDB'}


def upgrade() -> None:
    op.create_table(
        'inbox_snoozes',
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('display_hash', sa.BigInteger(), nullable=False),
        sa.Column('until_at', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('user_id', 'display_hash', name=op.f('pk_inbox_snoozes')),
        **MYSQL)
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index(UNREAD, table_name='notifications')
        op.create_index(UNREAD, 'notifications', ['user_id', 'fresh_at'], unique=False,
                        postgresql_where=sa.text(
                            "bundle_base AND read_at IS NULL AND (flags & 132) = 0"))
        op.execute(f"CREATE STATISTICS {STATE} ON ((flags & 132)) FROM notifications")
    else:
        op.create_index(UNREAD_FLAGS, 'notifications',
                        ['user_id', 'bundle_base', 'read_at', 'fresh_at', 'flags'], unique=False)
        op.drop_index(UNREAD_FULL, table_name='notifications')


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP STATISTICS IF EXISTS {STATE}")
        op.drop_index(UNREAD, table_name='notifications')
        op.create_index(UNREAD, 'notifications', ['user_id', 'fresh_at'], unique=False,
                        postgresql_where=sa.text("bundle_base AND read_at IS NULL"))
    else:
        op.create_index(UNREAD_FULL, 'notifications',
                        ['user_id', 'bundle_base', 'read_at', 'fresh_at'], unique=False)
        op.drop_index(UNREAD_FLAGS, table_name='notifications')
    op.drop_table('inbox_snoozes')
