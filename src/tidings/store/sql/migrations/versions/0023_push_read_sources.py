"""the sources a push deployment's timeline read must look up: a partial index (PostgreSQL)

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 12:45:00.000000

A timeline read on PostgreSQL decides each followee's cut (how far down its posts are in the
mailbox) from its stored source state, one probe of ``timeline_sources`` per followee: a reader
following 500 accounts paid 500 probes for a first page its mailbox alone answers. In a push
deployment a source's posts are in its followers' mailboxes above their floors unless it has
an override, was pulled when its last post was fanned out (``push_from`` NULL) or is pushed
only since some event (``push_from`` > 0). This index holds exactly those sources, so the read
joins the followees to it as a set (``timeline_merged.PUSHED``) and reads no other source
state. Only PostgreSQL runs that read; SQLite and MariaDB take their reads in steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023'
down_revision: str | Sequence[str] | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = 'ix_timeline_sources_actor_unpushed'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.create_index(NAME, 'timeline_sources', ['actor'], unique=False,
                        postgresql_where=sa.text(
                            'model IS NOT NULL OR push_from IS NULL OR push_from <> 0'))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index(NAME, table_name='timeline_sources')
