"""Writes held until the end of a unit of work, then sent in one pipeline per phase.

Redis cannot join the SQL transaction, so a unit's Redis writes wait here while its work
runs and go out just before the SQL commit: a unit whose work fails writes nothing to Redis.
Every write is idempotent, so a unit sent but not committed (a lost lease, a crash) and run
again writes nothing twice. Phases keep one order across slots: the event's recipient index
is written before the rows it indexes and cleaned after the rows it indexed are gone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tidings.store.redis.client import Call, Redis

INDEX, ROWS, CLEANUP = 0, 1, 2


class WriteBuffer:
    """The Redis writes of one unit, and the users whose inboxes they change."""

    def __init__(self, *, writable: bool = True) -> None:
        self.writable = writable
        self.phases: list[list[Call]] = [[], [], []]
        self.users: set[str] = set()

    def script(self, name: str, prefix: str, args: Sequence[Any], *, user: str | None = None,
               phase: int = ROWS) -> None:
        self._add(phase, (name, prefix, args), user)

    def script_users(self, name: str, prefixes: tuple[str, ...], args: Sequence[Any],
                     users: Sequence[str]) -> None:
        """A many-user script over ``prefixes`` (users of one node, ``Redis.by_node``)."""
        self._add(ROWS, (name, prefixes, args), None)
        self.users.update(users)

    def command(self, command: str, args: Sequence[Any], *, phase: int = ROWS,
                user: str | None = None) -> None:
        self._add(phase, ("", command, args), user)

    def _add(self, phase: int, call: Call, user: str | None) -> None:
        if not self.writable:
            raise RuntimeError("a read-only unit of work cannot write")
        self.phases[phase].append(call)
        if user is not None:
            self.users.add(user)

    @property
    def empty(self) -> bool:
        return not any(self.phases)

    def dumps(self) -> str:
        """The writes held, as JSON (the hot store's journal, ``tidings.store.redis.journal``)."""
        return json.dumps(self.phases, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> WriteBuffer:
        """Writes :meth:`dumps` gave (a many-user script's prefixes a tuple again)."""
        buffer = cls()
        buffer.phases = [[(name, tuple(first) if isinstance(first, list) else first, args)
                          for name, first, args in calls] for calls in json.loads(text)]
        return buffer

    def flush(self, redis: Redis) -> None:
        """Send every phase in order; raises ``StoreUnavailable`` if Redis is away. One
        server runs a pipeline's commands in order: the phases go in one round trip there;
        a cluster gets one round of pipelines per phase (its nodes keep no common order)."""
        if redis.cluster:
            for calls in self.phases:
                redis.pipeline(calls, "writing")
        else:
            redis.pipeline([call for calls in self.phases for call in calls], "writing")
        self.phases = [[], [], []]
