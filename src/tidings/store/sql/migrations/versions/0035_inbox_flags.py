"""notifications: a flags column for the inbox's per-item state (reason, archived, saved, snoozed)

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-30 12:20:00.000000

The lean inbox's group row carries its state as the bits of one SMALLINT
(``docs/design/lean-inbox.md``, layout D; the bits are ``tidings.domain.flags``). Today's
rows take the same column now, so that the state the inbox's triage adds — why an item
arrived, archived, saved, snoozed — goes into the row as it will stay, not beside it.
Every existing row starts at 0: no reason known, in the inbox.

``ALTER TABLE … ADD COLUMN`` with a constant default rewrites nothing on PostgreSQL,
MariaDB or SQLite. The downgrade drops the column.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0035'
down_revision: str | Sequence[str] | None = '0034'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('notifications', sa.Column('flags', sa.SmallInteger(), nullable=False,
                                             server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_column('flags')
