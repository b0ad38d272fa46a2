"""Why a notification arrived: fan-out keeps each user's most personal reason on their row
(``recipient``, ``mention``, ``subscribed``, ``following``), every listed item and bundle
member says it, and lists and unread counts narrow by it (``reason``, ``participating``)."""

from __future__ import annotations

import pytest

from engines import open_tidings
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import InvalidEventType, InvalidInput

COMMENT = EventType(name="comment", bundle="object", mentions="mentioned",
                    audience=("recipients", "object_subscribers", "actor_followers"))


def _reasons(t: Tidings, user: str, **narrow: object) -> dict[str, str | None]:
    return {n.object or "": n.reason
            for n in t.notifications(user, **narrow).items}  # type: ignore[arg-type]


PEOPLE = ("bob", "carol", "dave", "erin", "frank", "gina", "hal")
# each one's reason for the event of _reach_people
EXPECTED = {"bob": "following", "carol": "subscribed", "dave": "recipient", "erin": "mention",
            "frank": "subscribed", "gina": "recipient", "hal": "mention"}


def _reach_people(t: Tidings) -> dict[str, str | None]:
    """One event reaching users by each rule and by several at once: each one's reason."""
    t.define_type(COMMENT)
    t.follow("bob", "alice")
    t.subscribe("carol", "comment", "page:1")
    t.follow("frank", "alice")
    t.subscribe("frank", "comment", "page:1")  # follower and subscriber: subscribed
    t.follow("gina", "alice")
    t.subscribe("gina", "comment", "page:1")  # named too: recipient
    t.subscribe("hal", "*", "*")  # mentioned too: mention
    t.publish({"type": "comment", "actor": "alice", "object": "page:1",
               "recipients": ["dave", "erin", "gina", "hal"],
               "payload": {"mentioned": ["erin", "hal", "bob", "zed"]}})
    t.run_jobs()
    return {user: _reasons(t, user)["page:1"] for user in PEOPLE}


def test_each_user_gets_the_most_personal_reason(t: Tidings, clock: FrozenClock) -> None:
    assert _reach_people(t) == EXPECTED

    # one inbox with an item of each reason: the filters on the list and on the count
    t.subscribe("ann", "comment", "page:2")
    t.follow("ann", "alice")
    for obj, named, mentioned in (("page:2", [], []), ("page:3", [], []),
                                  ("page:4", ["ann"], []), ("page:5", ["ann"], ["ann"])):
        clock.advance(1)
        t.publish({"type": "comment", "actor": "alice", "object": obj, "recipients": named,
                   "payload": {"mentioned": mentioned}})
    t.run_jobs()
    assert _reasons(t, "ann") == {"page:2": "subscribed", "page:3": "following",
                                  "page:4": "recipient", "page:5": "mention"}
    assert set(_reasons(t, "ann", participating=True)) == {"page:4", "page:5"}
    assert set(_reasons(t, "ann", reason="following,subscribed")) == {"page:2", "page:3"}
    assert set(_reasons(t, "ann", reason=["mention"], participating=True)) == {"page:5"}
    assert _reasons(t, "ann", reason="subscribed", participating=True) == {}
    assert t.unread_count("ann", participating=True).count == 2
    assert t.unread_count("ann", reason="following").count == 1
    assert t.unread_count("ann", participating=False).count == 4
    counts = t.unread_counts("ann", reason=["recipient", "subscribed"])
    assert (counts[0].count, counts[1].count) == (2, 2)

    # a bundle shows the most personal reason among its members; each member its own
    # (the most personal of itself and the members before it)
    clock.advance(1)
    t.publish({"type": "comment", "actor": "alice", "object": "page:3", "recipients": ["ann"]})
    t.run_jobs()
    clock.advance(1)
    last = t.publish({"type": "comment", "actor": "alice", "object": "page:3"})
    t.run_jobs()
    (item,) = [n for n in t.notifications("ann").items if n.object == "page:3"]
    assert (item.id, item.count, item.reason) == (last.id, 3, "recipient")
    members = t.bundle_members("ann", item.id).items
    assert [m.reason for m in members] == ["recipient", "recipient", "following"]
    assert set(_reasons(t, "ann", participating=True)) == {"page:3", "page:4", "page:5"}
    # what a live stream announces says it too
    streamed = t.inbox.newer("ann", (0, 0), limit=10).items
    assert {n.object: n.reason for _, n in streamed} == _reasons(t, "ann")

    for bad in ({"reason": "friend"}, {"reason": ""}, {"reason": [1]}, {"participating": "x"}):
        with pytest.raises(InvalidInput) as raised:
            t.notifications("ann", **bad)  # type: ignore[arg-type]
        assert raised.value.field in ("reason", "participating")
        with pytest.raises(InvalidInput):
            t.unread_count("ann", **bad)  # type: ignore[arg-type]


def test_a_chunked_audience_gets_the_same_reasons(any_store_url: str) -> None:
    """Chunks of two users, each source's apart: a user two sources name gets the most
    personal reason whichever chunk reaches them first."""
    with open_tidings(any_store_url, chunk_size=2) as t:
        assert _reach_people(t) == EXPECTED


def test_mentions_names_one_payload_key() -> None:
    assert EventType.from_dict("c", {"mentions": "mentioned"}).mentions == "mentioned"
    assert "mentions" not in EventType(name="c").to_dict()
    for bad in ("", "a.b", 3, "x" * 65):
        with pytest.raises(InvalidEventType) as raised:
            EventType.from_dict("c", {"mentions": bad})
        assert raised.value.field == "mentions"
