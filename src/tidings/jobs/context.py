"""What a job handler receives: the settings, the clock, the catalog and the store's ports.

Handlers come in two shapes (:class:`Handler`):

- ``run(ctx, tx, job)``: the whole job in one unit of work, committed together with the job's
  completion (or its ``replace_with``). Fan-out and maintenance are of this kind.
  Such a handler may also have ``run_many(ctx, tx, jobs)``: several claimed jobs of its
  function in one unit, returning each job's replacements in the order of ``jobs``, with
  the outcome of running them one by one; the worker completes them together, and runs
  each on its own if the unit fails (fan-out is of this kind). A job it leaves for a later
  unit (:data:`DEFERRED`, the unit's work being large enough) goes back to the queue once
  the unit has committed, its attempt not spent.
- ``prepare`` → ``send`` → ``finish``: for network I/O (mail, webhooks). ``prepare`` reads in a
  unit of its own, ``send`` talks to the network outside any unit (a slow receiver holds no
  database lock), and ``finish`` records the outcome and completes the job in one unit. The
  worker checks the lease before ``send``, so within one lease a job sends at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tidings.clock import Clock
from tidings.config import Config
from tidings.domain.views import StoredEvent
from tidings.jobs.model import Job, JobSpec
from tidings.observe import Observer
from tidings.ports import Store, Tx

if TYPE_CHECKING:
    from tidings.services.catalog import Catalog

Replacements = list[JobSpec] | None


class Deferred:
    """``run_many``'s answer for a job it did not run: left for a later unit."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFERRED"


DEFERRED = Deferred()
# A privacy rule registered in this process (``rule:NAME``): the users of a batch allowed to
# hear of the event.
PrivacyCheck = Callable[[StoredEvent, Sequence[str]], Iterable[str]]


@dataclass
class JobContext:
    """The small world a handler sees (never the whole engine)."""

    config: Config
    clock: Clock
    catalog: Catalog
    store: Store
    observer: Observer
    privacy_rules: dict[str, PrivacyCheck] = field(default_factory=dict)


@dataclass(frozen=True)
class Handler:
    """One job function: either ``run``, or ``prepare`` + ``send`` + ``finish``."""

    run: Callable[[JobContext, Tx, Job], Replacements] | None = None
    run_many: Callable[[JobContext, Tx, Sequence[Job]],
                       list[Replacements | Deferred]] | None = None
    prepare: Callable[[JobContext, Tx, Job], Any] | None = None
    send: Callable[[JobContext, Any], Any] | None = None
    finish: Callable[[JobContext, Tx, Job, Any, Any], Replacements] | None = None

    def __post_init__(self) -> None:
        steps = (self.prepare, self.send, self.finish)
        valid = (all(step is None for step in steps) if self.run is not None
                 else all(step is not None for step in steps))
        if not valid:
            raise ValueError("a handler has run, or all of prepare, send and finish")
        if self.run_many is not None and self.run is None:
            raise ValueError("a handler with run_many has run too (each job on its own)")
