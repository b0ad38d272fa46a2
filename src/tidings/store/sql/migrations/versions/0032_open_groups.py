"""inbox_open: per (user, bundle) the newest base's position, the lock and the pointer in one

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-29 09:30:00.000000

Fan-out's join-or-start decision locked a ``bundle_locks`` row per (user, bundle), then read
the bundle's newest base row through an index of (user, bundle hash) of the base rows (on
PostgreSQL partial, elsewhere the columns in full): 38 to 69 B a notification for the index,
plus lock rows the retention job forgot after a day. ``inbox_open`` holds per (user, bundle)
the position (created_at, event id) of the bundle's newest base row instead: fan-out locks that
row and reads the base by the notifications' primary key.

The upgrade fills it with the newest base row of each (user, bundle hash) pair, except the
rows of types that never bundle: their bundle hash is their own event's (the first 16 hex
characters of the SHA-1 of ``event``, a zero byte and the event id), which no later
notification looks for. The event ids' own hashes are computed here, once per event, into a
temporary table the fill compares against. Then the (user, bundle hash) index and
``bundle_locks`` are dropped.

The downgrade builds the index again and an empty ``bundle_locks`` (its rows are made as fan-out
needs them), and drops ``inbox_open``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from tidings.store.sql.core.hashes import LENGTH, to_sql

revision: str = '0032'
down_revision: str | Sequence[str] | None = '0031'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUNDLE = 'ix_notifications_user_id_bundle_hash'  # PostgreSQL: of the base rows (0019)
BUNDLE_FULL = 'ix_notifications_user_id_bundle_hash_bundle_base'  # SQLite, MariaDB
MYSQL: dict[str, Any] = {'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin',
                         'mysql_engine': 'InnoDB'}
BATCH = 5000
OWN = sa.table('tidings_own_hashes', sa.column('event_id', sa.BigInteger),
               sa.column('bundle_hash', sa.BigInteger))


def own_hash(event_id: int) -> int:
    """The stored bundle hash of an event of a type that never bundles (rule ``none``)."""
    return to_sql(hashlib.sha1(f"event\x00{event_id}".encode()).hexdigest()[:LENGTH])


def _fill() -> None:
    bind = op.get_bind()
    op.execute("CREATE TEMPORARY TABLE tidings_own_hashes "
               "(event_id BIGINT NOT NULL PRIMARY KEY, bundle_hash BIGINT NOT NULL)")
    ids = bind.execute(sa.text(
        "SELECT DISTINCT event_id FROM notifications WHERE bundle_base")).scalars().all()
    for start in range(0, len(ids), BATCH):
        bind.execute(sa.insert(OWN), [{"event_id": e, "bundle_hash": own_hash(e)}
                                      for e in ids[start:start + BATCH]])
    op.execute(
        "INSERT INTO inbox_open (user_id, bundle_hash, created_at, event_id) "
        "SELECT user_id, bundle_hash, created_at, event_id FROM ("
        " SELECT n.user_id, n.bundle_hash, n.created_at, n.event_id, ROW_NUMBER() OVER ("
        "  PARTITION BY n.user_id, n.bundle_hash"
        "  ORDER BY n.created_at DESC, n.event_id DESC) AS newest"
        " FROM notifications n LEFT JOIN tidings_own_hashes t"
        "  ON t.event_id = n.event_id AND t.bundle_hash = n.bundle_hash"
        " WHERE n.bundle_base AND t.event_id IS NULL) b "
        "WHERE newest = 1")
    op.execute("DROP TABLE tidings_own_hashes")


def upgrade() -> None:
    op.create_table(
        'inbox_open',
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('bundle_hash', sa.BigInteger(), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=True),
        sa.Column('event_id', sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint('user_id', 'bundle_hash', name=op.f('pk_inbox_open')),
        **MYSQL)
    _fill()
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(BUNDLE, table_name='notifications')
    else:
        op.drop_index(BUNDLE_FULL, table_name='notifications')
    op.drop_index(op.f('ix_bundle_locks_created_at'), table_name='bundle_locks')
    op.drop_table('bundle_locks')


def downgrade() -> None:
    op.create_table(
        'bundle_locks',
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('bundle_hash', sa.BigInteger(), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('user_id', 'bundle_hash', name=op.f('pk_bundle_locks')),
        **MYSQL)
    op.create_index(op.f('ix_bundle_locks_created_at'), 'bundle_locks', ['created_at'],
                    unique=False)
    if op.get_bind().dialect.name == 'postgresql':
        op.create_index(BUNDLE, 'notifications', ['user_id', 'bundle_hash'], unique=False,
                        postgresql_where=sa.text("bundle_base"))
    else:
        op.create_index(BUNDLE_FULL, 'notifications', ['user_id', 'bundle_hash', 'bundle_base'],
                        unique=False)
    op.drop_table('inbox_open')
