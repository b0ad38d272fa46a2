"""timelines: push, pull and hybrid models (mailbox state, per-source state, events by actor)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 17:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013'
down_revision: str | Sequence[str] | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('timeline_state',
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('entries', sa.BigInteger(), nullable=False),
    sa.Column('floor_id', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_timeline_state')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    op.create_table('timeline_sources',
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('followers', sa.BigInteger(), nullable=False),
    sa.Column('model', sa.String(length=8), nullable=True),
    sa.Column('push_from', sa.BigInteger(), nullable=True),
    sa.PrimaryKeyConstraint('actor', name=op.f('pk_timeline_sources')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    # a plain CREATE INDEX: no table rebuild on SQLite (events keeps its AUTOINCREMENT)
    op.create_index(op.f('ix_events_actor_id'), 'events', ['actor', 'id'], unique=False)
    # existing mailboxes: their sizes; existing sources: their follower counts, pushed from
    # the start (every post so far went through the push fan-out)
    op.execute("INSERT INTO timeline_state (user_id, entries, floor_id) "
               "SELECT user_id, COUNT(*), 0 FROM timelines GROUP BY user_id")
    op.execute("INSERT INTO timeline_sources (actor, followers, model, push_from) "
               "SELECT followee, COUNT(*), NULL, 0 FROM follows GROUP BY followee")


def downgrade() -> None:
    op.drop_index(op.f('ix_events_actor_id'), table_name='events')
    op.drop_table('timeline_sources')
    op.drop_table('timeline_state')
