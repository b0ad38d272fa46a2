"""Jiepang's query dimensions through the facade on every SQL backend: list by (user, types)
with actor / object conditions, ``max_id`` and ``since_id``; the unread count by the same; delete
by (user, actor, type, object) for one recipient; mark read by match. ``tests/hotstore`` runs the
same checks with the Redis hot store."""

from __future__ import annotations

import pytest

from tidings.clock import FrozenClock
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
