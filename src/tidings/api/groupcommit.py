"""Group commit for ``POST /v1/events``: the events of requests that arrive while a commit is
under way are published together, in the next transaction.

One request alone is published at once, as before. Under load, up to :data:`IN_FLIGHT`
groups are committed at once, each in a transaction of its own: a request that arrives while
they all are under way waits for the first to end, then shares the next group with every
request that arrived meanwhile (up to :data:`GROUP_LIMIT`), so a process pays one transaction
and one disk flush per group instead of per event. Several groups in flight let the database
flush their commits together, as it does for the commits of separate connections.

Each group is one step of the store awaited on the event loop
(``Publishing.commit_group``, the store's :class:`tidings.ports.AsyncStore`): on PostgreSQL one
statement with no thread, no BEGIN or COMMIT of its own, where it can answer the group; else,
as on every other store, the unit of work in a worker thread.

Each request is still answered on its own, and only once its event is committed: 202 still
means durable. Its errors are its own too: bad input or a key reused with another body
refuses that request only (:meth:`Tidings.publish_each`). If the group's transaction fails
as a whole for a reason one event may cause (the store refusing a row), each event is
published again by itself, so the others are not refused for it; a store that is unreachable
answers every request of the group with 503, as it would have alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool

from tidings import tracing
from tidings.domain.views import Published
from tidings.engine import Tidings
from tidings.exceptions import SchemaOutOfDate, StoreUnavailable, TidingsError

GROUP_LIMIT = 256  # events in one transaction at most
IN_FLIGHT = 4  # groups committed at once by one process (each holds a pooled connection)

# an event's fields, its idempotency scope, its trace context, its caller's answer
Waiting = tuple[Mapping[str, Any], str, Mapping[str, str] | None, "asyncio.Future[Published]"]


class GroupCommit:
    """Publishes the events of concurrent requests of one process in shared transactions."""

    def __init__(self, tidings: Tidings, limit: int = GROUP_LIMIT,
                 in_flight: int = IN_FLIGHT) -> None:
        self.tidings = tidings
        self.limit = limit
        self.in_flight = max(1, in_flight)
        self._waiting: list[Waiting] = []
        self._committers: set[asyncio.Task[None]] = set()

    async def publish(self, fields: Mapping[str, Any], scope: str) -> Published:
        """Publish one event (``scope``: its idempotency scope) with the next group; its
        span (tracing on) is the trace context its fan-out job joins."""
        with tracing.span("tidings.publish", {"tidings.event.count": 1}):
            future: asyncio.Future[Published] = asyncio.get_running_loop().create_future()
            self._waiting.append((fields, scope, tracing.carrier(), future))
            # a committer that has ended leaves the set only when the loop runs its done
            # callback, later: counted until then, it could leave this request with no
            # committer at all
            if sum(not c.done() for c in self._committers) < self.in_flight:
                committer = asyncio.create_task(self._commit_all())
                self._committers.add(committer)
                committer.add_done_callback(self._committers.discard)
            return await asyncio.shield(future)

    async def _commit_all(self) -> None:
        while self._waiting:
            group = self._waiting[:self.limit]
            del self._waiting[:self.limit]
            try:
                outcomes = await self._publish(group)
            except BaseException as exc:  # unreachable store, or this task cancelled
                for *_, future in group:
                    if not future.done():
                        future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (*_, future), outcome in zip(group, outcomes, strict=True):
                if future.done():
                    continue
                if isinstance(outcome, Published):
                    future.set_result(outcome)
                else:
                    future.set_exception(outcome)

    async def _publish(self, group: list[Waiting]) -> list[Published | TidingsError]:
        """The group published as one step of the store; if it fails as a whole for a reason
        one event may cause, each event again alone, in a thread (:func:`each_alone`)."""
        items = [(fields, scope) for fields, scope, _, _ in group]
        traces = _traces(group)
        try:
            return await self.tidings.publishing.commit_group(items, traces)
        except (StoreUnavailable, SchemaOutOfDate):
            raise
        except TidingsError:
            if len(items) == 1:
                raise
        return await run_in_threadpool(each_alone, self.tidings, items, traces)


Traces = list[Mapping[str, str] | None] | None  # each item's trace context, or None


def _traces(group: list[Waiting]) -> Traces:
    """The group's trace contexts, or None if none carries one (tracing off)."""
    traces = [trace for _, _, trace, _ in group]
    return traces if any(traces) else None


def publish_group(tidings: Tidings, items: list[tuple[Mapping[str, Any], str]],
                  traces: Traces = None) -> list[Published | TidingsError]:
    """:meth:`Tidings.publish_each` of ``items``; if their transaction fails as a whole for a
    reason one event may cause, each is published again alone, answered by its own outcome.
    An unreachable store or an old schema is raised, for every item alike. ``traces``: each
    item's trace context (its fan-out job joins it)."""
    try:
        return tidings.publish_each(items, traces)
    except (StoreUnavailable, SchemaOutOfDate):
        raise
    except TidingsError:
        if len(items) == 1:
            raise
    return each_alone(tidings, items, traces)


def each_alone(tidings: Tidings, items: list[tuple[Mapping[str, Any], str]],
               traces: Traces = None) -> list[Published | TidingsError]:
    """Each item published alone, answered by its own outcome, so that one event's refusal
    is its own. An unreachable store or an old schema is raised."""
    outcomes: list[Published | TidingsError] = []
    for n, item in enumerate(items):
        try:
            outcomes += tidings.publish_each([item], None if traces is None else [traces[n]])
        except (StoreUnavailable, SchemaOutOfDate):
            raise
        except TidingsError as exc:
            outcomes.append(exc)
    return outcomes
