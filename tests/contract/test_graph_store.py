"""GraphStore: users, subscriptions, follows, audiences by range, and mutes."""

from __future__ import annotations

from contract_kit import read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.audience import ACTOR_FOLLOWERS, OBJECT_SUBSCRIBERS, AudienceSource
from tidings.domain.timeline import START, SourceState, pushed_from_start
from tidings.domain.views import Follow


def test_add_user_says_whether_the_user_is_new(store: ports.Store, clock: FrozenClock) -> None:
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is True
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is False
    assert write(store, lambda tx: tx.graph.add_user("bob", clock.now_us())) is True


def test_joined_reads_back_join_times_of_registered_users(store: ports.Store) -> None:
    assert read(store, lambda tx: tx.graph.joined(["ann"])) == {}
    write(store, lambda tx: tx.graph.add_user("ann", 10))
    write(store, lambda tx: tx.graph.add_user("bob", 20))
    write(store, lambda tx: tx.graph.add_user("ann", 30))  # known: keeps her join time
    write(store, lambda tx: tx.graph.set_joined("bob", 5))
    assert read(store, lambda tx: tx.graph.joined(["ann", "bob", "cat", "ann"])) == {
        "ann": 10, "bob": 5}
    assert read(store, lambda tx: tx.graph.joined([])) == {}


def test_set_joined_registers_nobody(store: ports.Store, clock: FrozenClock) -> None:
    write(store, lambda tx: tx.graph.add_user("ann", clock.now_us()))
    write(store, lambda tx: tx.graph.set_joined("ann", 5))
    write(store, lambda tx: tx.graph.set_joined("bob", 5))
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is False
    assert write(store, lambda tx: tx.graph.add_user("bob", clock.now_us())) is True


def test_a_subscription_is_saved_once_per_target(store: ports.Store, clock: FrozenClock) -> None:
    first_at = clock.now_us()
    first = write(store, lambda tx: tx.graph.save_subscription(
        "ann", "comment", "post:1", ["web"], first_at))
    assert (first.user, first.type, first.object, first.channels, first.created_at) == (
        "ann", "comment", "post:1", ("web",), first_at)
    again = write(store, lambda tx: tx.graph.save_subscription(
        "ann", "comment", "post:1", ["webhook", "email", "web", "email"], clock.now_us()))
    # the same subscription, its channels replaced (sorted, each once), its age kept
    assert (again.id, again.created_at) == (first.id, first_at)
    assert again.channels == ("email", "web", "webhook")
    listed = read(store, lambda tx: tx.graph.subscriptions("ann", after_id=0, limit=10))
    assert listed == [again]


def test_subscriptions_page_by_id(store: ports.Store, clock: FrozenClock) -> None:
    made = [write(store, lambda tx, o=o: tx.graph.save_subscription(
        "ann", "*", f"post:{o}", ["web"], clock.now_us())) for o in range(5)]
    write(store, lambda tx: tx.graph.save_subscription("bob", "*", "*", ["web"], clock.now_us()))

    def listed(after: int, limit: int) -> list[int]:
        return [s.id for s in read(store, lambda tx: tx.graph.subscriptions(
            "ann", after_id=after, limit=limit))]

    ids = [s.id for s in made]
    assert ids == sorted(ids)
    assert listed(0, 2) == ids[:2]
    assert listed(ids[1], 10) == ids[2:]
    assert listed(ids[-1], 10) == []


def test_delete_subscription_only_the_owners(store: ports.Store, clock: FrozenClock) -> None:
    mine = write(store, lambda tx: tx.graph.save_subscription(
        "ann", "comment", "*", ["web"], clock.now_us()))
    assert write(store, lambda tx: tx.graph.delete_subscription("bob", mine.id)) is False
    assert write(store, lambda tx: tx.graph.delete_subscription("ann", mine.id)) is True
    assert write(store, lambda tx: tx.graph.delete_subscription("ann", mine.id)) is False
    assert read(store, lambda tx: tx.graph.subscriptions("ann", after_id=0, limit=10)) == []
    # and the target can be subscribed to again
    again = write(store, lambda tx: tx.graph.save_subscription(
        "ann", "comment", "*", ["web"], clock.now_us()))
    assert read(store, lambda tx: tx.graph.subscriptions("ann", after_id=0, limit=10)) == [
        again]


def test_follow_edges(store: ports.Store, clock: FrozenClock) -> None:
    assert write(store, lambda tx: tx.graph.add_follow("ann", "bob", clock.now_us())) is True
    assert write(store, lambda tx: tx.graph.add_follow("ann", "bob", clock.now_us())) is False
    assert write(store, lambda tx: tx.graph.remove_follow("ann", "bob")) is True
    assert write(store, lambda tx: tx.graph.remove_follow("ann", "bob")) is False
    assert write(store, lambda tx: tx.graph.remove_follow("bob", "ann")) is False


def test_follows_page_both_ways_by_user_id(store: ports.Store, clock: FrozenClock) -> None:
    when: dict[str, int] = {}
    for other in ("u3", "u1", "u4", "u2"):
        when[other] = clock.now_us()
        write(store, lambda tx, o=other: tx.graph.add_follow("ann", o, when[o]))
        write(store, lambda tx, o=other: tx.graph.add_follow(o, "bob", clock.now_us()))

    def following(after: str, limit: int) -> list[Follow]:
        return read(store, lambda tx: tx.graph.follows("ann", followers=False, after=after,
                                                       limit=limit))

    assert following("", 10) == [Follow(u, when[u]) for u in ("u1", "u2", "u3", "u4")]
    assert [f.user for f in following("", 2)] == ["u1", "u2"]
    assert [f.user for f in following("u2", 10)] == ["u3", "u4"]
    assert read(store, lambda tx: tx.graph.follows("ann", followers=True, after="",
                                                   limit=10)) == []
    followers = read(store, lambda tx: tx.graph.follows("bob", followers=True, after="u1",
                                                        limit=10))
    assert [f.user for f in followers] == ["u2", "u3", "u4"]


def _subscribers(type: str, obj: str | None) -> AudienceSource:
    source = AudienceSource.of(OBJECT_SUBSCRIBERS, type, "ann", obj)
    assert source is not None
    return source


def test_subscribers_of_type_or_star_and_object_or_star(store: ports.Store,
                                                        clock: FrozenClock) -> None:
    for user, type, obj in [("u1", "comment", "post:1"), ("u2", "*", "post:1"),
                            ("u3", "comment", "*"), ("u4", "*", "*"),
                            ("u5", "like", "post:1"), ("u6", "comment", "post:2"),
                            ("u1", "*", "*")]:  # u1 twice: listed once
        write(store, lambda tx, u=user, t=type, o=obj: tx.graph.save_subscription(
            u, t, o, ["web"], clock.now_us()))

    def audience(obj: str | None) -> list[str]:
        return read(store, lambda tx: tx.graph.audience(_subscribers("comment", obj),
                                                        after="", upto=None))

    assert audience("post:1") == ["u1", "u2", "u3", "u4"]
    assert audience(None) == ["u1", "u3", "u4"]  # no object: only subscriptions to any object


def test_audience_ranges_and_boundaries(store: ports.Store, clock: FrozenClock) -> None:
    users = [f"u{i:02d}" for i in range(1, 11)]
    for user in reversed(users):
        write(store, lambda tx, u=user: tx.graph.add_follow(u, "ann", clock.now_us()))
    write(store, lambda tx: tx.graph.add_follow("zed", "bob", clock.now_us()))
    source = AudienceSource.of(ACTOR_FOLLOWERS, "comment", "ann", None)
    assert source is not None

    def audience(after: str, upto: str | None, limit: int | None = None) -> list[str]:
        return read(store, lambda tx: tx.graph.audience(source, after=after, upto=upto,
                                                        limit=limit))

    def nth(after: str, n: int) -> str | None:
        return read(store, lambda tx: tx.graph.nth_after(source, after, n))

    assert audience("", None) == users
    assert audience("u03", "u06") == ["u04", "u05", "u06"]  # (after, upto]
    assert audience("u03", None, limit=2) == ["u04", "u05"]
    assert audience("u10", None) == []
    assert nth("", 1) == "u01"
    assert nth("", 4) == "u04"
    assert nth("u04", 3) == "u07"
    assert nth("u08", 2) == "u10"
    assert nth("u08", 3) is None
    # chunking: boundaries from nth_after cover the source exactly once
    chunks, after = [], ""
    while (upto := nth(after, 3)) is not None:
        chunks.append(audience(after, upto))
        after = upto
    chunks.append(audience(after, None))
    assert [u for chunk in chunks for u in chunk] == users


def test_mutes(store: ports.Store, clock: FrozenClock) -> None:
    write(store, lambda tx: tx.graph.add_mute("ann", "object", "post:9"))
    write(store, lambda tx: tx.graph.add_mute("ann", "actor", "bob"))
    write(store, lambda tx: tx.graph.add_mute("ann", "actor", "bob"))  # idempotent
    write(store, lambda tx: tx.graph.add_mute("ann", "actor", "abe"))
    assert read(store, lambda tx: tx.graph.mutes("ann")) == [
        ("actor", "abe"), ("actor", "bob"), ("object", "post:9")]
    assert write(store, lambda tx: tx.graph.remove_mute("ann", "actor", "abe")) == 1
    assert write(store, lambda tx: tx.graph.remove_mute("ann", "actor", "abe")) == 0
    write(store, lambda tx: tx.graph.replace_mutes(
        "ann", [("object", "post:2"), ("actor", "cat"), ("actor", "cat")]))
    assert read(store, lambda tx: tx.graph.mutes("ann")) == [("actor", "cat"),
                                                             ("object", "post:2")]
    write(store, lambda tx: tx.graph.replace_mutes("ann", []))
    assert read(store, lambda tx: tx.graph.mutes("ann")) == []
    assert read(store, lambda tx: tx.graph.mutes("nobody")) == []


def test_muting_by_actor_or_object(store: ports.Store, clock: FrozenClock) -> None:
    write(store, lambda tx: tx.graph.add_mute("u1", "actor", "bob"))
    write(store, lambda tx: tx.graph.add_mute("u2", "object", "post:1"))
    write(store, lambda tx: tx.graph.add_mute("u3", "actor", "cat"))
    write(store, lambda tx: tx.graph.add_mute("u5", "actor", "bob"))  # not asked about
    everyone = ["u1", "u2", "u3", "u4"]

    def muting(actor: str | None, obj: str | None) -> set[str]:
        return read(store, lambda tx: tx.graph.muting(everyone, actor, obj))

    assert muting("bob", "post:1") == {"u1", "u2"}
    assert muting("bob", None) == {"u1"}
    assert muting(None, "post:1") == {"u2"}
    assert muting("post:1", "bob") == set()  # kinds do not mix
    assert muting(None, None) == set()
    assert read(store, lambda tx: tx.graph.muting([], "bob", None)) == set()


def test_timeline_sources_count_followers_and_keep_overrides(store: ports.Store,
                                                             clock: FrozenClock) -> None:
    now = clock.now_us()
    for fan in ("bob", "cat", "dan"):
        write(store, lambda tx, f=fan: tx.graph.add_follow(f, "ann", now))
    write(store, lambda tx: tx.graph.add_follow("bob", "ann", now))  # not new: not counted
    write(store, lambda tx: tx.graph.remove_follow("cat", "ann"))
    write(store, lambda tx: tx.graph.remove_follow("cat", "ann"))
    write(store, lambda tx: tx.graph.add_follow("bob", "eve", now))
    got = read(store, lambda tx: tx.graph.timeline_sources(["ann", "eve", "zed"]))
    assert got == {"ann": SourceState(2, None, START), "eve": SourceState(1, None, START)}
    write(store, lambda tx: tx.graph.set_timeline_model("ann", "pull"))
    write(store, lambda tx: tx.graph.set_timeline_model("zed", "push"))
    write(store, lambda tx: tx.graph.set_push_from("ann", None))
    got = read(store, lambda tx: tx.graph.timeline_sources(["ann", "zed"]))
    assert got == {"ann": SourceState(2, "pull", None), "zed": SourceState(0, "push", START)}
    write(store, lambda tx: tx.graph.set_timeline_model("ann", None))
    write(store, lambda tx: tx.graph.set_push_from("ann", (9, 42)))
    assert read(store, lambda tx: tx.graph.timeline_sources(["ann"])) == {
        "ann": SourceState(2, None, (9, 42))}
    write(store, lambda tx: tx.graph.add_follow("bob", "new", now))
    write(store, lambda tx: tx.graph.add_follow("cat", "zed", now))
    write(store, lambda tx: tx.graph.remove_follow("cat", "zed"))
    write(store, lambda tx: tx.graph.add_follow("bob", "zed", now))
    assert read(store, lambda tx: tx.graph.followee_sources("bob")) == {
        "ann": SourceState(2, None, (9, 42)), "eve": SourceState(1, None, START),
        "new": SourceState(1, None, START), "zed": SourceState(1, "push", START)}
    assert read(store, lambda tx: tx.graph.followee_sources("dan")) == {
        "ann": SourceState(2, None, (9, 42))}
    assert read(store, lambda tx: tx.graph.followee_sources("nobody")) == {}


def test_unpushed_followees_are_those_not_pushed_from_the_start(store: ports.Store,
                                                                clock: FrozenClock) -> None:
    """An override (either model), a source pulled at its last post (push_from None) or
    pushed only since some post (push_from above START); not a source with no stored state, nor one
    pushed from its first post."""
    now = clock.now_us()
    for followee in ("plain", "never", "over", "pulled", "since", "back"):
        write(store, lambda tx, f=followee: tx.graph.add_follow("bob", f, now))
    write(store, lambda tx: tx.graph.add_follow("cat", "pulled", now))
    write(store, lambda tx: tx.graph.set_timeline_model("over", "push"))
    write(store, lambda tx: tx.graph.set_push_from("pulled", None))
    write(store, lambda tx: tx.graph.set_push_from("since", (3, 7)))
    write(store, lambda tx: tx.graph.set_push_from("back", None))
    write(store, lambda tx: tx.graph.set_push_from("back", START))  # pushed from the start again
    assert read(store, lambda tx: tx.graph.unpushed_followees("bob")) == {
        "over": SourceState(1, "push", START), "pulled": SourceState(2, None, None),
        "since": SourceState(1, None, (3, 7))}
    assert read(store, lambda tx: tx.graph.unpushed_followees("cat")) == {
        "pulled": SourceState(2, None, None)}
    assert read(store, lambda tx: tx.graph.unpushed_followees("nobody")) == {}
    everyone = read(store, lambda tx: tx.graph.followee_sources("bob"))
    assert {f for f, state in everyone.items() if not pushed_from_start(state)} == {
        "over", "pulled", "since"}


def test_mutes_many_reads_every_users_mutes(store: ports.Store) -> None:
    write(store, lambda tx: tx.graph.add_mute("u1", "actor", "bob"))
    write(store, lambda tx: tx.graph.add_mute("u1", "object", "post:1"))
    write(store, lambda tx: tx.graph.add_mute("u3", "actor", "cat"))
    write(store, lambda tx: tx.graph.add_mute("u5", "actor", "bob"))  # not asked about
    got = read(store, lambda tx: tx.graph.mutes_many(["u1", "u2", "u3", "u1"]))
    assert got == {"u1": {("actor", "bob"), ("object", "post:1")}, "u3": {("actor", "cat")}}
    assert read(store, lambda tx: tx.graph.mutes_many([])) == {}


def test_followers_of_many_actors_as_their_audience(store: ports.Store,
                                                    clock: FrozenClock) -> None:
    now = clock.now_us()
    for fan in ("f3", "f1", "f2", "f4", "é"):
        write(store, lambda tx, f=fan: tx.graph.add_follow(f, "ann", now))
    for fan in ("f9", 'q"\\x'):  # any text (MariaDB reads them back as JSON)
        write(store, lambda tx, f=fan: tx.graph.add_follow(f, "bob", now))
    write(store, lambda tx: tx.graph.remove_follow("f2", "ann"))
    got = read(store, lambda tx: tx.graph.followers_of(["ann", "bob", "zed", "ann"], limit=3))
    assert got == {"ann": ["f1", "f3", "f4"], "bob": ["f9", 'q"\\x']}
    source = AudienceSource(ACTOR_FOLLOWERS, "post", "ann", None)
    whole = read(store, lambda tx: tx.graph.followers_of(["ann"], limit=10))["ann"]
    assert whole == read(store, lambda tx: tx.graph.audience(source, after="", upto=None))
    assert read(store, lambda tx: tx.graph.followers_of([], limit=3)) == {}
