"""inbox sizes: a per-user upper bound of stored notifications, for the cap

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 12:00:00.000000
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
    op.create_table('inbox_sizes',
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('estimate', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_inbox_sizes')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    # start from the true sizes, so inboxes already over the cap are trimmed on their next delivery
    op.execute('INSERT INTO inbox_sizes (user_id, estimate) '
               'SELECT user_id, COUNT(*) FROM notifications GROUP BY user_id')


def downgrade() -> None:
    op.drop_table('inbox_sizes')
