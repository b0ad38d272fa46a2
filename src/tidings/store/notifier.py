"""An in-process notifier: listeners in this process hear of changes at once.

Processes that share a store but not memory (several API processes, separate workers) still
see changes by polling; a notifier over Redis pub/sub or PostgreSQL LISTEN/NOTIFY replaces this
one where the store offers it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

log = logging.getLogger("tidings.notifier")


class LocalNotifier:
    """Callbacks per user, called from the thread that reports the change."""

    cross_process = False

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
        """The users someone listens for."""
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


class AfterCommit:
    """Callbacks a unit of work runs once it has committed."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []

    def after_commit(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def run_after_commit(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # what is committed stays committed; a listener may miss it
                log.exception("an after-commit callback failed")
