"""MariaDB/MySQL connection upkeep the pool does not do as cheaply by itself."""

from __future__ import annotations

from typing import Any

IN_TRANSACTION = 1  # SERVER_STATUS_IN_TRANS of the server's replies (pymysql.constants)


def rollback_if_open(dbapi_connection: Any, _record: Any, _state: Any) -> None:
    """The pool's reset of a connection handed back: a ROLLBACK only where a transaction is
    still open, as the status of the server's last reply tells (pymysql keeps it), instead of
    after every unit of work. A unit's COMMIT had been followed by the pool's ROLLBACK, a
    round trip of its own on MariaDB (PostgreSQL's driver skips it when no transaction is
    open): a quarter of a mark all read's round trips. A driver that keeps no status gets the
    ROLLBACK."""
    status = getattr(dbapi_connection, "server_status", None)
    if status is None or status & IN_TRANSACTION:
        dbapi_connection.rollback()
