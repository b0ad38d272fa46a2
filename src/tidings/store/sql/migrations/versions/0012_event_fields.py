"""event fields: the queryable payload fields of delivered events

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | Sequence[str] | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'event_fields',
        sa.Column('event_id', sa.BigInteger(), nullable=False),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('value', sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint('event_id', 'name', name=op.f('pk_event_fields')),
        mysql_charset='utf8mb4',
        mysql_collate='utf8mb4_bin',
        mysql_engine='InnoDB',
    )


def downgrade() -> None:
    op.drop_table('event_fields')
