"""``InboxStore.deliver_many`` (and ``deliver``, a batch of one) written once over the inbox
port's primitives, for stores with transactions (SQL, memory).

The bundles' (user, bundle) pairs are locked and their newest bases read at once
(``bundle_bases_many``), who holds the events already is read and skipped, and the bundling
rule (:class:`tidings.domain.bundling.Bundler`) decides in order; the store only writes
(``demote``, ``insert``), every step inside the caller's unit. The Redis store overrides the
composite: it applies the same rule per user in one Lua script (``deliver.lua``), checked
against the domain's by the same property test (``tests/contract/test_inbox_bundling.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

from tidings.domain.bundling import Bundler
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery, NewNotification


class Steps(Protocol):
    """The inbox primitives a delivery is made of (``InboxStore``'s)."""

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]: ...
    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]: ...
    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]: ...
    def held(self, event_ids: Sequence[int]) -> set[int]: ...
    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]: ...
    def demote(self, groups: Sequence[tuple[str, str]]) -> None: ...
    def insert(self, rows: Sequence[NewNotification]) -> None: ...


def deliver_many(inbox: Steps, items: Sequence[tuple[Delivery, Sequence[str]]]
                 ) -> list[list[str]]:
    """Each (delivery, users) item in order, as one by one, set-based: one read of which
    events anyone holds already (usually none: then nobody is looked up), the (user, bundle)
    pairs of every bundled event locked and their newest bases read at once, the decisions
    made in order by the domain's rule (a later event sees the groups the earlier ones start
    or join), and the rows written in *waves*: a wave ends before an event that decides for a
    pair an event of the wave decided for, so each wave is one demotion and one insert.
    Returns the users newly written by each item (an event given twice: its users once)."""
    given: set[tuple[int, str]] = set()  # an event given twice is written once
    wanted: list[tuple[Delivery, list[str]]] = []
    for d, users in items:
        wanted.append((d, [u for u in sorted(set(users)) if (d.event_id, u) not in given]))
        given.update((d.event_id, u) for u in users)
    if len(wanted) > 1 and any(d.bundled and d.backfill for d, _ in wanted):
        # a back-filled bundled event decides against the bases before its own place, read
        # for it alone: each item on its own, in order
        return [_deliver(inbox, [item])[0] for item in wanted]
    return _deliver(inbox, wanted)


def _deliver(inbox: Steps, wanted: Sequence[tuple[Delivery, list[str]]]) -> list[list[str]]:
    """:func:`deliver_many` of items whose users are sorted and distinct, with a back-filled
    bundled event only alone."""
    events = sorted({d.event_id for d, users in wanted if users})
    # one event: who holds it is asked of its users at once (a first delivery: one probe)
    held = set(events) if len(events) == 1 else inbox.held(events) if events else set()
    bases = _bases(inbox, wanted)
    fresh: list[list[str]] = []
    for d, users in wanted:
        if d.event_id in held and users:
            existing = inbox.delivered(d.event_id, users)
            users = [u for u in users if u not in existing]
        fresh.append(users)
    # the pairs decided for more than once here: the groups the earlier decisions leave are
    # judged under their users' watermarks too, as are the bases read
    decided = Counter((u, d.bundle_hash) for (d, _), users in zip(wanted, fresh, strict=True)
                      if d.bundled for u in users)
    again = {pair for pair, times in decided.items() if times > 1}
    judged = sorted({u for pair in decided if pair in bases or pair in again for u in pair[:1]})
    markers = inbox.load_markers_many(judged) if judged else {}
    bundler = Bundler(bases, markers, again=again)
    wave = _Wave(inbox)
    for (d, _), users in zip(wanted, fresh, strict=True):
        if d.bundled:
            mine = {(u, d.bundle_hash) for u in users}
            if not mine.isdisjoint(wave.pairs):
                wave.write()
            wave.pairs |= mine
        rows = bundler.decide(d, users)
        wave.rows += rows.rows
        wave.demote += rows.demoted
    wave.write()
    return fresh


def _bases(inbox: Steps, wanted: Sequence[tuple[Delivery, list[str]]]
           ) -> dict[tuple[str, str], BundleBase]:
    """The newest base of every (user, bundle) pair the items decide for, their deciders
    serialised (``InboxStore.bundle_bases``); a back-filled event's, the newest before it."""
    if len(wanted) == 1 and wanted[0][0].bundled and wanted[0][0].backfill:
        d, users = wanted[0]
        if not users:
            return {}
        found = inbox.bundle_bases(users, d.bundle_hash, before=(d.created_at, d.event_id))
        return {(user, d.bundle_hash): base for user, base in found.items()}
    pairs = sorted({(u, d.bundle_hash) for d, users in wanted if d.bundled for u in users})
    return inbox.bundle_bases_many(pairs) if pairs else {}


class _Wave:
    """Rows decided but not written yet, with the groups they demote and the (user, bundle)
    pairs they decided for."""

    def __init__(self, inbox: Steps) -> None:
        self.inbox = inbox
        self.rows: list[NewNotification] = []
        self.demote: list[tuple[str, str]] = []
        self.pairs: set[tuple[str, str]] = set()

    def write(self) -> None:
        if self.demote:
            self.inbox.demote(self.demote)
        if self.rows:
            self.inbox.insert(self.rows)
        self.rows, self.demote, self.pairs = [], [], set()


def bases_by_pair(bundle_bases: Callable[[Sequence[str], str], dict[str, BundleBase]],
                  pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], BundleBase]:
    """``bundle_bases_many`` from ``bundle_bases``: one call per bundle."""
    users: dict[str, list[str]] = {}
    for user, bundle in sorted(set(pairs), key=lambda p: (p[1], p[0])):
        users.setdefault(bundle, []).append(user)
    return {(user, bundle): base for bundle, mine in users.items()
            for user, base in bundle_bases(mine, bundle).items()}
