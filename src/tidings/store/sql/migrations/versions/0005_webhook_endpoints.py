"""webhook endpoint breakers

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('webhook_endpoints',
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('paused_until', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('host', name=op.f('pk_webhook_endpoints')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )


def downgrade() -> None:
    op.drop_table('webhook_endpoints')
