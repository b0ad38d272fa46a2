"""A display group's member count and newest distinct actors ("X and N others"), as a page and
``group_info`` give them, on every store: Echo's rule reads the group's newest 500 members
(``ACTOR_SCAN``) and names its newest distinct actors (at most ``GROUP_ACTORS``). The SQL
stores keep that summary on the group's base row as it grows; these histories take a group
past the scan (the window slides, and an actor falls out of it), through many actors, and
through removals, and check each store against the rule worked out here from the members."""

from __future__ import annotations

from collections.abc import Sequence

from contract_kit import key, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import ACTOR_SCAN, GROUP_ACTORS
from tidings.domain.events import Event
from tidings.domain.views import Delivery, Filters

PER_UNIT = 60  # events published and delivered in one unit


def _deliver(store: ports.Store, clock: FrozenClock, actors: Sequence[str | None],
             users: Sequence[str] = ("ann",), *, obj: str = "page:Fog") -> list[int]:
    """One "like" of ``obj`` by each of ``actors``, in order, delivered to ``users``: all of
    them bundle by object into one group while it is unread."""
    ids: list[int] = []
    for start in range(0, len(actors), PER_UNIT):
        def work(tx: ports.Tx, part: Sequence[str | None] = actors[start:start + PER_UNIT]
                 ) -> list[int]:
            made = []
            for actor in part:
                clock.advance(0.001)
                now = clock.now_us()
                event = Event(type="like", actor=actor, object=obj, payload={"n": 1})
                event_id = tx.events.insert(event, '{"n": 1}', now)
                tx.inbox.deliver_many([(Delivery(
                    event_id=event_id, created_at=now, type="like", category="social",
                    section="alert", actor=actor, object=obj, bundle_hash=key(f"like:{obj}"),
                    bundled=True), list(users))])
                made.append(event_id)
            return made
        ids += write(store, work)
    return ids


def _expected(members_newest_first: Sequence[str | None]) -> tuple[int, list[str]]:
    scanned = members_newest_first[:ACTOR_SCAN]
    actors = list(dict.fromkeys(a for a in scanned if a is not None))[:GROUP_ACTORS]
    return len(scanned), actors


def _groups(store: ports.Store, user: str = "ann") -> list[tuple[int, list[str]]]:
    """The groups of ``user``'s first page, newest first: by the page's read and by
    ``group_info`` (which must agree)."""
    def work(tx: ports.Tx) -> list[tuple[int, list[str]]]:
        view = tx.inbox.page_view(user, Filters(), limit=20, before=None,
                                  bundles=lambda _: True)
        hashes = [r.display_hash for r in view.rows]
        apart = tx.inbox.group_info(user, hashes)
        assert {h: (apart[h].count, apart[h].actors) for h in hashes} == {
            h: (view.groups[h].count, view.groups[h].actors) for h in hashes}
        assert all(view.groups[h].distinct_actors == len(view.groups[h].actors) for h in hashes)
        return [(view.groups[h].count, view.groups[h].actors) for h in hashes]
    return read(store, work)


def test_a_group_past_the_scan_counts_its_newest_members_and_their_actors(
        store: ports.Store, clock: FrozenClock) -> None:
    history = ["old", "eve", *[f"a{i % 3}" for i in range(ACTOR_SCAN - 3)]]
    _deliver(store, clock, history)
    newest_first = history[::-1]
    assert _groups(store) == [_expected(newest_first)]  # 499 members: "old" is still there
    more = ["a1", None, "a0"]
    _deliver(store, clock, more)
    newest_first = (history + more)[::-1]
    # 502 members: the newest 500 hold neither "old" nor "eve"
    assert _groups(store) == [_expected(newest_first)] == [(ACTOR_SCAN, ["a0", "a1", "a2"])]


def test_a_group_of_many_actors_names_the_newest_hundred(store: ports.Store,
                                                         clock: FrozenClock) -> None:
    history = [f"u{i:03d}" for i in range(GROUP_ACTORS + 20)] + ["u005"]
    _deliver(store, clock, history, users=["ann", "bob"])
    for user in ("ann", "bob"):
        (group,) = _groups(store, user)
        assert group == _expected(history[::-1])
        assert group[1][:2] == ["u005", f"u{GROUP_ACTORS + 19:03d}"]
        assert len(group[1]) == GROUP_ACTORS


def test_removals_and_later_joins_keep_the_groups_right(store: ports.Store,
                                                         clock: FrozenClock) -> None:
    history = [f"a{i % 4}" for i in range(12)] + ["zed"]
    ids = _deliver(store, clock, history)
    _deliver(store, clock, ["bob", "cat"], obj="page:Rain")  # a newer group
    rain = (2, ["cat", "bob"])
    fog = list(zip(ids, history, strict=True))  # Fog's members, oldest first

    def fog_now() -> tuple[int, list[str]]:
        return _expected([a for _, a in reversed(fog)])

    assert _groups(store) == [rain, fog_now()]
    # the newest member (the base) goes: its actor, seen nowhere else, leaves the group
    write(store, lambda tx: tx.inbox.remove(tx.inbox.keys_for_events([ids[-1]])))
    fog.pop()
    assert _groups(store) == [rain, fog_now()]
    # a member in the middle goes
    write(store, lambda tx: tx.inbox.remove(tx.inbox.keys_of("ann", [ids[3]])))
    fog.remove((ids[3], history[3]))
    assert _groups(store) == [rain, fog_now()]
    # the group grows again from what is left, and is the newest again
    later = _deliver(store, clock, ["a3", "new"])
    fog += list(zip(later, ["a3", "new"], strict=True))
    assert _groups(store) == [fog_now(), rain]
    # the cap keeps the inbox's newest 6 rows: Rain's two, and Fog's newest four
    write(store, lambda tx: tx.inbox.trim("ann", 6))
    fog = fog[-4:]
    assert _groups(store) == [fog_now(), rain] == [(4, ["new", "a3", "a2"]), rain]
