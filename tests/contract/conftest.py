"""The contract suite: every port's promises, checked on every store through its public methods.

A test that takes ``store`` (``tests/conftest.py``) runs once per store of
``store_registry.KINDS`` — ``memory``, ``sqlite``, ``postgresql``, ``mysql``, ``redis`` and
``cluster`` (SQLite with its feeds on the local Redis or on the session's Redis Cluster,
``tests/redis_servers.py``) — each on a clean store built by
:func:`tidings.wiring.open_store`, with the shared :class:`tidings.clock.FrozenClock`
(``clock``) so a test moves time by hand. A missing server skips its runs, or fails them under
``CI=true``.
"""
