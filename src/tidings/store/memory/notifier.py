"""An in-process Notifier: callbacks per user, called when ``changed`` names that user."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

log = logging.getLogger("tidings.notifier")


class MemoryNotifier:
    """Listeners live in this process; ``changed`` calls them in the caller's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, dict[int, Callable[[], None]]] = {}
        self._next = 0

    def subscribe(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._next += 1
            key = self._next
            self._listeners.setdefault(user, {})[key] = callback

        def unsubscribe() -> None:
            with self._lock:
                mine = self._listeners.get(user)
                if mine is not None:
                    mine.pop(key, None)
                    if not mine:
                        del self._listeners[user]

        return unsubscribe

    def changed(self, users: Sequence[str]) -> None:
        with self._lock:
            calls = [cb for user in dict.fromkeys(users)
                     for cb in self._listeners.get(user, {}).values()]
        for callback in calls:  # outside the lock: a callback may subscribe or unsubscribe
            try:
                callback()
            except Exception:  # one broken listener must not keep the others uninformed
                log.exception("a change listener failed")

    def close(self) -> None:
        with self._lock:
            self._listeners.clear()
