"""bundle and display hashes as 64-bit integers (BIGINT) instead of 32 hex characters

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29 07:40:00.000000

A hash was 32 hex characters of SHA-1 (33 bytes in the row, again in every index that holds
it: the display-hash index alone was about 105 B a notification on PostgreSQL, and a row
carried two). It is now the first 64 bits, stored as a signed BIGINT: the hash's value minus
2**63 (``tidings.store.sql.core.hashes``), so the integers sort as the hex strings did. The
domain's hashes are the first 16 hex characters of the same SHA-1, so a stored hash converts
to what the same key hashes to now: an open bundle keeps being joined across the upgrade.

Every hash column converts, with its data: ``notifications.bundle_hash`` and
``display_hash``, ``bundle_locks``, ``email_batch`` and ``email_bundle_status``. The indexes
that hold them are rebuilt with their tables (PostgreSQL: ``ALTER … TYPE … USING``; MariaDB:
the text is rewritten as the integer's decimal, then ``MODIFY``; SQLite: the same through a
function of this migration's connection, then the table is copied).

Mail that went to the digest past the daily cap was queued with an empty bundle hash (no
bundle): it takes a hash of its own, the 16 hex digits of its event id, and stays an item of
its own in the digest (new rows take the event's own hash, as a type that never bundles).

The downgrade gives back 16-character hex strings, not the 32 characters they came from (the
rest is gone); tidings before 0030 compares hashes as whole strings, so after a downgrade an
open bundle is not joined again: its next notification starts a display group of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from tidings.store.sql.core.hashes import LENGTH, from_sql, to_sql

revision: str = '0030'
down_revision: str | Sequence[str] | None = '0029'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = {
    'notifications': ('bundle_hash', 'display_hash'),
    'bundle_locks': ('bundle_hash',),
    'email_batch': ('bundle_hash',),
    'email_bundle_status': ('bundle_hash',),
}
OLD = sa.String(length=32)
# PostgreSQL: the first 16 hex characters as a 64-bit pattern, read as a signed integer, its
# top bit flipped (= the unsigned value minus 2**63); and back
_PG_UP = "('x' || substr({c}, 1, 16))::bit(64)::bigint # (1::bigint << 63)"
_PG_DOWN = "lpad(to_hex({c} # (1::bigint << 63)), 16, '0')"
# MariaDB/MySQL: the same with CONV on unsigned 64-bit integers, as decimal text
_MY_UP = ("CAST(CAST(CONV(LEFT({c}, 16), 16, 10) AS UNSIGNED) ^ 0x8000000000000000 "
          "AS SIGNED)")
_MY_DOWN = "LOWER(LPAD(CONV(CAST({c} AS SIGNED) ^ 0x8000000000000000, 10, 16), 16, '0'))"


def _up_text(value: str) -> str:
    return str(to_sql(value[:LENGTH]))


def _down_text(value: str | int) -> str:
    return from_sql(int(value))


def _sqlite_functions() -> None:
    driver: Any = op.get_bind().connection.driver_connection  # sqlite3's connection
    driver.create_function('tidings_hash_up', 1, _up_text, deterministic=True)
    driver.create_function('tidings_hash_down', 1, _down_text, deterministic=True)


def _alter(table: str, columns: Sequence[str], kind: str, using: str | None) -> None:
    """One ALTER TABLE for all of a table's hash columns (one rewrite of the table and its
    indexes); SQLite copies the table (Alembic's batch)."""
    dialect = op.get_bind().dialect.name
    if dialect == 'sqlite':
        with op.batch_alter_table(table) as batch:
            for column in columns:
                batch.alter_column(column, type_=sa.BigInteger() if kind == 'BIGINT' else OLD,
                                   existing_nullable=False)
        return
    if dialect == 'postgresql':
        changes = [f"ALTER COLUMN {c} TYPE {kind} USING {(using or c).format(c=c)}"
                   for c in columns]
    else:
        changes = [f"MODIFY {c} {kind} NOT NULL" for c in columns]
    op.execute(f"ALTER TABLE {table} {', '.join(changes)}")


def _rewrite(table: str, columns: Sequence[str], expression: str) -> None:
    op.execute(f"UPDATE {table} SET "
               + ", ".join(f"{c} = {expression.format(c=c)}" for c in columns))


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == 'sqlite':
        _sqlite_functions()
    # mail moved to the digest past the daily cap was queued with no bundle (''): a hash of
    # its own now, so it stays an item of its own (16 hex characters of the event id)
    op.execute("UPDATE email_batch SET bundle_hash = "
               + ("lpad(to_hex(event_id), 16, '0')" if dialect == 'postgresql' else
                  "LOWER(LPAD(CONV(event_id, 10, 16), 16, '0'))" if dialect != 'sqlite' else
                  "printf('%016x', event_id)")
               + " WHERE bundle_hash = ''")
    for table, columns in COLUMNS.items():
        if dialect == 'postgresql':
            _alter(table, columns, 'BIGINT', _PG_UP)
            continue
        _rewrite(table, columns, 'tidings_hash_up({c})' if dialect == 'sqlite' else _MY_UP)
        _alter(table, columns, 'BIGINT', None)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == 'sqlite':
        _sqlite_functions()
    for table, columns in COLUMNS.items():
        if dialect == 'postgresql':
            _alter(table, columns, 'VARCHAR(32)', _PG_DOWN)
            continue
        _alter(table, columns, 'VARCHAR(32)', None)
        _rewrite(table, columns, 'tidings_hash_down({c})' if dialect == 'sqlite' else _MY_DOWN)
