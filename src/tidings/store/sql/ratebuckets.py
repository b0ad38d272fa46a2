"""Token buckets every API process shares: a row per bucket, taken from atomically.

One statement refills the bucket for the time since its last take (at ``rate`` tokens a
second, up to ``capacity``), takes ``cost`` if it holds that much and says whether it did.
The row is locked by the statement itself, so concurrent takes from any number of processes
queue on it and never both spend the same tokens. PostgreSQL and SQLite answer in that one
statement (``INSERT … ON CONFLICT DO UPDATE … RETURNING``, autocommit: one round trip);
MariaDB/MySQL update in ``INSERT … ON DUPLICATE KEY UPDATE`` and read the row back in the
same transaction.

Times are the caller's clock; a bucket never refills backwards (a process whose clock is
behind another's adds nothing until it catches up).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Double, case, literal, select
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import rate_buckets

SECOND = 1_000_000


def take(db: Database, bucket: str, cost: float, *, rate: float, capacity: float,
         now: int) -> float:
    """Take ``cost`` tokens from ``bucket``: 0 if they were there, else the seconds until
    they will be. ``cost`` must not exceed ``capacity`` (the caller refuses such requests)."""
    table = rate_buckets
    now_p = literal(now, BigInteger())
    cost_p: Any = literal(cost, Double())
    cap_p: Any = literal(capacity, Double())
    elapsed = case((now_p > table.c.updated_at, now_p - table.c.updated_at), else_=0)
    filled = table.c.tokens + elapsed * literal(rate / SECOND, Double())
    refilled = case((filled > cap_p, cap_p), else_=filled)
    values = {"bucket": bucket, "tokens": capacity - cost, "updated_at": now, "granted": True}
    updates: list[tuple[str, Any]] = [
        # in this order: MariaDB/MySQL assign left to right, each seeing those before it
        ("granted", refilled >= cost_p),
        ("tokens", case((refilled >= cost_p, refilled - cost_p), else_=refilled)),
        ("updated_at", case((now_p > table.c.updated_at, now_p), else_=table.c.updated_at)),
    ]
    if db.backend in ("postgresql", "sqlite"):
        dialect: Any = pg_dialect if db.backend == "postgresql" else sqlite_dialect
        upsert = dialect.insert(table).values(**values)
        statement = upsert.on_conflict_do_update(
            index_elements=["bucket"], set_=dict(updates)
        ).returning(table.c.tokens, table.c.granted)
        with db.read() as conn:  # autocommit: the one statement is the whole unit
            tokens, granted = conn.execute(statement).one()
    else:
        statement = mysql_dialect.insert(table).values(**values).on_duplicate_key_update(
            updates)
        with db.write() as conn:
            conn.execute(statement)
            tokens, granted = conn.execute(
                select(table.c.tokens, table.c.granted)
                .where(table.c.bucket == bucket)).one()
    if granted:
        return 0.0
    return max((cost - float(tokens)) / rate, 0.001)
