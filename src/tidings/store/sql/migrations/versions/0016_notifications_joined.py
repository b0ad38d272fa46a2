"""notifications: whether a row joined a display group someone else started

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 06:10:00.000000

A first page reads each listed bundle's newest members to title it ("… by alice and 3
others"). A base row that started its group and was never joined is the whole group, so its
members are the row itself: ``joined`` = False lets the page skip that read. Rows from before
this revision get True, which only means "read the members", as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0016'
down_revision: str | Sequence[str] | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a constant default: no table rewrite on PostgreSQL, an instant column on MariaDB
    op.add_column('notifications', sa.Column('joined', sa.Boolean(), nullable=False,
                                             server_default='1'))


def downgrade() -> None:
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_column('joined')
