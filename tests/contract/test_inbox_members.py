"""A bundle opened (``InboxStore.members``) on every store: the members of the display group
that holds one of the user's notifications, newest first by (created_at, event id), paged by
place without a repeat or a gap (ties of created_at included), each with its own read
columns; a group of a type that does not bundle is its one row; nothing for a notification
the user does not hold."""

from __future__ import annotations

import json
from collections.abc import Sequence

from contract_kit import key, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.domain.readstate import Markers
from tidings.domain.views import Delivery, InboxRow


def _like(tx: ports.Tx, now: int, actor: str, users: Sequence[str], *, obj: str = "page:Fog",
          bundled: bool = True) -> int:
    event = Event(type="like", actor=actor, object=obj, payload={"by": actor})
    event_id = tx.events.insert(event, f'{{"by": "{actor}"}}', now)
    tx.inbox.deliver_many([(Delivery(
        event_id=event_id, created_at=now, type="like", category="social", section="alert",
        actor=actor, object=obj, bundle_hash=key(f"like:{obj}"), bundled=bundled),
        list(users))])
    return event_id


def _likes(store: ports.Store, clock: FrozenClock, actors: Sequence[str], *,
           users: Sequence[str] = ("ann",), tick: float = 0.001, obj: str = "page:Fog",
           bundled: bool = True) -> list[int]:
    def work(tx: ports.Tx) -> list[int]:
        made = []
        for actor in actors:
            clock.advance(tick)
            made.append(_like(tx, clock.now_us(), actor, users, obj=obj, bundled=bundled))
        return made
    return write(store, work)


def _members(store: ports.Store, user: str, event_id: int, *, limit: int = 100,
             before: tuple[int, int] | None = None) -> list[InboxRow] | None:
    return read(store, lambda tx: tx.inbox.members(user, event_id, limit=limit, before=before))


def _all_pages(store: ports.Store, user: str, event_id: int, limit: int) -> list[int]:
    ids: list[int] = []
    before = None
    while True:
        page = _members(store, user, event_id, limit=limit, before=before)
        assert page is not None
        assert len(page) <= limit
        ids += [r.event_id for r in page]
        if len(page) < limit:
            return ids
        before = (page[-1].created_at, page[-1].event_id)


def test_any_member_opens_its_group_newest_first(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    ids = _likes(store, clock, ["bob", "cat", "dan", "eve", "fay"], users=("ann", "gus"))
    for member in (ids[0], ids[2], ids[-1]):
        rows = _members(store, "ann", member)
        assert rows is not None
        assert [r.event_id for r in rows] == ids[::-1]
        assert [r.actor for r in rows] == ["fay", "eve", "dan", "cat", "bob"]
        assert all(r.user_id == "ann" and r.type == "like" for r in rows)
        assert json.loads(rows[0].payload) == {"by": "fay"}
    assert _members(store, "ann", ids[0], limit=2) is not None
    assert [r.event_id for r in _members(store, "ann", ids[0], limit=2) or []] == ids[:-3:-1]


def test_pages_by_place_never_repeat_or_skip_even_with_equal_times(
        store: ports.Store, clock: FrozenClock) -> None:
    # three members at one instant among others: the place's event id breaks the tie
    ids = _likes(store, clock, ["a1", "a2"])
    ids += _likes(store, clock, ["b1", "b2", "b3"], tick=0)
    clock.advance(0.001)
    ids += _likes(store, clock, ["c1", "c2"])
    newest_first = [r.event_id for r in _members(store, "ann", ids[0]) or []]
    assert sorted(newest_first) == sorted(ids) and len(newest_first) == 7
    for limit in (1, 2, 3, 7, 8):
        assert _all_pages(store, "ann", ids[3], limit) == newest_first


def test_members_keep_their_own_read_columns(store: ports.Store, clock: FrozenClock) -> None:
    ids = _likes(store, clock, ["bob", "cat"])
    rows = _members(store, "ann", ids[0]) or []
    markers = Markers()
    assert [markers.is_unread(r.read_at, r.fresh_at, r.type, r.category, r.section,
                              position=(r.created_at, r.event_id)) for r in rows] == [True, True]
    group = rows[0].display_hash

    def mark(tx: ports.Tx) -> int:
        return tx.inbox.mark_groups("ann", [group], read=True, now=clock.now_us(),
                                    markers=tx.inbox.load_markers("ann"))
    write(store, mark)
    rows = _members(store, "ann", ids[1]) or []
    assert [r.read_at is not None for r in rows] == [True, True]


def test_a_read_group_and_the_next_one_are_apart(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    first = _likes(store, clock, ["bob", "cat"])
    group = (_members(store, "ann", first[0]) or [])[0].display_hash
    write(store, lambda tx: tx.inbox.mark_groups("ann", [group], read=True,
                                                 now=clock.now_us(), markers=Markers()))
    later = _likes(store, clock, ["dan", "eve"])  # the group was read: a new one starts
    assert [r.event_id for r in _members(store, "ann", first[1]) or []] == first[::-1]
    assert [r.event_id for r in _members(store, "ann", later[0]) or []] == later[::-1]


def test_a_notification_of_a_type_that_does_not_bundle_is_its_own_group(
        store: ports.Store, clock: FrozenClock) -> None:
    ids = _likes(store, clock, ["bob", "cat"], bundled=False)
    for event_id in ids:
        rows = _members(store, "ann", event_id) or []
        assert [r.event_id for r in rows] == [event_id]
        place = (rows[0].created_at, rows[0].event_id)
        assert _members(store, "ann", event_id, before=place) == []


def test_nothing_for_a_notification_the_user_does_not_hold(
        store: ports.Store, clock: FrozenClock) -> None:
    ids = _likes(store, clock, ["bob"], users=("ann",))
    assert _members(store, "gus", ids[0]) is None
    assert _members(store, "ann", ids[0] + 1000) is None


def test_a_group_of_another_object_is_not_mixed_in(store: ports.Store,
                                                   clock: FrozenClock) -> None:
    fog = _likes(store, clock, ["bob", "cat"], obj="page:Fog")
    sun = _likes(store, clock, ["dan"], obj="page:Sun")
    assert [r.event_id for r in _members(store, "ann", fog[0]) or []] == fog[::-1]
    assert [r.event_id for r in _members(store, "ann", sun[0]) or []] == sun
