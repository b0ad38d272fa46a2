"""Jiepang's query dimensions through the facade on every SQL backend: list by (user, types)
with actor / object conditions, ``max_id`` and ``since_id``; the unread count by the same; delete
by (user, actor, type, object) for one recipient; mark read by match. ``test_hot_engine.py`` runs
the same checks with the Redis hot store."""

from __future__ import annotations

from typing import Any

import pytest

from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import InvalidInput


def query_dimensions(t: Tidings, clock: FrozenClock) -> None:
    posted = []
    for actor, obj in [("bob", "page:A"), ("cat", "page:A"), ("bob", "page:B"),
                       ("bob", "page:A")]:
        posted.append(int(t.publish({"type": "mention", "actor": actor, "object": obj,
                                     "recipients": ["ann", "dan"]}).id))
        clock.advance(1)
        t.run_jobs()
    e = posted

    def listed(**query: object) -> list[int]:
        return [int(n.id) for n in t.notifications("ann", **query).items]  # type: ignore[arg-type]

    assert listed() == e[::-1]
    assert listed(actor="bob") == [e[3], e[2], e[0]]
    assert listed(object="page:A") == [e[3], e[1], e[0]]
    assert listed(actor="bob", object="page:A", types=["mention"]) == [e[3], e[0]]
    assert listed(max_id=e[2]) == [e[1], e[0]]
    assert listed(since_id=e[1]) == [e[3], e[2]]
    assert listed(since_id=str(e[0]), max_id=str(e[3]), actor="bob") == [e[2]]
    assert listed(actor="nobody") == []
    assert t.unread_count("ann", actor="bob").count == 3
    assert t.unread_count("ann", object="page:B").count == 1

    # mark read by (user, actor, type, object), delete for one recipient
    assert t.mark_read_matching("ann", actor="bob", type="mention", object="page:A") == 2
    assert t.unread_count("ann").count == 2
    assert t.delete_notifications("ann", actor="bob", type="mention", object="page:A") == 2
    assert listed() == [e[2], e[1]]
    assert [int(n.id) for n in t.notifications("dan").items] == e[::-1]  # others keep theirs
    assert t.delete_notifications("ann", actor="bob", type="mention", object="page:A") == 0
    # ... and for every recipient (a like withdrawn)
    assert t.retract(type="mention", actor="cat", object="page:A") == 2
    assert listed() == [e[2]]

    for bad in ({"max_id": "x"}, {"since_id": 0}, {"actor": "a b"}, {"object": ""}):
        with pytest.raises(InvalidInput):
            t.notifications("ann", **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        t.delete_notifications("ann")


def test_query_dimensions(t: Tidings, clock: FrozenClock) -> None:
    query_dimensions(t, clock)


def payload_conditions(t: Tidings, clock: FrozenClock) -> None:
    """Lists and unread counts narrowed by the payload fields a type marks queryable, and by
    ``max_id`` / ``since_id`` on the count too."""
    t.define_type(EventType(name="review", category="review", audience=("recipients",),
                            queryable=("lang", "rank", "draft")))
    posted = []
    for payload in ({"lang": "de", "rank": 5, "draft": False}, {"lang": "en", "rank": 5},
                    {"lang": "de", "rank": 2.5, "draft": True}, {"lang": ["de"], "rank": None},
                    {"lang": "de", "secret": "x"}):
        posted.append(int(t.publish({"type": "review", "actor": "bob", "object": "page:A",
                                     "recipients": ["ann"], "payload": payload}).id))
        clock.advance(1)
    t.publish({"type": "mention", "actor": "bob", "recipients": ["ann"],
               "payload": {"lang": "de"}})  # its type keeps no fields: never matches
    t.run_jobs()
    e = posted

    def listed(**query: Any) -> list[int]:
        return [int(n.id) for n in t.notifications("ann", **query).items]

    assert listed(payload={"lang": "de"}) == [e[4], e[2], e[0]]
    assert listed(payload={"lang": "de", "rank": "5"}) == [e[0]]
    assert listed(payload={"rank": 5}) == [e[1], e[0]]  # a number compares in its JSON form
    assert listed(payload={"rank": "2.5"}) == [e[2]]
    assert listed(payload={"draft": True}) == [e[2]] == listed(payload={"draft": "true"})
    assert listed(payload={"draft": "false"}, types=["review"]) == [e[0]]
    assert listed(payload={"lang": "de"}, since_id=e[0], max_id=e[4]) == [e[2]]
    assert listed(payload={"lang": "fr"}) == []
    assert t.unread_count("ann", payload={"lang": "de"}).count == 3
    assert t.unread_count("ann", payload={"rank": 5}, actor="bob", object="page:A").count == 2
    assert t.unread_count("ann", since_id=e[1]).count == 4  # e2, e3, e4 and the mention
    assert t.unread_count("ann", max_id=e[1], payload={"lang": "de"}).count == 1
    assert t.unseen_count("ann", payload={"lang": "en"}).count == 1
    t.mark_read("ann", [e[0]])
    assert t.unread_count("ann", payload={"lang": "de"}).count == 2

    for bad, field in (({"secret": "x"}, "payload.secret"), ({"lang": "de"}, "payload.lang")):
        types = ["mention"] if field == "payload.lang" else None
        with pytest.raises(InvalidInput) as refused:
            t.notifications("ann", payload=bad, types=types)
        assert refused.value.field == field and field in str(refused.value)
        with pytest.raises(InvalidInput):
            t.unread_count("ann", payload=bad, types=types)
    for bad_value in ({"lang": ["de"]}, {"lang": "x" * 256}, {"a b": "x"}):
        with pytest.raises(InvalidInput):
            t.notifications("ann", payload=bad_value)


def test_payload_conditions(t: Tidings, clock: FrozenClock) -> None:
    payload_conditions(t, clock)
