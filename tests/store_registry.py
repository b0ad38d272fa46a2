"""The stores the tests run on, each registered once: adding a store is one entry of :data:`KINDS`.

An entry (:class:`Kind`) says how a test gets a clean store of its kind — a :class:`Place`: the
store URL, and for a hot store the Redis URL its feeds live on — which servers that needs (the
session fixtures named in ``servers``: each probes its server once and skips the tests of a
missing one with the reason, or fails them under ``CI=true``, see ``backends.require``) and what
it can do beyond the ports (its ``capabilities``). Every fixture that runs a test "on every
store" takes its parameters from here:

* ``any_store_url`` / ``t`` (``tests/conftest.py``): the behaviour suite, every kind;
* ``store`` (``tests/conftest.py``): a bare :class:`tidings.ports.Store` of every kind, the
  contract suite's (``tests/contract/``) and any other test's;
* ``backend`` / ``store_url`` (``tests/conftest.py``): the kinds with :data:`SQL` only.

A test that truly cannot run on some store asks for a capability, never for names::

    @pytest.mark.needs(SQL)   # reads tables: runs on sqlite, postgresql and mysql only
    def test_rows(t: Tidings) -> None: ...

A test with a parameter of its own over the stores (several stores of one kind, say) uses
:func:`names` and :meth:`Kind.place`::

    @pytest.mark.parametrize("kind", names())
    def test_x(kind: str, request: pytest.FixtureRequest) -> None:
        with KINDS_BY_NAME[kind].place(request) as place, on_place(place) as url:
            ...  # open_tidings(url) (engines.py), as many as it needs
        with KINDS_BY_NAME[kind].open(request, FrozenClock()) as store:
            ...  # a bare ports.Store
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from redis_servers import hot_url_of
from stores import SqlStores
from tidings import ports
from tidings.clock import Clock
from tidings.wiring import open_store

# -- capabilities: what a store offers beyond the ports ------------------------------------------
SQL = "sql"
"""Everything it holds is in the tables of ``tidings.store.sql.schema`` (a test may read them),
and its URL alone is the whole store: another engine, process or server opened on it shares it."""
OWN_INBOX_WRITES = "own-inbox-writes"
"""A unit of work reads its own inbox writes back before it commits (the hot store sends its
Redis writes at the commit: until then its inbox reads see the state before the unit)."""


@dataclass(frozen=True)
class Place:
    """Where a clean store lives: ``url`` (``database_url``) and, for a hot store, ``hot_url``
    (``hot_store_url``: its inboxes, markers and timelines on Redis)."""

    url: str
    hot_url: str | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """The engine settings that open this store besides ``database_url``."""
        return {"hot_store_url": self.hot_url} if self.hot_url else {}


@dataclass(frozen=True)
class Kind:
    """One store the tests run on."""

    name: str
    """The test id (select with ``-k redis``)."""
    databases: str | None
    """The SQL backend whose session factory (``<databases>_stores``) gives its databases;
    None: an in-memory store."""
    hot: str | None = None
    """``redis`` or ``cluster``: its feeds live on the local Redis or the session's cluster
    (``tests/redis_servers.py``), in a fresh key prefix."""
    capabilities: frozenset[str] = field(default_factory=frozenset)

    @property
    def servers(self) -> tuple[str, ...]:
        """The session fixtures a place of this kind needs (each skips without its server)."""
        sql = (f"{self.databases}_stores",) if self.databases else ()
        hot = {"redis": ("redis_server",), "cluster": ("redis_cluster",)}.get(self.hot or "", ())
        return sql + hot

    def has(self, *capabilities: str) -> bool:
        return set(capabilities) <= self.capabilities

    @contextlib.contextmanager
    def place(self, request: pytest.FixtureRequest) -> Iterator[Place]:
        """A clean store of this kind for the test of ``request``; dropped after."""
        if self.databases is None:
            yield Place(f"memory://test-{secrets.token_hex(6)}")
            return
        databases: SqlStores = request.getfixturevalue(self.servers[0])
        url = databases.clone()
        try:
            if self.hot is None:
                yield Place(url)
            else:
                with hot_url_of(self.hot, request) as hot_url:
                    yield Place(url, hot_url)
        finally:
            databases.drop(url)

    @contextlib.contextmanager
    def open(self, request: pytest.FixtureRequest, clock: Clock) -> Iterator[ports.Store]:
        """A clean bare store of this kind (``open_store``), closed and dropped after."""
        with self.place(request) as place:
            store = open_store(place.url, clock, hot_url=place.hot_url)
            try:
                yield store
            finally:
                store.close()


KINDS: tuple[Kind, ...] = (
    Kind("memory", None, capabilities=frozenset({OWN_INBOX_WRITES})),
    Kind("sqlite", "sqlite", capabilities=frozenset({SQL, OWN_INBOX_WRITES})),
    Kind("postgresql", "postgresql", capabilities=frozenset({SQL, OWN_INBOX_WRITES})),
    Kind("mysql", "mysql", capabilities=frozenset({SQL, OWN_INBOX_WRITES})),
    # SQLite for the records, Redis for the feeds (``tidings.store.hot``)
    Kind("redis", "sqlite", hot="redis"),
    Kind("cluster", "sqlite", hot="cluster"),
)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def names(*capabilities: str) -> list[str]:
    """The kinds that have every one of ``capabilities`` (all kinds without any)."""
    return [kind.name for kind in KINDS if kind.has(*capabilities)]


def lacking(item: pytest.Item, kind: str) -> set[str]:
    """The capabilities the ``needs`` marks of ``item`` ask for that ``kind`` lacks."""
    wanted = {c for mark in item.iter_markers("needs") for c in mark.args}
    return wanted - KINDS_BY_NAME[kind].capabilities


def store_param(item: pytest.Item, fixtures: Iterable[str]) -> str | None:
    """The kind ``item`` runs on, if one of ``fixtures`` is among its parameters."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    for name in fixtures:
        kind = callspec.params.get(name)
        if isinstance(kind, str) and kind in KINDS_BY_NAME:
            return kind
    return None
