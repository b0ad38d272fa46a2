"""EventStore: accepted events, idempotency keys, retraction and retention look-ups."""

from __future__ import annotations

import pytest
from contract_kit import publish, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.domain.timeline import TOP, Position
from tidings.exceptions import StoreConflict


def test_an_event_reads_back_as_stored(store: ports.Store, clock: FrozenClock) -> None:
    event = Event(type="comment", actor="ann", object="post:1", payload={"text": "hi", "n": [1]},
                  recipients=("bob", "cat"), exclude=("dan",), idempotency_key="k1")
    now = clock.now_us()
    event_id = write(store, lambda tx: tx.events.insert(event, '{"text":"hi","n":[1]}', now))
    found = read(store, lambda tx: tx.events.get(event_id))
    assert found is not None
    assert (found.id, found.type, found.actor, found.object) == (event_id, "comment", "ann",
                                                                 "post:1")
    assert found.payload == {"text": "hi", "n": [1]}
    assert (found.recipients, found.exclude) == (["bob", "cat"], ["dan"])
    assert found.idempotency_key == "k1"
    assert found.body_hash == event.body_hash()
    assert (found.created_at, found.retracted_at) == (now, None)


def test_a_given_creation_time_is_kept(store: ports.Store, clock: FrozenClock) -> None:
    event_id = publish(store, clock.now_us(), created_at=1_000_000, actor=None, object=None)
    found = read(store, lambda tx: tx.events.get(event_id))
    assert found is not None
    assert (found.created_at, found.actor, found.object) == (1_000_000, None, None)


def test_ids_grow_with_insertion(store: ports.Store, clock: FrozenClock) -> None:
    first = publish(store, clock.now_us())
    second = publish(store, clock.now_us(), created_at=1)
    assert second > first > 0


def test_an_id_is_never_handed_out_twice(store: ports.Store, clock: FrozenClock) -> None:
    """Rows elsewhere (timelines, waiting mail, jobs) may still name a deleted event's id."""
    publish(store, clock.now_us())
    newest = publish(store, clock.now_us())
    write(store, lambda tx: tx.events.delete([newest]))  # retention took the newest event
    again = publish(store, clock.now_us())
    assert again > newest


def test_missing_events_are_none(store: ports.Store, clock: FrozenClock) -> None:
    publish(store, clock.now_us(), key="there")
    assert read(store, lambda tx: tx.events.get(999_999)) is None
    assert read(store, lambda tx: tx.events.get_by_key("elsewhere")) is None


def test_lookup_by_idempotency_key(store: ports.Store, clock: FrozenClock) -> None:
    publish(store, clock.now_us(), key="a")
    second = publish(store, clock.now_us(), key="b")
    found = read(store, lambda tx: tx.events.get_by_key("b"))
    assert found is not None and found.id == second


def test_idempotency_keys_are_unique_per_scope(store: ports.Store, clock: FrozenClock) -> None:
    event = Event(type="comment", idempotency_key="k")
    shop = write(store, lambda tx: tx.events.insert(event, "{}", clock.now_us(), scope="shop"))
    forum = write(store, lambda tx: tx.events.insert(event, "{}", clock.now_us(),
                                                     scope="forum"))
    default = write(store, lambda tx: tx.events.insert(event, "{}", clock.now_us()))

    assert len({shop, forum, default}) == 3
    found = read(store, lambda tx: [tx.events.get_by_key("k", scope="shop"),
                                    tx.events.get_by_key("k", scope="forum"),
                                    tx.events.get_by_key("k"),
                                    tx.events.get_by_key("k", scope="elsewhere")])
    assert [e.id if e else None for e in found] == [shop, forum, default, None]
    with pytest.raises(StoreConflict):
        write(store, lambda tx: tx.events.insert(event, "{}", clock.now_us(), scope="shop"))


def test_get_with_lock_inside_a_unit(store: ports.Store, clock: FrozenClock) -> None:
    event_id = publish(store, clock.now_us())
    found = write(store, lambda tx: tx.events.get(event_id, lock=True))
    assert found is not None and found.id == event_id


def test_find_ids_matches_every_given_field(store: ports.Store, clock: FrozenClock) -> None:
    a = publish(store, clock.now_us(), type="comment", actor="ann", object="post:1")
    b = publish(store, clock.now_us(), type="comment", actor="bob", object="post:1")
    c = publish(store, clock.now_us(), type="like", actor="ann", object="post:2")
    d = publish(store, clock.now_us(), type="comment", actor="ann", object="post:2")

    def find(type: str | None = None, actor: str | None = None,
             object: str | None = None) -> list[int]:
        return read(store, lambda tx: tx.events.find_ids(type=type, actor=actor, object=object))

    assert find(type="comment") == [a, b, d]
    assert find(actor="ann") == [a, c, d]
    assert find(object="post:2") == [c, d]
    assert find(type="comment", actor="ann", object="post:2") == [d]
    assert find() == [a, b, c, d]


def test_find_ids_pages_ascending_and_skips_retracted(store: ports.Store,
                                                      clock: FrozenClock) -> None:
    made = [publish(store, clock.now_us()) for _ in range(5)]
    write(store, lambda tx: tx.events.mark_retracted([made[1]], clock.now_us()))

    def find(after: int, limit: int) -> list[int]:
        return read(store, lambda tx: tx.events.find_ids(type="comment", actor=None,
                                                         object=None, after_id=after,
                                                         limit=limit))

    assert find(0, 2) == [made[0], made[2]]
    assert find(made[2], 1000) == [made[3], made[4]]
    assert find(made[4], 1000) == []


def test_retraction_is_recorded(store: ports.Store, clock: FrozenClock) -> None:
    kept = publish(store, clock.now_us())
    gone = publish(store, clock.now_us())
    now = clock.now_us()
    write(store, lambda tx: tx.events.mark_retracted([gone], now))

    def retracted_at(event_id: int) -> int | None:
        found = read(store, lambda tx: tx.events.get(event_id))
        assert found is not None
        return found.retracted_at

    assert (retracted_at(kept), retracted_at(gone)) == (None, now)
    write(store, lambda tx: tx.events.mark_retracted([], now))  # nothing to do


def test_expired_ids_by_age_and_type(store: ports.Store, clock: FrozenClock) -> None:
    old_comment = publish(store, clock.now_us(), type="comment", created_at=100)
    old_like = publish(store, clock.now_us(), type="like", created_at=100)
    old_share = publish(store, clock.now_us(), type="share", created_at=199)
    publish(store, clock.now_us(), type="comment", created_at=200)  # not before 200

    def expired(types: list[str] | None, other_than: list[str] | None, limit: int = 100
                ) -> set[int]:
        return set(read(store, lambda tx: tx.events.expired_ids(
            types=types, other_than=other_than, before=200, limit=limit)))

    assert expired(None, None) == {old_comment, old_like, old_share}
    assert expired(["comment", "like"], None) == {old_comment, old_like}
    assert expired(None, ["comment"]) == {old_like, old_share}
    assert len(expired(None, None, limit=2)) == 2


def test_deleted_events_are_gone_with_their_keys(store: ports.Store, clock: FrozenClock) -> None:
    kept = publish(store, clock.now_us(), key="kept")
    gone = publish(store, clock.now_us(), key="gone")
    write(store, lambda tx: tx.events.delete([gone]))
    assert read(store, lambda tx: tx.events.get(gone)) is None
    assert read(store, lambda tx: tx.events.get_by_key("gone")) is None
    assert read(store, lambda tx: tx.events.get(kept)) is not None
    again = publish(store, clock.now_us(), key="gone")  # the key is free again
    found = read(store, lambda tx: tx.events.get_by_key("gone"))
    assert found is not None and found.id == again > kept


def test_actors_of_newest_event_first_distinct(store: ports.Store, clock: FrozenClock) -> None:
    made = [publish(store, clock.now_us(), actor=actor)
            for actor in ("ann", "bob", None, "ann", "cat")]
    other = publish(store, clock.now_us(), actor="dan")
    assert read(store, lambda tx: tx.events.actors_of(made)) == ["cat", "ann", "bob"]
    assert read(store, lambda tx: tx.events.actors_of([other])) == ["dan"]
    assert read(store, lambda tx: tx.events.actors_of([])) == []


def test_an_event_of_a_failed_unit_is_not_stored(store: ports.Store, clock: FrozenClock) -> None:
    made: list[int] = []

    def work(tx: ports.Tx) -> None:
        made.append(tx.events.insert(Event(type="comment", idempotency_key="k"), "{}",
                                     clock.now_us()))
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert read(store, lambda tx: tx.events.get(made[0])) is None
    assert read(store, lambda tx: tx.events.get_by_key("k")) is None


def test_a_second_event_with_a_stored_key_is_a_conflict(store: ports.Store,
                                                        clock: FrozenClock) -> None:
    first = publish(store, clock.now_us(), key="k")
    with pytest.raises(StoreConflict):
        publish(store, clock.now_us(), key="k", payload={"other": True})
    found = read(store, lambda tx: tx.events.get_by_key("k"))
    assert found is not None and (found.id, found.payload) == (first, {"n": 1})


def test_pull_page_merges_the_newest_of_each_source(store: ports.Store,
                                                    clock: FrozenClock) -> None:
    made = {actor: [publish(store, clock.now_us(), type=kind, actor=actor)
                    for kind in ("post", "post", "note", "post")]
            for actor in ("ann", "bob", "cat")}
    write(store, lambda tx: tx.events.mark_retracted([made["bob"][3]], clock.now_us()))
    posts = {a: [made[a][i] for i in (0, 1, 3)] for a in made}
    everything = sorted(posts["ann"] + posts["bob"][:2], reverse=True)

    def pull(sources: list[tuple[str, Position]], limit: int = 10,
             below: Position | None = None, above: Position | None = None) -> list[int]:
        return [e.id for e in read(store, lambda tx: tx.events.pull_page(
            sources, types=["post"], limit=limit, below=below, above=above))]

    def at(event_id: int) -> Position:  # its place in the timeline's order
        found = read(store, lambda tx: tx.events.get(event_id))
        assert found is not None
        return (found.created_at, event_id)

    assert pull([("ann", TOP), ("bob", TOP)]) == everything
    assert pull([("ann", TOP), ("bob", TOP)], limit=2) == everything[:2]
    assert pull([("ann", TOP), ("bob", TOP)], below=at(everything[1]),
                above=at(everything[4])) == everything[2:4]
    assert pull([("ann", at(posts["ann"][1])), ("bob", TOP)]) == sorted(
        posts["ann"][:2] + posts["bob"][:2], reverse=True)
    assert pull([]) == [] and pull([("dan", TOP)]) == []
    event = read(store, lambda tx: tx.events.pull_page(
        [("cat", TOP)], types=["post"], limit=1, below=None, above=None))[0]
    assert (event.id, event.actor, event.type) == (posts["cat"][2], "cat", "post")


def test_position_near_is_an_events_place_or_the_one_below(store: ports.Store,
                                                           clock: FrozenClock) -> None:
    """Where a timeline's max_id / since_id falls: the event's (created_at, id), or for an
    id no event has, the newest event with a lower id's."""
    first, second, gone = (publish(store, clock.now_us(), created_at=at) for at in (30, 20, 10))
    write(store, lambda tx: tx.events.delete([gone]))

    def near(event_id: int) -> Position | None:
        return read(store, lambda tx: tx.events.position_near(event_id))

    assert (near(first), near(second)) == ((30, first), (20, second))
    assert near(gone) == near(gone + 1000) == (20, second)
    assert near(first - 1) is None


def test_insert_many_returns_ids_in_order(store: ports.Store, clock: FrozenClock) -> None:
    events = [Event(type="comment", actor=f"a{n}", payload={"n": n},
                    idempotency_key=f"m{n}" if n % 2 else None) for n in range(5)]
    now = clock.now_us()
    ids = write(store, lambda tx: tx.events.insert_many(
        [(e, f'{{"n":{n}}}') for n, e in enumerate(events)], now))
    assert ids == sorted(ids) and len(set(ids)) == 5
    found = read(store, lambda tx: tx.events.get_many([*ids, 10**9]))
    assert sorted(found) == ids
    assert [found[i].actor for i in ids] == [f"a{n}" for n in range(5)]
    assert [found[i].payload for i in ids] == [{"n": n} for n in range(5)]
    keyed = read(store, lambda tx: tx.events.get_by_keys(["m1", "m3", "nope"]))
    assert {k: e.id for k, e in keyed.items()} == {"m1": ids[1], "m3": ids[3]}
    assert read(store, lambda tx: tx.events.get_by_keys(["m1"], scope="other")) == {}
    assert write(store, lambda tx: tx.events.insert_many([], now)) == []
