"""delivery records (a chunk of an event's users per row) instead of the (event, user) index

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29 09:00:00.000000

"Who holds event e" (fan-out's idempotency check, retraction's users) was answered by the
index ``ix_notifications_event_id_user_id``, about 41 B a notification on PostgreSQL. It is
now answered by ``deliveries``: one row per delivered chunk of an event, its users sorted,
newline-joined and compressed (``tidings.store.sql.core.recipients``), a few bytes a user.

The upgrade creates the table and fills it from the stored notifications, read in the
index's order (event, user) a batch at a time: one record per event and part of at most
``PART`` users. Then it drops the index. The downgrade builds the index again and drops the
table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from tidings.store.sql.core.recipients import parts

revision: str = '0031'
down_revision: str | Sequence[str] | None = '0030'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = 'ix_notifications_event_id_user_id'
BATCH = 50_000  # notifications read at a time
USERS = sa.LargeBinary().with_variant(mysql.MEDIUMBLOB(), 'mysql', 'mariadb')
_records = sa.table('deliveries', sa.column('event_id', sa.BigInteger),
                    sa.column('chunk', sa.BigInteger), sa.column('users', USERS))
_rows = sa.table('notifications', sa.column('event_id', sa.BigInteger),
                 sa.column('user_id', sa.String))


def _fill() -> None:
    """One record per event and part of its users, the notifications read by event a batch
    at a time (an event cut by a batch's end is read again whole in the next)."""
    conn = op.get_bind()
    after: int | None = None
    while True:
        query = sa.select(_rows.c.event_id, _rows.c.user_id)
        if after is not None:
            query = query.where(_rows.c.event_id > after)
        found = conn.execute(query.order_by(_rows.c.event_id, _rows.c.user_id)
                             .limit(BATCH)).all()
        if not found:
            return
        by_event: dict[int, list[str]] = {}
        for event, user in found:
            by_event.setdefault(event, []).append(user)
        last = found[-1][0]
        if len(found) == BATCH:
            if len(by_event) == 1:  # one event past a batch: read whole
                by_event[last] = list(conn.execute(
                    sa.select(_rows.c.user_id).where(_rows.c.event_id == last)).scalars())
            else:  # the last event may go on in the next batch
                del by_event[last]
                last = max(by_event)
        records: list[dict[str, Any]] = [
            {'event_id': event, 'chunk': key, 'users': value}
            for event, users in by_event.items() for key, _, value in parts(users)]
        for start in range(0, len(records), 1000):
            conn.execute(_records.insert(), records[start:start + 1000])
        after = last


def upgrade() -> None:
    op.create_table(
        'deliveries',
        sa.Column('event_id', sa.BigInteger(), nullable=False),
        sa.Column('chunk', sa.BigInteger(), nullable=False),
        sa.Column('users', USERS, nullable=False),
        sa.PrimaryKeyConstraint('event_id', 'chunk', name=op.f('pk_deliveries')),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin', mysql_engine='InnoDB')
    _fill()
    op.drop_index(INDEX, table_name='notifications')


def downgrade() -> None:
    op.create_index(INDEX, 'notifications', ['event_id', 'user_id'], unique=False)
    op.drop_table('deliveries')
