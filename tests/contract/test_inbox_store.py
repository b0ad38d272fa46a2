"""InboxStore: idempotent rows, base rows per display group, pages, counts, read state, removal."""

from __future__ import annotations

import pytest
from contract_kit import EVERYTHING, deliver, ids, key, note, page, publish, read, unread, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import UNREAD_CAP, display_hash
from tidings.domain.readstate import Markers
from tidings.domain.views import Delivery, Filters, NotificationKey


def _events(store: ports.Store, clock: FrozenClock, count: int) -> list[int]:
    return [publish(store, clock.now_us()) for _ in range(count)]


# -- watermarks ----------------------------------------------------------------------------------

def test_watermarks_only_move_forward(store: ports.Store) -> None:
    assert read(store, lambda tx: tx.inbox.load_markers("ann")) == Markers()
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 50))
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 40))  # never back
    write(store, lambda tx: tx.inbox.set_marker("ann", "seen", 30))
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:like", 70))
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:like", 80))
    markers = read(store, lambda tx: tx.inbox.load_markers("ann"))
    assert (markers.all, markers.seen, dict(markers.scoped)) == (50, 30, {("type", "like"): 80})


def test_markers_of_many_users_name_only_those_with_marks(store: ports.Store) -> None:
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 5))
    write(store, lambda tx: tx.inbox.set_marker("bob", "section:alert", 9))
    many = read(store, lambda tx: tx.inbox.load_markers_many(["ann", "bob", "cat"]))
    assert set(many) == {"ann", "bob"}
    assert many["ann"].all == 5
    assert dict(many["bob"].scoped) == {("section", "alert"): 9}
    assert read(store, lambda tx: tx.inbox.load_markers_many([])) == {}


# -- writes --------------------------------------------------------------------------------------

def test_insert_skips_a_user_and_event_already_stored(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    first = note("ann", event, 100, group="g1")
    deliver(store, [first])
    deliver(store, [note("ann", event, 200, group="g2"), note("bob", event, 200)])
    rows = page(store, "ann")
    assert [(r.event_id, r.created_at, r.display_hash) for r in rows] == [(event, 100, key("g1"))]
    assert read(store, lambda tx: tx.inbox.delivered(event, ["ann", "bob", "cat"])) == {
        "ann", "bob"}
    assert read(store, lambda tx: tx.inbox.delivered(event, [])) == set()


def test_a_row_reads_back_as_written(store: ports.Store, clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    deliver(store, [note("ann", event, 100, group="g", bundle="b1", type="like",
                         category="social", section="message", actor="bob", object="o:1")])
    (row,) = page(store, "ann")
    assert (row.event_id, row.user_id, row.created_at, row.fresh_at, row.type, row.category,
            row.section, row.actor, row.object, row.bundle_hash, row.display_hash,
            row.read_at) == (event, "ann", 100, 100, "like", "social", "message", "bob", "o:1",
                             key("b1"), key("g"), None)
    assert row.payload.replace(" ", "") == '{"n":1}'  # the event's payload as stored JSON


def test_bundle_bases_are_the_newest_base_rows_of_the_bundle(store: ports.Store,
                                                             clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 100, group="g1", bundle="b"),
                    note("ann", e[1], 300, group="g2", bundle="b"),
                    note("ann", e[2], 200, group="g3", bundle="b"),
                    note("ann", e[3], 400, group="g4", bundle="other"),
                    note("bob", e[0], 100, group="g5", bundle="b")])
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 0))
    bases = read(store, lambda tx: tx.inbox.bundle_bases(["ann", "bob", "cat"], key("b")))
    assert set(bases) == {"ann", "bob"}
    ann = bases["ann"]
    assert (ann.user_id, ann.event_id, ann.display_hash, ann.created_at, ann.fresh_at,
            ann.read_at, ann.type, ann.category, ann.section) == (
        "ann", e[1], key("g2"), 300, 300, None, "comment", "general", "alert")
    # of many (user, bundle) pairs at once, keyed by pair
    pairs = [("ann", key("b")), ("ann", key("other")), ("bob", key("b")),
             ("bob", key("other")), ("cat", key("b"))]
    many = read(store, lambda tx: tx.inbox.bundle_bases_many(pairs))
    assert set(many) == {("ann", key("b")), ("ann", key("other")), ("bob", key("b"))}
    assert many[("ann", key("b"))] == ann
    assert many[("ann", key("other"))].event_id == e[3]
    assert many[("bob", key("b"))] == bases["bob"]
    # a demoted row is no base any more
    write(store, lambda tx: tx.inbox.demote([("ann", key("g2"))]))
    assert read(store, lambda tx: tx.inbox.bundle_bases(["ann"], key("b")))["ann"].event_id == e[2]


def test_joining_a_group_shows_its_newest_member_only(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[0], 100, group="g"), note("ann", e[1], 150, group="h")])
    write(store, lambda tx: (tx.inbox.demote([("ann", key("g"))]),
                             tx.inbox.insert([note("ann", e[2], 200, group="g")])))
    assert ids(page(store, "ann")) == [e[2], e[1]]
    assert unread(store, "ann") == 2


# -- pages ---------------------------------------------------------------------------------------

def test_pages_newest_first_with_a_strict_before_cursor(store: ports.Store,
                                                        clock: FrozenClock) -> None:
    e = _events(store, clock, 5)
    times = [100, 300, 200, 300, 50]  # e[1] and e[3] tie on time: the larger id is newer
    deliver(store, [note("ann", i, t) for i, t in zip(e, times, strict=True)])
    assert ids(page(store, "ann")) == [e[3], e[1], e[2], e[0], e[4]]
    assert ids(page(store, "ann", limit=2)) == [e[3], e[1]]
    assert ids(page(store, "ann", before=(300, e[3]))) == [e[1], e[2], e[0], e[4]]
    assert ids(page(store, "ann", before=(300, e[1]))) == [e[2], e[0], e[4]]
    assert ids(page(store, "ann", before=(100, e[0]), limit=1)) == [e[4]]
    assert page(store, "ann", before=(50, e[4])) == []
    assert page(store, "bob") == []


def test_filters_by_type_category_section(store: ports.Store, clock: FrozenClock) -> None:
    # each type with its one category and section, as its declaration gives them
    e = _events(store, clock, 5)
    deliver(store, [note("ann", e[0], 1, type="comment", category="social", section="alert"),
                    note("ann", e[1], 2, type="like", category="social", section="message"),
                    note("ann", e[2], 3, type="share", category="system", section="alert"),
                    note("ann", e[3], 4, type="poke", category="system", section="alert"),
                    note("ann", e[4], 5, type="like", category="social", section="message")])
    assert ids(page(store, "ann", Filters(types=("like", "share")))) == [e[4], e[2], e[1]]
    assert ids(page(store, "ann", Filters(category="social"))) == [e[4], e[1], e[0]]
    assert ids(page(store, "ann", Filters(section="message"))) == [e[4], e[1]]
    assert ids(page(store, "ann", Filters(types=("like", "poke"), category="system"))) == [e[3]]
    assert ids(page(store, "ann", Filters(category="social", section="alert"))) == [e[0]]
    assert unread(store, "ann", Filters(category="system")) == 2


def test_unread_is_judged_by_watermarks_and_read_marks(store: ports.Store,
                                                       clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 100, type="comment", group="g0"),
                    note("ann", e[1], 200, type="like", group="g1"),
                    note("ann", e[2], 300, type="comment", group="g2"),
                    note("ann", e[3], 400, type="like", group="g3")])
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 150))  # e[0] read by the mark
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:like", 250))  # e[1] too
    write(store, lambda tx: tx.inbox.mark_groups("ann", [key("g2")], read=True, now=500,
                                                 markers=tx.inbox.load_markers("ann")))
    assert ids(page(store, "ann", Filters(unread=True))) == [e[3]]
    assert ids(page(store, "ann", Filters(unread=False))) == [e[2], e[1], e[0]]
    assert unread(store, "ann") == 1
    assert unread(store, "ann", Filters(types=("comment",))) == 0


def test_unseen_is_unread_and_newer_than_the_seen_watermark(store: ports.Store,
                                                           clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 100), note("ann", e[1], 200, type="like"),
                    note("ann", e[2], 300), note("ann", e[3], 400, group="g3")])
    write(store, lambda tx: tx.inbox.set_marker("ann", "seen", 250))  # e[0], e[1] seen
    write(store, lambda tx: tx.inbox.mark_groups("ann", [key("g3")], read=True, now=500,
                                                 markers=tx.inbox.load_markers("ann")))

    def unseen(filters: Filters = EVERYTHING) -> int:
        given = read(store, lambda tx: tx.inbox.unread_count(
            "ann", filters, tx.inbox.load_markers("ann"), unseen=True))
        own = read(store, lambda tx: tx.inbox.unread_count("ann", filters, unseen=True))
        assert own == given == read(store, lambda tx: tx.inbox.unread_count(
            "ann", filters, tx.inbox.load_markers("ann").unseen()))
        return own

    assert unread(store, "ann") == 3  # seen is not read
    assert unseen() == 1  # e[2]: e[3] is read, the others are seen
    assert unseen(Filters(types=("like",))) == 0
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 350))  # read up to e[2]
    assert unseen() == 0
    write(store, lambda tx: tx.inbox.mark_groups("ann", [key("g3")], read=False, now=600,
                                                 markers=tx.inbox.load_markers("ann")))
    assert unseen() == 1  # unread again after the seen mark: news again
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:comment", 700))
    assert unseen() == 0  # a narrower watermark beyond the seen one


def test_unread_count_stops_at_the_cap(store: ports.Store, clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    e = _events(store, clock, UNREAD_CAP + 5)
    deliver(store, [note("ann", i, 1000 + n) for n, i in enumerate(e)])
    deliver(store, [note("bob", event, 1)])
    assert unread(store, "ann") == UNREAD_CAP
    assert unread(store, "bob") == 1
    assert unread(store, "cat") == 0
    assert len(page(store, "ann", limit=1000)) == UNREAD_CAP + 5  # a page is not capped


def test_rows_of_deleted_events_are_not_listed(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 2)
    deliver(store, [note("ann", e[0], 1), note("ann", e[1], 2)])
    write(store, lambda tx: tx.events.delete([e[1]]))
    assert ids(page(store, "ann")) == [e[0]]


# -- groups --------------------------------------------------------------------------------------

def test_group_info_counts_members_and_lists_actors_newest_first(store: ports.Store,
                                                                 clock: FrozenClock) -> None:
    e = _events(store, clock, 6)
    deliver(store, [note("ann", e[0], 100, group="g", actor="ann"),
                    note("ann", e[1], 200, group="g", actor="bob"),
                    note("ann", e[2], 300, group="g", actor="ann"),
                    note("ann", e[3], 300, group="g", actor=None),
                    note("ann", e[4], 50, group="h", actor="cat"),
                    note("bob", e[5], 50, group="g", actor="dan")])  # another user's group
    g, h = key("g"), key("h")
    info = read(store, lambda tx: tx.inbox.group_info("ann", [g, h, g, key("none")]))
    assert set(info) == {g, h}
    assert (info[g].count, info[g].actors, info[g].distinct_actors) == (4, ["ann", "bob"], 2)
    assert (info[h].count, info[h].actors) == (1, ["cat"])
    assert read(store, lambda tx: tx.inbox.group_info("ann", [])) == {}


def test_group_info_scans_the_newest_500_members(store: ports.Store,
                                                 clock: FrozenClock) -> None:
    e = _events(store, clock, 503)
    rows = [note("ann", i, 1000 + n, group="g", actor=f"a{n % 3}") for n, i in enumerate(e)]
    rows[0] = note("ann", e[0], 1000, group="g", actor="oldest")
    deliver(store, rows)
    info = read(store, lambda tx: tx.inbox.group_info("ann", [key("g")]))[key("g")]
    assert info.count == 500
    assert "oldest" not in info.actors  # beyond the scan
    assert info.actors == ["a1", "a0", "a2"]  # newest first: e[502] has a1 (502 % 3 == 1)


def test_groups_by_ids_and_by_match(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 1, group="g", actor="bob", type="like", object="o:1"),
                    note("ann", e[1], 2, group="g", actor="cat", type="like", object="o:1"),
                    note("ann", e[2], 3, group="h", actor="bob", type="comment", object="o:2"),
                    note("bob", e[3], 4, group="k", actor="bob", type="like", object="o:1")])

    def by_ids(event_ids: list[int]) -> set[str]:
        found = read(store, lambda tx: tx.inbox.groups_by_ids("ann", event_ids))
        assert len(found) == len(set(found))
        return set(found)

    def by_match(actor: str | None = None, type: str | None = None,
                 object: str | None = None) -> set[str]:
        found = read(store, lambda tx: tx.inbox.groups_by_match("ann", actor=actor, type=type,
                                                                object=object))
        assert len(found) == len(set(found))
        return set(found)

    assert by_ids([e[0], e[1]]) == {key("g")}
    assert by_ids([e[1], e[2], e[3]]) == {key("g"), key("h")}
    assert by_ids([]) == set()
    assert by_match(actor="bob") == {key("g"), key("h")}
    assert by_match(type="like") == {key("g")}
    assert by_match(actor="bob", object="o:2") == {key("h")}
    assert by_match(actor="dan") == set()
    assert by_match() == set()


def test_mark_groups_counts_groups_that_changed(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[0], 100, group="g"), note("ann", e[1], 200, group="g"),
                    note("ann", e[2], 300, group="h")])
    write(store, lambda tx: tx.inbox.demote([("ann", key("g"))]))
    write(store, lambda tx: tx.inbox.insert([]))

    def mark(groups: list[str], read_: bool, now: int) -> int:
        return write(store, lambda tx: tx.inbox.mark_groups(
            "ann", groups, read=read_, now=now, markers=tx.inbox.load_markers("ann")))

    # g has no base now (both demoted): marking it still marks its members
    assert mark([key("h")], True, 400) == 1
    assert mark([key("h")], True, 450) == 0  # already read
    states = {s.event_id: s for s in read(store, lambda tx: tx.inbox.read_states(
        "ann", [e[0], e[1], e[2]]))}
    assert states[e[2]].read_at == 450
    assert mark([key("h")], False, 500) == 1
    assert mark([key("h"), key("h")], False, 600) == 0
    again = read(store, lambda tx: tx.inbox.read_states("ann", [e[2]]))
    assert [(s.read_at, s.fresh_at) for s in again] == [(None, 600)]
    assert mark([key("g")], True, 700) == 0  # no base row to count
    assert {s.read_at for s in read(store, lambda tx: tx.inbox.read_states(
        "ann", [e[0], e[1]]))} == {700}


def test_marking_a_bundle_marks_every_member(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[0], 100, group="g")])
    write(store, lambda tx: (tx.inbox.demote([("ann", key("g"))]),
                             tx.inbox.insert([note("ann", e[1], 200, group="g")])))
    deliver(store, [note("ann", e[2], 300, group="h")])
    assert unread(store, "ann") == 2
    assert write(store, lambda tx: tx.inbox.mark_groups(
        "ann", [key("g")], read=True, now=400, markers=tx.inbox.load_markers("ann"))) == 1
    assert unread(store, "ann") == 1
    states = read(store, lambda tx: tx.inbox.read_states("ann", [e[0], e[1], e[2], 999]))
    assert sorted((s.event_id, s.read_at) for s in states) == [(e[0], 400), (e[1], 400),
                                                               (e[2], None)]
    state = next(s for s in states if s.event_id == e[2])
    assert (state.fresh_at, state.type, state.category, state.section) == (
        300, "comment", "general", "alert")
    assert read(store, lambda tx: tx.inbox.read_states("ann", [])) == []


def test_a_watermark_read_group_counts_as_changed_when_marked_unread(
        store: ports.Store, clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    deliver(store, [note("ann", event, 100, group="g")])
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 150))
    assert unread(store, "ann") == 0
    assert write(store, lambda tx: tx.inbox.mark_groups(
        "ann", [key("g")], read=False, now=200, markers=tx.inbox.load_markers("ann"))) == 1
    assert unread(store, "ann") == 1  # fresh again: after the watermark


# -- removal -------------------------------------------------------------------------------------

def test_keys_for_events_name_every_users_row(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 2)
    deliver(store, [note("ann", e[0], 1, group="g"), note("bob", e[0], 1, group="h"),
                    note("ann", e[1], 2, group="g")])
    write(store, lambda tx: tx.inbox.demote([("ann", key("g"))]))
    deliver(store, [note("cat", e[1], 3, group="k")])
    keys = read(store, lambda tx: tx.inbox.keys_for_events([e[0]]))
    assert sorted(keys, key=lambda k: k.user_id) == [
        NotificationKey("ann", e[0], key("g"), False), NotificationKey("bob", e[0], key("h"), True)]
    assert read(store, lambda tx: tx.inbox.keys_for_events([])) == []


def test_removing_a_base_makes_the_next_newest_member_the_base(store: ports.Store,
                                                               clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 100, group="g")])
    for i, t in ((e[1], 300), (e[2], 200)):
        write(store, lambda tx, i=i, t=t: (tx.inbox.demote([("ann", key("g"))]),
                                           tx.inbox.insert([note("ann", i, t, group="g")])))
    deliver(store, [note("ann", e[3], 250, group="h")])
    assert ids(page(store, "ann")) == [e[3], e[2]]  # e[2] went in last: it is the base

    def remove(event_ids: list[int]) -> int:
        return write(store, lambda tx: tx.inbox.remove(tx.inbox.keys_for_events(event_ids)))

    assert remove([e[2]]) == 1
    assert ids(page(store, "ann")) == [e[1], e[3]]  # the newest member left (300) is the base
    assert remove([e[0]]) == 1  # not the base: the group keeps its base
    assert ids(page(store, "ann")) == [e[1], e[3]]
    assert remove([e[1], e[3]]) == 2
    assert page(store, "ann") == []
    assert remove([e[1]]) == 0


def test_trim_keeps_the_newest_events(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 6)
    deliver(store, [note("ann", i, 1000 - n) for n, i in enumerate(e)])  # older time, newer id
    deliver(store, [note("bob", e[0], 1)])
    assert write(store, lambda tx: tx.inbox.trim("ann", 10)) == 0
    assert write(store, lambda tx: tx.inbox.trim("ann", 4)) == 2
    assert set(ids(page(store, "ann"))) == set(e[:4])  # by time, not by event id
    assert write(store, lambda tx: tx.inbox.trim("ann", 0)) == 4
    assert page(store, "ann") == []
    assert ids(page(store, "bob")) == [e[0]]


def test_trim_takes_the_oldest_members_and_keeps_groups_whole(store: ports.Store,
                                                               clock: FrozenClock) -> None:
    e = _events(store, clock, 3)
    deliver(store, [note("ann", e[1], 100, group="g")])
    write(store, lambda tx: (tx.inbox.demote([("ann", key("g"))]),
                             tx.inbox.insert([note("ann", e[0], 200, group="g")])))
    deliver(store, [note("ann", e[2], 50, group="h")])
    assert ids(page(store, "ann")) == [e[0], e[2]]
    assert write(store, lambda tx: tx.inbox.trim("ann", 2)) == 1  # e[2]: the oldest
    assert ids(page(store, "ann")) == [e[0]]
    assert read(store, lambda tx: tx.inbox.group_info("ann", [key("g")]))[key("g")].count == 2
    assert write(store, lambda tx: tx.inbox.trim("ann", 1)) == 1  # e[1], a member
    assert ids(page(store, "ann")) == [e[0]]
    assert read(store, lambda tx: tx.inbox.group_info("ann", [key("g")]))[key("g")].count == 1


def test_nothing_of_a_failed_unit_stays_in_the_inbox(store: ports.Store,
                                                     clock: FrozenClock) -> None:
    (event,) = _events(store, clock, 1)
    deliver(store, [note("ann", event, 100, group="g")])

    def work(tx: ports.Tx) -> None:
        tx.inbox.set_marker("ann", "all", 500)
        tx.inbox.mark_groups("ann", [key("g")], read=True, now=300, markers=Markers())
        tx.inbox.insert([note("bob", event, 100)])
        tx.inbox.remove(tx.inbox.keys_for_events([event]))
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert read(store, lambda tx: tx.inbox.load_markers("ann")) == Markers()
    assert [(r.event_id, r.read_at) for r in page(store, "ann", EVERYTHING)] == [(event, None)]
    assert page(store, "bob") == []


def test_unread_count_reads_the_watermarks_itself_when_not_given(
        store: ports.Store, clock: FrozenClock) -> None:
    """The same count whether the caller passes the watermarks or the store reads them (on
    SQL in the same statement), with an "all" mark and a narrower one beyond it."""
    first, second, third = (publish(store, clock.now_us() + i) for i in range(3))
    deliver(store, [note("ann", first, 10), note("ann", second, 20, type="mention"),
                    note("ann", third, 30)])
    for marks in ([], [("all", 15)], [("all", 15), ("type:mention", 25)],
                  [("all", 15), ("type:mention", 25), ("all", 35)]):
        for scope, until in marks:
            write(store, lambda tx, s=scope, u=until: tx.inbox.set_marker("ann", s, u))
        for filters in (Filters(), Filters(types=("mention",)), Filters(section="alert")):
            given = read(store, lambda tx, f=filters: tx.inbox.unread_count(
                "ann", f, tx.inbox.load_markers("ann")))
            own = read(store, lambda tx, f=filters: tx.inbox.unread_count("ann", f))
            assert own == given, (marks, filters)


# -- deliver (join or start) and the query dimensions ---------------------------------------------

def test_deliver_joins_the_newest_unread_group_of_its_bundle(store: ports.Store,
                                                             clock: FrozenClock) -> None:
    e = _events(store, clock, 3)

    def deliver_one(event: int, at: int, writer: str = "") -> list[str]:
        d = Delivery(event_id=event, created_at=at, type="comment", category="general",
                     section="alert", actor="bob", object="o", bundle_hash=key("b"), bundled=True,
                     writer=writer)
        return write(store, lambda tx: tx.inbox.deliver_many([(d, ["ann"])])[0])

    assert deliver_one(e[0], 10) == ["ann"]
    assert deliver_one(e[1], 20, "job:1") == ["ann"]
    assert deliver_one(e[1], 30, "job:2") == []  # already there: another writer skips it
    assert [(r.event_id, r.display_hash) for r in page(store, "ann")] == [
        (e[1], display_hash(key("b"), e[0]))]
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 25))
    deliver_one(e[2], 40)  # the group is read: a new one starts
    assert [r.display_hash for r in page(store, "ann")] == [display_hash(key("b"), e[2]),
                                                            display_hash(key("b"), e[0])]


def test_filters_by_actor_object_and_id_bounds(store: ports.Store, clock: FrozenClock) -> None:
    e = _events(store, clock, 4)
    deliver(store, [note("ann", e[0], 1, actor="bob", object="o:1"),
                    note("ann", e[1], 2, actor="cat", object="o:1"),
                    note("ann", e[2], 3, actor="bob", object="o:2"),
                    note("ann", e[3], 4, actor=None, object=None)])
    assert ids(page(store, "ann", Filters(actor="bob"))) == [e[2], e[0]]
    assert ids(page(store, "ann", Filters(object="o:1"))) == [e[1], e[0]]
    assert ids(page(store, "ann", Filters(max_id=e[2], since_id=e[0]))) == [e[1]]
    assert unread(store, "ann", Filters(actor="bob", object="o:2")) == 1
    keys = read(store, lambda tx: tx.inbox.keys_by_match("ann", actor="bob", type=None,
                                                        object="o:1"))
    assert [(k.user_id, k.event_id) for k in keys] == [("ann", e[0])]
    assert read(store, lambda tx: tx.inbox.keys_by_match("ann", actor=None, type=None,
                                                        object=None)) == []
