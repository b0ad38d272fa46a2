"""Web Push subscriptions in SQL (part of the one declared schema, ``schema``).

``push_subscriptions``: one row per browser subscription (the push service's endpoint URL and
the keys the payload is encrypted to). An endpoint belongs to one user at a time: it is unique
by its hash (``endpoint_hash``, since an endpoint URL is too long for a unique index on
MariaDB/MySQL), and registering it again moves it.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table

from tidings.store.sql.schema.base import MYSQL, Serial, metadata

ENDPOINT = 2048

push_subscriptions = Table(
    "push_subscriptions",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("user_id", String(255), nullable=False),
    Column("endpoint", String(ENDPOINT), nullable=False),
    Column("endpoint_hash", String(64), nullable=False, unique=True),
    Column("p256dh", String(128), nullable=False),
    Column("auth", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "user_id", "id"),
    sqlite_autoincrement=True,  # an id, once deleted, never names another subscription
    **MYSQL,
)
