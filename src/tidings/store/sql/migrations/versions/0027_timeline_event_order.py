"""timelines in the inbox's order: the event's own time, then its id

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 00:40:00.000000

A timeline was ordered by event id, an inbox by time: an imported post dated years ago (the
newest id) sat on top of the timeline. Every timeline now orders, like the inbox, by the
event's ``created_at`` then its id. A mailbox entry's ``created_at`` is rewritten from its
event (it held the delivery time) and becomes part of the key, (user_id, created_at,
event_id), still one row per event; the floor and ``push_from`` become positions; the pull
model's indexes read each followee's events in that order.

A floor or ``push_from`` id X becomes (T, X) with T the latest time of any event with an id
up to X (a running maximum over the events in id order, computed once): every event at or
below the old bound is at or below the new one, so nothing a mailbox may lack is taken as in
it. (Events above X dated before T are now pulled too, which is always right.)
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027'
down_revision: str | Sequence[str] | None = '0026'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_PULL_OLD = 'ix_events_actor_id'
PG_PULL = 'ix_events_actor_created_at_id'
PULL_OLD = 'ix_events_actor_type_retracted_at'
PULL = 'ix_events_actor_type_retracted_at_created_at'

UPTO = 'timeline_event_order_upto'  # per event id, the latest time of the events up to it
# the latest time of the events with an id up to this one
_TIME_UPTO = (f"(SELECT u.upto FROM {UPTO} u WHERE u.id <= {{col}} "
              "ORDER BY u.id DESC LIMIT 1)")


def _key(columns: list[str]) -> None:
    if op.get_bind().dialect.name == 'sqlite':
        with op.batch_alter_table('timelines', recreate='always') as batch:
            batch.drop_constraint('pk_timelines', type_='primary')
            batch.create_primary_key('pk_timelines', columns)
        return
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_constraint('pk_timelines', 'timelines', type_='primary')
        op.create_primary_key('pk_timelines', 'timelines', columns)
        return
    op.execute(f"ALTER TABLE timelines DROP PRIMARY KEY, ADD PRIMARY KEY ({', '.join(columns)})")


def _pull_indexes(new: bool) -> None:
    dialect = op.get_bind().dialect.name
    if dialect == 'postgresql':
        op.drop_index(PG_PULL_OLD if new else PG_PULL, table_name='events')
        op.create_index(PG_PULL if new else PG_PULL_OLD, 'events',
                        ['actor', 'created_at', 'id'] if new else ['actor', 'id'],
                        unique=False, postgresql_include=['type'],
                        postgresql_where=sa.text('retracted_at IS NULL'),
                        postgresql_ops={'actor': 'varchar_pattern_ops'})
        return
    op.drop_index(PULL_OLD if new else PULL, table_name='events')
    op.create_index(PULL if new else PULL_OLD, 'events',
                    ['actor', 'type', 'retracted_at', 'created_at'] if new
                    else ['actor', 'type', 'retracted_at'], unique=False)
    op.drop_index('ix_events_actor_id' if new else 'ix_events_actor_created_at_id',
                  table_name='events')
    op.create_index('ix_events_actor_created_at_id' if new else 'ix_events_actor_id', 'events',
                    ['actor', 'created_at', 'id'] if new else ['actor', 'id'], unique=False)


def upgrade() -> None:
    op.execute("UPDATE timelines SET created_at = coalesce((SELECT e.created_at FROM events e "
               "WHERE e.id = timelines.event_id), created_at)")
    _key(['user_id', 'created_at', 'event_id'])
    op.create_table(UPTO, sa.Column('id', sa.BigInteger(), primary_key=True),
                    sa.Column('upto', sa.BigInteger(), nullable=False))
    op.execute(f"INSERT INTO {UPTO} (id, upto) SELECT id, max(created_at) OVER (ORDER BY id "
               "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM events")
    op.add_column('timeline_state', sa.Column('floor_at', sa.BigInteger(), nullable=False,
                                              server_default='0'))
    op.execute("UPDATE timeline_state SET floor_at = coalesce("
               f"{_TIME_UPTO.format(col='timeline_state.floor_id')}, 0) WHERE floor_id > 0")
    op.add_column('timeline_sources', sa.Column('push_from_at', sa.BigInteger(), nullable=True))
    op.execute("UPDATE timeline_sources SET push_from_at = CASE WHEN push_from = 0 THEN 0 "
               f"ELSE coalesce({_TIME_UPTO.format(col='timeline_sources.push_from')}, 0) END "
               "WHERE push_from IS NOT NULL")
    op.drop_table(UPTO)
    _pull_indexes(True)


def downgrade() -> None:
    _pull_indexes(False)
    op.drop_column('timeline_sources', 'push_from_at')
    op.drop_column('timeline_state', 'floor_at')
    _key(['user_id', 'event_id'])
