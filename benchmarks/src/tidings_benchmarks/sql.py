"""The bench's own SQLAlchemy connection to a bench store: counting rows, watching the job queue,
saving and restoring read markers, emptying tables between rounds. It names only the few tables
and columns it reads, and reflects the rest from the database, so it needs nothing from inside
tidings (tidings itself reads and writes through :class:`~tidings.engine.Tidings`)."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sqlalchemy import Boolean, Connection, Engine, MetaData, Table, column, create_engine, table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

T = TypeVar("T")

# The columns of tidings' tables the bench reads (tidings' migrations make them).
notifications = table("notifications", column("user_id"), column("event_id"),
                      column("display_hash"), column("bundle_base", Boolean()),
                      column("read_at"))
follows = table("follows", column("follower"), column("followee"))
jobs = table("jobs", column("id"), column("func"))

def normalise_url(url: str) -> str:
    """The short spellings of a store URL (``postgres://``, ``postgresql://``, ``mysql://``,
    ``mariadb://``) with the drivers tidings ships with, as ``tidings`` itself reads them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    elif url.startswith("mysql://"):
        url = "mysql+pymysql://" + url[len("mysql://"):]
    elif url.startswith(("mariadb://", "mariadb+pymysql://")):
        url = "mysql+pymysql://" + url.split("://", 1)[1]
    return url


def _retryable(exc: DBAPIError) -> bool:
    """PostgreSQL's deadlock or serialisation failure, MariaDB's deadlock or lock wait timeout,
    SQLite's busy database: worth running the transaction again."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in ("40P01", "40001"):
        return True
    args = getattr(orig, "args", ())
    if args and args[0] in (1213, 1205):
        return True
    return "database is locked" in str(orig)


class SqlDatabase:
    """An engine on one bench store's URL; :meth:`dispose` closes its connections."""

    def __init__(self, url: str, *, pooled: bool = True) -> None:
        self.url = normalise_url(url)
        self.backend = self.url.split(":", 1)[0].split("+", 1)[0].replace("mariadb", "mysql")
        connect_args = {"timeout": 30} if self.backend == "sqlite" else {}
        # unpooled: no connection is left open on a database someone else may drop
        pool: dict[str, Any] = {} if pooled else {"poolclass": NullPool}
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True,
                                            connect_args=connect_args, **pool)

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection that only reads, each statement on its own."""
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            yield conn

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A transaction, committed when the block ends without error."""
        with self.engine.begin() as conn:
            yield conn

    def transact(self, work: Callable[[Connection], T], *, attempts: int = 5) -> T:
        """Run ``work`` in a transaction, again after a deadlock (a worker process left running
        between rounds may start a unit of its own just then)."""
        for attempt in range(attempts):
            try:
                with self.write() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if attempt == attempts - 1 or not _retryable(exc):
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")

    def tables(self) -> list[Table]:
        """Every table in the store, reflected, those referenced before those referring."""
        meta = MetaData()
        with self.read() as conn:
            meta.reflect(conn)
        return list(meta.sorted_tables)

    def table(self, name: str) -> Table:
        """One table of the store, reflected (every column, as the migrations made it)."""
        with self.read() as conn:
            return Table(name, MetaData(), autoload_with=conn)

    def dispose(self) -> None:
        self.engine.dispose()
