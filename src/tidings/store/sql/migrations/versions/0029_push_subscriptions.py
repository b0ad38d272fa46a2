"""push_subscriptions: the Web Push channel's browser subscriptions

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29 04:10:00.000000

One row per browser ``PushSubscription``: its endpoint (unique by hash) and the keys the
payload is encrypted to (``tidings.store.sql.push``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0029'
down_revision: str | Sequence[str] | None = '0028'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'push_subscriptions',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  autoincrement=True, nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('endpoint', sa.String(length=2048), nullable=False),
        sa.Column('endpoint_hash', sa.String(length=64), nullable=False),
        sa.Column('p256dh', sa.String(length=128), nullable=False),
        sa.Column('auth', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_push_subscriptions')),
        sa.UniqueConstraint('endpoint_hash', name=op.f('uq_push_subscriptions_endpoint_hash')),
        sqlite_autoincrement=True,
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin', mysql_engine='InnoDB')
    op.create_index(op.f('ix_push_subscriptions_user_id_id'), 'push_subscriptions',
                    ['user_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_push_subscriptions_user_id_id'), table_name='push_subscriptions')
    op.drop_table('push_subscriptions')
