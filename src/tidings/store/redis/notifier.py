"""Live updates over Redis pub/sub: every process that shares the hot store hears of every
committed inbox change, within milliseconds.

A unit that changed inboxes publishes the users on one channel (``<prefix>live``), in
messages of at most :data:`BATCH` user ids. Each process keeps one subscription, opened on
the first :meth:`RedisNotifier.subscribe` (which waits until it is in place: a change published
before would go unheard), read by one thread that calls the callbacks of the users named. When
the subscription breaks (Redis away) the thread reconnects, and once back it calls every
callback: changes may have been missed meanwhile. The subscription also
takes a channel of its own, on which :meth:`RedisNotifier.close` wakes the thread to end at
once rather than at its next poll.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from tidings.exceptions import StoreUnavailable
from tidings.store.notifier import LocalNotifier
from tidings.store.redis.client import Redis, guard
from tidings.store.redis.keys import Keys

log = logging.getLogger("tidings.notifier")
BATCH = 1000
RECONNECT_SECONDS = 0.5
READY_SECONDS = 5.0  # how long a first listener waits for the subscription


class RedisNotifier:
    """``Notifier`` over one Redis channel, with the callbacks of this process."""

    cross_process = True

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.channel = Keys(redis.prefix).live()
        self._wake = f"{self.channel}:wake:{secrets.token_hex(8)}"  # this notifier's own
        self.local = LocalNotifier()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._connected = threading.Event()

    def changed(self, users: Sequence[str]) -> None:
        """Publish; best effort (a change already committed must not fail its caller)."""
        names = sorted(set(users))
        if not names:
            return
        try:
            with guard("publishing"):
                for start in range(0, len(names), BATCH):
                    self.redis.client.publish(self.channel,
                                              "\n".join(names[start:start + BATCH]))
        except StoreUnavailable as exc:
            log.warning("live update not published: %s", exc)

    def subscribe(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, name="tidings-live",
                                                daemon=True)
                self._thread.start()
        # A change published before the subscription is in place would go unheard: the first
        # listener waits for it (a listener that gives up waiting is called once it is).
        self._connected.wait(READY_SECONDS)
        return self.local.subscribe(user, callback)

    def wait_connected(self, timeout: float) -> bool:
        """Wait until the subscription is open (tests, and a caller that must not miss the
        next change)."""
        return self._connected.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            if self._connected.is_set():  # wake the thread from its wait for a message
                with contextlib.suppress(Exception):  # Redis away: it ends within its poll
                    self.redis.client.publish(self._wake, "")
            thread.join(timeout=5)

    def _listen(self) -> None:
        while not self._stop.is_set():
            pubsub: Any = None
            try:
                pubsub = self.redis.client.pubsub()
                pubsub.subscribe(self.channel, self._wake)
                _confirmed(pubsub, 2)
                # changes may have gone unheard while disconnected, or before the first
                # subscription by a listener that stopped waiting for it
                self.local.changed(list(self.local.users()))
                self._connected.set()
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if not message or message.get("type") != "message":
                        continue
                    if message.get("channel") == self._wake:
                        break
                    self.local.changed(str(message["data"]).split("\n"))
            except Exception as exc:  # Redis away: reconnect, and tell everyone once back
                self._connected.clear()
                log.debug("live-update subscription lost: %s", exc)
                time.sleep(RECONNECT_SECONDS)
            finally:
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        pubsub.close()


def _confirmed(pubsub: Any, channels: int) -> None:
    """Wait until Redis has confirmed the subscription to ``channels`` channels: from then on
    every message published on them is heard."""
    deadline = time.monotonic() + READY_SECONDS
    while channels:
        if time.monotonic() > deadline:
            raise TimeoutError("the subscription was not confirmed")
        message = pubsub.get_message(timeout=0.5)
        if message and message.get("type") == "subscribe":
            channels -= 1
