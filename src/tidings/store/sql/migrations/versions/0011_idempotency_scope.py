"""events: idempotency keys unique per scope (one per server key), not globally

Every event stored so far moves into the ``default`` scope (the column's default), the scope
of events published through the library.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from tidings.store.sql.migrations.events_table import (
    KEEP_AUTOINCREMENT,
    keep_counter,
    spent_ids,
)

revision: str = '0011'
down_revision: str | Sequence[str] | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    spent = spent_ids()
    with op.batch_alter_table('events', schema=None,
                              table_kwargs=KEEP_AUTOINCREMENT) as batch_op:
        batch_op.add_column(sa.Column('idempotency_scope', sa.String(length=64),
                                      server_default='default', nullable=False))
        batch_op.drop_constraint('uq_events_idempotency_key', type_='unique')
        batch_op.create_unique_constraint('uq_events_idempotency_scope_idempotency_key',
                                          ['idempotency_scope', 'idempotency_key'])
    keep_counter(spent)


def downgrade() -> None:
    # Keys used in several scopes collide once they are global again: keep the oldest event's.
    op.execute("UPDATE events SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL "
               "AND id NOT IN (SELECT first_id FROM (SELECT MIN(id) AS first_id FROM events "
               "WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key) AS firsts)")
    spent = spent_ids()
    with op.batch_alter_table('events', schema=None,
                              table_kwargs=KEEP_AUTOINCREMENT) as batch_op:
        batch_op.drop_constraint('uq_events_idempotency_scope_idempotency_key', type_='unique')
        batch_op.create_unique_constraint('uq_events_idempotency_key', ['idempotency_key'])
        batch_op.drop_column('idempotency_scope')
    keep_counter(spent)
