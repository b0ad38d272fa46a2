"""Who holds a notification of an event on the Redis hot store, and which job wrote it: the
idempotency reads of a delivery, for many events in one pipeline."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.store.redis.client import Redis
from tidings.store.redis.keys import Keys

Wanted = Sequence[tuple[int, Sequence[str]]]  # (event id, users)


def writers_of(redis: Redis, keys: Keys, wanted: Wanted) -> list[list[str | None]]:
    """Per (event, users) item, per user: the writer of their row of the event ('' for none),
    or None where there is no row; one ``writers.lua`` call per item and node, all in one
    pipeline."""
    calls: list[tuple[str, tuple[str, ...], list[int]]] = []
    slots: list[tuple[int, list[int]]] = []
    for item, (event_id, users) in enumerate(wanted):
        prefixes = [keys.user(u) for u in users]
        for group in redis.by_node(prefixes):
            calls.append(("writers", tuple(prefixes[i] for i in group), [event_id]))
            slots.append((item, group))
    found = redis.pipeline(calls, "delivered")
    writers: list[list[str | None]] = [[None] * len(users) for _, users in wanted]
    for (item, group), answers in zip(slots, found, strict=True):
        for index, writer in zip(group, answers, strict=True):
            writers[item][index] = writer
    return writers


def held(redis: Redis, keys: Keys, event_ids: Sequence[int]) -> set[int]:
    """Those of the events whose holders' index (``keys.recipients``) names anyone."""
    found = redis.pipeline([("", "EXISTS", [keys.recipients(e)]) for e in event_ids], "held")
    return {e for e, there in zip(event_ids, found, strict=True) if there}
