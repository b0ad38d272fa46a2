"""The facade: publish, subscribe, follow, mute, inbox, unread counts, read state, retract.

Everything an application, the HTTP API or the command line does goes through :class:`Tidings`.
It takes its store, services and job handlers from the composition root
(:mod:`tidings.wiring`) and hands each call to a service; nothing here knows which store runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Unpack

from tidings import wiring
from tidings.channels import email, push
from tidings.clock import Clock, SystemClock
from tidings.config import Config
from tidings.domain import flags
from tidings.domain.events import DEFAULT_SCOPE, Event
from tidings.domain.types import EventType, TypeRegistry
from tidings.domain.views import (
    BundleMember,
    Counters,
    Follow,
    Member,
    Notification,
    Page,
    Published,
    StoredEvent,
    Subscription,
    TimelineEntry,
    UnreadCount,
)
from tidings.exceptions import TidingsError
from tidings.jobs.context import Handler, PrivacyCheck
from tidings.jobs.worker import RUN_JOBS_BATCH, Worker
from tidings.observe import Listener
from tidings.ports import JobAdmin, Store
from tidings.services import people
from tidings.services.graph import named
from tidings.services.inbox import Narrowing
from tidings.services.publishing import Traces

__all__ = ["Follow", "Notification", "Page", "Published", "Tidings", "TimelineEntry",
           "UnreadCount"]


class Tidings:
    """One tidings installation: its store, event types, services and job handlers."""

    def __init__(self, config: Config | None = None, *, types: Iterable[EventType] = (),
                 clock: Clock | None = None, pool_size: int = 5,
                 store: Store | None = None) -> None:
        self.config = config or Config.from_env()
        self.clock: Clock = clock or SystemClock()
        parts = wiring.assemble(
            self.config, self.clock,
            store or wiring.store_of(self.config, self.clock, pool_size=pool_size), types)
        self.store: Store = parts.store
        self.limits = parts.limits
        self.catalog = parts.catalog
        self._enabled_channels = parts.enabled_channels
        self.observer = parts.observer
        self.publishing = parts.publishing
        self.graph = parts.graph
        self.settings = parts.settings
        self.inbox = parts.inbox
        self.handlers: dict[str, Handler] = parts.handlers
        self.job_context = parts.job_context
        self.timelines = parts.timelines
        self.push = push.Registrations(self.store, self.clock, self.config)

    @classmethod
    def open(cls, database_url: str, *, types: Iterable[EventType] = (),
             clock: Clock | None = None, migrate: bool = False, **settings: Any) -> Tidings:
        """Open a store by URL, ``settings`` over ``TIDINGS_*``; ``migrate=True`` migrates it."""
        tidings = cls(Config.from_env(database_url=database_url, **settings), types=types,
                      clock=clock)
        if migrate:
            tidings.migrate()
        tidings.load_types()
        return tidings

    # -- lifecycle ----------------------------------------------------------------------------

    def migrate(self) -> None:
        self.store.migrate()

    def check_schema(self) -> None:
        self.store.check_schema()

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the store and its job queue answer."""
        self.store.ping()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Tidings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def queue(self) -> JobAdmin:
        """The job queue's own operations (claim, stats, failures)."""
        return self.store.queue

    # -- observations (the API turns them into Prometheus metrics) ----------------------------

    @property
    def counters(self) -> Counters:
        return self.observer.counters

    @property
    def listeners(self) -> list[Listener]:
        return self.observer.listeners

    def observe(self, name: str, value: float) -> None:
        self.observer.observe(name, value)

    # -- event types --------------------------------------------------------------------------

    @property
    def types(self) -> TypeRegistry:
        return self.catalog.types

    def define_type(self, event_type: EventType) -> EventType:
        """Declare (or replace) an event type, stored so every process sees it."""
        return self.catalog.define(event_type)

    def load_types(self) -> None:
        """Read types declared through :meth:`define_type` (by any process) into the registry."""
        self.catalog.load()

    def get_type(self, name: str) -> EventType:
        return self.catalog.get(name)

    @property
    def enabled_channels(self) -> list[str]:
        """The channels this installation delivers over: the web inbox always, email with an
        SMTP server configured, webhooks with a signing secret."""
        return list(self._enabled_channels)

    # -- publish ------------------------------------------------------------------------------

    def validate_event(self, event: Event | Mapping[str, Any]) -> Event:
        """Check an event as publish would (type known, fields and limits), storing nothing."""
        return self.publishing.prepare(event)[0]

    def publish(self, event: Event | Mapping[str, Any], *,
                idempotency_scope: str = DEFAULT_SCOPE) -> Published:
        """Store the event and enqueue its fan-out in one transaction; durable on return.
        An ``idempotency_key`` is unique within ``idempotency_scope`` (1-64 characters): a
        repeat with the same body returns the first event, with another body it conflicts.
        Over HTTP every server key has a scope of its own."""
        return self.publishing.publish_many([event], scope=idempotency_scope)[0]

    def publish_many(self, batch: Sequence[Event | Mapping[str, Any]], *,
                     idempotency_scope: str = DEFAULT_SCOPE) -> list[Published]:
        """Publish several events in one transaction: all are accepted, or none (bad input)."""
        return self.publishing.publish_many(batch, scope=idempotency_scope)

    def publish_each(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                     traces: Traces = None) -> list[Published | TidingsError]:
        """(event, idempotency scope) items in one transaction, each answered on its own."""
        return self.publishing.publish_each(items, traces)

    def get_event(self, event_id: str | int) -> StoredEvent:
        return self.publishing.get_event(event_id)

    def retract(self, *, type: str | None = None, actor: str | None = None,
                object: str | None = None, event_id: str | int | None = None) -> int:
        """Remove matching notifications from every inbox; later fan-out skips the events."""
        return self.publishing.retract(type=type, actor=actor, object=object,
                                       event_id=event_id)

    # -- users, subscriptions, follows, mutes -------------------------------------------------

    def add_user(self, user: str, *, read_up_to: int | None = None) -> bool:
        """Register a user who starts as 'read up to now' (Gazelle); True if new."""
        return self.graph.add_user(user, read_up_to=read_up_to)

    def subscribe(self, user: str, type: str = "*", object: str = "*",
                  channels: Sequence[str] = ("web",), *,
                  expires_at: int | None = None) -> Subscription:
        """Subscribe ``user`` to events of ``type`` (or ``*``) on ``object`` (or ``*``)
        until ``expires_at`` (µs; None: for good); again: new channels and lifetime."""
        return self.graph.subscribe(user, type, object, channels, expires_at=expires_at)

    def unsubscribe(self, user: str, subscription_id: int | str) -> None:
        self.graph.unsubscribe(user, subscription_id)

    def subscriptions(self, user: str, *, limit: int = 20,
                      cursor: str | None = None) -> Page[Subscription]:
        return self.graph.subscriptions(user, limit=limit, cursor=cursor)

    def follow(self, user: str, other: str) -> bool:
        """``user`` follows ``other``; True if new."""
        return self.graph.follow(user, other)

    def unfollow(self, user: str, other: str) -> bool:
        return self.graph.unfollow(user, other)

    def following(self, user: str, *, limit: int = 20,
                  cursor: str | None = None) -> Page[Follow]:
        return self.graph.follows(user, followers=False, limit=limit, cursor=cursor)

    def followers(self, user: str, *, limit: int = 20,
                  cursor: str | None = None) -> Page[Follow]:
        return self.graph.follows(user, followers=True, limit=limit, cursor=cursor)

    def add_member(self, group: str, user: str) -> bool:
        """Put ``user`` in ``group``, for types with ``privacy = "group:NAME"``; True if new."""
        return self.graph.add_member(group, user)

    def remove_member(self, group: str, user: str) -> bool:
        """Take ``user`` out of ``group``; True if they were in it."""
        return self.graph.remove_member(group, user)

    def members(self, group: str, *, limit: int = 20,
                cursor: str | None = None) -> Page[Member]:
        """A group's members by user id, paged by cursor."""
        return self.graph.members(group, limit=limit, cursor=cursor)

    def privacy_rule(self, name: str, check: PrivacyCheck) -> None:
        """Register the callable a type names with ``privacy = "rule:NAME"``: given the event
        and a batch of its audience, it returns those allowed to hear of it. Fan-out in a
        process without it fails (and retries) rather than deliver unchecked."""
        self.job_context.privacy_rules[named(name, "privacy rule name", "name")] = check

    def mute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        self.graph.mute(user, actor=actor, object=object)

    def unmute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        self.graph.unmute(user, actor=actor, object=object)

    def muted(self, user: str) -> dict[str, list[str]]:
        return self.graph.muted(user)

    # -- preferences and mail -------------------------------------------------------------------

    def get_preferences(self, user: str) -> dict[str, Any]:
        """Stored preferences (email, channels per category, locale) plus the mutes."""
        return self.settings.get_preferences(user)

    def set_preferences(self, user: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Replace a user's preferences; ``muted`` replaces their mutes."""
        return self.settings.set_preferences(user, data)

    def report_bounce(self, address: str, reason: str = "hard bounce") -> None:
        """A hard bounce: no more mail to this address (web delivery goes on)."""
        self.settings.report_bounce(address, reason)

    def clear_bounce(self, address: str) -> bool:
        return self.settings.clear_bounce(address)

    def unsubscribe_email(self, user: str) -> None:
        """One-click unsubscribe: email frequency becomes 'never'."""
        self.settings.unsubscribe_email(user)

    def unsubscribe_link(self, token: str, *, apply: bool = False,
                         undo: bool = False) -> email.Unsubscribe:
        """What an unsubscribe link turns off (``apply``: do it; ``undo``: on again)."""
        return email.follow_link(self.config, self.settings.get_preferences,
                                 self.settings.change_preferences, self.get_event, token,
                                 apply=apply, undo=undo)

    # -- inbox and timeline -----------------------------------------------------------------

    def notifications(self, user: str, *, unread: bool | None = None, limit: int = 20,
                      cursor: str | None = None, locale: str | None = None,
                      state: str = "inbox", **narrow: Unpack[Narrowing]
                      ) -> Page[Notification]:
        """A user's inbox, newest first, one item per display group, paged by cursor.

        Titles are rendered in ``locale`` (falling back to English). ``state``: ``inbox``
        (neither archived nor snoozed; the default), ``archived``, ``saved`` or ``snoozed``.
        ``types``, ``category``, ``section``, ``actor``, ``object``, ``max_id`` (event id
        below), ``since_id`` (event id above) and ``payload`` (``{field: value}`` on fields a
        type marks ``queryable``) narrow it (:class:`~tidings.services.inbox.Narrowing`).
        """
        return self.inbox.notifications(user, unread=unread, limit=limit, cursor=cursor,
                                        locale=locale, state=state, **narrow)

    def bundle_members(self, user: str, notification_id: str | int, *, limit: int = 20,
                cursor: str | None = None, locale: str | None = None) -> Page[BundleMember]:
        """The members of the item's display group (a bundle opened: who, when, each one's
        title in the singular and read state), newest first, paged by cursor. Any member's
        id opens its group; NotFound unless the user holds that notification."""
        return self.inbox.members(user, notification_id, limit=limit, cursor=cursor,
                                  locale=locale)

    def export_user(self, user: str) -> Iterator[dict[str, Any]]:
        """Everything kept about ``user`` (their notifications, watermarks, subscriptions,
        follows both ways, mutes, preferences, pending mail, bounce state, push endpoints and
        the events they authored), one record at a time: what ``GET /v1/users/{user}/export``
        and ``tidings user export`` stream as JSON Lines (:mod:`tidings.services.people`)."""
        return people.export(self.store, self.inbox, user)

    def erase_user(self, user: str) -> str:
        """Queue the erasure of everything kept about ``user`` (GDPR Art. 17): the job
        retracts the events they authored from every inbox and timeline and removes or
        rewrites every record that names them (:func:`tidings.services.people.erase`).
        Returns the job's key (``erase:USER``); erasing again, or a user never seen, is
        harmless. What ``DELETE /v1/users/{user}`` does."""
        spec = people.erase_spec(user)
        self.store.transact(lambda tx: tx.jobs.enqueue_many([spec]))
        return str(spec.unique_key)

    def erase_user_now(self, user: str) -> dict[str, int]:
        """The erasure :meth:`erase_user` queues, done in this process in one unit (a
        queued erasure of theirs goes with the rest); returns how many records went or
        changed, by kind. What ``tidings user erase`` does."""
        now = self.clock.now_us()
        hooks = self.publishing.retract_hooks
        people.erase_spec(user)  # the same check of the id, before any unit
        return self.store.transact(lambda tx: people.erase(tx, user, now, hooks))

    def unread_count(self, user: str, **narrow: Unpack[Narrowing]) -> UnreadCount:
        """Unread display groups, capped at 100 and shown as '99+'; narrowed as
        :meth:`notifications` is."""
        return self.inbox.unread_count(user, **narrow)

    def unseen_count(self, user: str, **narrow: Unpack[Narrowing]) -> UnreadCount:
        """Unread display groups not yet seen (newer than :meth:`mark_seen`'s watermark),
        capped like :meth:`unread_count`: what a badge counts until the inbox is opened."""
        return self.inbox.unseen_count(user, **narrow)

    def timeline(self, user: str, *, limit: int = 20, cursor: str | None = None,
                 max_id: str | int | None = None, since_id: str | int | None = None
                 ) -> Page[TimelineEntry]:
        """Events of the users ``user`` follows, newest first by their time then id (as the
        inbox), whichever timeline model wrote them (``docs/timelines.md``).

        ``max_id`` / ``since_id`` (event ids): only events below / above that event in this
        order. The opaque ``cursor`` of a previous page pages older; given with ``max_id``,
        both apply (the lower bound of the two wins). ``next_cursor`` pages older.
        """
        return self.timelines.timeline(user, limit=limit, cursor=cursor, max_id=max_id,
                                       since_id=since_id)

    def set_timeline_model(self, actor: str, model: str | None) -> None:
        """Override how ``actor``'s posts reach timelines: ``"push"``, ``"pull"``, or None
        for the deployment's ``timeline_model`` (``docs/timelines.md``)."""
        self.timelines.set_model(actor, model)

    def unread_counts(self, user: str, **narrow: Unpack[Narrowing]
                      ) -> tuple[UnreadCount, UnreadCount]:
        """:meth:`unread_count` and :meth:`unseen_count` together, read at once (one statement
        on SQL): what a badge polls."""
        return self.inbox.unread_counts(user, **narrow)

    def mark_read(self, user: str, ids: Sequence[str | int]) -> int:
        """Mark these notifications (and every member of their bundles) read."""
        return self.inbox.mark_ids(user, ids, read=True)

    def mark_unread(self, user: str, ids: Sequence[str | int]) -> int:
        return self.inbox.mark_ids(user, ids, read=False)

    def archive(self, user: str, ids: Sequence[str | int]) -> int:
        """Archive ("done") these notifications' display groups: out of the inbox and its
        unread count, listed under ``state="archived"``; a new member of a group brings it
        back. Returns how many groups changed; NotFound, changing nothing, unless the user
        holds every id."""
        return self.inbox.triage(user, ids, on=flags.ARCHIVED)

    def unarchive(self, user: str, ids: Sequence[str | int]) -> int:
        """Back in the inbox (:meth:`archive` undone)."""
        return self.inbox.triage(user, ids, off=flags.ARCHIVED)

    def save(self, user: str, ids: Sequence[str | int]) -> int:
        """Save these notifications' display groups: they stay in the inbox, list under
        ``state="saved"`` too, and neither retention nor the inbox cap removes them while
        unsaved ones are left to go."""
        return self.inbox.triage(user, ids, on=flags.SAVED)

    def unsave(self, user: str, ids: Sequence[str | int]) -> int:
        return self.inbox.triage(user, ids, off=flags.SAVED)

    def snooze(self, user: str, ids: Sequence[str | int], until: int) -> int:
        """Snooze these notifications' display groups until ``until`` (µs since the epoch, a
        time to come): out of the inbox and its unread count, listed under
        ``state="snoozed"``; then back in the inbox, unread, by a job that runs at
        ``until`` (and tells the user's live streams)."""
        return self.inbox.triage(user, ids, on=flags.SNOOZED, until=until)

    def unsnooze(self, user: str, ids: Sequence[str | int]) -> int:
        """Back in the inbox at once (:meth:`snooze` undone; its job then does nothing)."""
        return self.inbox.triage(user, ids, off=flags.SNOOZED)

    def mark_read_matching(self, user: str, *, actor: str | None = None,
                           type: str | None = None, object: str | None = None) -> int:
        """Jiepang's 'mark read by (from user, type, post)'."""
        return self.inbox.mark_read_matching(user, actor=actor, type=type, object=object)

    def delete_notifications(self, user: str, *, actor: str | None = None,
                             type: str | None = None, object: str | None = None) -> int:
        """Jiepang's 'delete by (to user, from user, type, post)' for one recipient;
        :meth:`retract` does it for every recipient. Returns how many went."""
        return self.inbox.delete_matching(user, actor=actor, type=type, object=object)

    def mark_all_read(self, user: str, *, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None) -> int:
        """Move a watermark; returns how many unread items it covered (capped at 100)."""
        return self.inbox.mark_all_read(user, types=types, category=category, section=section)

    def mark_read_up_to(self, user: str, notification_id: str | int) -> int:
        """Gazelle's read-up-to-id: everything at or below this notification's place in the
        inbox becomes read (one watermark row); returns how many unread items it covered."""
        return self.inbox.mark_read_up_to(user, notification_id)

    def delete_notification(self, user: str, notification_id: str | int) -> None:
        """Remove one recipient's notification; everyone else keeps theirs."""
        self.inbox.delete_notification(user, notification_id)

    def mark_seen(self, user: str, until: int | None = None) -> None:
        """Move the seen watermark (badge seen, not read)."""
        self.inbox.mark_seen(user, until)

    def watch(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from any thread) when ``user``'s inbox or counts may have
        changed — new notifications, marks on any device; returns the function that stops
        it. Across processes where the store can tell (PostgreSQL LISTEN/NOTIFY, Redis)."""
        return self.inbox.watch(user, callback)

    @property
    def watch_reaches_other_processes(self) -> bool:
        """Whether :meth:`watch` hears of changes made by other processes too."""
        return self.inbox.watch_reaches_other_processes

    # -- jobs ---------------------------------------------------------------------------------

    def worker(self, *, concurrency: int = 1, poll_seconds: float = 0.2,
               webhook_concurrency: int | None = None) -> Worker:
        """A job worker: ``concurrency`` threads for fan-out, mail and maintenance, and
        webhooks' own lanes (:func:`tidings.wiring.lanes`)."""
        lanes = wiring.lanes(self.config, concurrency, webhook_concurrency)
        return Worker(self.job_context, self.handlers, lanes=lanes, poll_seconds=poll_seconds,
                      maintenance=self.publishing.schedule_maintenance)

    def run_jobs(self, max_jobs: int | None = None) -> int:
        """Run every runnable job in this process (the embedded mode and tests)."""
        return Worker(self.job_context, self.handlers, batch=RUN_JOBS_BATCH).drain(max_jobs)

    def redeliver_retained(self, *, upto: int | None = None) -> int:
        """Queue the fan-out of every retained event (up to the id ``upto``) again, dated at
        its creation (inboxes and timelines only): ``tidings rebuild-hot-store`` for the
        events from before the hot store's journal."""
        return self.publishing.redeliver_retained(upto=upto)

    def schedule_maintenance(self) -> None:
        self.publishing.schedule_maintenance()
