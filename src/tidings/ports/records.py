"""Ports of what a store keeps as records: events, the graph, settings, mail state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tidings.domain.audience import AudienceSource
from tidings.domain.events import DEFAULT_SCOPE, Event
from tidings.domain.timeline import SourceState
from tidings.domain.views import (
    Follow,
    MailBatchRow,
    Member,
    StoredEvent,
    Subscription,
)


class EventStore(Protocol):
    """Accepted events: the source of truth of every notification."""

    def insert(self, event: Event, payload_json: str, now: int, *,
               scope: str = DEFAULT_SCOPE) -> int:
        """Store an event; return its id (ids grow with time of insertion). Its idempotency
        key, if any, is unique within ``scope``: a second one fails the unit
        (:class:`~tidings.exceptions.StoreConflict`)."""

    def insert_many(self, rows: Sequence[tuple[Event, str]], now: int, *,
                    scope: str = DEFAULT_SCOPE) -> list[int]:
        """Store (event, payload JSON) rows as :meth:`insert` does, in one write where the
        store can; return their ids in the order of ``rows`` (ascending)."""

    def get(self, event_id: int, *, lock: bool = False) -> StoredEvent | None:
        """One event; ``lock`` makes a concurrent retraction of it wait for this unit."""

    def position_near(self, event_id: int) -> tuple[int, int] | None:
        """(created_at, id) of this event, or else of the newest event with a lower id (None:
        there is none): where a timeline's ``max_id`` / ``since_id`` falls in its order."""

    def get_many(self, event_ids: Sequence[int], *, lock: bool = False
                 ) -> dict[int, StoredEvent]:
        """Those of the events that exist, by id, in one read (:meth:`get`'s ``lock``)."""

    def get_by_key(self, key: str, *, scope: str = DEFAULT_SCOPE) -> StoredEvent | None:
        """The event stored under this idempotency key in ``scope``, if any."""

    def get_by_keys(self, keys: Sequence[str], *, scope: str = DEFAULT_SCOPE
                    ) -> dict[str, StoredEvent]:
        """:meth:`get_by_key` of several keys in one read: the keys found, with their event."""

    def find_ids(self, *, type: str | None, actor: str | None, object: str | None,
                 after_id: int = 0, limit: int = 1000) -> list[int]:
        """Ids of unretracted events matching every given field, ascending after ``after_id``."""

    def mark_retracted(self, event_ids: Sequence[int], now: int) -> None:
        """Flag events retracted: later fan-out of them delivers nothing."""

    def expired_ids(self, *, types: Sequence[str] | None, other_than: Sequence[str] | None,
                    before: int, limit: int, after: int = 0) -> list[int]:
        """Ids of events created before ``before``: of ``types``, or not of ``other_than``;
        the lowest ``limit`` of them above ``after``, in order."""

    def delete(self, event_ids: Sequence[int]) -> None:
        """Remove events for good (retention)."""

    def actors_of(self, event_ids: Sequence[int]) -> list[str]:
        """Distinct actors of these events, newest event first."""

    def pull_page(self, sources: Sequence[tuple[str, tuple[int, int]]], *,
                  types: Sequence[str], limit: int, below: tuple[int, int] | None,
                  above: tuple[int, int] | None) -> list[StoredEvent]:
        """The pull model's read: unretracted events of ``types`` by any of the ``sources``
        (actor, highest position to take of it), strictly between the positions ``above``
        and ``below``, the newest ``limit`` first by (created_at, id). Each source is read
        through the (actor, created_at, id) index, its newest ``limit`` at most (the
        per-followee top-N merge)."""


class Users(Protocol):
    """Users the store knows, and when each joined (what a late joiner may see)."""

    def add_user(self, user: str, now: int) -> bool:
        """Register a user; True if the user is new."""

    def set_joined(self, user: str, joined: int) -> None:
        """Correct a registered user's join time (import)."""

    def joined(self, users: Sequence[str]) -> dict[str, int]:
        """Join times of those of ``users`` who are registered."""


class Subscriptions(Protocol):
    """Subscriptions to (type, object), with their channels and expiry."""

    def save_subscription(self, user: str, type: str, object: str, channels: Sequence[str],
                          now: int, expires_at: int | None = None) -> Subscription:
        """Create a subscription, or replace the channels and lifetime (``expires_at``, µs;
        None: for good) of the same (user, type, object)."""

    def delete_subscription(self, user: str, subscription_id: int) -> bool:
        """Remove one of the user's subscriptions; False if there was none with that id."""

    def subscriptions(self, user: str, *, after_id: int, limit: int) -> list[Subscription]:
        """A user's subscriptions by ascending id after ``after_id``."""

    def subscription_count(self, user: str) -> int:
        """How many subscriptions the user has."""

    def subscription_channels(self, users: Sequence[str], type: str, object: str | None,
                              at: int) -> dict[str, frozenset[str]]:
        """Per user with subscriptions matching (``type`` or ``*``, ``object`` or ``*``) and
        not expired at ``at``, the union of those subscriptions' channels; users with none
        are left out."""


class Follows(Protocol):
    """The follow graph, and each followee's timeline model (push, pull, hybrid)."""

    def add_follow(self, follower: str, followee: str, now: int) -> bool:
        """True if the edge is new."""

    def remove_follow(self, follower: str, followee: str) -> bool:
        """True if there was such an edge."""

    def follows(self, user: str, *, followers: bool, after: str, limit: int) -> list[Follow]:
        """Whom ``user`` follows (or, ``followers=True``, who follows them) by ascending id."""

    def followee_sources(self, user: str) -> dict[str, SourceState]:
        """Everyone ``user`` follows, each with their stored timeline state (as
        :meth:`timeline_sources` gives it, defaults where none is stored), in one read."""

    def unpushed_followees(self, user: str) -> dict[str, SourceState]:
        """Those of :meth:`followee_sources` whose stored state is not "pushed from the
        start" (:func:`tidings.domain.timeline.pushed_from_start`): in a push deployment
        every other followee's posts are in the mailbox above its floor."""

    def timeline_sources(self, actors: Sequence[str]) -> dict[str, SourceState]:
        """The stored timeline state of these sources (absent: never followed nor flipped,
        :class:`SourceState`'s defaults). :meth:`add_follow` and :meth:`remove_follow` keep
        the follower counts."""

    def set_timeline_model(self, actor: str, model: str | None) -> None:
        """Set (``push`` / ``pull``) or clear (None) a source's model override."""

    def set_push_from(self, actor: str, push_from: tuple[int, int] | None) -> None:
        """From which position (created_at, event id; exclusive) on the source's posts are
        pushed (None: it is pulled)."""

    def followers_of(self, actors: Sequence[str], *, limit: int) -> dict[str, list[str]]:
        """Per actor, the first ``limit`` followers by ascending id (what :meth:`audience`
        gives for the actor's ``actor_followers`` source with that limit), all actors in one
        read where the store can; actors without followers are left out."""

    def following(self, users: Sequence[str], followee: str) -> set[str]:
        """Those of ``users`` who follow ``followee``."""


class Audiences(Protocol):
    """An event's audience sources, read in user-id order and chunked."""

    def audience(self, source: AudienceSource, *, after: str, upto: str | None,
                 limit: int | None = None) -> list[str]:
        """Distinct users of a source with ids in (after, upto], ascending by code point
        (SQL stores need a byte-order collation on user ids, as the migrations declare)."""

    def nth_after(self, source: AudienceSource, after: str, n: int) -> str | None:
        """The n-th user id of a source after ``after`` (a chunk boundary), or None."""


class Groups(Protocol):
    """Named groups of users (a privacy rule's audience)."""

    def add_member(self, group: str, user: str, now: int) -> bool:
        """Put a user in a group (privacy rule ``group:NAME``); True if they were not in it."""

    def remove_member(self, group: str, user: str) -> bool:
        """Take a user out of a group; True if they were in it."""

    def members(self, group: str, *, after: str, limit: int) -> list[Member]:
        """A group's members by ascending user id after ``after``."""

    def members_among(self, group: str, users: Sequence[str]) -> set[str]:
        """Those of ``users`` who are members of ``group``."""


class Mutes(Protocol):
    """What each user muted: actors and objects."""

    def add_mute(self, user: str, kind: str, value: str) -> None:
        """Mute an actor (``kind="actor"``) or an object; idempotent."""

    def remove_mute(self, user: str, kind: str, value: str) -> int:
        """Unmute; returns how many mutes went."""

    def replace_mutes(self, user: str, pairs: Sequence[tuple[str, str]]) -> None:
        """Make (kind, value) pairs the user's whole list of mutes."""

    def mutes(self, user: str) -> list[tuple[str, str]]:
        """A user's mutes as (kind, value), sorted."""

    def muting(self, users: Sequence[str], actor: str | None, object: str | None) -> set[str]:
        """Those of ``users`` who muted this actor or this object."""

    def mutes_many(self, users: Sequence[str]) -> dict[str, set[tuple[str, str]]]:
        """The (kind, value) mutes of those of ``users`` who have any, in one read (a batch
        of fan-outs checks each event's actor and object against them)."""


class GraphStore(Users, Subscriptions, Follows, Audiences, Groups, Mutes, Protocol):
    """Who hears of what: users, subscriptions, follows, groups and mutes — the six ports
    above together, as a unit of work hands them out."""


class SettingsStore(Protocol):
    """Declared event types, user preferences and bounced addresses."""

    def save_type(self, name: str, definition: str, now: int) -> None:
        """Store (or replace) a type's JSON definition."""

    def load_types(self) -> list[tuple[str, str]]:
        """Every stored (name, JSON definition)."""

    def preferences(self, user: str) -> dict[str, Any] | None:
        """A user's stored preferences, or None if never set."""

    def preferences_many(self, users: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Preferences of those users who have any."""

    def save_preferences(self, user: str, data: Mapping[str, Any], now: int) -> None:
        """Replace a user's preferences."""

    def report_bounce(self, address: str, reason: str, now: int) -> None:
        """Record a hard bounce of a (lower-cased) address."""

    def clear_bounce(self, address: str) -> bool:
        """Forget a bounce; True if there was one."""

    def bounced(self, addresses: Sequence[str]) -> set[str]:
        """Those (lower-cased) addresses that bounced."""


class MailStore(Protocol):
    """Outbound channel state: bundling windows, waiting mail, the sent log, webhook attempts
    and the webhook endpoints' circuit breakers."""

    def last_email_at(self, user: str, bundle_hash: str) -> int | None:
        """When the user's last mail of this bundle went out (window start), if ever."""

    def set_last_email_at(self, user: str, bundle_hash: str, at: int) -> None:
        """Start a new bundling window."""

    def add_batch(self, rows: Sequence[MailBatchRow]) -> None:
        """Keep notifications for a later mail; a (user, event) already waiting is skipped."""

    def batch(self, user: str, kind: str, *, bundle_hash: str | None = None,
              created_until: int | None = None, limit: int | None = None
              ) -> list[MailBatchRow]:
        """Waiting rows of a user and kind: by (priority, newest event first) for digests, by
        newest event first for bundles."""

    def delete_batch(self, ids: Sequence[int]) -> None:
        """Drop waiting rows (they are being mailed)."""

    def cancel_events(self, event_ids: Sequence[int], *, user: str | None = None) -> None:
        """A retraction: these events wait for no mail any more; with ``user``, one
        recipient's deletion: they wait for no mail to that user."""

    def sent_count(self, user: str, kind: str, since: int) -> int:
        """Mails of ``kind`` sent to the user since ``since``."""

    def log_sent(self, message_id: str, user: str, kind: str, address: str, subject: str,
                 at: int) -> None:
        """Record a sent mail."""

    def was_sent(self, message_id: str) -> bool:
        """Whether a mail with this Message-ID is in the sent log (a job run again must
        not send it twice)."""

    def log_webhook(self, user: str, event_id: int, url: str, status: int | None,
                    attempt: int, error: str | None, at: int) -> None:
        """Record one webhook attempt."""

    def webhook_endpoint(self, host: str) -> tuple[int, int] | None:
        """A webhook endpoint's breaker: (consecutive failures, paused until), if recorded."""

    def save_webhook_endpoint(self, host: str, failures: int, paused_until: int) -> None:
        """Set an endpoint's breaker; ``failures=0`` forgets the endpoint."""
