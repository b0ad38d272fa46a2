"""timelines for the push model

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 22:02:51.964697
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('timelines',
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('event_id', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', 'event_id', name=op.f('pk_timelines')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )


def downgrade() -> None:
    op.drop_table('timelines')
