"""hot_journal: the Redis hot store's writes, kept durable for an exact rebuild

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02 10:00:00.000000

With a Redis hot store, inbox rows, read marks, deletions and bundles lived in Redis only (the
watermarks had a durable copy in ``read_markers``), so a Redis that lost its data could only be
refilled approximately: deleted notifications came back, marks by id and bundles among read
rows were lost, rows were dated at their event's creation. Every unit of work that writes to
Redis now also writes its Redis writes here, in its own transaction: ``tidings
rebuild-hot-store`` replays them in order (``docs/redis.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = '0024'
down_revision: str | Sequence[str] | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'hot_journal',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  autoincrement=True, nullable=False),
        sa.Column('written_at', sa.BigInteger(), nullable=False),
        sa.Column('writes', sa.Text().with_variant(mysql.LONGTEXT(), 'mysql', 'mariadb'),
                  nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_hot_journal')),
        mysql_charset='utf8mb4', mysql_collate='utf8mb4_bin', mysql_engine='InnoDB')


def downgrade() -> None:
    op.drop_table('hot_journal')
