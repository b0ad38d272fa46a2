"""the pull model's indexes: (actor, id) of unretracted events with their type (PostgreSQL),
the sources with a model override

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23 21:10:00.000000

A timeline read takes each followee's newest ids from this index alone (an index-only scan):
the rows of events that do not make the page are never read. SQLite and MariaDB keep the
plain (actor, id) index (neither has INCLUDE; MariaDB has no partial index).

A pull deployment's read needs of ``timeline_sources`` only the overrides (a source set to
push): a partial index of them (whole on MariaDB) answers each followee's lookup from a
nearly empty index.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | Sequence[str] | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(op.f('ix_timeline_sources_actor'), 'timeline_sources', ['actor'],
                    unique=False, postgresql_where=sa.text('model IS NOT NULL'),
                    sqlite_where=sa.text('model IS NOT NULL'))
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(op.f('ix_events_actor_id'), table_name='events')
    op.create_index(op.f('ix_events_actor_id'), 'events', ['actor', 'id'], unique=False,
                    postgresql_include=['type'],
                    postgresql_where=sa.text('retracted_at IS NULL'))


def downgrade() -> None:
    op.drop_index(op.f('ix_timeline_sources_actor'), table_name='timeline_sources')
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(op.f('ix_events_actor_id'), table_name='events')
    op.create_index(op.f('ix_events_actor_id'), 'events', ['actor', 'id'], unique=False)
