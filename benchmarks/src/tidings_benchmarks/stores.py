"""Throwaway stores: a bench works in a database (or SQLite file) it creates, and drops it after.

Given a server URL (``postgresql://…/any``, ``mysql+pymysql://…``) a bench creates a database
named ``tidings_bench_<random>`` on that server, migrates it, and drops it at the end; the
database named in the URL is only where the ``CREATE DATABASE`` is sent from. Given a SQLite
URL it works on a new file beside the named one; given nothing, on a file in a temporary
folder. No bench ever writes to a database it did not make.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from tidings.engine import Tidings
from tidings.exceptions import ConfigError
from tidings_benchmarks.sql import SqlDatabase, normalise_url

# The bench's own connections to the bench stores now open, by URL (see database_of).
_OPEN: dict[str, SqlDatabase] = {}


def redacted(url: str) -> str:
    """``url`` with any password masked, for tables and JSON."""
    return make_url(url).render_as_string(hide_password=True)


class BenchStore:
    """A fresh, migrated store for one bench run. Use as a context manager; ``url`` is its URL."""

    def __init__(self, server_url: str | None) -> None:
        self._temp_dir: Path | None = None
        self._admin_url: str | None = None
        if server_url is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="tidings-bench-"))
            server_url = f"sqlite:///{self._temp_dir / 'bench.db'}"
        self.requested = server_url
        try:
            parsed = make_url(normalise_url(server_url))
        except Exception:
            raise ConfigError(f"--store: cannot parse {server_url!r}") from None
        self.backend = parsed.get_backend_name()
        if self.backend == "mariadb":
            self.backend = "mysql"
        self.name = f"tidings_bench_{secrets.token_hex(5)}"
        if self.backend == "sqlite":
            if self._temp_dir is not None:
                self.url = server_url
            else:
                if not parsed.database or parsed.database == ":memory:":
                    raise ConfigError("--store: use a SQLite file, not :memory:")
                beside = Path(parsed.database).resolve().parent
                self.url = f"sqlite:///{beside / (self.name + '.db')}"
        elif self.backend in ("postgresql", "mysql"):
            self._admin_url = parsed.set(
                database=(parsed.database or "postgres") if self.backend == "postgresql" else None
            ).render_as_string(hide_password=False)
            self.url = parsed.set(database=self.name).render_as_string(hide_password=False)
        else:
            raise ConfigError(
                f"--store: unsupported backend {self.backend!r}; use sqlite, postgresql or "
                "mysql+pymysql")
        self._created = False
        self._db: SqlDatabase | None = None
        self.tables: list[str] = []  # tidings' own, made by its migrations

    def __enter__(self) -> BenchStore:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def create(self) -> None:
        """Make the database and bring it to the current schema."""
        if self._admin_url is not None:
            quoted = f'"{self.name}"' if self.backend == "postgresql" else f"`{self.name}`"
            extra = " TEMPLATE template0" if self.backend == "postgresql" else (
                " CHARACTER SET utf8mb4")
            try:
                self._admin(f"CREATE DATABASE {quoted}{extra}")
            except DBAPIError as exc:
                first = str(exc.orig).strip().splitlines()[0] if str(exc.orig) else "error"
                raise ConfigError(f"--store: cannot create a database on "
                                  f"{redacted(self.requested)}: {first}") from None
        self._created = True
        # tidings' migrations alone: a hot store named in the environment is not this store
        Tidings.open(self.url, migrate=True, hot_store_url=None).close()
        self.tables = [t.name for t in self.db.tables() if t.name != "alembic_version"]

    @property
    def db(self) -> SqlDatabase:
        """The bench's own connection to this store (counts, the job queue, emptying)."""
        if self._db is None:
            self._db = SqlDatabase(self.url)
            _OPEN[self._db.url] = self._db  # replacing any unpooled one
        return self._db

    def drop(self) -> None:
        """Remove the database (or files) this store made; safe to call twice."""
        if not self._created:
            self._remove_temp_dir()
            return
        self._created = False
        if self._db is not None:
            _OPEN.pop(self._db.url, None)
            self._db.dispose()
            self._db = None
        if self.backend == "postgresql":
            self._admin(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{self.name}' AND pid <> pg_backend_pid()")
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}"')
        elif self.backend == "mysql":
            self._admin(f"DROP DATABASE IF EXISTS `{self.name}`")
        else:
            path = Path(make_url(self.url).database or "")
            for suffix in ("", "-wal", "-shm", "-journal"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
        self._remove_temp_dir()

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def _admin(self, sql: str) -> None:
        assert self._admin_url is not None
        # Autocommit: PostgreSQL runs CREATE/DROP DATABASE only outside a transaction.
        engine = create_engine(normalise_url(self._admin_url), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(sql))
        finally:
            engine.dispose()

    # -- inside the store ----------------------------------------------------------------------

    def empty_tables(self, *, keep: Collection[str] = ()) -> None:
        """Delete every row of every tidings table except those in ``keep``."""
        names = [name for name in reversed(self.tables) if name not in keep]
        if not names:
            return

        def empty(conn: Connection) -> None:
            if self.backend == "postgresql":
                conn.execute(text("TRUNCATE " + ", ".join(f'"{n}"' for n in names)))
            elif self.backend == "mysql":
                for name in names:
                    conn.execute(text(f"TRUNCATE TABLE `{name}`"))
            else:
                for name in names:
                    conn.execute(text(f'DELETE FROM "{name}"'))

        # retried on a deadlock: a worker process left running between rounds may start a
        # unit of its own (its periodic jobs) just as the tables are emptied
        self.db.transact(empty)

    def analyze(self) -> None:
        """Refresh the planner's statistics after a bulk load, as a deployment's background
        maintenance would; on PostgreSQL also the visibility map (``VACUUM``, autovacuum's job),
        without which an index-only scan (the capped unread count) reads every row's heap page
        to check it is visible."""
        if self.backend == "postgresql":
            with self.db.read() as conn:
                conn.execute(text("VACUUM ANALYZE"))  # VACUUM runs outside a transaction
            return
        with self.db.write() as conn:
            if self.backend == "mysql":
                names = ", ".join(f"`{name}`" for name in self.tables)
                conn.execute(text(f"ANALYZE TABLE {names}"))
            else:
                conn.execute(text("ANALYZE"))


def database_of(t: Tidings) -> SqlDatabase:
    """The bench's own connection to the SQL store under an engine: a :class:`BenchStore`'s
    while it is open, else one that keeps no connection open between uses."""
    url = normalise_url(t.config.database_url)
    db = _OPEN.get(url)
    if db is None:
        if not url.startswith(("sqlite", "postgresql", "mysql")):
            raise ConfigError(f"this benchmark needs a SQL store, not {redacted(url)}")
        db = _OPEN[url] = SqlDatabase(url, pooled=False)
    return db
