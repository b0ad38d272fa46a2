"""A connection handed back to the pool is rolled back only where a transaction is still open:
on MariaDB the pool's ROLLBACK after every COMMIT was a round trip of its own
(``store/sql/mariadb.py``). Either way nothing of an unfinished transaction survives the
hand-back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select

from tidings.store.sql.database import Database
from tidings.store.sql.schema import users


@contextmanager
def rollbacks(db: Database) -> Iterator[list[int]]:
    """The driver-level ROLLBACKs sent meanwhile (MariaDB: pymysql's), counted."""
    sent = [0]
    if db.backend != "mysql":
        yield sent
        return
    import pymysql.connections

    original = pymysql.connections.Connection.rollback

    def counted(self: Any) -> None:
        sent[0] += 1
        original(self)

    pymysql.connections.Connection.rollback = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        pymysql.connections.Connection.rollback = original  # type: ignore[method-assign]


def test_a_committed_unit_hands_its_connection_back_without_a_rollback(
        store_url: str) -> None:
    db = Database(store_url, pool_size=1)
    try:
        with db.write() as conn:  # a new connection's own set-up comes first
            conn.execute(users.insert().values(user_id="first", created_at=0))
        with rollbacks(db) as sent:
            for n in range(3):
                with db.write() as conn:
                    conn.execute(users.insert().values(user_id=f"u{n}", created_at=n))
        assert sent == [0]
        with db.read() as conn:
            assert len(conn.execute(select(users.c.user_id)).all()) == 4
    finally:
        db.engine.dispose()


def test_an_open_transaction_handed_back_is_rolled_back(store_url: str) -> None:
    """A connection handed back in the middle of a transaction (a driver cursor used outside
    a unit) is rolled back: the next unit on the same pooled connection, committing its own
    row, does not commit the stray one with it."""
    db = Database(store_url, pool_size=1)
    try:
        raw = db.engine.raw_connection()
        cursor = raw.cursor()
        if db.backend == "sqlite":  # its driver runs in autocommit: tidings sends BEGIN itself
            cursor.execute("BEGIN")
        cursor.execute("INSERT INTO users (user_id, created_at) VALUES ('stray', 1)")
        cursor.close()
        with rollbacks(db) as sent:
            raw.close()
        assert sent == ([1] if db.backend == "mysql" else [0])
        with db.write() as conn:
            conn.execute(users.insert().values(user_id="kept", created_at=2))
        with db.read() as conn:
            assert [r[0] for r in conn.execute(select(users.c.user_id))] == ["kept"]
    finally:
        db.engine.dispose()
