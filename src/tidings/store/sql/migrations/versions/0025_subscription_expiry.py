"""a subscription's lifetime: ``subscriptions.expires_at`` (NULL: for good)

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 00:30:00.000000

A subscription may end (LiveJournal ESN's subscriptions have lifetimes): past ``expires_at``
(microseconds, as every time column) it no longer matches in fan-out. Existing subscriptions
keep NULL and match as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0025'
down_revision: str | Sequence[str] | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('subscriptions', sa.Column('expires_at', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column('subscriptions', 'expires_at')
