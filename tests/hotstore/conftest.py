"""Fixtures of the Redis hot store tests: an engine or a bare store on SQLite with its hot
parts on Redis (``redis``) or Redis Cluster (``cluster``), and the SQL store alone as the
reference (``sqlite``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import open_tidings
from store_registry import KINDS as REGISTERED
from store_registry import KINDS_BY_NAME
from stores import SqlStores
from tidings import ports
from tidings.clock import FrozenClock
from tidings.engine import Tidings

# the reference (SQLite alone) and every hot store of the registry
KINDS = ["sqlite", *(kind.name for kind in REGISTERED if kind.hot)]


@pytest.fixture
def sqlite_url(sqlite_stores: SqlStores) -> Iterator[str]:
    url = sqlite_stores.clone()
    yield url
    sqlite_stores.drop(url)


@pytest.fixture
def hot(hot_url: str, sqlite_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    """An engine whose inboxes live in Redis (both kinds)."""
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url) as t:
        yield t


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, clock: FrozenClock) -> Iterator[ports.Store]:
    """A bare store: SQLite alone, or SQLite with a Redis / Redis Cluster hot part."""
    with KINDS_BY_NAME[request.param].open(request, clock) as opened:
        yield opened
