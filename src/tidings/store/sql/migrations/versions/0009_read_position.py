"""read markers: a read-up-to position (Gazelle's read-up-to-id witness)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 16:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | Sequence[str] | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('read_markers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('position_at', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('position_id', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('read_markers', schema=None) as batch_op:
        batch_op.drop_column('position_id')
        batch_op.drop_column('position_at')
