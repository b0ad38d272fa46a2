"""Listed items are drawn once and kept (``tidings.services.listing``): a page read again is
the same page, and anything that changes an item — its read or seen state, its bundle, its
type's templates, the language — draws it again; a caller changing an item's payload or actors
changes only its own copy. On every store."""

from __future__ import annotations

from typing import Any

import pytest

from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings


def test_a_kept_item_follows_every_change_and_stays_the_callers_own(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "object": "page:Fog", "recipients": ["bob"],
               "payload": {"line": 3}})
    t.run_jobs()

    (first,) = t.notifications("bob").items
    first.payload["line"] = 99
    first.actors.append("mallory")
    (again,) = t.notifications("bob").items
    assert again == t.notifications("bob").items[0]
    assert again.payload == {"line": 3} and again.actors == ["alice"]
    assert (again.read, again.seen) == (False, False)

    t.mark_seen("bob")
    assert t.notifications("bob").items[0].seen is True
    t.mark_all_read("bob")
    assert t.notifications("bob").items[0].read is True

    t.define_type(EventType(name="mention", templates=Templates(
        title="{{ actor }} named you on {{ object_title }}")))
    (redefined,) = t.notifications("bob").items
    assert redefined.title == "alice named you on Fog"
    assert t.notifications("bob", locale="de").items[0].title == redefined.title


def test_a_nested_payload_is_the_callers_own_too(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
               "payload": {"lines": [3, 4], "at": {"page": "Fog"}, "flag": True}})
    t.run_jobs()
    (first,) = t.notifications("bob").items
    first.payload["lines"].append(5)
    first.payload["at"]["page"] = "Rome"
    first.payload["flag"] = False
    (again,) = t.notifications("bob").items
    assert again.payload == {"lines": [3, 4], "at": {"page": "Fog"}, "flag": True}


def test_an_event_in_many_inboxes_is_drawn_once_each_reader_with_their_own_state(
        t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    from tidings.services import listing

    drawn: list[str] = []
    render_all = listing.render_all

    def counted(*args: Any, **kwargs: Any) -> Any:
        drawn.append(args[1].event_id)
        return render_all(*args, **kwargs)

    monkeypatch.setattr(listing, "render_all", counted)
    readers = [f"u{i}" for i in range(30)]
    t.publish({"type": "mention", "actor": "alice", "object": "page:Fog",
               "recipients": readers})
    t.run_jobs()
    t.mark_all_read("u3")
    t.mark_seen("u4")
    items = {user: t.notifications(user).items[0] for user in readers}
    assert len(drawn) == 1  # one event in one group state: one drawing for 30 inboxes
    assert {i.title for i in items.values()} == {items["u0"].title}
    assert (items["u3"].read, items["u4"].read, items["u4"].seen) == (True, False, True)
    assert all(not i.read and not i.seen for u, i in items.items() if u not in {"u3", "u4"})
    t.notifications("u0", locale="de")
    assert len(drawn) == 2  # another language draws it again
