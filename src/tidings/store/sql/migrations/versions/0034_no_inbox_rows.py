"""users: no inbox_rows; the inbox cap checks about one delivery in a margin per user

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-29 09:30:00.000000

``users.inbox_rows`` was an upper bound of each user's notifications, raised by every
delivery: a row version written per recipient per event, so that fan-out could tell which
inboxes passed the cap. The cap is now kept without it (``tidings.domain.inboxcap``): about
one delivery in a margin per user checks that user's size, read from the notifications'
index, and trims back to the newest ``inbox_cap``. The column goes (its values are not
needed), and so does the room PostgreSQL kept on ``users``' pages for those updates (0017):
a user's row is now written when the user is registered and hardly ever again.

The downgrade adds the column back, each user who holds notifications with their true
count (the bound tidings before 0034 keeps), the others NULL ("none counted yet"), and the
fill factor of 70 on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0034'
down_revision: str | Sequence[str] | None = '0033'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('inbox_rows')
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE users RESET (fillfactor)")


def downgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('inbox_rows', sa.BigInteger(), nullable=True))
    op.execute('UPDATE users SET inbox_rows = (SELECT COUNT(*) FROM notifications '
               'WHERE notifications.user_id = users.user_id) WHERE EXISTS (SELECT 1 FROM '
               'notifications WHERE notifications.user_id = users.user_id)')
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE users SET (fillfactor = 70)")
