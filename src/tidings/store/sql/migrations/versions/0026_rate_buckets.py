"""rate_buckets: the server keys' rate limit, one budget across every API process

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 01:00:00.000000

``TIDINGS_RATE_LIMIT`` was a token bucket in each API process, so N processes let N times the
rate through. The bucket of each server key (by a hash of it) is now a row here, taken from by
one atomic statement (``tidings.store.sql.ratebuckets``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0026'
down_revision: str | Sequence[str] | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'rate_buckets',
        sa.Column('bucket', sa.String(length=64), nullable=False),
        sa.Column('tokens', sa.Double(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.Column('granted', sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint('bucket', name=op.f('pk_rate_buckets')),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin', mysql_engine='InnoDB')


def downgrade() -> None:
    op.drop_table('rate_buckets')
