"""The contract suite: every port's promises, checked on every store through its public methods.

A test that takes ``store`` runs once per store — ``memory``, ``sqlite``, ``postgresql``,
``mysql`` — each on a clean store built by :func:`tidings.store.factory.open_store`, with the
shared :class:`tidings.clock.FrozenClock` (``clock``) so a test moves time by hand. The SQL
stores come from the session's database factories of ``tests/conftest.py``: a missing server
skips its runs, or fails them under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stores import SqlStores
from tidings import ports
from tidings.clock import FrozenClock
from tidings.store.factory import open_store

STORES = ["memory", "sqlite", "postgresql", "mysql"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, clock: FrozenClock) -> Iterator[ports.Store]:
    """A clean store of each kind; closed (and its database dropped) after the test."""
    name: str = request.param
    if name == "memory":
        memory = open_store("memory://contract", clock)
        yield memory
        memory.close()
        return
    databases: SqlStores = request.getfixturevalue(f"{name}_stores")
    url = databases.clone()
    try:
        sql = open_store(url, clock)
        try:
            yield sql
        finally:
            sql.close()
    finally:
        databases.drop(url)
