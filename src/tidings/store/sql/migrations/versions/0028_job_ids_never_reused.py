"""job ids are never handed out twice, on SQLite too (AUTOINCREMENT)

Without AUTOINCREMENT SQLite gives a new row the highest rowid plus one, so once the newest job
is completed (deleted) its id comes back. A job's id names its failures on record
(``job_failures``, which ``tidings jobs --retry`` reads) and, on a hot store, the writes it made
to Redis (``job:<id>``, by which a retried job knows its own earlier writes): a new job with an
old id would take another job's failures for its own, or count another job's deliveries as its
own again. The other databases never reuse a sequence value. As for events (0010), the table is
copied into one declared with AUTOINCREMENT, whose counter starts after the highest job id the
database still names (a job or a failure on record).

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 04:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0028'
down_revision: str | Sequence[str] | None = '0027'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    spent = int(bind.execute(sa.text(
        "SELECT MAX(m) FROM (SELECT MAX(id) AS m FROM jobs "
        "UNION ALL SELECT MAX(job_id) FROM job_failures) AS spent")).scalar() or 0)
    with op.batch_alter_table("jobs", recreate="always",
                              table_kwargs={"sqlite_autoincrement": True}):
        pass
    if spent:
        op.execute("DELETE FROM sqlite_sequence WHERE name = 'jobs'")
        bind.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('jobs', :seq)"),
                     {"seq": spent})


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("jobs", recreate="always",
                              table_kwargs={"sqlite_autoincrement": False}):
        pass
