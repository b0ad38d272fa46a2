"""PostgreSQL: the unread count's and the bundling lookup's indexes hold only the rows they read

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24 14:30:00.000000

An unread count reads a user's unread base rows freshest first; fan-out's bundling lookup
reads the base rows of one bundle. Their indexes held every notification, a read or
superseded row as much as the others, and carried the flags the reads only test. On
PostgreSQL they are now partial: (user, fresh_at) of the unread base rows and (user, bundle
hash) of the base rows. On W2's data the count's index went from 123 to 54 bytes a
notification and the lookup's from 53 to 38; a notification leaves both when it is
superseded, and the count's when it is read.
SQLite (which reads each row to check a partial index's condition) and MariaDB (which has no
partial indexes) keep the full ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0019'
down_revision: str | Sequence[str] | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNREAD_FULL = 'ix_notifications_user_id_bundle_base_read_at_fresh_at'
BUNDLE_FULL = 'ix_notifications_user_id_bundle_hash_bundle_base'
UNREAD = 'ix_notifications_user_id_fresh_at'
BUNDLE = 'ix_notifications_user_id_bundle_hash'


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(UNREAD, 'notifications', ['user_id', 'fresh_at'], unique=False,
                    postgresql_where=sa.text("bundle_base AND read_at IS NULL"))
    op.create_index(BUNDLE, 'notifications', ['user_id', 'bundle_hash'], unique=False,
                    postgresql_where=sa.text("bundle_base"))
    op.drop_index(UNREAD_FULL, table_name='notifications')
    op.drop_index(BUNDLE_FULL, table_name='notifications')


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(UNREAD_FULL, 'notifications', ['user_id', 'bundle_base', 'read_at',
                                                   'fresh_at'], unique=False)
    op.create_index(BUNDLE_FULL, 'notifications', ['user_id', 'bundle_hash', 'bundle_base'],
                    unique=False)
    op.drop_index(UNREAD, table_name='notifications')
    op.drop_index(BUNDLE, table_name='notifications')
