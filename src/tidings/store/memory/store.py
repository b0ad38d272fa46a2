"""MemoryStore: every port in one process's memory, one unit of work at a time.

Units are serialised by one lock per store and made atomic by an undo journal (see
:mod:`tidings.store.memory.state`): a unit that raises leaves the store exactly as it found it,
jobs it enqueued included. Nothing survives the process: it is for tests, demos and embedding.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from tidings import ports
from tidings.clock import Clock
from tidings.jobs.model import SECOND
from tidings.store.base import StoreBase
from tidings.store.memory.erasure import MemoryErasure
from tidings.store.memory.events import MemoryEvents
from tidings.store.memory.graph import MemoryGraph
from tidings.store.memory.inbox import MemoryInbox
from tidings.store.memory.jobs import MemoryJobAdmin, MemoryJobQueue, QueueSettings
from tidings.store.memory.mail import MemoryMail
from tidings.store.memory.push import MemoryPush
from tidings.store.memory.settings import MemorySettings
from tidings.store.memory.state import Journal, State
from tidings.store.memory.timeline import MemoryTimeline
from tidings.store.notifier import AfterCommit, LocalNotifier

T = TypeVar("T")


class MemoryTx(AfterCommit):
    """One unit of work: every port over the same state and the same journal."""

    def __init__(self, store: MemoryStore, state: State, journal: Journal) -> None:
        super().__init__()
        self.events = MemoryEvents(state, journal)
        self.graph = MemoryGraph(state, journal)
        self.inbox = MemoryInbox(state, journal)
        self.timeline = MemoryTimeline(state, journal)
        self.settings = MemorySettings(state, journal)
        self.mail = MemoryMail(state, journal)
        self.push = MemoryPush(state, journal)
        self.erasure = MemoryErasure(state, journal)
        # the store hears of queued jobs once the unit has committed (a woken worker finds them)
        self.jobs = MemoryJobQueue(state, journal, store.queue_settings,
                                   lambda count: self.after_commit(lambda: store.enqueued(count)))


class MemoryStore(StoreBase):
    """A store held in memory, implementing every port of :mod:`tidings.ports` (its
    composites are :class:`StoreBase`'s: a unit of work costs no round trips here)."""

    backend = "memory"

    def __init__(self, clock: Clock, *, lease_seconds: float = 60.0, max_attempts: int = 8,
                 backoff_seconds: float = 2.0) -> None:
        self.clock = clock
        self._state = State()
        self._lock = threading.RLock()
        self.queue_settings = QueueSettings(
            clock=clock, lease_us=int(lease_seconds * SECOND), max_attempts=max_attempts,
            backoff_us=int(backoff_seconds * SECOND))
        self.queue = MemoryJobAdmin(self._unit, self.queue_settings)
        self.notifier = LocalNotifier()
        # told how many jobs each unit of work queued, once it has committed
        self.on_enqueue: Callable[[int], None] | None = None
        self._buckets: dict[str, tuple[float, int]] = {}  # rate limits: (tokens, last take)

    def enqueued(self, count: int) -> None:
        if self.on_enqueue is not None:
            self.on_enqueue(count)

    def _unit(self, work: Callable[[State, Journal], T]) -> T:
        """Run ``work`` alone; undo everything it wrote if it raises."""
        with self._lock:
            journal = Journal(writable=True)
            try:
                return work(self._state, journal)
            except BaseException:
                journal.rollback()
                raise

    def transact(self, work: Callable[[ports.Tx], T]) -> T:
        units: list[MemoryTx] = []

        def run(state: State, journal: Journal) -> T:
            units.append(MemoryTx(self, state, journal))
            return work(units[0])

        result = self._unit(run)
        units[0].run_after_commit()
        return result

    @contextlib.contextmanager
    def read(self) -> Iterator[ports.Tx]:
        with self._lock:
            yield MemoryTx(self, self._state, Journal(writable=False))

    def take_tokens(self, bucket: str, cost: float, *, rate: float, capacity: float) -> float:
        """A bucket in this process (the only one that uses the store)."""
        now = self.clock.now_us()
        with self._lock:
            tokens, last = self._buckets.get(bucket, (capacity, now))
            tokens = min(capacity, tokens + max(now - last, 0) * rate / SECOND)
            taken = tokens >= cost
            self._buckets[bucket] = (tokens - cost if taken else tokens, max(now, last))
        return 0.0 if taken else max((cost - tokens) / rate, 0.001)

    def ping(self) -> None:
        """Always answers: the store is this process."""

    def migrate(self) -> None:
        """Nothing to create: the tables are dicts."""

    def check_schema(self) -> None:
        """Always current."""

    def close(self) -> None:
        """Nothing to release: the state stays readable until the store is dropped."""


_check_store: type[ports.Store] = MemoryStore
_check_tx: type[ports.Tx] = MemoryTx
