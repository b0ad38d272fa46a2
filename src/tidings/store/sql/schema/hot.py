"""The Redis hot store's durable side in SQL (part of the one declared schema, ``schema``).

``hot_journal``: one row per unit of work that wrote to Redis, holding the unit's Redis writes
(JSON), inserted in the unit's transaction, so that ``tidings rebuild-hot-store`` replays them
in order into an emptied Redis and gets back exactly what was there
(``tidings.store.sql.journal``, ``tidings.store.redis.journal``). Unused by a deployment
without a hot store. ``written_at`` is the wall clock (µs) when the row was written; a
checkpoint's is minus the store's time when it was taken.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Table, Text
from sqlalchemy.dialects import mysql

from tidings.store.sql.schema.base import MYSQL, Serial, metadata

# MariaDB/MySQL's TEXT holds 64 KB: a unit's writes may be more (a chunk of 5,000 users)
LongText = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")

hot_journal = Table(
    "hot_journal",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("written_at", BigInteger, nullable=False),
    Column("writes", LongText, nullable=False),
    **MYSQL,
)
