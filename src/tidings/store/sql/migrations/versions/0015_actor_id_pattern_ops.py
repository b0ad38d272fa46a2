"""the pull model's (actor, id) index compares actors byte by byte (PostgreSQL)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 00:25:00.000000

A pull read descends this index once per followee, and each step of a descent compares actor
ids. Under the default operator class a comparison goes through the database's collation
(the locale's ``strcoll`` unless the collation is exactly ``C``); ``varchar_pattern_ops``
compares the bytes, which for equality gives the same answer, and the read's statement is
about 14 % faster at 43 followees. The index still answers ``actor = …`` (its operator family
has the ordinary ``=``), so no query changes; it does not answer ``<`` / ``>`` on actor, which
no query asks of it. SQLite and MariaDB are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015'
down_revision: str | Sequence[str] | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _recreate(ops: dict[str, str]) -> None:
    op.drop_index(op.f('ix_events_actor_id'), table_name='events')
    op.create_index(op.f('ix_events_actor_id'), 'events', ['actor', 'id'], unique=False,
                    postgresql_include=['type'],
                    postgresql_where=sa.text('retracted_at IS NULL'),
                    postgresql_ops=ops)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _recreate({'actor': 'varchar_pattern_ops'})


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _recreate({})
