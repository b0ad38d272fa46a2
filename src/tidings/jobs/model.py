"""Jobs as data (TheSchwartz's model): what to run, claimed runs, recorded failures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SECOND = 1_000_000


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue. A ``unique_key`` already queued makes the enqueue a no-op."""

    func: str
    args: Mapping[str, Any] = field(default_factory=dict)
    unique_key: str | None = None
    priority: int = 5
    run_after: int | None = None


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


def backoff_us(attempt: int, base_us: int, cap_us: int) -> int:
    """Exponential backoff after the ``attempt``-th failure: base, 2·base, 4·base … up to cap."""
    return int(min(base_us * (2 ** max(attempt - 1, 0)), cap_us))
