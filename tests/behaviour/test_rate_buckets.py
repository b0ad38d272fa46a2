"""The rate limit's shared buckets (``Store.take_tokens``): one budget, whoever takes from it.

Run on every store: the SQL ones keep a bucket in a row that any number of processes take
from in one statement; threads with their own connections stand in for those processes here
(``tests/faults/test_scaleout.py`` runs real ones).
"""

from __future__ import annotations

import threading

import pytest

from engines import open_tidings
from tidings.clock import FrozenClock


def test_a_bucket_lets_its_capacity_through_then_says_how_long_to_wait(
        any_store_url: str) -> None:
    clock = FrozenClock()
    with open_tidings(any_store_url, clock=clock) as t:
        take = t.store.take_tokens
        assert [take("k", 1, rate=2, capacity=4) for _ in range(4)] == [0.0] * 4
        assert take("k", 1, rate=2, capacity=4) == pytest.approx(0.5, abs=0.01)
        assert take("other", 3, rate=2, capacity=4) == 0.0  # buckets are apart
        clock.advance(1.0)  # two tokens back
        assert take("k", 2, rate=2, capacity=4) == 0.0
        assert take("k", 1, rate=2, capacity=4) > 0
        clock.advance(3600)  # refilled to the capacity, never past it
        assert take("k", 4, rate=2, capacity=4) == 0.0
        assert take("k", 1, rate=2, capacity=4) > 0


def test_a_clock_behind_takes_nothing_back(any_store_url: str) -> None:
    clock = FrozenClock()
    with open_tidings(any_store_url, clock=clock) as t:
        assert t.store.take_tokens("k", 2, rate=1, capacity=2) == 0.0
        clock.advance(-10)  # another process, its clock ten seconds behind
        assert t.store.take_tokens("k", 1, rate=1, capacity=2) > 0


def test_concurrent_takes_spend_each_token_once(store_url: str) -> None:
    clock = FrozenClock()  # no refill: exactly the capacity goes through
    with open_tidings(store_url, clock=clock) as t:
        granted: list[bool] = []
        lock = threading.Lock()

        def client() -> None:
            for _ in range(15):
                ok = t.store.take_tokens("shared", 1, rate=0.001, capacity=20) == 0.0
                with lock:
                    granted.append(ok)

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(granted) == 60
        assert granted.count(True) == 20
