"""email and webhooks

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 22:12:56.182011
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('email_batch',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('event_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('bundle_hash', sa.String(length=32), nullable=False),
    sa.Column('priority', sa.SmallInteger(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_email_batch')),
    sa.UniqueConstraint('user_id', 'event_id', name=op.f('uq_email_batch_user_id_event_id')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    with op.batch_alter_table('email_batch', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_email_batch_event_id'), ['event_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_email_batch_user_id_kind_bundle_hash'), ['user_id', 'kind', 'bundle_hash'], unique=False)

    op.create_table('email_bounces',
    sa.Column('address', sa.String(length=255), nullable=False),
    sa.Column('reason', sa.String(length=255), nullable=False),
    sa.Column('bounced_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('address', name=op.f('pk_email_bounces')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    op.create_table('email_bundle_status',
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('bundle_hash', sa.String(length=32), nullable=False),
    sa.Column('last_email_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', 'bundle_hash', name=op.f('pk_email_bundle_status')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    op.create_table('email_log',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('message_id', sa.String(length=255), nullable=False),
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('address', sa.String(length=255), nullable=False),
    sa.Column('subject', sa.String(length=255), nullable=False),
    sa.Column('sent_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_email_log')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    with op.batch_alter_table('email_log', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_email_log_message_id'), ['message_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_email_log_user_id_sent_at'), ['user_id', 'sent_at'], unique=False)

    op.create_table('webhook_deliveries',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('event_id', sa.BigInteger(), nullable=False),
    sa.Column('url', sa.String(length=1024), nullable=False),
    sa.Column('status', sa.Integer(), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('error', sa.String(length=1024), nullable=True),
    sa.Column('at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries')),
    mysql_charset='utf8mb4',
    mysql_collate='utf8mb4_bin',
    mysql_engine='InnoDB'
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_user_id_at'), ['user_id', 'at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_user_id_at'))

    op.drop_table('webhook_deliveries')
    with op.batch_alter_table('email_log', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_email_log_user_id_sent_at'))
        batch_op.drop_index(batch_op.f('ix_email_log_message_id'))

    op.drop_table('email_log')
    op.drop_table('email_bundle_status')
    op.drop_table('email_bounces')
    with op.batch_alter_table('email_batch', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_email_batch_user_id_kind_bundle_hash'))
        batch_op.drop_index(batch_op.f('ix_email_batch_event_id'))

    op.drop_table('email_batch')
