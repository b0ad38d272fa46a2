"""What a hot store (feeds in one store, records in another) needs of its store of records.

``tidings.store.hot`` keeps inboxes, watermarks and timelines in Redis and everything else in
a store of records (SQL today; any store that keeps these ports could be, as a Cassandra or
DynamoDB feed store would plug in on the other side). Beyond :class:`Store` and :class:`Tx`
it asks of that store the events' columns its feeds show, the registration of the users it
delivers to, and a durable journal of its writes with the watermarks it copies there, so that
a lost feed store can be rebuilt (``docs/redis.md``, "Rebuild").

A journal row holds one unit's writes (text of the feed store's own, never starting with
``{``) or a JSON object: ``{"baseline": newest event id}`` (the first row), ``{"checkpoint":
store time}`` (a compaction's mark) or ``{"baseline"?: …, "snapshot": [[key, kind, data],
…]}`` (the state of the rows it replaced). The store of records keeps the rows in order and
writes the baseline, checkpoints and snapshots; the feed store writes and replays the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, TypeVar

from tidings.domain.views import TimelineEntry
from tidings.ports.units import AsyncStore, Store, Tx

T = TypeVar("T")
BASELINE = "baseline"
SNAPSHOT = "snapshot"
CHECKPOINT = "checkpoint"

# a part of a snapshot: [key after the feed store's prefix, kind, data] per key
SnapshotPart = list[list[Any]]
# the state some journal rows make, folded by the feed store: (their baseline, the snapshot's
# parts, read while the context is open)
Fold = Callable[[Iterator[str]],
                AbstractContextManager[tuple[int, Iterator[SnapshotPart]]]]


class Watermark(NamedTuple):
    """A durable read watermark: ``position`` (created_at, event id) for a read-up-to place."""

    user: str
    scope: str
    until: int
    position: tuple[int, int] | None


class FeedRecords(Protocol):
    """Within one unit of the store of records: what its feeds read and write there."""

    def payloads(self, ids: Sequence[int]) -> dict[int, str]:
        """The payload JSON of the events of these ids (retracted ones too)."""

    def bodies(self, ids: Sequence[int]) -> dict[int, TimelineEntry]:
        """The timeline entries of the events of these ids, retracted ones left out."""

    def actors(self, ids: Sequence[int]) -> dict[int, str | None]:
        """The actor of the events of these ids."""

    def register(self, written: Sequence[tuple[str, int]]) -> None:
        """Register the users of these (user, created_at) rows, dated with their first (as
        :meth:`InboxWrites.insert` does where the rows are stored with the records)."""

    def journal(self, writes: str) -> None:
        """Append a row of this unit's feed writes to the journal."""

    def compact(self, now: int, fold: Fold) -> int:
        """At most once a day (``now`` a day past the newest checkpoint, or none yet): replace
        the rows before the newest checkpoint by the snapshot ``fold`` makes of them, then
        append a checkpoint; returns how many rows went."""

    def fold_all(self, fold: Fold, *, naming: str) -> int:
        """Now, whatever the time, if any row holds the text ``naming`` (a person's id):
        replace every row by the snapshot ``fold`` makes of them (an erasure's, which leaves
        that person out of it), the newest checkpoint's time kept; returns how many rows
        went."""


class FeedJournal(Protocol):
    """What the store of records keeps durable for its feeds: the journal, the watermarks."""

    def adopt(self) -> bool:
        """First use with no journal: write its baseline row (the newest event id); False,
        writing nothing, when the journal has rows already."""

    def replay(self, apply: Callable[[str], None]) -> None:
        """Every journal row, oldest first, given to ``apply`` (read in pages)."""

    def newest_checkpoint(self) -> int:
        """The newest checkpoint's row id (0: none): a rebuild that sees it change while it
        replays met a compaction, and starts again."""

    def watermarks(self) -> Iterator[list[Watermark]]:
        """Every durable read watermark, by (user, scope), in pages each read on its own."""


class RecordsTx(Tx, Protocol):
    """A unit of the store of records, with what its feeds need there."""

    @property
    def feed_records(self) -> FeedRecords: ...


class RecordsStore(Store, Protocol):
    """A store that keeps the records of a hot store: its units hand out
    :class:`FeedRecords`, and it keeps the feeds' journal."""

    def transact(self, work: Callable[[RecordsTx], T]) -> T: ...

    def read(self) -> AbstractContextManager[RecordsTx]: ...

    @property
    def journal(self) -> FeedJournal: ...

    def publishing(self, store: Store) -> AsyncStore:
        """The :class:`AsyncStore` of ``store``, which keeps its events here: a publish by
        this store's native way where it has one, everything else ``store``'s own in a
        thread."""
