"""notifications by event and user

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 22:33:33.343166
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0004'
down_revision: str | Sequence[str] | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notifications_event_id'))
        batch_op.create_index(batch_op.f('ix_notifications_event_id_user_id'), ['event_id', 'user_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_notifications_event_id_user_id'))
        batch_op.create_index(batch_op.f('ix_notifications_event_id'), ['event_id'], unique=False)

