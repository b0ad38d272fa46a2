"""Rate-limit buckets in SQL (part of the one declared schema, ``schema``).

``rate_buckets``: one token bucket per limited key (a hash of a server key), shared by every
API process on every machine that uses the database (``tidings.store.sql.ratebuckets``).
``granted`` is whether the last take was let through, so one statement both updates the
bucket and answers.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Double, String, Table

from tidings.store.sql.schema.base import MYSQL, metadata

rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("bucket", String(64), primary_key=True),
    Column("tokens", Double, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("granted", Boolean, nullable=False),
    **MYSQL,
)
