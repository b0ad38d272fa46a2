"""per-user counters leave room on their pages for updates in place (PostgreSQL)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 07:00:00.000000

Every fan-out chunk moves two rows of each user it reaches: the inbox bound in ``users`` and
the mailbox count in ``timeline_state``. PostgreSQL writes an update as a new row version; on a
full page that version goes to another page and the primary key gets an entry for it, while
on a page with room it stays beside the old one with no index entry (a "HOT" update, whose
space the next visit to the page reclaims). A fill factor of 70 keeps that room on the pages
these tables fill from now on: a 50,000-follower fan-out repeated in-process went from
25,400-26,400 to 27,900-29,000 rows a second. SQLite and MariaDB are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0017'
down_revision: str | Sequence[str] | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ('users', 'timeline_state')


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"ALTER TABLE {table} SET (fillfactor = 70)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"ALTER TABLE {table} RESET (fillfactor)")
