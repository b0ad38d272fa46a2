"""GraphStore: the channels of matching subscriptions, who of a batch follows someone, and
groups for privacy rules."""

from __future__ import annotations

from contract_kit import read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.views import Member


def test_subscription_channels_are_the_union_of_matching_ones(store: ports.Store,
                                                              clock: FrozenClock) -> None:
    now = clock.now_us()
    write(store, lambda tx: (
        tx.graph.save_subscription("ann", "edit", "page:X", ["email"], now),
        tx.graph.save_subscription("ann", "*", "*", ["web"], now),
        tx.graph.save_subscription("bob", "edit", "*", ["web", "webhook"], now),
        tx.graph.save_subscription("cat", "edit", "page:Y", ["email"], now),
        tx.graph.save_subscription("dan", "like", "page:X", ["email"], now)))
    found = read(store, lambda tx: tx.graph.subscription_channels(
        ["ann", "bob", "cat", "dan", "eve"], "edit", "page:X", now))
    assert found == {"ann": frozenset({"web", "email"}), "bob": frozenset({"web", "webhook"})}
    no_object = read(store, lambda tx: tx.graph.subscription_channels(
        ["ann", "bob", "cat"], "edit", None, now))
    assert no_object == {"ann": frozenset({"web"}), "bob": frozenset({"web", "webhook"})}


def test_subscription_channels_leave_out_expired_subscriptions(store: ports.Store,
                                                              clock: FrozenClock) -> None:
    now = clock.now_us()
    write(store, lambda tx: (
        tx.graph.save_subscription("ann", "edit", "page:X", ["email"], now, now + 10),
        tx.graph.save_subscription("ann", "*", "*", ["web"], now),
        tx.graph.save_subscription("bob", "edit", "*", ["webhook"], now, now + 10)))
    assert read(store, lambda tx: tx.graph.subscription_channels(
        ["ann", "bob"], "edit", "page:X", now + 9)) == {
            "ann": frozenset({"web", "email"}), "bob": frozenset({"webhook"})}
    assert read(store, lambda tx: tx.graph.subscription_channels(
        ["ann", "bob"], "edit", "page:X", now + 10)) == {"ann": frozenset({"web"})}


def test_following_names_the_followers_among_users(store: ports.Store,
                                                   clock: FrozenClock) -> None:
    now = clock.now_us()
    write(store, lambda tx: (tx.graph.add_follow("ann", "star", now),
                             tx.graph.add_follow("bob", "other", now)))
    assert read(store, lambda tx: tx.graph.following(["ann", "bob", "cat"], "star")) == {"ann"}
    assert read(store, lambda tx: tx.graph.following([], "star")) == set()


def test_groups(store: ports.Store) -> None:
    assert write(store, lambda tx: tx.graph.add_member("staff", "bob", 2)) is True
    assert write(store, lambda tx: tx.graph.add_member("staff", "ann", 1)) is True
    assert write(store, lambda tx: tx.graph.add_member("staff", "ann", 3)) is False
    assert write(store, lambda tx: tx.graph.add_member("other", "cat", 4)) is True
    assert read(store, lambda tx: tx.graph.members("staff", after="", limit=10)) == [
        Member("ann", 1), Member("bob", 2)]
    assert read(store, lambda tx: tx.graph.members("staff", after="ann", limit=1)) == [
        Member("bob", 2)]
    assert read(store, lambda tx: tx.graph.members_among("staff", ["ann", "cat", "dan"])) == {
        "ann"}
    assert write(store, lambda tx: tx.graph.remove_member("staff", "ann")) is True
    assert write(store, lambda tx: tx.graph.remove_member("staff", "ann")) is False
    assert read(store, lambda tx: tx.graph.members_among("staff", ["ann", "bob"])) == {"bob"}
