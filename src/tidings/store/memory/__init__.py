"""A public in-memory store: every port of :mod:`tidings.ports`, for tests and embedding.

``MemoryStore(clock)`` keeps the SQL store's semantics (ordering, caps, idempotent writes,
watermarks, leases and backoff) and is checked by the same contract suite (``tests/contract``).
Units of work are serialised and atomic; nothing is persisted.
"""

from tidings.store.memory.store import MemoryStore, MemoryTx

__all__ = ["MemoryStore", "MemoryTx"]
