"""Jobs as data (TheSchwartz's model): what to run, claimed runs, recorded failures."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tidings import tracing

SECOND = 1_000_000


def grouped_key(func: str, group: str, rest: str) -> str:
    """A unique key that puts its job in ``group`` (``func@group:rest``; see :func:`group_of`).
    ``group`` holds neither ``:`` nor ``%``; the key is cut to the column's 255 characters."""
    return f"{func}@{group}:{rest}"[:255]


def group_of(unique_key: str | None) -> str | None:
    """The group a job belongs to, named by its unique key (``func@group:…``), or None. A
    lane with ``per_group`` runs at most that many jobs of one group at once, and its claims
    pass the groups at that limit as ``busy`` (webhooks: one group per receiving host)."""
    if unique_key is None:
        return None
    head, colon, _ = unique_key.partition(":")
    return head if colon and "@" in head else None


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue. A ``unique_key`` already queued makes the enqueue a no-op. Made
    while a span is current (tracing on), its args carry the trace context
    (:func:`tidings.tracing.stamp`): the worker's span for it continues that trace."""

    func: str
    args: Mapping[str, Any] = field(default_factory=dict)
    unique_key: str | None = None
    priority: int = 5
    run_after: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tracing.stamp(self.args))


@dataclass(frozen=True)
class EventJob:
    """The job of an event not stored yet: once the event has its id, the job's args get it
    as ``event_id`` (first) and its unique key is ``key_prefix`` followed by it."""

    func: str
    args: Mapping[str, Any]
    key_prefix: str
    priority: int = 5

    def __post_init__(self) -> None:  # the trace context, as JobSpec's
        object.__setattr__(self, "args", tracing.stamp(self.args))

    def for_event(self, event_id: int) -> JobSpec:
        with tracing.resumed(self.args):  # the trace it was made in, not the storing unit's
            return JobSpec(self.func, {"event_id": event_id, **self.args},
                           unique_key=f"{self.key_prefix}{event_id}", priority=self.priority)


@dataclass(frozen=True)
class Job:
    """A claimed job. ``token`` is the claim's lease: completing it needs the same token."""

    id: int
    func: str
    args: dict[str, Any]
    unique_key: str | None
    priority: int
    attempts: int
    token: int


@dataclass(frozen=True)
class Failure:
    """One failed attempt of a job, as logged."""

    job_id: int
    func: str
    args: dict[str, Any]
    error: str
    attempt: int
    final: bool
    failed_at: int


def backoff_ceiling_us(attempt: int, base_us: int, cap_us: int) -> int:
    """The longest wait after the ``attempt``-th failure: base, 2·base, 4·base … up to cap."""
    return int(min(base_us * (2 ** max(attempt - 1, 0)), cap_us))


def backoff_us(attempt: int, base_us: int, cap_us: int,
               rand: Callable[[], float] = random.random) -> int:
    """The wait after the ``attempt``-th failure, with "full jitter": anywhere between 0 and
    :func:`backoff_ceiling_us`. Jobs that failed on one outage (an SMTP server, a receiver)
    then come back spread over the window rather than all at the same instants."""
    return int(rand() * backoff_ceiling_us(attempt, base_us, cap_us))
