"""Backend fixtures: one behaviour suite, run against every store.

A test that takes ``any_store_url`` runs four times, with ids ``memory``, ``sqlite``,
``postgresql`` and ``mysql``, each time on a clean store (the SQL ones already at the head
migration); it must read the store only through the facade and the ports' public reads::

    def test_publish(any_store_url: str) -> None:
        with open_tidings(any_store_url) as t:
            ...

A test that takes ``store_url`` runs on the three SQL backends only: SQL-shape checks
(``tests/sql``), migrations, several processes on one database, a server on a SQL file.

Fixtures:

``any_backend``
    ``"memory"``, ``"sqlite"``, ``"postgresql"`` or ``"mysql"`` (select with ``-k memory``).
``any_store_url``
    The URL of a clean store of ``any_backend``: ``memory://…`` (engines opened on it through
    ``engines.open_tidings`` share one in-memory store) or a SQL database as ``store_url``.
``t``
    An engine on ``any_store_url`` with the types of ``engines.py`` and ``clock``.
``backend``
    ``"sqlite"``, ``"postgresql"`` or ``"mysql"`` (the parameter; select with ``-k mysql``).
``store_url``
    The URL of a new database at head with no rows, dropped after the test. SQLite: a copy of a
    template file; PostgreSQL: ``CREATE DATABASE … TEMPLATE``; MariaDB: ``CREATE TABLE … LIKE``
    a template database. The templates are migrated once per session.
``empty_store_url``
    The URL of a new database with no tables at all (for migration tests), dropped after.
``sqlite_stores``, ``postgresql_stores``, ``mysql_stores``
    The session's database factories (see ``stores.py``), for tests that need several databases.

Servers: PostgreSQL at ``postgresql://postgres@127.0.0.1:5432`` and MariaDB at
``mysql+pymysql://root@127.0.0.1:3306`` unless ``TIDINGS_TEST_POSTGRES_URL`` /
``TIDINGS_TEST_MYSQL_URL`` name other servers (URLs without a database). A missing server skips
its tests, or fails them when ``CI=true`` (see ``backends.require``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from backends import MYSQL_ENV, POSTGRES_ENV, mysql_server, postgres_server, redacted, require
from engines import drop_memory_store, open_tidings
from redis_servers import hot_url, redis_cluster, redis_server  # noqa: F401 (fixtures)
from smtp import sink  # noqa: F401 (a fixture)
from stores import MysqlStores, PostgresStores, SqliteStores, SqlStores
from tidings.clock import FrozenClock
from tidings.engine import Tidings

SQL_BACKENDS = ["sqlite", "postgresql", "mysql"]
STORES = ["memory", *SQL_BACKENDS]


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The SQL backend this run of the test uses."""
    name: str = request.param
    return name


@pytest.fixture(scope="session")
def sqlite_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStores]:
    stores = SqliteStores(tmp_path_factory.mktemp("sqlite"))
    yield stores
    stores.close()


@pytest.fixture(scope="session")
def postgresql_stores() -> Iterator[PostgresStores]:
    stores = PostgresStores(postgres_server())
    require("PostgreSQL", stores.ping, where=redacted(stores.server), env=POSTGRES_ENV)
    yield stores
    stores.close()


@pytest.fixture(scope="session")
def mysql_stores() -> Iterator[MysqlStores]:
    stores = MysqlStores(mysql_server())
    require("MariaDB/MySQL", stores.ping, where=redacted(stores.server), env=MYSQL_ENV)
    yield stores
    stores.close()


@pytest.fixture
def sql_stores(backend: str, request: pytest.FixtureRequest) -> SqlStores:
    """The database factory for ``backend``; only that backend's server is contacted."""
    stores: SqlStores = request.getfixturevalue(f"{backend}_stores")
    return stores


@pytest.fixture
def store_url(sql_stores: SqlStores) -> Iterator[str]:
    """A clean database at head on ``backend``; emptied for the next test, or dropped, after
    this one (``tests/stores.py``)."""
    url = sql_stores.clone()
    yield url
    sql_stores.drop(url)


@pytest.fixture
def empty_store_url(sql_stores: SqlStores) -> Iterator[str]:
    """A database with no tables on ``backend``; dropped after the test."""
    url = sql_stores.empty()
    yield url
    sql_stores.drop(url)


@pytest.fixture(params=STORES)
def any_backend(request: pytest.FixtureRequest) -> str:
    """The store this run of the test uses: memory or one of the SQL backends."""
    name: str = request.param
    return name


@pytest.fixture
def any_store_url(any_backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A clean store of ``any_backend``; forgotten (memory) or dropped (SQL) after the test."""
    if any_backend == "memory":
        url = f"memory://test-{secrets.token_hex(6)}"
        yield url
        drop_memory_store(url)
        return
    databases: SqlStores = request.getfixturevalue(f"{any_backend}_stores")
    url = databases.clone()
    yield url
    databases.drop(url)


@pytest.fixture
def clock() -> FrozenClock:
    """A clock the test moves by hand."""
    return FrozenClock()


@pytest.fixture
def t(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    """An engine on ``any_store_url`` with the types of ``engines.py`` and ``clock``."""
    with open_tidings(any_store_url, clock=clock) as tidings:
        yield tidings
