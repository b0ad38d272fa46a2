"""What a live stream announces and replays: :meth:`InboxService.newer`, the inbox items placed
after a position (``(created_at, event id)``, the list's order), oldest first, up to a limit —
on every store (the hot store runs the same check in ``hotstore/test_hot_engine.py``)."""

from __future__ import annotations

from tidings.clock import FrozenClock
from tidings.engine import Tidings


def newer_in_list_order(t: Tidings, clock: FrozenClock) -> None:
    inbox = t.inbox
    empty = inbox.newer("bob", None, limit=5)
    assert (empty.items, empty.top, empty.complete) == ([], None, True)
    assert inbox.newer("bob", (0, 0), limit=5).items == []

    ids = []
    for n in range(3):
        ids.append(t.publish({"type": "mention", "actor": "carol", "recipients": ["bob"],
                              "object": f"page:{n}"}).id)
        clock.advance(1)
        t.run_jobs()
    first = inbox.newer("bob", (0, 0), limit=5)
    assert [item.id for _, item in first.items] == ids
    positions = [position for position, _ in first.items]
    assert positions == sorted(positions) and first.top == positions[-1]
    # the same order as the list (newest first there)
    assert [item.id for item in t.notifications("bob").items] == ids[::-1]
    assert inbox.newer("bob", first.top, limit=5).items == []
    assert [item.id for _, item in inbox.newer("bob", positions[0], limit=5).items] == ids[1:]

    # a bundle that takes a member comes again, as its newest member
    t.subscribe("bob", "page-linked", "page:Rome")
    t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
    clock.advance(1)
    t.run_jobs()
    top = inbox.newer("bob", None, limit=1).top
    second = t.publish({"type": "page-linked", "actor": "dave", "object": "page:Rome"}).id
    clock.advance(1)
    t.run_jobs()
    (moved,) = inbox.newer("bob", top, limit=5).items
    assert (moved[1].id, moved[1].count) == (second, 2)

    # more than the limit: none, and not complete; the newest position still told
    top = moved[0]
    for n in range(4):
        t.publish({"type": "mention", "actor": "erin", "recipients": ["bob"],
                   "object": f"post:{n}"})
        clock.advance(1)
    t.run_jobs()
    over = inbox.newer("bob", top, limit=3)
    assert (over.items, over.complete) == ([], False)
    whole = inbox.newer("bob", top, limit=4)
    assert whole.complete and len(whole.items) == 4 and over.top == whole.top

    # the newest item deleted: nothing older comes again
    t.delete_notification("bob", whole.items[-1][1].id)
    assert inbox.newer("bob", whole.top, limit=10).items == []


def test_newer_in_list_order(t: Tidings, clock: FrozenClock) -> None:
    newer_in_list_order(t, clock)
