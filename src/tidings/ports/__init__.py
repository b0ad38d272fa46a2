"""The ports: what the services need of a store, as small Protocols of primitives.

A store (``tidings.store.sql``, ``tidings.store.memory``, ``tidings.store.hot`` with Redis for
the hot parts) hands out a :class:`Tx` — one unit of work whose ports all see the same state —
through :meth:`Store.transact` (may write) and :meth:`Store.read` (reads only). Every rule
lives in the services and the domain; a port method does one storage step and decides nothing.
A composite (``InboxStore.deliver_many``: the domain's bundling rule over the inbox
primitives) is written once over the primitives (``tidings.store.stepwise``); a store
overrides it only where it has a native way to run the same rule (Redis: one Lua script).

Delivery promises, which every implementation keeps and ``tests/contract`` checks:

- **Atomic units.** On a store that has transactions (SQL, memory) everything done through one
  ``Tx`` commits together or not at all, jobs included. A store that cannot join that
  transaction (Redis for inboxes and timelines, ``docs/redis.md``) must make each write
  **idempotent** instead, so that a job retried after a crash writes nothing twice; it holds
  its writes until the unit's work has returned and sends them just before the commit, so a
  unit that fails writes nothing there either.
- **Idempotent writes.** ``InboxStore.insert`` skips a (user, event) already stored;
  ``TimelineStore.push`` skips a (user, event) already there; ``JobQueue.enqueue_many`` skips a
  ``unique_key`` already queued; ``MailStore.add_batch`` skips a (user, event) already
  waiting.
- **At-least-once jobs.** A claimed job is leased until ``token``; completing it inside the unit
  that did its work removes it only if the lease is still the claimant's (else the whole unit is
  rolled back by the caller). A worker that dies leaves the lease to expire and the job runs
  again: handlers must be safe to repeat.
- **One decider per bundle.** ``InboxStore.bundle_bases`` (and ``bundle_bases_many``)
  serialises the units that decide for the same (user, bundle hash): the second waits for the
  first to end and then sees its rows, so concurrent fan-outs of one bundle make one display
  group, as a single one would.
- **Watermarks only move forward.** ``InboxStore.set_marker`` never moves a mark back, nor
  ``InboxStore.set_position`` a read-up-to place.
- **The inbox cap: at least the newest N, about N plus a margin.** Fan-out trims, in the unit
  that wrote, the inboxes about one delivery in a margin checks
  (:mod:`tidings.domain.inboxcap`: a hash of (user, event id), so a retried unit decides the
  same) back to their newest ``inbox_cap`` by time; nothing newer than a kept notification
  is ever removed. A batch of fan-outs ends as its jobs one by one (``InboxStore.over_cap``
  tells where a trim could come between two of a user's deliveries).
- **Reads never scan.** ``InboxStore.page`` and ``unread_count`` read base rows through an
  index; ``unread_count`` stops at :data:`tidings.domain.bundling.UNREAD_CAP`.

Each port is cut by concept, a dozen methods at most: the inbox is :class:`ReadMarkers`,
:class:`InboxWrites`, :class:`InboxReads`, :class:`InboxUpkeep` and :class:`Reachability`
(``InboxStore`` is the five together, as a unit of work hands them out); the graph is
:class:`Users`, :class:`Subscriptions`, :class:`Follows`, :class:`Audiences`, :class:`Groups`
and :class:`Mutes` (``GraphStore``). What a hot store asks of its store of records beyond
these is :mod:`tidings.ports.hot`.

Sync by decision (``docs/architecture.md``, "Sync ports").
"""

from tidings.ports.erasure import Erasure
from tidings.ports.feeds import (
    InboxReads,
    InboxStore,
    InboxUpkeep,
    InboxWrites,
    Reachability,
    ReadMarkers,
    TimelineStore,
)
from tidings.ports.jobs import JobAdmin, JobQueue
from tidings.ports.push import PushStore
from tidings.ports.records import (
    Audiences,
    EventStore,
    Follows,
    GraphStore,
    Groups,
    MailStore,
    Mutes,
    SettingsStore,
    Subscriptions,
    Users,
)
from tidings.ports.units import AsyncStore, Notifier, Publication, Store, Tx

__all__ = [
    "AsyncStore",
    "Audiences",
    "Erasure",
    "EventStore",
    "Follows",
    "GraphStore",
    "Groups",
    "InboxReads",
    "InboxStore",
    "InboxUpkeep",
    "InboxWrites",
    "JobAdmin",
    "JobQueue",
    "MailStore",
    "Mutes",
    "Notifier",
    "Publication",
    "PushStore",
    "Reachability",
    "ReadMarkers",
    "SettingsStore",
    "Store",
    "Subscriptions",
    "TimelineStore",
    "Tx",
    "Users",
]
