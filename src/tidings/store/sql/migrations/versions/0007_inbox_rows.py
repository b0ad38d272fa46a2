"""users: inbox rows, an upper bound of each user's notifications, for the cap

Every user who holds notifications is registered (fan-out registers the users it delivers to
from now on), with the true count as the bound.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | Sequence[str] | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('inbox_rows', sa.BigInteger(), nullable=True))
    op.execute('UPDATE users SET inbox_rows = (SELECT COUNT(*) FROM notifications '
               'WHERE notifications.user_id = users.user_id)')
    op.execute('INSERT INTO users (user_id, created_at, inbox_rows) '
               'SELECT user_id, MIN(created_at), COUNT(*) FROM notifications '
               'WHERE user_id NOT IN (SELECT user_id FROM users) GROUP BY user_id')


def downgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('inbox_rows')
