"""InboxStore: read up to a place, one user's own rows, bundle bases before a place, the users
an insert registers, the size bound of the inbox cap, the bundle locks' upkeep, and several
events delivered in one call as one by one."""

from __future__ import annotations

from contract_kit import deliver, ids, key, note, page, publish, read, unread, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import display_hash
from tidings.domain.views import Delivery, NotificationKey


def _events(store: ports.Store, clock: FrozenClock, count: int) -> list[int]:
    return [publish(store, clock.now_us()) for _ in range(count)]


def test_a_read_up_to_place_covers_rows_at_or_below_it(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 100), note("ann", e[1], 200), note("ann", e[2], 200),
                    note("ann", e[3], 300), note("bob", e[0], 100)])
    assert read(store, lambda tx: tx.inbox.position_of("ann", e[1])) == (200, e[1])
    assert read(store, lambda tx: tx.inbox.position_of("cat", e[1])) is None

    assert write(store, lambda tx: tx.inbox.set_position("ann", (200, e[1]), 250)) is True

    markers = read(store, lambda tx: tx.inbox.load_markers("ann"))
    assert markers.position == (250, 200, e[1])
    assert ids(page(store, "ann")) == [e[3], e[2], e[1], e[0]]
    assert [r.event_id for r in page(store, "ann") if not markers.is_unread(
        r.read_at, r.fresh_at, r.type, r.category, r.section,
        position=(r.created_at, r.event_id))] == [e[1], e[0]]
    assert unread(store, "ann") == 2  # e[2] (same time, higher id) and e[3]
    assert unread(store, "bob") == 1
    (state,) = read(store, lambda tx: tx.inbox.read_states("ann", [e[0]]))
    assert (state.event_id, state.created_at) == (e[0], 100)


def test_a_read_up_to_place_moves_forward_only(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 2)
    deliver(store, [note("ann", e[0], 100), note("ann", e[1], 200)])
    assert write(store, lambda tx: tx.inbox.set_position("ann", (200, e[1]), 300)) is True
    assert write(store, lambda tx: tx.inbox.set_position("ann", (100, e[0]), 400)) is False
    markers = read(store, lambda tx: tx.inbox.load_markers("ann"))
    assert markers.position == (300, 200, e[1])
    assert unread(store, "ann") == 0


def test_keys_of_name_the_users_own_rows_only(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 2)
    deliver(store, [note("ann", e[0], 1, group="g"), note("bob", e[0], 1, group="h")])
    keys = read(store, lambda tx: tx.inbox.keys_of("ann", [e[0], e[1]]))
    assert keys == [NotificationKey("ann", e[0], key("g"), True)]
    assert read(store, lambda tx: tx.inbox.keys_of("ann", [])) == []


def test_bundle_bases_before_a_place(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[0], 100, group="g1", bundle="b"),
                    note("ann", e[1], 300, group="g2", bundle="b"),
                    note("ann", e[2], 300, group="g3", bundle="b")])

    def bases(before: tuple[int, int] | None) -> dict[str, int]:
        found = write(store, lambda tx: tx.inbox.bundle_bases(["ann"], key("b"), before=before))
        return {user: base.event_id for user, base in found.items()}

    assert bases(None) == {"ann": e[2]}
    assert bases((300, e[2])) == {"ann": e[1]}  # strictly before
    assert bases((200, 0)) == {"ann": e[0]}
    assert bases((100, e[0])) == {}


def test_over_cap_counts_the_rows_exactly(store: ports.Store, clock: FrozenClock) -> None:
    """No bound kept per user: the answer follows every write and removal, a trim included."""
    e = _events(store, clock, 4)
    deliver(store, [note("ann", i, 10 + n) for n, i in enumerate(e)])
    deliver(store, [note("bob", e[0], 1)])
    over = read(store, lambda tx: tx.inbox.over_cap(["ann", "bob", "cat"], 3))
    assert over == ["ann"]
    assert read(store, lambda tx: tx.inbox.over_cap(["ann"], 4)) == []
    assert read(store, lambda tx: tx.inbox.over_cap(["cat", "bob", "ann", "bob"], 0)) == [
        "ann", "bob"]
    write(store, lambda tx: tx.inbox.remove(tx.inbox.keys_for_events([e[0]])))
    assert read(store, lambda tx: tx.inbox.over_cap(["ann", "bob"], 3)) == []
    assert read(store, lambda tx: tx.inbox.over_cap(["ann", "bob"], 2)) == ["ann"]
    assert write(store, lambda tx: tx.inbox.trim("ann", 3)) == 0
    assert write(store, lambda tx: tx.inbox.trim("ann", 2)) == 1
    assert read(store, lambda tx: tx.inbox.over_cap(["ann"], 1)) == ["ann"]
    assert read(store, lambda tx: tx.inbox.over_cap(["ann"], 2)) == []
    deliver(store, [note("ann", e[0], 5)])
    assert read(store, lambda tx: tx.inbox.over_cap(["ann"], 2)) == ["ann"]


def test_forgetting_bundle_locks_keeps_the_inbox(store: ports.Store, clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    deliver(store, [note("ann", event, 100, bundle="b")])
    write(store, lambda tx: tx.inbox.bundle_bases(["ann"], key("b")))
    clock.advance(10)
    # SQL's locks are its inbox_open rows, kept while their bundle has a base; SQLite,
    # memory and Redis serialise anyway
    assert write(store, lambda tx: tx.inbox.forget_bundle_locks(clock.now_us(), 100)) == 0
    assert ids(page(store, "ann")) == [event]
    bases = write(store, lambda tx: tx.inbox.bundle_bases(["ann"], key("b")))
    assert [b.event_id for b in bases.values()] == [event]


def test_insert_registers_the_users_it_writes_to(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 2)
    write(store, lambda tx: tx.graph.add_user("ann", 5))
    deliver(store, [note("ann", e[0], 100), note("bob", e[0], 100), note("bob", e[1], 90)])
    assert write(store, lambda tx: tx.graph.add_user("ann", 500)) is False
    assert write(store, lambda tx: tx.graph.add_user("bob", 500)) is False
    assert write(store, lambda tx: tx.graph.add_user("cat", 500)) is True
    assert read(store, lambda tx: tx.inbox.load_markers("bob")).all == 0  # no watermark


def _delivery(event: int, at: int, *, bundled: bool) -> Delivery:
    return Delivery(event_id=event, created_at=at, type="comment", category="general",
                    section="alert", actor="bob", object="o",
                    bundle_hash=key("b" if bundled else f"own{event}"), bundled=bundled)


def test_held_names_the_events_anyone_holds(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[0], 1), note("bob", e[2], 2)])
    assert read(store, lambda tx: tx.inbox.held([e[0], e[1], e[2]])) == {e[0], e[2]}
    assert read(store, lambda tx: tx.inbox.held([e[1]])) == set()
    assert read(store, lambda tx: tx.inbox.held([])) == set()


def test_several_deliveries_at_once_end_as_one_by_one(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    """Events that never bundle around one that does, an event given twice, a user who
    already holds an event: the same users written, the same rows and groups."""
    e = _events(store, clock, 4)
    deliver(store, [note("cat", e[3], 5, group=display_hash(key(f"own{e[3]}"), e[3]),
                         bundle=f"own{e[3]}")])
    items = [(_delivery(e[0], 10, bundled=False), ["bob", "ann"]),
             (_delivery(e[1], 11, bundled=True), ["ann"]),
             (_delivery(e[2], 12, bundled=True), ["ann", "cat"]),
             (_delivery(e[0], 13, bundled=False), ["ann", "dan"]),
             (_delivery(e[3], 14, bundled=False), ["cat", "ann"]),
             (_delivery(e[3], 15, bundled=False), [])]
    assert write(store, lambda tx: tx.inbox.deliver_many(items)) == [
        ["ann", "bob"], ["ann"], ["ann", "cat"], ["dan"], ["ann"], []]
    assert [(r.event_id, r.created_at, r.display_hash) for r in page(store, "ann")] == [
        (e[3], 14, display_hash(key(f"own{e[3]}"), e[3])),
        (e[2], 12, display_hash(key("b"), e[1])),  # joined the group e[1] started
        (e[0], 10, display_hash(key(f"own{e[0]}"), e[0]))]
    assert ids(page(store, "cat")) == [e[2], e[3]]
    assert ids(page(store, "dan")) == [e[0]]
    assert unread(store, "ann") == 3
    assert write(store, lambda tx: tx.inbox.deliver_many([])) == []
