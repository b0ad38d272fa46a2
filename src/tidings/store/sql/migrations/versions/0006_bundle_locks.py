"""bundle locks: fan-out's join-or-start decision serialised per (user, bundle)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | Sequence[str] | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('bundle_locks',
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('bundle_hash', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', 'bundle_hash', name=op.f('pk_bundle_locks')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    with op.batch_alter_table('bundle_locks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_bundle_locks_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('bundle_locks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_bundle_locks_created_at'))

    op.drop_table('bundle_locks')
