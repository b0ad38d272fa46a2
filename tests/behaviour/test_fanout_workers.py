"""Units that write a batch of events to overlapping users keep apart (``InboxStore.hold``).

A unit fanning out a batch writes each event's users in statements of their own, each in key
order; two such units on overlapping users would take them in different orders and deadlock,
which PostgreSQL notices only after ``deadlock_timeout`` (1 s) per deadlock: a batched fan-out
on two workers once ran ten times slower than on one. Before its writes such a unit now holds
what keeps the other out until it ends (PostgreSQL: one advisory lock taken in turn;
MariaDB/MySQL: the users' rows, locked in key order), so the second waits instead of
deadlocking. Checked by order of events, not timed.
"""

from __future__ import annotations

import threading
import time

import pytest

from engines import open_tidings
from tidings.ports import Tx


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_a_units_hold_keeps_another_units_hold_waiting_until_it_ends(
        store_url: str, backend: str) -> None:
    with open_tidings(store_url) as t:
        t.publish({"type": "mention", "actor": "alice", "recipients": ["ann", "bob"]})
        t.run_jobs()  # both users have their row now
        held = threading.Event()
        release = threading.Event()
        order: list[str] = []

        def first(tx: Tx) -> None:
            tx.inbox.hold(["bob", "ann"])
            held.set()
            assert release.wait(10)
            order.append("first ends")

        def second(tx: Tx) -> None:
            tx.inbox.hold(["ann"])
            order.append("second holds")

        one = threading.Thread(target=t.store.transact, args=(first,))
        one.start()
        assert held.wait(10)
        two = threading.Thread(target=t.store.transact, args=(second,))
        two.start()
        time.sleep(0.3)  # time enough for the second to get through, were it not kept out
        assert order == []
        release.set()
        one.join(10)
        two.join(10)
        assert order == ["first ends", "second holds"]


def test_a_hold_is_harmless_where_there_is_nothing_to_lock(any_store_url: str) -> None:
    with open_tidings(any_store_url) as t:
        t.store.transact(lambda tx: tx.inbox.hold(["ann", "nobody"]))
        t.store.transact(lambda tx: tx.inbox.hold([]))
        t.publish({"type": "mention", "actor": "alice", "recipients": ["ann"]})
        t.run_jobs()
        assert [n.actor for n in t.notifications("ann").items] == ["alice"]
