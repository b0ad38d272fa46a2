"""Back-fill from JSON Lines: events dated in the past, the graph, read markers, and users caught
up Gazelle's way (read up to their join date; users who come later start read up to now)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engines import all_items, event_ids, snapshot
from tidings.clock import FrozenClock, parse_rfc3339
from tidings.domain.readstate import Markers
from tidings.engine import Tidings, UnreadCount
from tidings.exceptions import InvalidInput
from tidings.importer import import_lines

# The frozen clock starts on 2023-11-14, after every date below.
RECORDS: list[dict[str, Any]] = [
    {"kind": "user", "id": "carol", "created_at": "2023-03-01T00:00:00Z"},
    {"kind": "user", "id": "dave", "created_at": "2023-01-01T00:00:00Z"},
    {"kind": "subscription", "user": "dave", "type": "page-linked", "object": "page:X"},
    {"kind": "follow", "user": "erin", "other": "alice"},
    {"kind": "read", "user": "gina", "until": "2023-05-15T00:00:00Z"},
    {"kind": "mute", "user": "carol", "actor": "spammer"},
    {"kind": "event", "type": "mention", "actor": "alice", "recipients": ["carol", "gina"],
     "created_at": "2023-02-01T00:00:00Z", "idempotency_key": "m1"},
    {"kind": "event", "type": "mention", "actor": "alice",
     "recipients": ["carol", "gina", "frank"], "created_at": "2023-06-01T00:00:00Z",
     "idempotency_key": "m2"},
    {"kind": "event", "type": "page-linked", "actor": "bob", "object": "page:X",
     "created_at": "2023-04-01T00:00:00Z", "idempotency_key": "l1"},
    {"kind": "event", "type": "post", "actor": "alice", "object": "blog:1",
     "created_at": "2023-07-01T00:00:00Z", "idempotency_key": "p1"},
    {"kind": "event", "type": "mention", "actor": "spammer", "recipients": ["carol"],
     "created_at": "2023-08-01T00:00:00Z", "idempotency_key": "s1"},
]


# every user id RECORDS name: the only users an import of them may register
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "spammer"]


def _lines(records: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r) for r in records]


@pytest.fixture
def imported(t: Tidings) -> Tidings:
    report = import_lines(t, _lines(RECORDS))
    assert report.errors == []
    assert report.counts == {"user": 2, "event": 5, "subscription": 1, "follow": 1,
                             "mute": 1, "read": 1}
    t.run_jobs()
    return t


def _scopes(markers: dict[str, Markers]) -> dict[str, list[str]]:
    """Which watermarks each user has, whatever their values."""
    return {user: [*(["all"] if m.all else []), *(["seen"] if m.seen else []),
                   *sorted(f"{kind}:{value}" for kind, value in m.scoped)]
            for user, m in markers.items()}


def _dated(t: Tidings, user: str) -> list[tuple[str, str, bool]]:
    return [(n.actor, n.created_at, n.read) for n in all_items(t, user)]


def test_imported_events_keep_their_dates_and_reach_their_audience(imported: Tidings) -> None:
    t = imported

    assert _dated(t, "carol") == [
        ("alice", "2023-06-01T00:00:00Z", False),
        ("alice", "2023-02-01T00:00:00Z", True),  # before carol joined
    ]  # spammer is muted
    assert [(n.type, n.actor, n.created_at) for n in all_items(t, "dave")] == [
        ("page-linked", "bob", "2023-04-01T00:00:00Z")]
    assert [(n.type, n.created_at) for n in all_items(t, "erin")] == [
        ("post", "2023-07-01T00:00:00Z")]


def test_users_are_read_up_to_their_join_date_or_marker(imported: Tidings) -> None:
    t = imported

    assert t.unread_count("carol") == UnreadCount(1, "1")  # joined 2023-03-01
    assert t.unread_count("dave") == UnreadCount(1, "1")  # joined 2023-01-01, then subscribed
    assert _dated(t, "gina") == [
        ("alice", "2023-06-01T00:00:00Z", False),  # after her read marker
        ("alice", "2023-02-01T00:00:00Z", True),
    ]
    assert t.unread_count("erin") == UnreadCount(0, "0")  # no join date: read up to the import
    assert t.unread_count("frank") == UnreadCount(1, "1")  # not imported as a user at all


def test_imported_users_and_graph_are_stored(imported: Tidings) -> None:
    t = imported

    with t.store.read() as tx:
        joined = tx.graph.joined(NAMES)
    assert joined["carol"] == parse_rfc3339("2023-03-01T00:00:00Z")
    assert joined["dave"] == parse_rfc3339("2023-01-01T00:00:00Z")
    assert joined["frank"] == parse_rfc3339("2023-06-01T00:00:00Z")  # met by that event
    assert sorted(joined) == ["carol", "dave", "erin", "frank", "gina"]
    assert [(s.type, s.object) for s in t.subscriptions("dave").items] == [
        ("page-linked", "page:X")]
    assert [f.user for f in t.following("erin").items] == ["alice"]
    assert t.muted("carol") == {"actors": ["spammer"], "objects": []}


def test_users_added_after_the_import_start_read_up_to_now(imported: Tidings) -> None:
    t = imported

    assert t.add_user("ivan") is True
    assert t.unread_count("ivan") == UnreadCount(0, "0")
    assert t.add_user("carol") is False  # known: her state is kept
    assert t.unread_count("carol") == UnreadCount(1, "1")
    assert t.add_user("frank") is False  # known since an imported event reached him
    assert t.unread_count("frank") == UnreadCount(1, "1")

    t.publish({"type": "mention", "actor": "alice", "recipients": ["ivan", "hal"]})
    t.run_jobs()
    assert t.unread_count("ivan") == UnreadCount(1, "1")
    assert t.unread_count("hal") == UnreadCount(1, "1")


def test_a_join_date_given_after_the_users_other_records_still_counts(t: Tidings) -> None:
    report = import_lines(t, _lines([
        {"kind": "follow", "user": "ivy", "other": "alice"},
        {"kind": "subscription", "user": "ivy", "type": "*", "object": "*"},
        {"kind": "event", "type": "post", "actor": "alice", "created_at": "2023-05-01T00:00:00Z"},
        {"kind": "user", "id": "ivy", "created_at": "2023-04-01T00:00:00Z"},
    ]))
    t.run_jobs()

    assert report.errors == []
    assert _dated(t, "ivy") == [("alice", "2023-05-01T00:00:00Z", False)]


def test_reimporting_creates_nothing_new(imported: Tidings) -> None:
    t = imported
    before = snapshot(t, NAMES)

    report = import_lines(t, _lines(RECORDS))
    t.run_jobs()

    assert report.errors == []
    after = snapshot(t, NAMES)
    # A user caught up "to the import" (erin, no join date) is caught up to this one: the
    # values of watermarks may move, but no user gains one.
    assert _scopes(after["users"].pop("markers")) == _scopes(before["users"].pop("markers"))
    assert after == before
    assert t.unread_count("carol") == UnreadCount(1, "1")


def test_bad_lines_are_reported_by_number_and_skipped(t: Tidings) -> None:
    lines = [
        json.dumps({"kind": "user", "id": "carol"}),
        "not json",
        json.dumps({"kind": "planet", "id": "x"}),
        json.dumps({"kind": "event", "type": "no-such-type", "recipients": ["carol"]}),
        json.dumps({"kind": "event", "type": "mention", "created_at": "yesterday"}),
        "",
        json.dumps({"kind": "user", "id": "bad user"}),
        json.dumps({"kind": "event", "type": "mention", "actor": "alice",
                    "recipients": ["carol"], "created_at": "2023-02-01T00:00:00Z"}),
    ]

    report = import_lines(t, lines)

    assert [e.split(":")[0] for e in report.errors] == [
        "line 2", "line 3", "line 4", "line 5", "line 7"]
    assert "kind" in report.errors[1]
    assert "no-such-type" in report.errors[2]
    assert "created_at" in report.errors[3]
    assert report.counts["user"] == 1
    assert report.counts["event"] == 1
    assert len(event_ids(t)) == 1


def test_stop_on_error_raises_naming_the_line(t: Tidings) -> None:
    with pytest.raises(InvalidInput, match="line 2"):
        import_lines(t, [json.dumps({"kind": "user", "id": "carol"}), "{"],
                     stop_on_error=True)


# One line of each kind that names a user without a read marker or a join date.
LIVE_LINES: dict[str, dict[str, Any]] = {
    "user": {"kind": "user", "id": "liv"},
    "subscription": {"kind": "subscription", "user": "liv", "type": "*", "object": "page:X"},
    "follow": {"kind": "follow", "user": "liv", "other": "alice"},
    "mute": {"kind": "mute", "user": "liv", "actor": "spammer"},
    "dated user": {"kind": "user", "id": "liv", "created_at": "2023-01-01T00:00:00Z"},
}


def live_user_imported_again(t: Tidings, clock: FrozenClock, line: dict[str, Any], *,
                             signed_up: bool = True) -> None:
    """A user of the running site with an unread notification, then an import that names
    them: the import leaves their read state alone (Gazelle back-fills only users with no
    witness row yet, and does not date a live user's back-fill at the import)."""
    if signed_up:
        assert t.add_user("liv") is True  # read up to now: a witness row
    clock.advance(60)  # else: registered by the delivery below, with no witness row
    t.publish({"type": "mention", "actor": "alice", "recipients": ["liv"]})
    t.run_jobs()
    assert t.unread_count("liv") == UnreadCount(1, "1")
    clock.advance(60)

    report = import_lines(t, _lines([line]))
    t.run_jobs()

    assert report.errors == []
    assert t.unread_count("liv") == UnreadCount(1, "1")
    assert [n.read for n in all_items(t, "liv")] == [False]


@pytest.mark.parametrize("signed_up", [True, False], ids=["signed-up", "delivered-to"])
@pytest.mark.parametrize("line", LIVE_LINES.values(), ids=LIVE_LINES.keys())
def test_an_import_leaves_a_live_users_unread_notifications_unread(
        t: Tidings, clock: FrozenClock, line: dict[str, Any], signed_up: bool) -> None:
    live_user_imported_again(t, clock, line, signed_up=signed_up)


def test_an_import_still_catches_up_a_user_it_creates_next_to_a_live_one(
        t: Tidings, clock: FrozenClock) -> None:
    live_user_imported_again(t, clock, {"kind": "follow", "user": "liv", "other": "alice"})
    report = import_lines(t, _lines([
        {"kind": "user", "id": "newt"},
        {"kind": "event", "type": "mention", "actor": "alice", "recipients": ["newt", "liv"],
         "created_at": "2023-02-01T00:00:00Z", "idempotency_key": "old"},
    ]))
    t.run_jobs()

    assert report.errors == []
    assert t.unread_count("newt") == UnreadCount(0, "0")  # read up to the import
    # liv's live notification stays unread; the imported one is dated before her witness row
    assert [(n.created_at, n.read) for n in all_items(t, "liv")][1] == (
        "2023-02-01T00:00:00Z", True)
    assert t.unread_count("liv") == UnreadCount(1, "1")
