"""``inbox_open`` (migration 0032) on every SQL backend: per (user, bundle) the position of
the bundle's newest base row, which fan-out locks and reads its base through. Every write that
changes a bundle's newest base moves it in the same transaction: a new base (a start or a
join), a retraction (the next newest base, or no row when none is left) and the cap's trim; a
type that never bundles keeps no row."""

from __future__ import annotations

from sqlalchemy import select

from engines import open_tidings, table_rows
from tidings.clock import FrozenClock
from tidings.domain.bundling import bundle_hash
from tidings.domain.types import EventType
from tidings.domain.views import Delivery, NewNotification
from tidings.engine import Tidings
from tidings.store.sql.schema import notifications

LINK = EventType("link", bundle="object", audience=("recipients",))
NOTE = EventType("note", audience=("recipients",))  # never bundles
TYPES = (LINK, NOTE)


def opened(t: Tidings) -> list[tuple[str, int | None]]:
    """(user, event id of the newest base) of each inbox_open row, by user."""
    return [(r["user_id"], r["event_id"]) for r in table_rows(t, "inbox_open")]


def link(t: Tidings, clock: FrozenClock, users: list[str], obj: str = "page:A") -> int:
    clock.advance(10)
    event_id = int(t.publish({"type": "link", "actor": "cat", "object": obj,
                              "recipients": users}).id)
    t.run_jobs()
    return event_id


def test_a_bundles_row_follows_its_newest_base(store_url: str, clock: FrozenClock) -> None:
    with open_tidings(store_url, clock=clock, types=TYPES) as t:
        first = link(t, clock, ["ann", "bob"])
        t.publish({"type": "note", "actor": "cat", "recipients": ["ann"]})
        t.run_jobs()
        assert opened(t) == [("ann", first), ("bob", first)]  # no row for the note
        second = link(t, clock, ["ann"])  # joins the group of the first
        assert opened(t) == [("ann", second), ("bob", first)]
        t.mark_all_read("ann")
        third = link(t, clock, ["ann"])  # the group was read: a group of its own
        assert [i.count for i in t.notifications("ann").items if i.type == "link"] == [1, 2]
        assert opened(t) == [("ann", third), ("bob", first)]
        # the position is the newest base row's own
        with t.store.db.read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(notifications.c.user_id, notifications.c.created_at,
                                       notifications.c.event_id)
                                .where(notifications.c.bundle_base)).all()
        assert {(r["user_id"], r["created_at"], r["event_id"])
                for r in table_rows(t, "inbox_open")} <= {tuple(r) for r in rows}
        t.retract(event_id=third)  # the bundle's newest base goes: the next newest one
        assert opened(t) == [("ann", second), ("bob", first)]
        t.retract(event_id=second)  # its group's next member becomes the base
        assert opened(t) == [("ann", first), ("bob", first)]
        t.retract(event_id=first)  # no base left: no row
        assert opened(t) == []
        again = link(t, clock, ["ann"])
        assert opened(t) == [("ann", again)]
        assert [i.count for i in t.notifications("ann").items if i.type == "link"] == [1]


def test_the_caps_trim_drops_the_rows_of_bundles_it_empties(store_url: str,
                                                             clock: FrozenClock) -> None:
    with open_tidings(store_url, clock=clock, types=TYPES, inbox_cap=2) as t:
        link(t, clock, ["ann"], "page:A")
        link(t, clock, ["ann"], "page:B")
        assert len(opened(t)) == 2
        newest = link(t, clock, ["ann"], "page:B")  # joins; the cap trims page:A's row
        assert opened(t) == [("ann", newest)]
        for _ in range(2):
            clock.advance(10)
            t.publish({"type": "note", "actor": "cat", "recipients": ["ann"]})
            t.run_jobs()
        assert opened(t) == []  # every link row trimmed: no bundle has a base
        assert [i.type for i in t.notifications("ann").items] == ["note", "note"]


def test_a_pair_locked_without_a_base_written_leaves_no_row(store_url: str,
                                                            clock: FrozenClock) -> None:
    """A unit locks a (user, bundle) pair with no base by a row made for it; where it writes
    no base after all (the user held the event already), the row goes again."""
    with open_tidings(store_url, clock=clock, types=TYPES) as t:
        event_id = int(t.publish({"type": "note", "actor": "cat", "recipients": []}).id)
        bundle = bundle_hash("object", "link", "cat", "page:A", event_id)
        t.store.transact(lambda tx: tx.inbox.insert([NewNotification(
                user_id="ann", event_id=event_id, created_at=5, type="link", category="c",
                section="alert", actor="cat", object="page:A",
                bundle_hash=bundle_hash("object", "link", "cat", "page:B", event_id),
                display_hash=bundle, joined=False)]))  # held under another bundle hash
        assert [u for u, _ in opened(t)] == ["ann"]
        delivery = Delivery(event_id=event_id, created_at=5, type="link", category="c",
                            section="alert", actor="cat", object="page:A",
                            bundle_hash=bundle, bundled=True)
        written = t.store.transact(
            lambda tx: tx.inbox.deliver_many([(delivery, ["ann", "bob"])]))
        assert written == [["bob"]]
        assert [(r["user_id"], r["bundle_hash"]) for r in table_rows(t, "inbox_open")
                if r["bundle_hash"] == bundle] == [("bob", bundle)]
