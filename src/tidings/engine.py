"""The facade: publish, subscribe, follow, mute, inbox, unread counts, read state, retract.

Everything an application, the HTTP API or the command line does goes through :class:`Tidings`.
It owns the store and the queue and receives its configuration; nothing here knows whether
it runs on SQLite, PostgreSQL or MariaDB.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy import exc as sa_exc

from tidings import fanout, retention
from tidings.channels import email, webhook
from tidings.clock import Clock, SystemClock, to_rfc3339
from tidings.config import Config
from tidings.domain.bundling import OTHERS_CAP, count_display
from tidings.domain.cursor import decode_cursor, encode_cursor
from tidings.domain.events import Event, Limits, check_object, check_user_id, validate_event
from tidings.domain.readstate import scope_name
from tidings.domain.rendering import RenderContext, render_all
from tidings.domain.types import EventType, Templates, TypeRegistry, load_types_file
from tidings.exceptions import IdempotencyConflict, InvalidCursor, InvalidInput, NotFound
from tidings.i18n import normalise_locale
from tidings.jobs.queue import JobQueue, JobSpec
from tidings.jobs.worker import Handler, Worker
from tidings.store.sql import events as event_store
from tidings.store.sql import graph, inbox
from tidings.store.sql.database import Database
from tidings.store.sql.schema import (
    email_bounces,
    event_types,
    follows,
    mutes,
    preferences,
    subscriptions,
)

MAX_LIMIT = 100


@dataclass(frozen=True)
class Published:
    """What publish returns: the event's id and whether this call created it."""

    id: str
    created: bool
    status: str = "accepted"


@dataclass(frozen=True)
class Notification:
    """One listed inbox item: a single notification or a bundle shown by its newest member."""

    id: str
    type: str
    category: str
    section: str
    object: str | None
    actor: str | None
    actors: list[str]
    count: int
    others: int
    title: str
    body: str | None
    link: str | None
    html: str
    created_at: str
    read: bool
    seen: bool
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Page:
    items: list[Any]
    next_cursor: str | None


@dataclass(frozen=True)
class UnreadCount:
    count: int
    display: str


@dataclass(frozen=True)
class Follow:
    user: str
    created_at: int


@dataclass
class _Counters:
    delivered: int = 0
    jobs: dict[str, int] = field(default_factory=dict)


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return limit


def _event_ids(ids: Iterable[str | int]) -> list[int]:
    result = []
    for value in ids:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"ids: {value!r} is not a valid notification id",
                               field="ids") from None
        if number <= 0 or number >= 2**63:
            raise InvalidInput(f"ids: {value!r} is not a valid notification id", field="ids")
        result.append(number)
    return result


class Tidings:
    """One tidings installation: its store, queue, event types and job handlers."""

    def __init__(self, config: Config | None = None, *, types: Iterable[EventType] = (),
                 clock: Clock | None = None, pool_size: int = 5) -> None:
        self.config = config or Config.from_env()
        self.clock: Clock = clock or SystemClock()
        self.db = Database(self.config.database_url, pool_size=pool_size)
        self.limits = Limits(self.config.max_payload_bytes, self.config.max_recipients)
        self.types = TypeRegistry()
        self._file_types: list[EventType] = []
        if self.config.types_file:
            self._file_types = load_types_file(self.config.types_file)
        for event_type in [*self._file_types, *types]:
            self.types.add(event_type)
        self.queue = JobQueue(self.db, self.clock, lease_seconds=self.config.lease_seconds,
                              max_attempts=self.config.job_max_attempts,
                              backoff_seconds=self.config.job_backoff_seconds)
        self.handlers: dict[str, Handler] = {
            fanout.FANOUT: fanout.run_fanout,
            fanout.FANOUT_CHUNK: fanout.run_fanout_chunk,
            fanout.TRIM: fanout.run_trim,
            retention.RETENTION: retention.run_retention,
            email.SEND: email.run_send,
            email.BUNDLE: email.run_bundle,
            email.DIGEST: email.run_digest,
            webhook.WEBHOOK: webhook.run,
        }
        self.counters = _Counters()
        self.queue.on_enqueue = lambda count: self.observe("job_queued", count)
        # observers of (metric name, value): the API turns them into Prometheus metrics
        self.listeners: list[Callable[[str, float], None]] = []

    @classmethod
    def open(cls, database_url: str, *, types: Iterable[EventType] = (),
             clock: Clock | None = None, migrate: bool = False, **settings: Any) -> Tidings:
        """Open a store by URL; ``migrate=True`` brings its schema up to date first."""
        config = Config(database_url=database_url, **settings)
        tidings = cls(config, types=types, clock=clock)
        if migrate:
            tidings.migrate()
        tidings.load_types()
        return tidings

    # -- lifecycle ----------------------------------------------------------------------------

    def migrate(self) -> None:
        from tidings.store.sql.migrate import upgrade

        upgrade(self.config.database_url)

    def check_schema(self) -> None:
        from tidings.store.sql.migrate import check_schema_current

        check_schema_current(self.db)

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the store and its job queue answer."""
        self.db.ping()
        self.queue.next_run_after()

    def user_of_unsubscribe_token(self, token: str) -> str | None:
        """The user an unsubscribe link was made for, or None if the link is not valid."""
        try:
            return email.check_unsubscribe_token(email.signing_secret(self), token)
        except RuntimeError:
            return None

    def close(self) -> None:
        self.db.dispose()

    def __enter__(self) -> Tidings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metrics hooks (the API layer replaces these with Prometheus counters) ----------------

    def observe(self, name: str, value: float) -> None:
        for listener in self.listeners:
            listener(name, value)

    def metrics_delivered(self, count: int) -> None:
        self.counters.delivered += count
        self.observe("delivered", count)

    def metrics_job(self, outcome: str) -> None:
        self.counters.jobs[outcome] = self.counters.jobs.get(outcome, 0) + 1
        self.observe(f"job_{outcome}", 1)

    # -- event types --------------------------------------------------------------------------

    def define_type(self, event_type: EventType) -> EventType:
        """Declare (or replace) an event type, stored so every process sees it."""
        now = self.clock.now_us()
        definition = json.dumps(event_type.to_dict())

        def work(conn: Connection) -> None:
            conn.execute(self.db.upsert(
                event_types, ["name"],
                {"name": event_type.name, "definition": definition, "updated_at": now},
                ["definition", "updated_at"]))

        self.db.transact(work)
        self.types.add(event_type)
        return event_type

    def load_types(self) -> None:
        """Read types declared through :meth:`define_type` (by any process) into the registry."""
        with self.db.read() as conn:
            rows = conn.execute(select(event_types.c.name, event_types.c.definition)).all()
        for row in rows:
            data = json.loads(row.definition)
            data.pop("name", None)
            self.types.add(EventType.from_dict(row.name, data))

    def get_type(self, name: str) -> EventType:
        if name not in self.types:
            self.load_types()
        return self.types.get(name)

    # -- publish ------------------------------------------------------------------------------

    def _coerce(self, event: Event | Mapping[str, Any]) -> Event:
        if isinstance(event, Event):
            return event
        if not isinstance(event, Mapping):
            raise InvalidInput("an event must be an object", field="event")
        known = set(Event.__dataclass_fields__)
        for key in event:
            if key not in known:
                raise InvalidInput(f"unknown event field {key!r}", field=str(key))
        if "type" not in event or not isinstance(event["type"], str):
            raise InvalidInput("type is required and must be a string", field="type")
        data = dict(event)
        for key in ("recipients", "exclude"):
            if key in data and data[key] is None:
                data[key] = ()
        if data.get("payload") is None:
            data["payload"] = {}
        return Event(**data)

    def _prepare(self, event: Event | Mapping[str, Any]) -> tuple[Event, str, EventType]:
        event = self._coerce(event)
        event_type = self.get_type(event.type)
        payload_json = validate_event(event, self.limits)
        return event, payload_json, event_type

    def validate_event(self, event: Event | Mapping[str, Any]) -> Event:
        """Check an event as publish would (type known, fields and limits), storing nothing."""
        return self._prepare(event)[0]

    def publish(self, event: Event | Mapping[str, Any]) -> Published:
        """Store the event and enqueue its fan-out in one transaction; durable on return."""
        return self.publish_many([event])[0]

    def publish_many(self, batch: Sequence[Event | Mapping[str, Any]]) -> list[Published]:
        """Publish several events in one transaction: all are accepted, or none (bad input)."""
        prepared = [self._prepare(event) for event in batch]
        keys = [e.idempotency_key for e, _, _ in prepared if e.idempotency_key is not None]
        if len(keys) != len(set(keys)):
            raise InvalidInput("the batch repeats an idempotency_key", field="idempotency_key")

        def work(conn: Connection) -> list[Published]:
            now = self.clock.now_us()
            results: list[Published] = []
            jobs: list[JobSpec] = []
            for event, payload_json, event_type in prepared:
                if event.idempotency_key is not None:
                    first = event_store.get_by_key(conn, event.idempotency_key)
                    if first is not None:
                        if first.body_hash != event.body_hash():
                            raise IdempotencyConflict(
                                f"idempotency_key {event.idempotency_key!r} was used before "
                                "with a different event body")
                        results.append(Published(str(first.id), created=False))
                        continue
                event_id = event_store.insert_event(conn, event, payload_json, now)
                jobs.append(fanout.fanout_spec(event_id, event_type.priority, event.created_at))
                results.append(Published(str(event_id), created=True))
            self.queue.enqueue_many(conn, jobs)
            return results

        try:
            return self.db.transact(work)
        except sa_exc.IntegrityError:
            # A concurrent publish with the same key won the race: now it is visible.
            return self.db.transact(work)

    def get_event(self, event_id: str | int) -> event_store.StoredEvent:
        (number,) = _event_ids([event_id])
        with self.db.read() as conn:
            found = event_store.get_event(conn, number)
        if found is None:
            raise NotFound(f"event {event_id} does not exist")
        return found

    # -- users, subscriptions, follows, mutes -------------------------------------------------

    def add_user(self, user: str, *, read_up_to: int | None = None) -> bool:
        """Register a user who starts as 'read up to now' (Gazelle); True if new."""
        check_user_id(user)
        now = self.clock.now_us()

        def work(conn: Connection) -> bool:
            if not graph.add_user(self.db, conn, user, now):
                return False
            inbox.set_marker(self.db, conn, user, "all", now if read_up_to is None else read_up_to)
            return True

        return self.db.transact(work)

    def subscribe(self, user: str, type: str = "*", object: str = "*",
                  channels: Sequence[str] = ("web",)) -> graph.Subscription:
        """Subscribe ``user`` to events of ``type`` (or ``*``) on ``object`` (or ``*``)."""
        check_user_id(user)
        if type != "*":
            self.get_type(type)
        if object != "*":
            check_object(object)
        if isinstance(channels, str) or not channels:
            raise InvalidInput("channels must be a non-empty list", field="channels")
        for channel in channels:
            if channel not in ("web", "email", "webhook"):
                raise InvalidInput(f"channels: unknown channel {channel!r}", field="channels")
        now = self.clock.now_us()
        joined = ",".join(sorted(set(channels)))

        def work(conn: Connection) -> graph.Subscription:
            self._touch_user(conn, user, now)
            conn.execute(self.db.upsert(
                subscriptions, ["user_id", "type", "object"],
                {"user_id": user, "type": type, "object": object, "channels": joined,
                 "created_at": now}, ["channels"]))
            row = conn.execute(select(subscriptions).where(
                subscriptions.c.user_id == user, subscriptions.c.type == type,
                subscriptions.c.object == object)).one()
            return graph.subscription_from_row(row)

        return self.db.transact(work)

    def _touch_user(self, conn: Connection, user: str, now: int) -> None:
        if graph.add_user(self.db, conn, user, now):
            inbox.set_marker(self.db, conn, user, "all", now)

    def unsubscribe(self, user: str, subscription_id: int | str) -> None:
        check_user_id(user)
        (number,) = _event_ids([subscription_id])

        def work(conn: Connection) -> int:
            return conn.execute(delete(subscriptions).where(
                subscriptions.c.id == number, subscriptions.c.user_id == user)).rowcount

        if self.db.transact(work) == 0:
            raise NotFound(f"subscription {subscription_id} of {user} does not exist")

    def subscriptions(self, user: str, *, limit: int = 20, cursor: str | None = None) -> Page:
        check_user_id(user)
        limit = _limit(limit)
        after = decode_cursor(cursor)[1] if cursor else 0
        with self.db.read() as conn:
            rows = conn.execute(
                select(subscriptions)
                .where(subscriptions.c.user_id == user, subscriptions.c.id > after)
                .order_by(subscriptions.c.id).limit(limit + 1)).all()
        items = [graph.subscription_from_row(r) for r in rows[:limit]]
        more = len(rows) > limit
        return Page(items, encode_cursor(0, items[-1].id) if more else None)

    def follow(self, user: str, other: str) -> bool:
        """``user`` follows ``other``; True if new."""
        check_user_id(user)
        check_user_id(other, "other")
        if user == other:
            raise InvalidInput("other: a user cannot follow themselves", field="other")
        now = self.clock.now_us()

        def work(conn: Connection) -> bool:
            self._touch_user(conn, user, now)
            result = conn.execute(self.db.insert_ignore(follows).values(
                follower=user, followee=other, created_at=now))
            return bool(result.rowcount == 1)

        return self.db.transact(work)

    def unfollow(self, user: str, other: str) -> bool:
        check_user_id(user)
        check_user_id(other, "other")

        def work(conn: Connection) -> int:
            return conn.execute(delete(follows).where(
                follows.c.follower == user, follows.c.followee == other)).rowcount

        return self.db.transact(work) > 0

    def _follow_page(self, user: str, mine: str, theirs: str, limit: int,
                     cursor: str | None) -> Page:
        check_user_id(user)
        limit = _limit(limit)
        after: object = ""
        if cursor:
            try:
                after = json.loads(_b64decode(cursor))["after"]
            except (ValueError, KeyError, TypeError):
                after = None
            if not isinstance(after, str):  # a number here would be a SQL type error
                raise InvalidCursor("cursor is not one this server made", field="cursor")
        with self.db.read() as conn:
            rows = conn.execute(
                select(follows.c[theirs], follows.c.created_at)
                .where(follows.c[mine] == user, follows.c[theirs] > after)
                .order_by(follows.c[theirs]).limit(limit + 1)).all()
        items = [Follow(r[0], r[1]) for r in rows[:limit]]
        more = len(rows) > limit
        return Page(items, _b64encode(json.dumps({"after": items[-1].user})) if more else None)

    def following(self, user: str, *, limit: int = 20, cursor: str | None = None) -> Page:
        return self._follow_page(user, "follower", "followee", limit, cursor)

    def followers(self, user: str, *, limit: int = 20, cursor: str | None = None) -> Page:
        return self._follow_page(user, "followee", "follower", limit, cursor)

    def mute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        check_user_id(user)
        rows = self._mute_rows(user, actor, object)

        def work(conn: Connection) -> None:
            for row in rows:
                conn.execute(self.db.insert_ignore(mutes).values(**row))

        self.db.transact(work)

    def unmute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        check_user_id(user)
        rows = self._mute_rows(user, actor, object)

        def work(conn: Connection) -> None:
            for row in rows:
                graph.delete_mute(conn, user, row["kind"], row["value"])

        self.db.transact(work)

    def muted(self, user: str) -> dict[str, list[str]]:
        check_user_id(user)
        with self.db.read() as conn:
            rows = conn.execute(select(mutes.c.kind, mutes.c.value)
                                .where(mutes.c.user_id == user)
                                .order_by(mutes.c.kind, mutes.c.value)).all()
        result: dict[str, list[str]] = {"actors": [], "objects": []}
        for row in rows:
            result["actors" if row.kind == "actor" else "objects"].append(row.value)
        return result

    @staticmethod
    def _mute_rows(user: str, actor: str | None, obj: str | None) -> list[dict[str, str]]:
        rows = []
        if actor is not None:
            rows.append({"user_id": user, "kind": "actor", "value": check_user_id(actor, "actor")})
        if obj is not None:
            rows.append({"user_id": user, "kind": "object", "value": check_object(obj)})
        if not rows:
            raise InvalidInput("name an actor or an object to mute", field="actor")
        return rows

    # -- preferences ------------------------------------------------------------------------

    def get_preferences(self, user: str) -> dict[str, Any]:
        """Stored preferences (email, channels per category, locale) plus the mutes."""
        check_user_id(user)
        with self.db.read() as conn:
            raw = conn.execute(select(preferences.c.data)
                               .where(preferences.c.user_id == user)).scalar()
        data: dict[str, Any] = json.loads(raw) if raw else {}
        data["muted"] = self.muted(user)
        return data

    def set_preferences(self, user: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Replace a user's preferences; ``muted`` replaces their mutes."""
        check_user_id(user)
        stored = {k: v for k, v in data.items() if k != "muted"}
        muted = data.get("muted") or {}
        rows = [{"user_id": user, "kind": "actor", "value": check_user_id(a, "muted.actors")}
                for a in muted.get("actors", [])]
        rows += [{"user_id": user, "kind": "object", "value": check_object(o, "muted.objects")}
                 for o in muted.get("objects", [])]
        now = self.clock.now_us()

        def work(conn: Connection) -> None:
            self._touch_user(conn, user, now)
            conn.execute(self.db.upsert(
                preferences, ["user_id"],
                {"user_id": user, "data": json.dumps(stored), "updated_at": now},
                ["data", "updated_at"]))
            conn.execute(delete(mutes).where(mutes.c.user_id == user))
            if rows:
                self.db.insert_many(conn, mutes, rows, ignore=True)

        self.db.transact(work)
        return self.get_preferences(user)

    def report_bounce(self, address: str, reason: str = "hard bounce") -> None:
        """A hard bounce: no more mail to this address (web delivery goes on)."""
        if not isinstance(address, str) or "@" not in address or len(address) > 254:
            raise InvalidInput("address must be an email address", field="address")
        now = self.clock.now_us()

        def work(conn: Connection) -> None:
            conn.execute(self.db.upsert(
                email_bounces, ["address"],
                {"address": address.strip().lower(), "reason": reason[:255], "bounced_at": now},
                ["reason", "bounced_at"]))

        self.db.transact(work)

    def clear_bounce(self, address: str) -> bool:
        def work(conn: Connection) -> int:
            return conn.execute(delete(email_bounces).where(
                email_bounces.c.address == address.strip().lower())).rowcount

        return self.db.transact(work) > 0

    def unsubscribe_email(self, user: str) -> None:
        """One-click unsubscribe: email frequency becomes 'never'."""
        current = self.get_preferences(user)
        email_prefs = dict(current.get("email") or {})
        email_prefs["frequency"] = "never"
        self.set_preferences(user, {**current, "email": email_prefs})

    # -- timeline -------------------------------------------------------------------------------

    def timeline(self, user: str, *, limit: int = 20, cursor: str | None = None) -> Page:
        """Events of the users ``user`` follows, newest first (push model: fan-out wrote them)."""
        check_user_id(user)
        limit = _limit(limit)
        before = decode_cursor(cursor)[1] if cursor else None
        with self.db.read() as conn:
            rows = inbox.read_timeline(conn, user, limit=limit + 1, before=before)
        page = rows[:limit]
        items = [{"id": str(r.id), "type": r.type, "actor": r.actor, "object": r.object,
                  "payload": json.loads(r.payload), "created_at": to_rfc3339(r.created_at)}
                 for r in page]
        more = len(rows) > limit
        return Page(items, encode_cursor(page[-1].created_at, page[-1].id) if more else None)

    # -- inbox reads --------------------------------------------------------------------------

    def _filters(self, types: Sequence[str] | None, category: str | None, section: str | None,
                 unread: bool | None) -> inbox.Filters:
        if types is not None:
            if isinstance(types, str):
                types = [t for t in types.split(",") if t]
            for name in types:
                self.get_type(name)
        if section is not None and section not in ("alert", "message"):
            raise InvalidInput("section must be alert or message", field="section")
        if category is not None and (not isinstance(category, str) or not 1 <= len(category) <= 64):
            raise InvalidInput("category must be 1-64 characters", field="category")
        return inbox.Filters(tuple(types) if types else None, category, section, unread)

    def notifications(self, user: str, *, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None,
                      unread: bool | None = None, limit: int = 20,
                      cursor: str | None = None, locale: str | None = None) -> Page:
        """A user's inbox, newest first, one item per display group, paged by cursor.

        Titles are rendered in ``locale`` (falling back to English).
        """
        check_user_id(user)
        language = normalise_locale(locale)
        limit = _limit(limit)
        filters = self._filters(types, category, section, unread)
        before = decode_cursor(cursor) if cursor else None
        with self.db.read() as conn:
            markers = inbox.load_markers(conn, user)
            rows = inbox.list_base_rows(conn, user, filters, markers, limit=limit + 1,
                                        before=before)
            page = rows[:limit]
            bundled = [r.display_hash for r in page if self._bundles(r.type)]
            groups = inbox.group_info(conn, user, bundled)
        items = []
        for row in page:
            info = groups.get(row.display_hash)
            actors = info.actors if info else ([row.actor] if row.actor else [])
            count = info.count if info else 1
            others = min(max(len(actors) - 1, 0), OTHERS_CAP)
            unread_now = markers.is_unread(row.read_at, row.fresh_at, row.type, row.category,
                                           row.section)
            payload = json.loads(row.payload)
            ctx = RenderContext(type=row.type, actor=row.actor, object=row.object,
                                payload=payload, actors=actors[:3], count=count, others=others)
            rendered = render_all(self._type_or_default(row.type), ctx, language)
            items.append(Notification(
                id=str(row.event_id), type=row.type, category=row.category, section=row.section,
                object=row.object, actor=row.actor, actors=actors[:3], count=count,
                others=others, title=rendered.title, body=rendered.body, link=rendered.link,
                html=rendered.html,
                created_at=to_rfc3339(row.created_at), read=not unread_now,
                seen=markers.is_seen(unread_now, row.fresh_at), payload=payload,
            ))
        more = len(rows) > limit
        last = page[-1] if page else None
        next_cursor = encode_cursor(last.created_at, last.event_id) if more and last else None
        return Page(items, next_cursor)

    def _bundles(self, type_name: str) -> bool:
        return type_name in self.types and self.types.get(type_name).bundle != "none"

    def _type_or_default(self, name: str) -> EventType:
        if name in self.types:
            return self.types.get(name)
        return EventType(name=name, templates=Templates())

    def unread_count(self, user: str, *, types: Sequence[str] | None = None,
                     category: str | None = None, section: str | None = None) -> UnreadCount:
        """Unread display groups, capped at 100 and shown as '99+'."""
        check_user_id(user)
        filters = self._filters(types, category, section, True)
        with self.db.read() as conn:
            markers = inbox.load_markers(conn, user)
            count = inbox.unread_count(conn, user, filters, markers)
        return UnreadCount(count, count_display(count))

    # -- read state ---------------------------------------------------------------------------

    def mark_read(self, user: str, ids: Sequence[str | int]) -> int:
        """Mark these notifications (and every member of their bundles) read."""
        return self._mark_ids(user, ids, read=True)

    def mark_unread(self, user: str, ids: Sequence[str | int]) -> int:
        return self._mark_ids(user, ids, read=False)

    def _mark_ids(self, user: str, ids: Sequence[str | int], *, read: bool) -> int:
        check_user_id(user)
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidInput("ids must be a list", field="ids")
        if len(ids) > 1000:
            raise InvalidInput("at most 1,000 ids at a time", field="ids")
        numbers = _event_ids(ids)
        now = self.clock.now_us()

        def work(conn: Connection) -> int:
            markers = inbox.load_markers(conn, user)
            groups = inbox.groups_by_ids(conn, user, numbers)
            return inbox.mark_groups(conn, user, groups, read=read, now=now, markers=markers)

        return self.db.transact(work)

    def mark_read_matching(self, user: str, *, actor: str | None = None,
                           type: str | None = None, object: str | None = None) -> int:
        """Jiepang's 'mark read by (from user, type, post)'."""
        check_user_id(user)
        if actor is None and type is None and object is None:
            raise InvalidInput("match needs at least one of actor, type, object", field="match")
        if actor is not None:
            check_user_id(actor, "match.actor")
        if object is not None:
            check_object(object, "match.object")
        now = self.clock.now_us()

        def work(conn: Connection) -> int:
            markers = inbox.load_markers(conn, user)
            groups = inbox.groups_by_match(conn, user, actor=actor, type=type, object=object)
            return inbox.mark_groups(conn, user, groups, read=True, now=now, markers=markers)

        return self.db.transact(work)

    def mark_all_read(self, user: str, *, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None) -> int:
        """Move a watermark: one narrow row per scope, never an update of notification rows.

        Returns how many unread items it covered (counted with the usual cap of 100).
        """
        check_user_id(user)
        filters = self._filters(types, category, section, True)
        scopes: list[str] = []
        if filters.types:
            scopes += [scope_name("type", t) for t in filters.types]
        if category is not None:
            scopes.append(scope_name("category", category))
        if section is not None:
            scopes.append(scope_name("section", section))
        if filters.types and (category is not None or section is not None):
            raise InvalidInput("give types, category or section, not several", field="types")
        if category is not None and section is not None:
            raise InvalidInput("give category or section, not both", field="category")
        if not scopes:
            scopes = ["all"]
        now = self.clock.now_us()

        def work(conn: Connection) -> int:
            markers = inbox.load_markers(conn, user)
            before = inbox.unread_count(conn, user, filters, markers)
            for scope in scopes:
                inbox.set_marker(self.db, conn, user, scope, now)
            return before

        return self.db.transact(work)

    def mark_seen(self, user: str, until: int | None = None) -> None:
        """Move the seen watermark (badge seen, not read)."""
        check_user_id(user)
        now = self.clock.now_us()
        mark = now if until is None else min(until, now)

        def work(conn: Connection) -> None:
            inbox.set_marker(self.db, conn, user, "seen", mark)

        self.db.transact(work)

    # -- retraction ---------------------------------------------------------------------------

    def retract(self, *, type: str | None = None, actor: str | None = None,
                object: str | None = None, event_id: str | int | None = None) -> int:
        """Remove matching notifications from every inbox; later fan-out skips the events."""
        if event_id is None and type is None and actor is None and object is None:
            raise InvalidInput("retraction needs at least one of type, actor, object",
                               field="type")
        if type is not None:
            self.get_type(type)
        if actor is not None:
            check_user_id(actor, "actor")
        if object is not None:
            check_object(object)
        ids = _event_ids([event_id]) if event_id is not None else None
        now = self.clock.now_us()

        def work(conn: Connection) -> int:
            removed = 0
            after = 0
            while True:
                if ids is not None:
                    batch = ids if after == 0 else []
                else:
                    batch = event_store.find_event_ids(conn, type=type, actor=actor,
                                                       object=object, after_id=after)
                if not batch:
                    return removed
                event_store.mark_retracted(conn, batch, now)
                removed += inbox.remove(conn, inbox.rows_for_events(conn, batch))
                email.cancel(conn, batch)
                after = max(batch)

        return self.db.transact(work)

    # -- jobs ---------------------------------------------------------------------------------

    def worker(self, *, concurrency: int = 1, poll_seconds: float = 0.2) -> Worker:
        return Worker(self, concurrency=concurrency, poll_seconds=poll_seconds)

    def run_jobs(self, max_jobs: int | None = None) -> int:
        """Run every runnable job in this process (the embedded mode and tests)."""
        return Worker(self, batch=10).drain(max_jobs)

    def schedule_maintenance(self) -> None:
        def work(conn: Connection) -> None:
            self.queue.enqueue(conn, retention.retention_spec())

        self.db.transact(work)


def _b64encode(text: str) -> str:
    import base64

    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _b64decode(text: str) -> str:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
