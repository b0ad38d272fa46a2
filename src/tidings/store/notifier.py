"""An in-process notifier: listeners in this process hear of changes at once.

Processes that share a store but not memory (several API processes, separate workers) still
see changes by polling; with a Redis hot store, ``tidings.store.redis.notifier`` carries the
changes between processes and uses this one for the callbacks of each.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

log = logging.getLogger("tidings.notifier")


class LocalNotifier:
    """Callbacks per user, called from the thread that reports the change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, list[Callable[[], None]]] = {}

    def changed(self, users: Sequence[str]) -> None:
        with self._lock:
            callbacks = [cb for user in set(users) for cb in self._listeners.get(user, ())]
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one broken listener must not stop the others or the writer
                log.exception("a live-update listener failed")

    def users(self) -> list[str]:
        """The users someone listens to."""
        with self._lock:
            return list(self._listeners)

    def subscribe(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.setdefault(user, []).append(callback)

        def unsubscribe() -> None:
            with self._lock:
                listeners = self._listeners.get(user, [])
                if callback in listeners:
                    listeners.remove(callback)
                if not listeners:
                    self._listeners.pop(user, None)

        return unsubscribe
