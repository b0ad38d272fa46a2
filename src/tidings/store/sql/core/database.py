"""One SQLAlchemy engine per store URL, with the few dialect differences kept here.

``write()`` opens a transaction that may write (``BEGIN IMMEDIATE`` on SQLite, so a
transaction that reads and then writes never dead-ends on a lock upgrade); ``read()`` opens one
that only reads. Driver errors are classified by kind (:func:`classify`): a store that cannot
serve now (connection lost, too busy, timed out, deadlocked) raises :class:`StoreUnavailable`,
a value it refuses raises :class:`StoreRejected`, anything else (integrity errors, defects)
stays the driver's error. Deadlocks and serialisation failures are retried a few times by
:meth:`Database.transact`.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Insert,
    String,
    Table,
    any_,
    bindparam,
    cast,
    create_engine,
    event,
    func,
    insert,
    literal_column,
    select,
    text,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tidings.exceptions import ConfigError, StoreUnavailable
from tidings.store.sql.core.boundedpg import connect_bounded
from tidings.store.sql.core.bulk import column_arrays, json_batches, unnest_insert
from tidings.store.sql.core.errors import classify, is_retryable
from tidings.store.sql.core.hashes import Hash64, rows_to_sql, to_sql
from tidings.store.sql.core.timeouts import SqlTimeouts

T = TypeVar("T")

IN_LIST = 5000  # values per IN (…) list where a statement takes them one parameter each

def normalise_url(url: str) -> str:
    """Accept the short spellings users type and pick the drivers tidings ships with."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    elif url.startswith("mysql://"):
        url = "mysql+pymysql://" + url[len("mysql://"):]
    elif url.startswith("mariadb://") or url.startswith("mariadb+pymysql://"):
        url = "mysql+pymysql://" + url.split("://", 1)[1]
    return url


JSON_LIST = 256  # values from which among() sends a JSON array
IDLE_PING_SECONDS = 1.0  # a pooled connection idle longer is pinged before use


class Database:
    """A store URL's engine and its dialect's quirks."""

    def __init__(self, url: str, *, pool_size: int = 5, echo: bool = False,
                 timeouts: SqlTimeouts | None = None) -> None:
        self.url = normalise_url(url)
        self.timeouts = timeouts or SqlTimeouts()
        try:
            parsed = make_url(self.url)
        except sa_exc.ArgumentError:
            raise ConfigError(f"TIDINGS_DATABASE_URL: cannot parse {url!r}") from None
        backend = parsed.get_backend_name()
        if backend not in ("sqlite", "postgresql", "mysql", "mariadb"):
            raise ConfigError(
                f"TIDINGS_DATABASE_URL: unsupported backend {backend!r}; use sqlite, "
                "postgresql or mysql+pymysql"
            )
        self.backend = "mysql" if backend in ("mysql", "mariadb") else backend
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        if self.backend == "sqlite":
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
            if parsed.database in (None, "", ":memory:"):
                raise ConfigError("TIDINGS_DATABASE_URL: use a SQLite file, not :memory:")
            kwargs["poolclass"] = NullPool if pool_size == 0 else None
            if kwargs["poolclass"] is None:
                del kwargs["poolclass"]
        else:
            kwargs["pool_size"] = pool_size
            kwargs["max_overflow"] = pool_size * 2
            kwargs["pool_recycle"] = 1800
            kwargs["pool_timeout"] = self.timeouts.pool
            # a store that stops answering (refused, dropped or hung) must become a 503, not
            # a hang: every wait on it is bounded (see .timeouts)
            if self.backend == "postgresql":
                kwargs["connect_args"] = self.timeouts.postgresql()
                # psycopg 3 forgets an INSERT's rowcount once SQLAlchemy closes the cursor, so
                # "was this row new?" (INSERT … ON CONFLICT DO NOTHING) would always say no.
                kwargs["execution_options"] = {"preserve_rowcount": True}
            else:
                kwargs["connect_args"] = {"charset": "utf8mb4", **self.timeouts.mysql()}
                kwargs["isolation_level"] = "READ COMMITTED"
        self.engine: Engine = create_engine(self.url, **kwargs)
        if self.backend == "postgresql":
            # executemany as multi-row INSERT … VALUES statements (pymysql rewrites its own),
            # not one statement per row
            self.engine.dialect.use_insertmanyvalues_wo_returning = True
            connect_bounded(self.engine, self.timeouts.answer)
        if self.backend == "sqlite":
            self._set_up_sqlite()
        else:
            self._ping_when_idle()
        self.reader: Engine = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._compiled: dict[Any, Any] = {}  # statement -> its compiled form, for fetch()

    def _ping_when_idle(self) -> None:
        """Check a pooled connection before use only if it sat idle: a busy process reuses its
        connections within milliseconds, and a ping on every checkout (``pool_pre_ping``)
        would add a round trip to every read. A dead one is replaced (the pool retries)."""
        dialect = self.engine.dialect

        @event.listens_for(self.engine, "checkin")
        def _on_checkin(_dbapi: Any, record: Any) -> None:
            record.info["tidings_idle_since"] = time.monotonic()

        @event.listens_for(self.engine, "checkout")
        def _on_checkout(dbapi: Any, record: Any, _proxy: Any) -> None:
            since = record.info.get("tidings_idle_since")
            if since is not None and time.monotonic() - since > IDLE_PING_SECONDS:
                try:
                    alive = dialect.do_ping(dbapi)
                except Exception as exc:
                    raise sa_exc.DisconnectionError(str(exc)) from exc
                if not alive:
                    raise sa_exc.DisconnectionError("the connection did not answer a ping")

    def _set_up_sqlite(self) -> None:
        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Let SQLAlchemy, not the driver, decide when transactions begin.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=OFF")
            cursor.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: Connection) -> None:
            if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
                return  # a reader: each statement on its own
            mode = conn.info.get("tidings_begin", "BEGIN IMMEDIATE")
            conn.exec_driver_sql(mode)

    @property
    def skip_locked(self) -> bool:
        return self.backend in ("postgresql", "mysql")

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A transaction that may write; committed when the block ends without error."""
        with self._errors(), self.engine.connect() as conn:
            conn.info["tidings_begin"] = "BEGIN IMMEDIATE"
            with conn.begin():
                yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection that only reads, each statement on its own (autocommit): no BEGIN and
        COMMIT round trips around a read, which the hot reads (a count, a page) cannot
        afford. Statements of one read may see commits made between them. The store's hot
        reads go through :mod:`.heldread` instead, which keeps one such connection per
        thread."""
        with self._errors(), self.reader.connect() as conn:
            yield conn

    def transact(self, work: Callable[[Connection], T], *, attempts: int = 5) -> T:
        """Run ``work`` in a write transaction, retrying on deadlock or serialisation failure."""
        for attempt in range(attempts):
            try:
                with self.write() as conn:
                    return work(conn)
            except StoreUnavailable as exc:
                if attempt == attempts - 1 or exc.__cause__ is None \
                        or not is_retryable(exc.__cause__):
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")

    def errors(self) -> contextlib.AbstractContextManager[None]:
        """Driver errors as their kind's :class:`TidingsError`, for connections held
        elsewhere (:mod:`.heldread`)."""
        return self._errors()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Driver errors as their kind's :class:`TidingsError` (see :func:`classify`)."""
        try:
            yield
        except sa_exc.DBAPIError as exc:
            error = classify(exc)
            if error is None:
                raise
            raise error from exc
        except sa_exc.TimeoutError as exc:  # no pooled connection came free in time
            raise StoreUnavailable(f"the store is too busy: no connection came free within "
                                   f"{self.timeouts.pool:g} s") from exc

    def insert_ignore(self, table: Table) -> Insert:
        """An INSERT that skips rows whose unique key already exists."""
        if self.backend == "postgresql":
            return pg_dialect.insert(table).on_conflict_do_nothing()
        if self.backend == "sqlite":
            return sqlite_dialect.insert(table).on_conflict_do_nothing()
        return mysql_dialect.insert(table).prefix_with("IGNORE")

    def upsert(self, table: Table, keys: Sequence[str], values: Mapping[str, Any],
               update: Sequence[str]) -> Any:
        """INSERT or, when the key exists, UPDATE the ``update`` columns."""
        if self.backend == "postgresql":
            pg = pg_dialect.insert(table).values(**values)
            return pg.on_conflict_do_update(
                index_elements=list(keys), set_={c: pg.excluded[c] for c in update}
            )
        if self.backend == "sqlite":
            lite = sqlite_dialect.insert(table).values(**values)
            return lite.on_conflict_do_update(
                index_elements=list(keys), set_={c: lite.excluded[c] for c in update}
            )
        my = mysql_dialect.insert(table).values(**values)
        return my.on_duplicate_key_update({c: my.inserted[c] for c in update})

    def upsert_add(self, table: Table, keys: Sequence[str], column: str) -> Any:
        """An INSERT (for executemany) that, when the key exists, only adds the given
        ``column`` value to the stored one (NULL counting as 0)."""
        stored = func.coalesce(table.c[column], literal_column("0"))  # no bound parameter
        if self.backend == "postgresql":
            pg = pg_dialect.insert(table)
            return pg.on_conflict_do_update(
                index_elements=list(keys), set_={column: stored + pg.excluded[column]})
        if self.backend == "sqlite":
            lite = sqlite_dialect.insert(table)
            return lite.on_conflict_do_update(
                index_elements=list(keys), set_={column: stored + lite.excluded[column]})
        my = mysql_dialect.insert(table)
        return my.on_duplicate_key_update({column: stored + my.inserted[column]})

    def add_rows(self, conn: Connection, table: Table, keys: Sequence[str], column: str,
                 rows: Sequence[Mapping[str, Any]], returning: Sequence[str] = ()
                 ) -> list[Any] | None:
        """Insert ``rows`` or, for a key that exists, add their ``column`` value to the
        stored one (:meth:`upsert_add`); the ``returning`` columns of the written rows where
        the backend hands them back, in that order (not MariaDB: None)."""
        if not rows:
            return []
        if self.backend == "postgresql":
            rows = rows_to_sql(table, rows)
            columns = tuple(rows[0])
            single, params = column_arrays(rows, columns)
            stmt = unnest_insert(table, columns, False, tuple(keys), column, tuple(returning),
                                 single)  # built once per shape: run on the driver
            if returning:
                return self.fetch(conn, stmt, params)
            self.run(conn, stmt, params)
            return []
        batches = (json_batches(table, rows_to_sql(table, rows), add=column)
                   if self.backend == "mysql" else None)
        if batches is not None:  # MariaDB hands no rows back
            for statement, params in batches:
                self.run(conn, statement, params)
            return None if returning else []
        upsert = self.upsert_add(table, keys, column)
        if returning and self.backend == "sqlite":
            return list(conn.execute(upsert.returning(*(table.c[c] for c in returning)),
                                     [dict(row) for row in rows]))
        conn.execute(upsert, [dict(row) for row in rows])
        return None if returning else []

    def insert_many(self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]],
                    *, ignore: bool = False, batch: int = 1000) -> None:
        """Write rows in batches of one statement each (on PostgreSQL, rows that all name the
        same columns in one statement of column arrays: :func:`.bulk.unnest_insert`).

        An executemany lets SQLAlchemy send multi-row VALUES from one cached compilation
        ("insertmanyvalues"), several times faster than compiling a literal multi-row INSERT.
        """
        # the JSON arrays of PostgreSQL and MariaDB bypass the columns' types (hashes)
        if self.backend == "postgresql" and rows:
            columns = tuple(rows[0])
            names = rows[0].keys()
            if all(row.keys() == names for row in rows):
                single, params = column_arrays(rows_to_sql(table, rows), columns)
                self.run(conn, unnest_insert(table, columns, ignore, single=single), params)
                return
        batches = (json_batches(table, rows_to_sql(table, rows), ignore=ignore)
                   if self.backend == "mysql" else None)
        for statement, params in batches or ():
            self.run(conn, statement, params)
        if batches is not None:
            return
        stmt = self.insert_ignore(table) if ignore else insert(table)
        for start in range(0, len(rows), batch):
            conn.execute(stmt, [dict(row) for row in rows[start:start + batch]])

    def among(self, column: ColumnElement[Any], values: Sequence[Any]) -> ColumnElement[bool]:
        """``column IN (values)``; on PostgreSQL ``column = ANY(array)``: one parameter, so
        the statement's text stays short and the same for any number of values. For lookups
        by a leading index column (an index condition, not a filter). A long list goes as
        the text of a JSON array, made into the array in the server (``ARRAY(SELECT …)``, an
        init plan: still an index condition): the driver would adapt a list element by element
        in Python (:mod:`.bulk`)."""
        if self.backend != "postgresql":
            return column.in_(list(values))
        if len(values) < JSON_LIST:
            return column == any_(bindparam(None, list(values),
                                            type_=pg_dialect.ARRAY(column.type)))
        if isinstance(column.type, Hash64):  # the JSON array bypasses the column's type
            values = [to_sql(v) for v in values]
        text_of = cast(bindparam(None, json.dumps(list(values)), type_=String), pg_dialect.JSON)
        elements = select(cast(func.json_array_elements_text(text_of), column.type))
        return column == any_(func.array(elements.scalar_subquery()))

    def parts(self, values: Sequence[T], size: int = IN_LIST) -> Iterator[Sequence[T]]:
        """``values`` in parts for :meth:`among`: all at once on PostgreSQL, else at most
        ``size`` at a time (the bound-parameter limits of the other drivers)."""
        step = max(len(values), 1) if self.backend == "postgresql" else size
        for start in range(0, len(values), step):
            yield values[start:start + step]

    def driver_form(self, statement: Any, params: Mapping[str, Any]) -> tuple[str, Any]:
        """A statement built once as the driver runs it: its SQL text (compiled once, then
        kept) and ``params`` in the driver's form."""
        compiled = self._compiled.get(statement)
        if compiled is None:
            compiled = statement.compile(dialect=self.engine.dialect)
            self._compiled[statement] = compiled
        values = compiled.construct_params(dict(params))
        args: Any = ([values[name] for name in compiled.positiontup]
                     if compiled.positional else values)
        return compiled.string, args

    def fetch(self, conn: Connection, statement: Any, params: Mapping[str, Any], *,
              planned_each_time: bool = False) -> list[tuple[Any, ...]]:
        """Run a statement built once (a module-level or cached one) straight on the driver's
        connection under ``conn``: compiled once, then each call is the driver's execute (a
        prepared statement on PostgreSQL, after psycopg's threshold) with none of the per-call
        work of SQLAlchemy's execution (result metadata, row objects, events). For the hot
        reads of plain values only (no type conversion beyond the driver's, no expanding
        parameters). Listeners of
        ``before_cursor_execute`` still hear it; driver errors are raised as SQLAlchemy's (a
        lost connection invalidated), so callers see no difference. ``planned_each_time``:
        never a prepared statement on PostgreSQL, so each call is planned for its own
        parameters (a statement whose best plan depends on them, where a generic plan chosen
        under other statistics can read far more)."""
        found: list[tuple[Any, ...]] = self._on_driver(conn, statement, params, True,
                                                       planned_each_time)
        return found

    def run(self, conn: Connection, statement: Any, params: Mapping[str, Any]) -> int:
        """:meth:`fetch` for a statement that returns no rows (a hot write): the rows it
        changed, as the driver counts them."""
        changed: int = self._on_driver(conn, statement, params, False)
        return changed

    def _on_driver(self, conn: Connection, statement: Any, params: Mapping[str, Any],
                   rows: bool, planned_each_time: bool = False) -> Any:
        sql, args = self.driver_form(statement, params)
        dialect = self.engine.dialect
        driver = conn.connection.dbapi_connection
        cursor = driver.cursor()  # type: ignore[union-attr]
        try:
            if conn.dispatch.before_cursor_execute:  # listeners (statement counts, plans)
                conn.dispatch.before_cursor_execute(conn, cursor, sql, args, None, False)
            if planned_each_time and self.backend == "postgresql":
                cursor.execute(sql, args, prepare=False)  # type: ignore[call-arg]  # psycopg 3
            else:
                cursor.execute(sql, args)
            return list(cursor.fetchall()) if rows else cursor.rowcount
        except dialect.loaded_dbapi.Error as exc:
            lost = dialect.is_disconnect(exc, driver, cursor)
            if lost:
                conn.invalidate(exc)
            raise sa_exc.DBAPIError.instance(
                sql, args, exc, dialect.loaded_dbapi.Error,
                connection_invalidated=lost, dialect=dialect) from exc
        finally:
            cursor.close()

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()
