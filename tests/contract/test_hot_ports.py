"""The inbox and timeline ports on every store (``store``), the Redis / Redis Cluster hot parts
among them: every store gives the same answers through the ports (join-or-start, the Jiepang
query dimensions, the capped count, marks, removal, trimming, idempotent and all-or-nothing
writes); and how the hot store registers the users a delivery reaches in SQL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import pytest
from contract_kit import key
from sqlalchemy import event as sa_event

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import UNREAD_CAP, bundle_hash, display_hash
from tidings.domain.events import Event
from tidings.domain.readstate import Markers
from tidings.domain.views import Delivery, Filters, InboxRow, NewNotification
from tidings.store import pageview
from tidings.store.hot import HotStore, Registered
from tidings.wiring import open_store

T = TypeVar("T")
ALL = Filters()


def write(store: ports.Store, work: Callable[[ports.Tx], T]) -> T:
    return store.transact(work)


def read(store: ports.Store, work: Callable[[ports.Tx], T]) -> T:
    with store.read() as tx:
        return work(tx)


def publish(store: ports.Store, now: int, *, type: str = "like", actor: str | None = "ann",
            object: str | None = "post:1") -> int:
    event = Event(type=type, actor=actor, object=object, payload={"n": now})
    return write(store, lambda tx: tx.events.insert(event, json.dumps({"n": now}), now))


def delivery(event_id: int, created: int, *, bundle: str = "b", bundled: bool = True,
             type: str = "like", actor: str | None = "ann", object: str | None = "post:1",
             category: str = "social", section: str = "alert", writer: str = "") -> Delivery:
    return Delivery(event_id=event_id, created_at=created, type=type, category=category,
                    section=section, actor=actor, object=object, bundle_hash=key(bundle),
                    bundled=bundled, writer=writer)


def deliver(store: ports.Store, d: Delivery, users: Sequence[str]) -> list[str]:
    return write(store, lambda tx: tx.inbox.deliver_many([(d, users)])[0])


def page(store: ports.Store, user: str, filters: Filters = ALL, *, limit: int = 100,
         before: tuple[int, int] | None = None) -> list[InboxRow]:
    def work(tx: ports.Tx) -> list[InboxRow]:
        return tx.inbox.page(user, filters, tx.inbox.load_markers(user), limit=limit,
                             before=before)

    return read(store, work)


def ids(rows: Sequence[InboxRow]) -> list[int]:
    return [r.event_id for r in rows]


def unread(store: ports.Store, user: str, filters: Filters = ALL) -> int:
    return read(store, lambda tx: tx.inbox.unread_count(user, filters,
                                                        tx.inbox.load_markers(user)))


def groups(store: ports.Store, user: str) -> list[tuple[int, str, bool]]:
    """(event, group, read) of every base row."""
    def work(tx: ports.Tx) -> list[tuple[int, str, bool]]:
        markers = tx.inbox.load_markers(user)
        return [(r.event_id, r.display_hash,
                 not markers.is_unread(r.read_at, r.fresh_at, r.type, r.category, r.section,
                                   position=(r.created_at, r.event_id)))
                for r in tx.inbox.page(user, ALL, markers, limit=1000, before=None)]

    return read(store, work)


# -- delivery: join or start -----------------------------------------------------------------

def test_deliver_joins_the_newest_unread_group_else_starts_one(store: ports.Store,
                                                               clock: FrozenClock) -> None:
    e = [publish(store, n) for n in range(1, 6)]
    assert deliver(store, delivery(e[0], 10), ["ann", "bob"]) == ["ann", "bob"]
    assert deliver(store, delivery(e[1], 20), ["ann"]) == ["ann"]  # joins e[0]'s group
    first = display_hash(key("b"), e[0])
    assert groups(store, "ann") == [(e[1], first, False)]
    info = read(store, lambda tx: tx.inbox.group_info("ann", [first]))
    assert (info[first].count, info[first].actors) == (2, ["ann"])
    # the group read: the next one starts its own
    write(store, lambda tx: tx.inbox.mark_groups("ann", [first], read=True, now=25,
                                                 markers=Markers()))
    deliver(store, delivery(e[2], 30), ["ann"])
    assert groups(store, "ann") == [(e[2], display_hash(key("b"), e[2]), False),
                                    (e[1], first, True)]
    # a watermark past the group counts as read too
    write(store, lambda tx: tx.inbox.set_marker("bob", "all", 15))
    deliver(store, delivery(e[3], 40), ["bob"])
    assert [g for _, g, _ in groups(store, "bob")] == [display_hash(key("b"), e[3]), first]
    # so does a scoped watermark of the type, but not of another type
    write(store, lambda tx: tx.inbox.set_marker("bob", "type:other", 100))
    deliver(store, delivery(e[4], 50), ["bob"])
    assert [g for _, g, _ in groups(store, "bob")] == [display_hash(key("b"), e[3]), first]
    # a type that never bundles starts a group each time
    e6 = publish(store, 6)
    deliver(store, delivery(e6, 60, bundle="solo", bundled=False), ["bob"])
    deliver(store, delivery(publish(store, 7), 70, bundle="solo", bundled=False), ["bob"])
    assert len(groups(store, "bob")) == 4


def test_deliver_is_idempotent_and_reports_a_writers_own_rows_again(
        store: ports.Store) -> None:
    e = publish(store, 1)
    assert deliver(store, delivery(e, 10, writer="job:1"), ["ann", "bob"]) == ["ann", "bob"]
    # the same job retried (its first unit was sent but not committed): the same answer
    assert deliver(store, delivery(e, 20, writer="job:1"), ["ann", "bob", "cat"]) in (
        ["ann", "bob", "cat"],  # a store without transactions: its own rows again
        ["cat"])                # (SQL never sees a uncommitted unit's rows)
    # another job (an overlapping audience source) writes nothing and reports nobody
    assert deliver(store, delivery(e, 30, writer="job:2"), ["ann", "cat"]) == []
    assert [r.created_at for r in page(store, "ann")] == [10]
    assert deliver(store, delivery(e, 30), []) == []


# -- pages and the query dimensions --------------------------------------------------------

def _mixed(store: ports.Store) -> list[int]:
    rows = [("like", "bob", "post:1"), ("comment", "bob", "post:2"), ("like", "cat", "post:1"),
            ("like", "bob", "post:1"), ("badge", None, None)]
    out = []
    for n, (type_, actor, obj) in enumerate(rows):
        e = publish(store, n + 1, type=type_, actor=actor, object=obj)
        deliver(store, delivery(e, 100 + n, bundled=False, bundle=f"x{n}", type=type_,
                                actor=actor, object=obj), ["ann"])
        out.append(e)
    return out


def test_page_filters_by_actor_object_max_id_and_since_id(store: ports.Store) -> None:
    e = _mixed(store)
    assert ids(page(store, "ann")) == e[::-1]
    assert ids(page(store, "ann", Filters(actor="bob"))) == [e[3], e[1], e[0]]
    assert ids(page(store, "ann", Filters(object="post:1"))) == [e[3], e[2], e[0]]
    assert ids(page(store, "ann", Filters(types=("like",), actor="bob", object="post:1"))) == [
        e[3], e[0]]
    assert ids(page(store, "ann", Filters(max_id=e[3]))) == [e[2], e[1], e[0]]
    assert ids(page(store, "ann", Filters(since_id=e[1]))) == [e[4], e[3], e[2]]
    assert ids(page(store, "ann", Filters(since_id=e[0], max_id=e[3], actor="bob"))) == [e[1]]
    assert ids(page(store, "ann", Filters(actor="bob"), limit=1, before=(103, e[3]))) == [e[1]]
    assert unread(store, "ann", Filters(actor="bob")) == 3
    assert unread(store, "ann", Filters(types=("like",), object="post:1")) == 3


def test_pages_follow_time_then_id_with_a_strict_cursor(store: ports.Store) -> None:
    e = [publish(store, n) for n in range(1, 6)]
    for event, created in zip(e, [100, 300, 200, 300, 50], strict=True):
        deliver(store, delivery(event, created, bundled=False, bundle=f"s{event}"), ["ann"])
    assert ids(page(store, "ann")) == [e[3], e[1], e[2], e[0], e[4]]
    assert ids(page(store, "ann", before=(300, e[3]))) == [e[1], e[2], e[0], e[4]]
    assert ids(page(store, "ann", before=(300, e[1]), limit=2)) == [e[2], e[0]]
    assert ids(page(store, "ann", before=(250, 1))) == [e[2], e[0], e[4]]  # no such row
    assert page(store, "ann", before=(50, e[4])) == []


def test_read_state_filters_and_the_capped_count(store: ports.Store) -> None:
    e = [publish(store, n) for n in range(1, UNREAD_CAP + 6)]
    for n, event in enumerate(e):
        kind = "like" if n % 2 else "comment"
        deliver(store, delivery(event, 1000 + n, bundled=False, bundle=f"s{event}",
                                type=kind), ["ann"])
    assert unread(store, "ann") == UNREAD_CAP
    assert unread(store, "ann", Filters(types=("like",))) == (UNREAD_CAP + 5) // 2
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 1000 + 60))
    assert unread(store, "ann") == UNREAD_CAP + 5 - 61
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:like", 1000 + 90))
    left = [n for n in range(61, UNREAD_CAP + 5) if n % 2 == 0 or n > 90]
    assert unread(store, "ann") == len(left)
    assert ids(page(store, "ann", Filters(unread=True), limit=1000)) == [
        e[n] for n in reversed(left)]
    assert len(page(store, "ann", Filters(unread=False), limit=1000)) == UNREAD_CAP + 5 - len(
        left)


# -- marks, removal, trimming -----------------------------------------------------------------

def test_marking_groups_and_matches(store: ports.Store) -> None:
    e = _mixed(store)

    def mark(groups: Callable[[ports.Tx], list[str]], read: bool, now: int) -> int:
        return write(store, lambda tx: tx.inbox.mark_groups(
            "ann", groups(tx), read=read, now=now, markers=tx.inbox.load_markers("ann")))

    assert mark(lambda tx: tx.inbox.groups_by_match("ann", actor="bob", type="like",
                                                    object="post:1"), True, 500) == 2
    assert unread(store, "ann") == 3
    assert mark(lambda tx: tx.inbox.groups_by_ids("ann", [e[0], e[1]]), True, 600) == 1
    assert mark(lambda tx: tx.inbox.groups_by_ids("ann", [e[0]]), False, 700) == 1
    states = read(store, lambda tx: tx.inbox.read_states("ann", [e[0], e[1], 999]))
    assert sorted((s.event_id, s.read_at, s.fresh_at) for s in states) == [
        (e[0], None, 700), (e[1], 600, 101)]
    assert unread(store, "ann") == 3


def test_delete_by_match_for_one_recipient_and_retraction_for_all(store: ports.Store) -> None:
    e = publish(store, 1, actor="bob", object="post:9")
    other = publish(store, 2, actor="cat", object="post:9")
    deliver(store, delivery(e, 10, actor="bob", object="post:9"), ["ann", "dan"])
    deliver(store, delivery(other, 20, actor="cat", object="post:9"), ["ann"])
    assert write(store, lambda tx: tx.inbox.remove(tx.inbox.keys_by_match(
        "ann", actor="bob", type="like", object="post:9"))) == 1
    assert ids(page(store, "ann")) == [other]  # the group's base moved to what is left
    assert ids(page(store, "dan")) == [e]
    keys = read(store, lambda tx: tx.inbox.keys_for_events([e, other]))
    assert sorted((k.user_id, k.event_id) for k in keys) == [("ann", other), ("dan", e)]
    assert write(store, lambda tx: tx.inbox.remove(keys)) == 2
    assert page(store, "ann") == page(store, "dan") == []
    assert write(store, lambda tx: tx.inbox.remove(keys)) == 0


def test_trim_keeps_the_newest_and_repairs_groups(store: ports.Store) -> None:
    e = [publish(store, n) for n in range(1, 7)]
    for event in e:
        deliver(store, delivery(event, 100 + event), ["ann"])  # one growing group
    assert len(page(store, "ann")) == 1
    assert write(store, lambda tx: tx.inbox.trim("ann", 10)) == 0
    assert write(store, lambda tx: tx.inbox.trim("ann", 4)) == 2
    (base,) = page(store, "ann")
    assert base.event_id == e[5]
    info = read(store, lambda tx: tx.inbox.group_info("ann", [base.display_hash]))
    assert info[base.display_hash].count == 4
    assert write(store, lambda tx: tx.inbox.remove(
        tx.inbox.keys_for_events([e[5]]))) == 1
    assert ids(page(store, "ann")) == [e[4]]
    assert write(store, lambda tx: tx.inbox.trim("ann", 0)) == 3
    assert page(store, "ann") == []


def test_raw_rows_demote_and_bases(store: ports.Store) -> None:
    e = [publish(store, n) for n in range(1, 4)]

    def row(event: int, created: int, group: str) -> NewNotification:
        return delivery(event, created).row("ann", group)

    write(store, lambda tx: tx.inbox.insert([row(e[0], 100, key("g")), row(e[1], 300, key("h"))]))
    write(store, lambda tx: (tx.inbox.demote([("ann", key("g"))]),
                             tx.inbox.insert([row(e[2], 200, key("g"))])))
    assert ids(page(store, "ann")) == [e[1], e[2]]
    bases = read(store, lambda tx: tx.inbox.bundle_bases(["ann", "bob"], key("b")))
    assert set(bases) == {"ann"} and bases["ann"].event_id == e[1]
    assert read(store, lambda tx: tx.inbox.delivered(e[0], ["ann", "bob"])) == {"ann"}


def test_rows_of_deleted_events_are_not_listed(store: ports.Store) -> None:
    e = [publish(store, n) for n in range(1, 5)]
    for event in e:
        deliver(store, delivery(event, 100 + event, bundled=False, bundle=f"s{event}"), ["ann"])
    write(store, lambda tx: tx.events.delete([e[3], e[2]]))
    assert ids(page(store, "ann", limit=2)) == [e[1], e[0]]


def test_nothing_of_a_failed_unit_is_written(store: ports.Store) -> None:
    e = publish(store, 1)
    deliver(store, delivery(e, 10), ["ann"])

    def work(tx: ports.Tx) -> None:
        tx.inbox.set_marker("ann", "all", 500)
        tx.inbox.mark_groups("ann", [display_hash(key("b"), e)], read=True, now=300,
                             markers=Markers())
        tx.inbox.deliver_many([(delivery(e, 20), ["bob"])])
        tx.timeline.push(e, ["ann"], 30)
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert read(store, lambda tx: tx.inbox.load_markers("ann")) == Markers()
    assert [(r.event_id, r.read_at) for r in page(store, "ann")] == [(e, None)]
    assert page(store, "bob") == []
    assert read(store, lambda tx: tx.timeline.page("ann", limit=5, before=None)) == []


# -- timelines ------------------------------------------------------------------------------

def test_timeline_push_page_trim(store: ports.Store) -> None:
    e = [publish(store, n, type="post") for n in range(1, 7)]
    for n, event in reversed(list(enumerate(e, 1))):  # each at its event's time, n
        write(store, lambda tx, ev=event, at=n: tx.timeline.push(ev, ["ann", "bob"], at))
    write(store, lambda tx: tx.timeline.push(e[0], ["ann"], 1))  # idempotent
    write(store, lambda tx: tx.events.mark_retracted([e[4]], 3))

    def tl(user: str, **kw: Any) -> list[int]:
        return [x.id for x in read(store, lambda tx: tx.timeline.page(user, **kw))]

    assert tl("ann", limit=3, before=None) == [e[5], e[3], e[2]]  # the retracted one skipped
    assert tl("ann", limit=10, before=(4, e[3])) == [e[2], e[1], e[0]]
    first = read(store, lambda tx: tx.timeline.page("ann", limit=1, before=None))[0]
    assert (first.type, first.actor, first.payload) == ("post", "ann", {"n": 6})
    assert write(store, lambda tx: tx.timeline.trim("ann", 2)) == 4
    assert tl("ann", limit=10, before=None) == [e[5]]
    assert len(tl("bob", limit=10, before=None)) == 5


def test_a_page_view_is_the_three_reads_it_stands_for(store: ports.Store) -> None:
    """Redis answers page_view in one script (view.lua) with the group info of the types
    it has seen bundle; it must equal the watermarks, page and group info read apart, for
    a type met for the first time, once it is known, past rows of deleted events, under a
    filter and a cursor."""
    e = [publish(store, n, actor=f"a{n % 3}") for n in range(1, 13)]
    for n, event in enumerate(e):
        if n % 4 == 3:  # a mention of its own
            deliver(store, delivery(event, 100 + n, type="mention", bundled=False,
                                    bundle=f"m{event}", actor=f"a{n % 3}"), ["ann"])
        else:  # likes bundled by object, two objects
            deliver(store, delivery(event, 100 + n, bundle=f"o{n % 2}", actor=f"a{n % 3}"),
                    ["ann"])
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 104))
    write(store, lambda tx: tx.events.delete([e[10]]))

    def bundles(event_type: str) -> bool:
        return event_type == "like"

    def both(filters: Filters, limit: int, before: tuple[int, int] | None) -> None:
        def work(tx: ports.Tx) -> tuple[Any, Any]:
            apart = pageview.page_view(tx.inbox, "ann", filters, limit=limit, before=before,
                                       bundles=bundles)
            return tx.inbox.page_view("ann", filters, limit=limit, before=before,
                                      bundles=bundles), apart

        one, apart = read(store, work)
        assert one == apart
        assert one.rows  # the case says something

    for _ in range(2):  # the type unknown to the script, then known
        both(ALL, 3, None)
        both(ALL, 20, None)
        both(Filters(unread=True), 5, None)
        both(Filters(types=("mention",)), 5, None)
    first = read(store, lambda tx: tx.inbox.page_view("ann", ALL, limit=2, before=None,
                                                      bundles=bundles)).rows[-1]
    both(ALL, 3, (first.created_at, first.event_id))


def test_a_badge_counts_as_the_full_count_under_every_watermark(store: ports.Store) -> None:
    """A count with no condition reads its watermarks in badge.lua on Redis, which hands any
    but 'all' and 'seen' over to count.lua: every kind of watermark gives the count that the
    watermarks read apart give."""
    e = [publish(store, n) for n in range(1, 9)]
    for n, event in enumerate(e):
        deliver(store, delivery(event, 100 + n, bundled=False, bundle=f"s{event}",
                                type="like" if n % 2 else "mention"), ["ann"])

    def same() -> None:
        def work(tx: ports.Tx) -> None:
            markers = tx.inbox.load_markers("ann")
            for filters in (ALL, Filters(unread=True)):
                assert tx.inbox.unread_count("ann", filters) == tx.inbox.unread_count(
                    "ann", filters, markers)
                assert tx.inbox.unread_count("ann", filters, unseen=True) == \
                    tx.inbox.unread_count("ann", filters, markers, unseen=True)
                assert tx.inbox.unread_counts("ann", filters) == (
                    tx.inbox.unread_count("ann", filters, markers),
                    tx.inbox.unread_count("ann", filters, markers, unseen=True))

        read(store, work)

    same()  # no watermark
    write(store, lambda tx: tx.inbox.set_marker("ann", "all", 101))
    same()
    write(store, lambda tx: tx.inbox.set_marker("ann", "seen", 104))
    same()
    assert read(store, lambda tx: tx.inbox.unread_count("ann", ALL, unseen=True)) == 3
    write(store, lambda tx: tx.inbox.set_marker("ann", "type:like", 105))
    same()
    assert read(store, lambda tx: tx.inbox.unread_count("ann", ALL)) == 4
    write(store, lambda tx: tx.inbox.set_position("ann", (106, e[6]), 110))
    same()
    assert read(store, lambda tx: tx.inbox.unread_count("ann", ALL)) == 1


# -- the users a delivery registers in SQL ---------------------------------------------------

def test_registration_memo_skips_users_a_committed_unit_registered() -> None:
    """A user is inserted again until a unit that inserted them has committed; then only
    others are, and past its size the memo starts again."""
    inserted: list[list[str]] = []
    pending: list[Callable[[], None]] = []
    memo = Registered()
    register = memo.register(lambda rows: inserted.append([u for u, _ in rows]),
                             pending.append)
    register([("ann", 1), ("bob", 2)])
    register([("ann", 3)])  # the first unit has not committed: ann again
    assert inserted == [["ann", "bob"], ["ann"]]
    pending.pop(0)()  # the first unit commits; the second never does
    register([("ann", 4), ("bob", 5), ("cat", 6)])
    register([])
    assert inserted[2:] == [["cat"]]


def test_a_delivery_registers_only_users_not_registered_before(
        hot_url: str, sqlite_url: str, clock: FrozenClock) -> None:
    """Every user a notification reaches is in SQL's users; a later delivery to the same
    users inserts none of them again, one to new users inserts those."""
    hot = open_store(sqlite_url, clock, hot_url=hot_url)
    assert isinstance(hot, HotStore)
    try:
        statements: list[str] = []
        listen = lambda *args: statements.append(args[2])  # noqa: E731
        sa_event.listen(hot.records.db.engine, "before_cursor_execute", listen)
        deliver(hot, delivery(publish(hot, 1), 10), ["ann", "bob"])
        deliver(hot, delivery(publish(hot, 2), 20, bundle="c"), ["ann", "bob"])
        deliver(hot, delivery(publish(hot, 3), 30, bundle="d"), ["bob", "cat"])
        sa_event.remove(hot.records.db.engine, "before_cursor_execute", listen)
        registering = [s for s in statements if "INTO users" in s]
        assert len(registering) == 2
        known = read(hot, lambda tx: tx.graph.joined(["ann", "bob", "cat", "dan"]))
        assert known == {"ann": 10, "bob": 10, "cat": 30}
    finally:
        hot.close()


def test_groups_of_a_type_that_never_bundles_read_mark_and_go_like_any(
        store: ports.Store) -> None:
    e = [publish(store, n, type="badge", actor=actor)
         for n, actor in ((1, "bob"), (2, "cat"), (3, "dan"))]
    for n, event in enumerate(e):
        deliver(store, delivery(event, 10 * (n + 1), bundle=f"own{event}", bundled=False,
                                type="badge", actor=("bob", "cat", "dan")[n]), ["ann"])
    mine = [display_hash(key(f"own{event}"), event) for event in e]
    assert groups(store, "ann") == [(e[2], mine[2], False), (e[1], mine[1], False),
                                    (e[0], mine[0], False)]
    info = read(store, lambda tx: tx.inbox.group_info("ann", mine))
    assert [(info[g].count, info[g].actors) for g in mine] == [
        (1, ["bob"]), (1, ["cat"]), (1, ["dan"])]
    assert write(store, lambda tx: tx.inbox.mark_groups(
        "ann", [mine[1]], read=True, now=50, markers=Markers())) == 1
    assert write(store, lambda tx: tx.inbox.mark_groups(
        "ann", [mine[1]], read=True, now=60, markers=Markers())) == 0  # read already
    assert unread(store, "ann") == 2
    keys = read(store, lambda tx: tx.inbox.keys_by_match("ann", actor="cat", type="badge",
                                                         object="post:1"))
    assert write(store, lambda tx: tx.inbox.remove(keys)) == 1
    assert ids(page(store, "ann")) == [e[2], e[0]]
    assert read(store, lambda tx: tx.inbox.group_info("ann", [mine[1]])).get(mine[1]) is None
    if isinstance(store, HotStore):  # one key a row: no group, group-base or bundle key
        user = f"{store.redis.prefix}{{u:ann}}:"
        where = {"target_nodes": "all"} if store.redis.cluster else {}
        own = {k[len(user):].split(":")[0]
               for k in store.redis.client.scan_iter(match=f"{user}*", **where)}
        assert own <= {"n", "ids", "base", "unread", "solo", "m"}, own


def test_a_bundle_opened_under_a_32_character_hash_starts_a_new_group_after_the_upgrade(
        hot_url: str, sqlite_url: str, clock: FrozenClock) -> None:
    """Redis keeps the hashes its rows were written with. A bundle opened before the hashes
    became 64-bit (32 hex characters) is not joined by the same key's 16-character hash: the
    next notification starts a display group of its own, and the old group stays as it was
    (docs/redis.md, "Upgrade: 64-bit hashes")."""
    hot = open_store(sqlite_url, clock, hot_url=hot_url)
    try:
        old = hashlib.sha1(b"object\x00like\x00post:1").hexdigest()[:32]
        first, second = publish(hot, 1), publish(hot, 2)
        before = replace(delivery(first, 10), bundle_hash=old)
        deliver(hot, before, ["ann"])
        after = replace(delivery(second, 20), bundle_hash=old[:16])
        assert after.bundle_hash == bundle_hash("object", "like", "ann", "post:1", second)
        deliver(hot, after, ["ann"])
        assert groups(hot, "ann") == [(second, display_hash(old[:16], second), False),
                                      (first, display_hash(old, first), False)]
        assert unread(hot, "ann") == 2
        info = read(hot, lambda tx: tx.inbox.group_info("ann", [display_hash(old, first)]))
        assert info[display_hash(old, first)].count == 1
    finally:
        hot.close()
