"""The composition root: which store serves a URL, the services over it, the channels and the
job handler table.

The facade (:class:`tidings.engine.Tidings`) takes its parts from :func:`assemble`; the HTTP
API and the worker take theirs from the facade; the command line opens stores, migrates them
and rebuilds the hot store through this module. It is the only module outside ``store/`` that
imports a store adapter (import-linter checks it): everything else sees ports.

``memory://`` (any name after it) is a new :class:`tidings.store.memory.MemoryStore`; every
other URL a SQL database (SQLite, PostgreSQL, MariaDB/MySQL), with its inboxes, read state and
timelines in Redis when a hot store URL is set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tidings.channels import outbound_channels, webhook
from tidings.channels.registry import Channel
from tidings.clock import Clock
from tidings.config import Config
from tidings.domain.events import Limits
from tidings.domain.types import EventType, load_types_file
from tidings.fanout import maintenance
from tidings.fanout.plan import FanOut
from tidings.fanout.specs import FANOUT, FANOUT_CHUNK, RETENTION, TRIM, UNSNOOZE
from tidings.jobs.context import Handler, JobContext
from tidings.jobs.lanes import Lane
from tidings.jobs.worker import WORKER_BATCH
from tidings.observe import Observer
from tidings.ports import Store
from tidings.services import people
from tidings.services.catalog import Catalog
from tidings.services.graph import GraphService
from tidings.services.inbox import InboxService
from tidings.services.publishing import Publishing
from tidings.services.settings import PreferenceLimits, SettingsService
from tidings.services.timeline import TimelineService
from tidings.store.sql.core.timeouts import SqlTimeouts

MEMORY = "memory://"

# -- stores ---------------------------------------------------------------------------------


def open_store(url: str, clock: Clock, *, lease_seconds: float = 60.0, max_attempts: int = 8,
               backoff_seconds: float = 2.0, pool_size: int = 5,
               hot_url: str | None = None, sql_timeouts: SqlTimeouts | None = None) -> Store:
    """``memory://`` gives the in-memory store; every other URL a SQL database.

    ``hot_url`` (``redis://…`` or ``redis+cluster://…``) moves inboxes, read watermarks,
    unread counts and timelines of a SQL store to Redis, and live updates to its pub/sub.
    ``sql_timeouts`` bound every wait on a SQL database (default: :class:`SqlTimeouts`'s).
    """
    if url.startswith(MEMORY):
        from tidings.store.memory import MemoryStore

        return MemoryStore(clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                           backoff_seconds=backoff_seconds)
    # imported here: a memory store needs neither SQLAlchemy nor a driver
    from tidings.store.sql.store import SqlStore

    sql = SqlStore(url, clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                   backoff_seconds=backoff_seconds, pool_size=pool_size, timeouts=sql_timeouts)
    if not hot_url:
        return sql
    from tidings.store.hot import HotStore

    return HotStore(sql, hot_url)


def store_of(config: Config, clock: Clock, *, pool_size: int = 5) -> Store:
    """The store ``config`` names (``TIDINGS_DATABASE_URL``, ``TIDINGS_HOT_STORE_URL``), with
    its job queue's lease, attempts and back-off and its SQL timeouts."""
    return open_store(config.database_url, clock, lease_seconds=config.lease_seconds,
                      max_attempts=config.job_max_attempts,
                      backoff_seconds=config.job_backoff_seconds, pool_size=pool_size,
                      hot_url=config.hot_store_url, sql_timeouts=SqlTimeouts.of(config))


# -- schema and hot store (the command line) ------------------------------------------------


def migrate_schema(url: str) -> tuple[str | None, str | None]:
    """Create or upgrade the schema of the SQL database at ``url`` to this version; returns
    its revision before (None: empty) and after."""
    from tidings.store.sql.core.migrate import current_revision, upgrade

    before = current_revision(url)
    upgrade(url)
    return before, current_revision(url)


def migrate_if_embedded(url: str) -> None:
    """Migrate the database at ``url`` if it is SQLite (the embedded store migrates itself
    when a server starts on it); a server database is left to ``tidings migrate``."""
    from tidings.store.sql.core.database import Database

    if Database(url).backend == "sqlite":
        from tidings.store.sql.core.migrate import upgrade

        upgrade(url)


class HotRebuild(Protocol):
    """What ``tidings rebuild-hot-store`` asks of a hot store."""

    def rebuild(self) -> tuple[int, int]: ...  # (units replayed, baseline event id)

    def restore_markers(self) -> int: ...  # read watermarks copied from SQL


def hot_store(store: Store) -> HotRebuild | None:
    """``store`` as a Redis hot store to rebuild, or None if it has none."""
    from tidings.store.hot import HotStore

    return store if isinstance(store, HotStore) else None


# -- jobs -------------------------------------------------------------------------------------


def handlers(channels: Sequence[Channel]) -> dict[str, Handler]:
    """The job functions tidings runs, as data: fan-out, maintenance, a person's erasure,
    and every handler the channels bring."""
    fanout = FanOut(channels)
    table = {
        FANOUT: Handler(run=fanout.run_fanout, run_many=fanout.run_fanouts),
        FANOUT_CHUNK: Handler(run=fanout.run_chunk),
        TRIM: Handler(run=maintenance.run_trim),
        RETENTION: Handler(run=maintenance.run_retention),
        UNSNOOZE: Handler(run=maintenance.run_unsnooze),
        people.ERASE: people.erase_handler([c.on_retract for c in channels if c.on_retract]),
    }
    for channel in channels:
        table.update(channel.handlers)
    return table


def lanes(config: Config, concurrency: int, webhooks: int | None = None) -> list[Lane]:
    """A worker's lanes: ``concurrency`` threads for fan-out, mail and maintenance, and
    ``webhooks`` (default ``TIDINGS_WEBHOOK_CONCURRENCY``; 0: this worker leaves them to
    another) of their own for webhook deliveries, so a slow receiver can never hold up
    fan-out; at most ``TIDINGS_WEBHOOK_HOST_CONCURRENCY`` of them deliver to one host at once,
    so it cannot hold up other hosts' deliveries either."""
    apart = config.webhook_concurrency if webhooks is None else webhooks
    return Lane.apart(concurrency, "webhooks", (webhook.WEBHOOK,), apart, batch=WORKER_BATCH,
                      per_group=config.webhook_host_concurrency)


# -- one installation -------------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    """One installation's pieces over its store, as the facade holds them."""

    store: Store
    limits: Limits
    catalog: Catalog
    enabled_channels: list[str]
    observer: Observer
    publishing: Publishing
    graph: GraphService
    settings: SettingsService
    inbox: InboxService
    handlers: dict[str, Handler]
    job_context: JobContext
    timelines: TimelineService


def assemble(config: Config, clock: Clock, store: Store,
             types: Iterable[EventType] = ()) -> Parts:
    """The services over ``store``, the channels ``config`` enables, the job handler table
    and the context handlers run in; ``types`` join those of ``TIDINGS_TYPES_FILE``."""
    limits = Limits(config.max_payload_bytes, config.max_recipients)
    file_types = load_types_file(config.types_file) if config.types_file else []
    catalog = Catalog(store, clock, [*file_types, *types])
    channels = outbound_channels()
    observer = Observer()
    store.on_enqueue = lambda count: observer.observe("job_queued", count)
    graph = GraphService(store, catalog, clock, max_subscriptions=config.max_subscriptions)
    job_context = JobContext(config, clock, catalog, store, observer)
    timelines = TimelineService(job_context)
    graph.follow_hooks.append(timelines.on_follow)
    graph.unfollow_hooks.append(timelines.on_unfollow)
    return Parts(
        store=store, limits=limits, catalog=catalog,
        enabled_channels=["web", *(c.name for c in channels if c.enabled(config))],
        observer=observer,
        publishing=Publishing(store, catalog, clock, limits,
                              [c.on_retract for c in channels if c.on_retract]),
        graph=graph,
        settings=SettingsService(store, clock, webhook.url_check(config),
                                 limits=PreferenceLimits.of(config)),
        inbox=InboxService(store, catalog, clock, [c.on_delete for c in channels if c.on_delete],
                           link_origins=config.link_origins),
        handlers=handlers(channels), job_context=job_context, timelines=timelines)
