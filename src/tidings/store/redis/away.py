"""Redis servers known to be away: a circuit breaker per server (per cluster node).

A command to a server that hangs (stopped, overloaded, cut off while the connection stays
open) fails only after its ``timeout``. Without a memory of that, every request meanwhile
would wait out the timeout again on a thread of its own, until the API's thread pool was
full and requests that never touch Redis waited too. So a server whose command timed out
is *away*: for ``cooldown`` seconds commands to it fail at once, then one command tries
it again (the others still fail at once) and its answer brings it back. A server stays
away until it answers, which is also what fan-out asks (:meth:`Away.names`): the users
whose inboxes live on a node that is away are left to a later job, the others served now.
"""

from __future__ import annotations

import threading
import time

from tidings.exceptions import StoreUnavailable


class Away:
    """Servers (by node name; ``""`` for a single server) whose last command timed out."""

    def __init__(self, cooldown: float) -> None:
        self.cooldown = cooldown
        self._retry_at: dict[str, float] = {}  # server -> when one command may try it again
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._retry_at)  # the fast path of every command: nothing is away

    def names(self) -> set[str]:
        return set(self._retry_at)

    def check(self, server: str) -> None:
        """Raise :class:`StoreUnavailable` at once if ``server`` is away, unless this call is
        the one that tries it again (the cooldown has passed)."""
        retry_at = self._retry_at.get(server)
        if retry_at is None:
            return
        now = time.monotonic()
        with self._lock:
            retry_at = self._retry_at.get(server)
            if retry_at is None:
                return
            if now >= retry_at:  # this call tries it; the others wait another cooldown
                self._retry_at[server] = now + self.cooldown
                return
        raise StoreUnavailable(
            f"the Redis hot store is unavailable: {server or 'the server'} did not answer "
            f"in time; trying it again in {retry_at - now:.1f} s")

    def timed_out(self, server: str) -> None:
        with self._lock:
            self._retry_at[server] = time.monotonic() + self.cooldown

    def answered(self, server: str) -> None:
        if server in self._retry_at:
            with self._lock:
                self._retry_at.pop(server, None)
