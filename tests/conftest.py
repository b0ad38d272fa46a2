"""Store fixtures: one behaviour suite and one contract suite, run against every store.

The fixtures here are shared by every folder of ``tests/`` (``README.md`` there says which test
goes where); a folder's own are in its ``conftest.py``.

The stores are registered once, in ``store_registry.KINDS``; every fixture below that runs a test
on every store takes its parameters from there. A test that takes ``any_store_url`` runs once per
kind, with ids ``memory``, ``sqlite``, ``postgresql``, ``mysql``, ``redis`` and ``cluster`` (the
last two: SQLite for the records, the local Redis or the session's Redis Cluster for the feeds),
each time on a clean store (the SQL ones already at the head migration); it must read the store
only through the facade and the ports' public reads::

    def test_publish(any_store_url: str) -> None:
        with open_tidings(any_store_url) as t:
            ...

A test that truly needs more than the ports says so with a capability of the registry
(``@pytest.mark.needs(SQL)``: it reads tables), never with a list of names; the kinds without it
are deselected. A test that takes ``store_url`` runs on the kinds with ``SQL`` only: SQL-shape
checks (``tests/sql``), migrations, several processes on one database, a server on a SQL file.

Fixtures:

``any_backend``
    The kind's name (select with ``-k memory``, ``-k redis``…).
``any_store_url``
    The URL of a clean store of ``any_backend``: ``memory://…`` (engines opened on it through
    ``engines.open_tidings`` share one in-memory store), a SQL database as ``store_url``, or for a
    hot store its SQLite database (``open_tidings`` adds its ``hot_store_url``).
``t``
    An engine on ``any_store_url`` with the types of ``engines.py`` and ``clock``.
``store``
    A bare :class:`tidings.ports.Store` of every kind, opened by
    ``tidings.wiring.open_store`` with ``clock`` (the contract suite's).
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
``mysql+pymysql://root@127.0.0.1:3306/?ssl_disabled=true`` (``backends.py`` says why) unless
``TIDINGS_TEST_POSTGRES_URL`` / ``TIDINGS_TEST_MYSQL_URL`` name other servers (URLs without a
database); Redis as
``tests/redis_servers.py`` says. A missing server skips its tests, or fails them when ``CI=true``
(see ``backends.require``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backends import MYSQL_ENV, POSTGRES_ENV, mysql_server, postgres_server, redacted, require
from engines import on_place, open_tidings
from redis_servers import hot_url, redis_cluster, redis_server  # noqa: F401 (fixtures)
from smtp import sink  # noqa: F401 (a fixture)
from store_registry import KINDS_BY_NAME, SQL, lacking, names, store_param
from stores import MysqlStores, PostgresStores, SqliteStores, SqlStores
from tidings import ports
from tidings.clock import FrozenClock
from tidings.engine import Tidings

# the fixtures whose parameter is a kind of ``store_registry.KINDS``
STORE_PARAMS = ("any_backend", "store", "backend")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs(*capabilities): runs only on the stores of store_registry.KINDS that "
        "have every one of them (the others are deselected)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect each run of a test on a store that lacks a capability it ``needs``."""
    kept, dropped = [], []
    for item in items:
        kind = store_param(item, STORE_PARAMS)
        (dropped if kind is not None and lacking(item, kind) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=names(SQL))
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


@pytest.fixture(params=names())
def any_backend(request: pytest.FixtureRequest) -> str:
    """The kind of store this run of the test uses (``store_registry.KINDS``)."""
    name: str = request.param
    return name


@pytest.fixture
def any_store_url(any_backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A clean store of ``any_backend``; forgotten (memory) or dropped after the test."""
    with KINDS_BY_NAME[any_backend].place(request) as place, on_place(place) as url:
        yield url


@pytest.fixture(params=names())
def store(request: pytest.FixtureRequest, clock: FrozenClock) -> Iterator[ports.Store]:
    """A clean bare store of each kind; closed (and its database dropped) after the test."""
    with KINDS_BY_NAME[request.param].open(request, clock) as opened:
        yield opened


@pytest.fixture
def sqlite_url(sqlite_stores: SqlStores) -> Iterator[str]:
    """A clean SQLite database at head (the SQL part of a hot store, or the reference beside
    one); dropped after the test."""
    url = sqlite_stores.clone()
    yield url
    sqlite_stores.drop(url)


@pytest.fixture
def hot(hot_url: str, sqlite_url: str,  # noqa: F811 (the fixture)
        clock: FrozenClock) -> Iterator[Tidings]:
    """An engine on SQLite with its inboxes, markers and timelines on Redis: ``hot_url`` is the
    local Redis or the session's Redis Cluster (``redis_servers.py``)."""
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url) as t:
        yield t


@pytest.fixture
def clock() -> FrozenClock:
    """A clock the test moves by hand."""
    return FrozenClock()


@pytest.fixture
def t(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    """An engine on ``any_store_url`` with the types of ``engines.py`` and ``clock``."""
    with open_tidings(any_store_url, clock=clock) as tidings:
        yield tidings
