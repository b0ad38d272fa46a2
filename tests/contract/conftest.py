"""The contract suite: every port's promises, checked on every store through its public methods.

A test that takes ``store`` runs once per store — ``memory``, ``sqlite``, ``postgresql``,
``mysql``, and for the inbox and timeline ports also ``redis`` and ``cluster`` (SQLite with
its hot parts on the local Redis or on the session's Redis Cluster, ``tests/redis_servers.py``)
— each on a clean store built by :func:`tidings.store.factory.open_store`, with the
shared :class:`tidings.clock.FrozenClock` (``clock``) so a test moves time by hand. The SQL
stores come from the session's database factories of ``tests/conftest.py``: a missing server
skips its runs, or fails them under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from redis_servers import hot_url_of
from stores import SqlStores
from tidings import ports
from tidings.clock import FrozenClock
from tidings.store.factory import open_store

STORES = ["memory", "sqlite", "postgresql", "mysql", "redis", "cluster"]
HOT = ("redis", "cluster")
# the ports the Redis hot store implements; the other suites run on the stores above only
HOT_SUITES = ("test_inbox_store.py", "test_inbox_groups.py", "test_inbox_places.py",
              "test_inbox_fields.py", "test_timeline_store.py", "test_store_composites.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        hot = callspec is not None and callspec.params.get("store") in HOT
        (dropped if hot and item.path.name not in HOT_SUITES else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, clock: FrozenClock) -> Iterator[ports.Store]:
    """A clean store of each kind; closed (and its database dropped) after the test."""
    name: str = request.param
    if name == "memory":
        memory = open_store("memory://contract", clock)
        yield memory
        memory.close()
        return
    if name in HOT:
        databases: SqlStores = request.getfixturevalue("sqlite_stores")
        url = databases.clone()
        try:
            with hot_url_of(name, request) as hot_url:
                hot = open_store(url, clock, hot_url=hot_url)
                try:
                    yield hot
                finally:
                    hot.close()
        finally:
            databases.drop(url)
        return
    databases = request.getfixturevalue(f"{name}_stores")
    url = databases.clone()
    try:
        sql = open_store(url, clock)
        try:
            yield sql
        finally:
            sql.close()
    finally:
        databases.drop(url)
