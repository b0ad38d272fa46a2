"""The inbox's triage: archive ("done"), save and snooze display groups, the ``state`` filter
and the unread count, a snooze's return by its job, and saved items outlasting the cap and
retention."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from engines import TYPES, all_items, event_ids, open_tidings
from tidings.clock import FrozenClock, to_rfc3339
from tidings.engine import Tidings, UnreadCount
from tidings.exceptions import InvalidInput, NotFound
from tidings.fanout import maintenance

HOUR = 3_600
DAY = 86_400


def _mention(t: Tidings, obj: str, recipients: tuple[str, ...] = ("bob",)) -> str:
    event_id = t.publish({"type": "mention", "actor": "alice", "object": obj,
                          "recipients": list(recipients)}).id
    t.run_jobs()
    return event_id


def _link(t: Tidings, actor: str) -> str:
    event_id = t.publish({"type": "page-linked", "actor": actor, "object": "page:X",
                          "recipients": ["bob"]}).id
    t.run_jobs()
    return event_id


def _listed(t: Tidings, state: str = "inbox") -> list[tuple[str, bool, bool, bool, str | None]]:
    """bob's items under ``state``: (id, read, archived, saved, snoozed_until)."""
    return [(n.id, n.read, n.archived, n.saved, n.snoozed_until)
            for n in all_items(t, "bob", state=state)]


def test_archive_save_snooze_and_the_state_filter(t: Tidings, clock: FrozenClock) -> None:
    m1, m2, m3 = (_mention(t, f"page:{i}") for i in (1, 2, 3))
    p1 = _link(t, "a")
    carols = _mention(t, "page:c", ("carol",))
    assert [i for i, *_ in _listed(t)] == [p1, m3, m2, m1]

    # archive: out of the inbox and the count, listed under archived; twice changes nothing
    assert t.archive("bob", [m1]) == 1
    assert t.archive("bob", [m1]) == 0
    assert _listed(t, "archived") == [(m1, False, True, False, None)]
    assert t.unread_count("bob") == UnreadCount(3, "3")

    # save: stays in the inbox, listed under saved too
    assert t.save("bob", [m2]) == 1
    assert _listed(t, "saved") == [(m2, False, False, True, None)]

    # snooze (a read item): out until then, with its time
    t.mark_read("bob", [m3])
    until = clock.now_us() + HOUR * 1_000_000
    assert t.snooze("bob", [m3], until) == 1
    assert _listed(t, "snoozed") == [(m3, True, False, False, to_rfc3339(until))]
    assert _listed(t) == [(p1, False, False, False, None), (m2, False, False, True, None)]
    assert t.unread_count("bob") == UnreadCount(2, "2")

    # an archived bundle that gets a new member comes back, unread
    assert t.archive("bob", [p1]) == 1
    assert t.unread_counts("bob")[0] == UnreadCount(1, "1")
    p2 = _link(t, "b")
    (back, _) = all_items(t, "bob")
    assert (back.id, back.count, back.read, back.archived) == (p2, 2, False, False)
    assert [i for i, *_ in _listed(t, "archived")] == [m1]

    # a saved bundle that gets a new member stays saved
    assert t.save("bob", [p2]) == 1
    p3 = _link(t, "c")
    (kept, _) = all_items(t, "bob")
    assert (kept.id, kept.count, kept.saved) == (p3, 3, True)
    assert [i for i, *_ in _listed(t, "saved")] == [p3, m2]
    assert t.unsave("bob", [p3]) == 1

    # bad input changes nothing: another user's id, a time past, an unknown state
    with pytest.raises(NotFound):
        t.archive("bob", [m2, carols])
    with pytest.raises(InvalidInput) as past:
        t.snooze("bob", [m2], clock.now_us())
    assert past.value.field == "until"
    with pytest.raises(InvalidInput) as state:
        t.notifications("bob", state="done")
    assert state.value.field == "state"
    assert [i for i, *_ in _listed(t)] == [p3, m2]

    # the snooze's end: its job puts it back, unread, and tells bob's streams
    told = threading.Event()
    stop = t.watch("bob", told.set)
    try:
        clock.advance(HOUR - 1)
        t.run_jobs()
        assert [i for i, *_ in _listed(t, "snoozed")] == [m3]
        clock.advance(1)
        t.run_jobs()
        assert told.wait(5)
    finally:
        stop()
    assert _listed(t, "snoozed") == []
    assert (m3, False, False, False, None) in _listed(t)
    assert t.unread_count("bob") == UnreadCount(3, "3")

    # unsnoozed early: back at once, and its job later leaves it as it is (read)
    t.mark_read("bob", [m2])
    assert t.snooze("bob", [m2], clock.now_us() + HOUR * 1_000_000) == 1
    assert t.unsnooze("bob", [m2]) == 1
    clock.advance(HOUR)
    t.run_jobs()
    assert (m2, True, False, True, None) in _listed(t)
    assert t.unarchive("bob", [m1]) == 1 and t.unsave("bob", [m2]) == 1
    assert [i for i, *_ in _listed(t)] == [p3, m3, m2, m1]
    assert _listed(t, "archived") == _listed(t, "saved") == _listed(t, "snoozed") == []


@pytest.fixture
def capped(any_store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, inbox_cap=3, retention_days=1,
                      types=TYPES) as tidings:
        yield tidings


def test_saved_items_outlast_the_cap_and_retention(capped: Tidings, clock: FrozenClock
                                                   ) -> None:
    t = capped
    m1 = _mention(t, "page:1", ("bob", "carol"))
    m2 = _mention(t, "page:2")
    assert t.save("bob", [m1]) == 1
    m3, m4 = _mention(t, "page:3"), _mention(t, "page:4")
    # the cap takes the unsaved first: m2, not the older m1
    assert [i for i, *_ in _listed(t)] == [m4, m3, m1]

    clock.advance(DAY + 60)
    t.mark_all_read("bob")  # reading all removes nothing
    t.schedule_maintenance()
    t.run_jobs()
    assert _listed(t) == [(m1, True, False, True, None)]  # its event stays with it
    assert all_items(t, "carol") == []
    assert [str(e) for e in event_ids(t)] == [m1]
    assert m2 not in {str(e) for e in event_ids(t)}


def test_saved_items_do_not_hold_back_the_retention_of_later_ones(
        capped: Tidings, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep in parts goes on past a part whose events all stay (saved): the expired events
    after them go, and the sweep ends."""
    monkeypatch.setattr(maintenance, "RETENTION_BATCH", 2)
    t = capped
    kept = [_mention(t, f"page:{i}", ("carol",)) for i in range(3)]
    assert t.save("carol", kept) == 3
    gone = _mention(t, "page:x", ("dan",))
    clock.advance(DAY + 60)
    t.schedule_maintenance()
    t.run_jobs()
    assert [n.id for n in all_items(t, "carol")] == kept[::-1]
    assert all_items(t, "dan") == []
    assert gone not in {str(e) for e in event_ids(t)}
