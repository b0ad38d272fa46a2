"""Clean SQL databases for tests, made fast by cloning a template migrated once per session.

* SQLite: the template is a file; a clone is a copy of it in the session's temp directory.
* PostgreSQL: ``CREATE DATABASE tidings_t_… TEMPLATE tidings_tpl_…``.
* MariaDB/MySQL: a new database whose tables are made with ``CREATE TABLE … LIKE`` the template's
  (which keeps indexes, engine, charset and collation) and whose ``alembic_version`` row is copied.

Every database gets a random name, so parallel sessions (pytest-xdist, two checkouts) never
collide. Each class probes its server in :meth:`ping` and drops what it made in :meth:`close`.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from backends import with_database
from tidings.store.sql.database import normalise_url
from tidings.store.sql.migrate import upgrade


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


class PostgresStores:
    """Databases on the PostgreSQL server at ``server`` (a URL without a database)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._admin = _admin_engine(with_database(server, "postgres"))
        self._template: str | None = None

    def ping(self) -> None:
        with self._admin.connect() as conn:
            conn.execute(text("SELECT 1"))

    def empty(self) -> str:
        return self._create(_name("t"), "template0")

    def clone(self) -> str:
        if self._template is None:
            url = self._create(_name("tpl"), "template0")
            upgrade(url)  # which closes its connections: a template must have none
            self._template = _database(url)
        return self._create(_name("t"), self._template)

    def drop(self, url: str) -> None:
        self._drop(_database(url))

    def close(self) -> None:
        if self._template is not None:
            self._drop(self._template)
        self._admin.dispose()

    def _create(self, name: str, template: str) -> str:
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
        return with_database(self.server, name)

    def _drop(self, name: str) -> None:
        with self._admin.connect() as conn:
            # Engines a test left open would make DROP DATABASE fail, so end them first.
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))


class MysqlStores:
    """Databases on the MariaDB/MySQL server at ``server`` (a URL without a database)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._admin = _admin_engine(with_database(server, None))
        self._template: str | None = None
        self._tables: list[str] = []

    def ping(self) -> None:
        with self._admin.connect() as conn:
            conn.execute(text("SELECT 1"))

    def empty(self) -> str:
        name = _name("t")
        with self._admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        return with_database(self.server, name)

    def clone(self) -> str:
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

    def drop(self, url: str) -> None:
        self._drop(_database(url))

    def close(self) -> None:
        if self._template is not None:
            self._drop(self._template)
        self._admin.dispose()

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
        with self._admin.connect() as conn:
            # A connection a test left inside a transaction would block DROP DATABASE on its
            # metadata locks, so end those first.
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
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))


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
