"""InboxStore: queryable payload fields (``tidings.domain.fields``) are kept with each
notification, written by ``insert`` and by ``deliver``, and narrow pages and unread counts.
They are the event's (the same for every recipient of one event)."""

from __future__ import annotations

from contract_kit import deliver, ids, key, note, page, publish, unread, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.views import Delivery, Filters


def test_pages_and_counts_match_every_field_condition(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    e = [publish(store, clock.now_us()) for _ in range(4)]
    deliver(store, [
        note("ann", e[0], 1, fields=(("lang", "de"), ("rank", "5"))),
        note("ann", e[1], 2, fields=(("lang", "en"), ("rank", "5"))),
        note("ann", e[2], 3, fields=(("lang", "de"),)),
        note("ann", e[3], 4),
        note("bob", e[0], 1, fields=(("lang", "de"), ("rank", "5"))),  # the event's fields
    ])
    assert ids(page(store, "ann", Filters(fields=(("lang", "de"),)))) == [e[2], e[0]]
    assert ids(page(store, "ann", Filters(fields=(("rank", "5"),)))) == [e[1], e[0]]
    both = Filters(fields=(("lang", "de"), ("rank", "5")))
    assert ids(page(store, "ann", both)) == [e[0]]
    assert ids(page(store, "ann", Filters(fields=(("lang", "it"),)))) == []
    assert ids(page(store, "ann", Filters(fields=(("lang", "de"),), actor="ann",
                                          max_id=e[2]))) == [e[0]]
    assert unread(store, "ann", Filters(fields=(("lang", "de"),))) == 2
    assert unread(store, "ann", both) == 1
    assert unread(store, "ann", Filters(fields=(("lang", "it"),))) == 0
    assert ids(page(store, "bob", both)) == [e[0]]
    assert ids(page(store, "bob", Filters(fields=(("lang", "en"),)))) == []
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 3))
    assert unread(store, "ann", Filters(fields=(("lang", "de"),))) == 0
    assert ids(page(store, "ann", Filters(fields=(("lang", "de"),), unread=False))) == [
        e[2], e[0]]


def test_deliver_keeps_the_fields_for_every_recipient(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    e = [publish(store, clock.now_us()) for _ in range(2)]
    for event, lang in ((e[0], "de"), (e[1], "en")):
        d = Delivery(event_id=event, created_at=event * 10, type="comment",
                     category="general", section="alert", actor="bob", object="o",
                     bundle_hash=key(f"b{event}"), bundled=False, fields=(("lang", lang),))
        write(store, lambda tx, d=d: tx.inbox.deliver_many([(d, ["ann", "cat"])]))
    for user in ("ann", "cat"):
        assert ids(page(store, user, Filters(fields=(("lang", "en"),)))) == [e[1]]
        assert unread(store, user, Filters(fields=(("lang", "de"),))) == 1
