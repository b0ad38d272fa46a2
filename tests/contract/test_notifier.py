"""Notifier: listeners of a user hear of that user's changes until they unsubscribe.

Callbacks may come from any thread, so every wait here is bounded, never assumed instant.
"""

from __future__ import annotations

import threading
import time

from tidings import ports

WAIT = 5.0


class Listener:
    """Counts calls and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.calls = 0
        self._called = threading.Condition()

    def __call__(self) -> None:
        with self._called:
            self.calls += 1
            self._called.notify_all()

    def wait_for(self, calls: int) -> bool:
        with self._called:
            return self._called.wait_for(lambda: self.calls >= calls, timeout=WAIT)


def test_a_change_reaches_the_users_listeners(store: ports.Store) -> None:
    first, second, other = Listener(), Listener(), Listener()
    store.notifier.subscribe("ann", first)
    store.notifier.subscribe("ann", second)
    store.notifier.subscribe("bob", other)
    store.notifier.changed(["ann", "cat"])
    assert first.wait_for(1) and second.wait_for(1)
    store.notifier.changed(["ann"])
    assert first.wait_for(2) and second.wait_for(2)
    store.notifier.changed(["bob"])
    assert other.wait_for(1)
    time.sleep(0.05)
    assert (first.calls, second.calls, other.calls) == (2, 2, 1)


def test_an_unsubscribed_listener_hears_nothing_more(store: ports.Store) -> None:
    gone, staying = Listener(), Listener()
    unsubscribe = store.notifier.subscribe("ann", gone)
    store.notifier.subscribe("ann", staying)
    store.notifier.changed(["ann"])
    assert gone.wait_for(1) and staying.wait_for(1)
    unsubscribe()
    unsubscribe()  # twice is harmless
    store.notifier.changed(["ann"])
    assert staying.wait_for(2)
    time.sleep(0.05)
    assert gone.calls == 1


def test_a_failing_listener_does_not_silence_the_others(store: ports.Store) -> None:
    def broken() -> None:
        raise RuntimeError("listener bug")

    listener = Listener()
    store.notifier.subscribe("ann", broken)
    store.notifier.subscribe("ann", listener)
    store.notifier.changed(["ann"])  # does not raise
    assert listener.wait_for(1)


def test_no_listeners_no_work(store: ports.Store) -> None:
    store.notifier.changed([])
    store.notifier.changed(["nobody"])
