"""Clean SQL databases for tests, made fast by cloning a template migrated once per session.

* SQLite: the template is a file; a clone is a copy of it in the session's temp directory.
* PostgreSQL: ``CREATE DATABASE tidings_t_… TEMPLATE tidings_tpl_…``, with
  ``synchronous_commit`` off (a commit does not wait for the disk; reads are the same).
* MariaDB/MySQL: a new database whose tables are made with ``CREATE TABLE … LIKE`` the template's
  (which keeps indexes, engine, charset and collation) and whose ``alembic_version`` row is copied.

Every database gets a random name, so parallel sessions (pytest-xdist, two checkouts) never
collide. Each class probes its server in :meth:`ping` and drops what it made in :meth:`close`.

Making and dropping a server database costs a second or more on a busy box (both are synced to
disk), so a clone a test is done with is emptied and handed to the next test instead: every
connection to it ended, every row deleted (``alembic_version`` kept), every counter back at its
start. It is reused only if its schema — tables, columns, indexes, constraints, triggers,
routines, views, settings and the migration version — is still the template's; a test that
changed any of that gets its database dropped, as before.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from pathlib import Path
from typing import Protocol

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from backends import with_database
from tidings.store.sql.core.database import normalise_url
from tidings.store.sql.core.migrate import upgrade
from tidings.store.sql.schema import metadata

# Child tables before their parents, so that plain DELETEs empty a database.
EMPTYING_ORDER = [table.name for table in reversed(metadata.sorted_tables)]


class SqlStores(Protocol):
    """Makes and drops databases on one backend."""

    def ping(self) -> None:
        """Raise if the server cannot be used."""

    def empty(self) -> str:
        """The URL of a new database with no tables."""

    def clone(self) -> str:
        """The URL of a new database holding the schema at head and no rows."""

    def drop(self, url: str) -> None:
        """Remove a database made by :meth:`empty` or :meth:`clone`."""

    def close(self) -> None:
        """Remove the template; called once at the end of the session."""


# What makes two databases interchangeable for a test: everything but their rows (and the
# counters, which emptying resets).
PG_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
PG_SCHEMA = (
    PG_TABLES,
    "SELECT table_name, column_name, data_type, column_default, is_nullable, collation_name "
    "FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2",
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE connamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
    "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
    "SELECT sequencename, start_value FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1",
    "SELECT relname, relpersistence, reloptions::text FROM pg_class "
    "WHERE relnamespace = 'public'::regnamespace ORDER BY 1",
    "SELECT extname FROM pg_extension ORDER BY 1",
    "SELECT setconfig::text FROM pg_db_role_setting WHERE setdatabase = "
    "(SELECT oid FROM pg_database WHERE datname = current_database())",
    "SELECT version_num FROM alembic_version",
)
MYSQL_TABLES = ("SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = DATABASE() ORDER BY 1")
MYSQL_SCHEMA = (
    "SELECT table_name, engine, table_collation, create_options FROM information_schema.tables "
    "WHERE table_schema = DATABASE() ORDER BY 1",
    "SELECT table_name, column_name, column_type, column_default, is_nullable, extra, "
    "collation_name FROM information_schema.columns WHERE table_schema = DATABASE() "
    "ORDER BY 1, 2",
    "SELECT table_name, index_name, seq_in_index, column_name, non_unique, sub_part "
    "FROM information_schema.statistics WHERE table_schema = DATABASE() ORDER BY 1, 2, 3",
    "SELECT constraint_name, table_name, constraint_type FROM "
    "information_schema.table_constraints WHERE constraint_schema = DATABASE() ORDER BY 1, 2",
    "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE() "
    "ORDER BY 1",
    "SELECT routine_name FROM information_schema.routines WHERE routine_schema = DATABASE() "
    "ORDER BY 1",
    "SELECT version_num FROM alembic_version",
)



def _name(kind: str) -> str:
    return f"tidings_{kind}_{secrets.token_hex(6)}"


class SqliteStores:
    """SQLite files in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._template: Path | None = None

    def ping(self) -> None:
        pass

    def empty(self) -> str:
        return f"sqlite:///{self.directory / (_name('t') + '.db')}"

    def clone(self) -> str:
        url = self.empty()
        shutil.copyfile(self._migrated_template(), _path(url))
        return url

    def drop(self, url: str) -> None:
        path = _path(url)
        for suffix in ("", "-wal", "-shm", "-journal"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)

    def close(self) -> None:
        if self._template is not None:
            self.drop(f"sqlite:///{self._template}")

    def _migrated_template(self) -> Path:
        if self._template is None:
            url = self.empty()
            upgrade(url)
            path = _path(url)
            # The last connection to close checkpoints the WAL into the main file; if a
            # -wal file survived, a copy of the main file alone would miss the schema.
            if path.with_name(path.name + "-wal").exists():
                raise RuntimeError(f"{path}: WAL not checkpointed after migrating")
            self._template = path
        return self._template


class _ServerStores:
    """What the two server kinds share: reuse of emptied clones (see the module's text)."""

    schema_queries: tuple[str, ...] = ()
    tables_query = ""

    def __init__(self, server: str, admin_database: str | None) -> None:
        self.server = server
        self._admin = _admin_engine(with_database(server, admin_database))
        self._template: str | None = None
        self._schema = ""
        self._clones: set[str] = set()
        self._free: list[str] = []
        # one engine per clone (NullPool: it holds no connection between uses), so that
        # emptying a clone does not pay SQLAlchemy's first-connect set-up after every test
        self._engines: dict[str, Engine] = {}

    def ping(self) -> None:
        with self._admin.connect() as conn:
            conn.execute(text("SELECT 1"))

    def clone(self) -> str:
        if self._free:
            return with_database(self.server, self._free.pop())
        url = self._new_clone()
        self._clones.add(_database(url))
        if not self._schema:  # of a clone (on MariaDB, CREATE TABLE … LIKE drops foreign keys)
            self._schema = _read_schema(url, self.schema_queries)
        return url

    def drop(self, url: str) -> None:
        name = _database(url)
        if name in self._clones and self._emptied(url):
            self._free.append(name)
        else:
            self._clones.discard(name)
            self._forget_engine(name)
            self._drop(name)

    def close(self) -> None:
        for name in self._free:
            self._forget_engine(name)
            self._drop(name)
        self._free.clear()
        if self._template is not None:
            self._drop(self._template)
        self._admin.dispose()

    def _emptied(self, url: str) -> bool:
        """Empty the clone at ``url`` for the next test; False if it must be dropped."""
        name = _database(url)
        try:
            self._end_connections(name)
            engine = self._engines.get(name)
            if engine is None:
                engine = self._engines[name] = create_engine(normalise_url(url),
                                                             poolclass=NullPool)
            with engine.begin() as conn:  # one connection: the schema read, then the emptying
                if _schema_of(conn, self.schema_queries) != self._schema:
                    return False
                self._empty(conn, _emptying_order(conn, self.tables_query))
        except DBAPIError:
            return False
        return True

    def _forget_engine(self, name: str) -> None:
        engine = self._engines.pop(name, None)
        if engine is not None:
            engine.dispose()

    def _new_clone(self) -> str:
        raise NotImplementedError

    def _empty(self, conn: Connection, tables: list[str]) -> None:
        raise NotImplementedError

    def _end_connections(self, name: str) -> None:
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        raise NotImplementedError


class PostgresStores(_ServerStores):
    """Databases on the PostgreSQL server at ``server`` (a URL without a database)."""

    schema_queries = PG_SCHEMA
    tables_query = PG_TABLES

    def __init__(self, server: str) -> None:
        super().__init__(server, "postgres")

    def empty(self) -> str:
        return self._create(_name("t"), "template0")

    def _new_clone(self) -> str:
        if self._template is None:
            url = self._create(_name("tpl"), "template0")
            upgrade(url)  # which closes its connections: a template must have none
            self._template = _database(url)
        return self._create(_name("t"), self._template)

    def _empty(self, conn: Connection, tables: list[str]) -> None:
        for table in tables:
            conn.execute(text(f'DELETE FROM "{table}"'))
        conn.execute(text("SELECT setval(format('%I.%I', schemaname, sequencename), "
                          "start_value, false) FROM pg_sequences WHERE schemaname = 'public'"))

    def _end_connections(self, name: str) -> None:
        with self._admin.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )

    def _create(self, name: str, template: str) -> str:
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
            # A commit returns without waiting for its WAL to reach the disk: what a test
            # reads is the same, only a crash of the server could lose the last commits.
            conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        return with_database(self.server, name)

    def _drop(self, name: str) -> None:
        # Engines a test left open would make DROP DATABASE fail, so end them first.
        self._end_connections(name)
        with self._admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))


class MysqlStores(_ServerStores):
    """Databases on the MariaDB/MySQL server at ``server`` (a URL without a database)."""

    schema_queries = MYSQL_SCHEMA
    tables_query = MYSQL_TABLES

    def __init__(self, server: str) -> None:
        super().__init__(server, None)
        self._tables: list[str] = []

    def empty(self) -> str:
        name = _name("t")
        with self._admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        return with_database(self.server, name)

    def _new_clone(self) -> str:
        template = self._migrated_template()
        url = self.empty()
        name = _database(url)
        with self._admin.connect() as conn:
            for table in self._tables:
                conn.execute(text(f"CREATE TABLE `{name}`.`{table}` LIKE `{template}`.`{table}`"))
            conn.execute(
                text(
                    f"INSERT INTO `{name}`.alembic_version "
                    f"SELECT version_num FROM `{template}`.alembic_version"
                )
            )
        return url

    def _empty(self, conn: Connection, tables: list[str]) -> None:
        conn.execute(text("SET FOREIGN_KEY_CHECKS = 0"))
        for table in tables:
            conn.execute(text(f"DELETE FROM `{table}`"))
        counted = conn.execute(text(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND auto_increment > 1")).scalars()
        for table in list(counted):
            conn.execute(text(f"ALTER TABLE `{table}` AUTO_INCREMENT = 1"))
        conn.execute(text("SET FOREIGN_KEY_CHECKS = 1"))

    def _migrated_template(self) -> str:
        if self._template is None:
            url = self.empty()
            upgrade(url)
            self._template = _database(url)
            with self._admin.connect() as conn:
                self._tables = list(
                    conn.execute(
                        text(
                            "SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = :name ORDER BY table_name"
                        ),
                        {"name": self._template},
                    ).scalars()
                )
        return self._template

    def _drop(self, name: str) -> None:
        # A connection a test left inside a transaction would block DROP DATABASE on its
        # metadata locks, so end those first.
        self._end_connections(name)
        with self._admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))

    def _end_connections(self, name: str) -> None:
        with self._admin.connect() as conn:
            ids = conn.execute(
                text(
                    "SELECT id FROM information_schema.processlist "
                    "WHERE db = :name AND id <> CONNECTION_ID()"
                ),
                {"name": name},
            ).scalars().all()
            for connection_id in ids:
                # It may have ended on its own in the meantime ("Unknown thread id").
                with contextlib.suppress(DBAPIError):
                    conn.execute(text(f"KILL CONNECTION {int(connection_id)}"))


def _admin_engine(url: str) -> Engine:
    # Autocommit: CREATE/DROP DATABASE cannot run inside a transaction on PostgreSQL.
    return create_engine(
        normalise_url(url),
        isolation_level="AUTOCOMMIT",
        pool_size=1,
        connect_args={"connect_timeout": 3},
    )


def _database(url: str) -> str:
    name = make_url(url).database
    if not name:
        raise ValueError(f"no database in {url!r}")
    return name


def _path(url: str) -> Path:
    return Path(_database(url))



def _read_schema(url: str, queries: tuple[str, ...]) -> str:
    """Everything ``queries`` read of the database at ``url``, as one comparable text."""
    engine = create_engine(normalise_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return _schema_of(conn, queries)
    finally:
        engine.dispose()


def _schema_of(conn: Connection, queries: tuple[str, ...]) -> str:
    """:func:`_read_schema` on an open connection."""
    return repr([conn.execute(text(query)).all() for query in queries])


def _emptying_order(conn: Connection, tables_query: str) -> list[str]:
    """The database's tables but ``alembic_version``, children before their parents."""
    present = [name for name in conn.execute(text(tables_query)).scalars()
               if name != "alembic_version"]
    known = [name for name in EMPTYING_ORDER if name in present]
    return known + [name for name in present if name not in known]
