"""notifications: a display group's summary on its base row

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 09:30:00.000000

A page shows each listed group as "X and N others" with its member count: it read, for each
listed group that had been joined, the group's newest members (up to 500) off the group index,
so the first page of an inbox whose groups grow cost up to 500 index entries a group (the
bench's sweep: 1,925 pages a second at 100 rows, 802 at 100,000 and 201 at 1,000,000 on
PostgreSQL). Delivery now keeps the summary on the group's base row: ``group_count`` (members,
up to the scan of 500) and ``group_actors`` (the newest distinct actors, at most 100, separated
by spaces), worked out from the base it joins while the group is within the scan, and read from the
group's newest members once it is past it. A demoted row drops its summary; a removal clears
the summary of each group it touches. Null columns (rows from before this revision, groups a
removal touched) make the page read the members, as before: nothing to fill in here.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0022'
down_revision: str | Sequence[str] | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable without a default: no table rewrite on PostgreSQL, an instant column on MariaDB
    op.add_column('notifications', sa.Column('group_count', sa.Integer(), nullable=True))
    op.add_column('notifications', sa.Column('group_actors', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_column('group_actors')
        batch_op.drop_column('group_count')
