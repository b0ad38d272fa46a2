"""Raw database connections for the baselines: psycopg 3, the stdlib ``sqlite3`` or PyMySQL
straight, with no SQLAlchemy and no tidings code between the statement and the driver.

A baseline is the minimal client doing a job (``../shared/bench-anchors/raw_postgresql.py``), so
this wrapper stays thin: statements are written once with ``%s`` placeholders (turned into
``?`` for sqlite3 when the connection is made), PostgreSQL statements are prepared on the
server (``prepare=True``), sqlite3 keeps its own statement cache, and PyMySQL, which has no
server-side statements, sends them as text, as any PyMySQL client does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
import pymysql  # type: ignore[import-untyped]
from sqlalchemy.engine import URL, make_url

from tidings_benchmarks.sql import normalise_url

Row = tuple[Any, ...]


def parse(url: str) -> tuple[str, URL]:
    """The backend ('postgresql', 'sqlite' or 'mysql') and the parsed URL of a store URL."""
    parsed = make_url(normalise_url(url))
    backend = parsed.get_backend_name()
    return ("mysql" if backend in ("mysql", "mariadb") else backend), parsed


def style(backend: str, statement: str) -> str:
    """``statement``, written with ``%s`` placeholders, in ``backend``'s driver's style."""
    return statement.replace("%s", "?") if backend == "sqlite" else statement


def pg_params(parsed: URL) -> dict[str, Any]:
    """psycopg connection parameters for a parsed ``postgresql://`` URL."""
    params: dict[str, Any] = {"host": parsed.host or "localhost", "port": parsed.port or 5432,
                              "dbname": parsed.database or "postgres"}
    if parsed.username:
        params["user"] = parsed.username
    if parsed.password:
        params["password"] = parsed.password
    params.update({k: v for k, v in parsed.query.items() if isinstance(v, str)})
    return params


def sqlite_connect(path: str, *, autocommit: bool) -> sqlite3.Connection:
    """A sqlite3 connection with the settings tidings' own connections use (WAL, NORMAL)."""
    conn = sqlite3.connect(path, timeout=30, check_same_thread=False,
                           isolation_level=None if autocommit else "DEFERRED")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


class RawConnection:
    """One driver connection to a store URL.

    ``autocommit``: every statement commits on its own (one round trip), as a request that runs
    one statement does; otherwise :meth:`commit` ends the transaction.
    """

    def __init__(self, url: str, *, autocommit: bool = True) -> None:
        self.backend, parsed = parse(url)
        self.autocommit = autocommit
        self._pg: psycopg.Connection[Row] | None = None
        self._lite: sqlite3.Connection | None = None
        self._my: Any = None
        if self.backend == "postgresql":
            self._pg = psycopg.connect(**pg_params(parsed), autocommit=autocommit)
        elif self.backend == "sqlite":
            self._lite = sqlite_connect(parsed.database or "", autocommit=autocommit)
        elif self.backend == "mysql":
            self._my = pymysql.connect(
                host=parsed.host or "localhost", port=parsed.port or 3306,
                user=parsed.username or "root", password=parsed.password or "",
                database=parsed.database, charset="utf8mb4", autocommit=autocommit)
        else:
            raise ValueError(f"no raw driver for {self.backend!r}")
        self._cursor: Any = self._my.cursor() if self._my is not None else None

    def sql(self, statement: str) -> str:
        """``statement`` in this driver's placeholder style."""
        return style(self.backend, statement)

    def fetch(self, statement: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a statement already in this driver's style; return its rows (none for writes)."""
        if self._pg is not None:
            cur = self._pg.execute(statement, params, prepare=True)
            return cur.fetchall() if cur.description is not None else []
        if self._lite is not None:
            return self._lite.execute(statement, params).fetchall()
        self._cursor.execute(statement, params)
        return list(self._cursor.fetchall())

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        """Run a statement already in this driver's style; return the rows it changed."""
        if self._pg is not None:
            return self._pg.execute(statement, params, prepare=True).rowcount
        if self._lite is not None:
            return self._lite.execute(statement, params).rowcount
        return int(self._cursor.execute(statement, params))

    def insert_id(self, statement: str, params: Sequence[Any]) -> int:
        """Run an INSERT of one row and return its new id (PostgreSQL: ``… RETURNING id``)."""
        if self._pg is not None:
            return int(self.fetch(statement + " RETURNING id", params)[0][0])
        if self._lite is not None:
            return int(self._lite.execute(statement, params).lastrowid or 0)
        self._cursor.execute(statement, params)
        return int(self._cursor.lastrowid)

    def type_id(self, name: str, category: str, section: str) -> int:
        """A type's id in tidings' types dictionary (``inbox_types``: a notification row holds
        it), its row added where there is none yet."""
        select = self.sql("SELECT id FROM inbox_types WHERE name = %s")
        found = self.fetch(select, (name,))
        if not found:
            self.execute(self.sql("INSERT INTO inbox_types (name, category, section) "
                                  "VALUES (%s, %s, %s)"), (name, category, section))
            found = self.fetch(select, (name,))
        return int(found[0][0])

    def write_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]],
                   *, batch: int = 1000) -> int:
        """Write rows from the client as fast as the driver allows: ``COPY`` on PostgreSQL,
        ``executemany`` (multi-row VALUES on PyMySQL) elsewhere. Returns the row count."""
        names = ", ".join(columns)
        if self._pg is not None:
            written = 0
            copy = f"COPY {table} ({names}) FROM STDIN"
            with self._pg.cursor() as cur, cur.copy(copy) as cp:
                for row in rows:
                    cp.write_row(row)
                    written += 1
            return written
        statement = self.sql(f"INSERT INTO {table} ({names}) VALUES "
                             f"({', '.join(['%s'] * len(columns))})")
        written = 0
        chunk: list[Sequence[Any]] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) == batch:
                written += self._many(statement, chunk)
                chunk = []
        return written + (self._many(statement, chunk) if chunk else 0)

    def _many(self, statement: str, rows: list[Sequence[Any]]) -> int:
        if self._lite is not None:
            self._lite.executemany(statement, rows)
        else:
            self._cursor.executemany(statement, rows)
        return len(rows)

    def commit(self) -> None:
        if self._pg is not None:
            self._pg.commit()
        elif self._lite is not None:
            if self._lite.in_transaction:
                self._lite.commit()
        else:
            assert self._my is not None
            self._my.commit()

    def close(self) -> None:
        for conn in (self._pg, self._lite, self._my):
            if conn is not None:
                conn.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
