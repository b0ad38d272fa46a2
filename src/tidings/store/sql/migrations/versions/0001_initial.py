"""The initial schema: events, types, users, subscriptions, follows, mutes, preferences,
notifications, read markers, jobs and job failures.

Revision ID: 0001
Revises:
Create Date: 2026-11-21

Generated with autogenerate, then tidied. Like every migration it spells its schema out rather than
importing ``schema.py``, so it keeps meaning the same thing when the declared schema moves on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def serial() -> sa.Column[int]:
    """An auto-incrementing id: BIGINT, but INTEGER on SQLite (the only type it auto-increments)."""
    return sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        autoincrement=True,
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "events",
        serial(),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("object", sa.String(255), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("recipients", sa.Text(), nullable=False),
        sa.Column("exclude", sa.Text(), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("body_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("retracted_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("idempotency_key", name="uq_events_idempotency_key"),
        **MYSQL,
    )
    op.create_index("ix_events_type_object", "events", ["type", "object"])
    op.create_index("ix_events_actor_type", "events", ["actor", "type"])
    op.create_index("ix_events_object", "events", ["object"])
    op.create_index("ix_events_created_at", "events", ["created_at"])

    op.create_table(
        "event_types",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("definition", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_event_types"),
        **MYSQL,
    )

    op.create_table(
        "users",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_users"),
        **MYSQL,
    )

    op.create_table(
        "subscriptions",
        serial(),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("object", sa.String(255), nullable=False),
        sa.Column("channels", sa.String(255), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_subscriptions"),
        sa.UniqueConstraint(
            "user_id", "type", "object", name="uq_subscriptions_user_id_type_object"
        ),
        **MYSQL,
    )
    op.create_index(
        "ix_subscriptions_type_object_user_id", "subscriptions", ["type", "object", "user_id"]
    )

    op.create_table(
        "follows",
        sa.Column("follower", sa.String(255), nullable=False),
        sa.Column("followee", sa.String(255), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("follower", "followee", name="pk_follows"),
        **MYSQL,
    )
    op.create_index("ix_follows_followee_follower", "follows", ["followee", "follower"])

    op.create_table(
        "mutes",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "kind", "value", name="pk_mutes"),
        **MYSQL,
    )

    op.create_table(
        "preferences",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_preferences"),
        **MYSQL,
    )

    op.create_table(
        "notifications",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("fresh_at", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("category", sa.String(64), nullable=False),
        sa.Column("section", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(255), nullable=True),
        sa.Column("object", sa.String(255), nullable=True),
        sa.Column("bundle_hash", sa.String(32), nullable=False),
        sa.Column("display_hash", sa.String(32), nullable=False),
        sa.Column("bundle_base", sa.Boolean(), nullable=False),
        sa.Column("read_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("user_id", "event_id", name="pk_notifications"),
        **MYSQL,
    )
    op.create_index(
        "ix_notifications_user_id_bundle_base_created_at_event_id",
        "notifications",
        ["user_id", "bundle_base", "created_at", "event_id"],
    )
    op.create_index(
        "ix_notifications_user_id_bundle_base_read_at_fresh_at",
        "notifications",
        ["user_id", "bundle_base", "read_at", "fresh_at"],
    )
    op.create_index(
        "ix_notifications_user_id_bundle_hash_bundle_base",
        "notifications",
        ["user_id", "bundle_hash", "bundle_base"],
    )
    op.create_index(
        "ix_notifications_user_id_display_hash_created_at",
        "notifications",
        ["user_id", "display_hash", "created_at"],
    )
    op.create_index("ix_notifications_event_id", "notifications", ["event_id"])

    op.create_table(
        "read_markers",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("scope", sa.String(80), nullable=False),
        sa.Column("until_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "scope", name="pk_read_markers"),
        **MYSQL,
    )

    op.create_table(
        "jobs",
        serial(),
        sa.Column("func", sa.String(64), nullable=False),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("unique_key", sa.String(255), nullable=True),
        sa.Column("priority", sa.SmallInteger(), nullable=False),
        sa.Column("run_after", sa.BigInteger(), nullable=False),
        sa.Column("grabbed_until", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("unique_key", name="uq_jobs_unique_key"),
        **MYSQL,
    )
    op.create_index("ix_jobs_priority_run_after", "jobs", ["priority", "run_after"])

    op.create_table(
        "job_failures",
        serial(),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("func", sa.String(64), nullable=False),
        sa.Column("args", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("failed_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_failures"),
        **MYSQL,
    )
    op.create_index("ix_job_failures_failed_at", "job_failures", ["failed_at"])


def downgrade() -> None:
    # Dropping a table drops its indexes and constraints with it, on every backend.
    for table in (
        "job_failures",
        "jobs",
        "read_markers",
        "notifications",
        "preferences",
        "mutes",
        "follows",
        "subscriptions",
        "users",
        "event_types",
        "events",
    ):
        op.drop_table(table)
