"""Users, subscriptions, follows and mutes."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence

from tidings.clock import Clock
from tidings.domain.audience import OBJECT_SUBSCRIBERS
from tidings.domain.cursor import decode_cursor, encode_cursor
from tidings.domain.events import USER_ID, check_object, check_user_id
from tidings.domain.privacy import check_name
from tidings.domain.types import CHANNELS
from tidings.domain.views import Follow, Member, Page, Subscription
from tidings.exceptions import InvalidCursor, InvalidInput, NotFound, QuotaExceeded
from tidings.ports import Store, Tx
from tidings.services.catalog import Catalog
from tidings.services.common import check_ids, check_limit


def touch_user(tx: Tx, user: str, now: int) -> None:
    """Register a user on first contact; a new user starts 'read up to now' (Gazelle).

    A user fan-out already delivered to is registered (``InboxStore.insert``), so this
    does not mark what they were sent read."""
    if tx.graph.add_user(user, now):
        tx.inbox.set_marker(user, "all", now)


def _name_cursor(after: str) -> str:
    raw = json.dumps({"after": after}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _name_after(cursor: str) -> str:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
        after = data["after"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        after = None
    # a number here would be a store type error, and text no user id holds (a lone
    # surrogate, NUL) a store's encoding error
    if not isinstance(after, str) or not USER_ID.fullmatch(after):
        raise InvalidCursor("cursor is not one this server made", field="cursor")
    return after


def _group(group: str) -> str:
    return named(group, "group", "group")


def named(value: str, what: str, field: str) -> str:
    """A group or privacy rule name, or InvalidInput naming ``field``."""
    try:
        return check_name(value, what)
    except ValueError as exc:
        raise InvalidInput(str(exc), field=field) from None


def mute_pairs(actor: str | None, obj: str | None) -> list[tuple[str, str]]:
    pairs = []
    if actor is not None:
        pairs.append(("actor", check_user_id(actor, "actor")))
    if obj is not None:
        pairs.append(("object", check_object(obj)))
    if not pairs:
        raise InvalidInput("name an actor or an object to mute", field="actor")
    return pairs


class GraphService:
    """Who hears of what, as users and applications change it."""

    def __init__(self, store: Store, catalog: Catalog, clock: Clock, *,
                 max_subscriptions: int = 0) -> None:
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self.max_subscriptions = max_subscriptions  # per user; 0: no limit
        # run in the unit that adds (removes) a follow: (tx, follower, followee)
        self.follow_hooks: list[Callable[[Tx, str, str], None]] = []
        self.unfollow_hooks: list[Callable[[Tx, str, str], None]] = []

    def add_user(self, user: str, *, read_up_to: int | None = None) -> bool:
        """Register a user who starts as 'read up to now' (Gazelle); True if new."""
        check_user_id(user)
        now = self.clock.now_us()

        def work(tx: Tx) -> bool:
            if not tx.graph.add_user(user, now):
                return False
            tx.inbox.set_marker(user, "all", now if read_up_to is None else read_up_to)
            return True

        return self.store.transact(work)

    def subscribe(self, user: str, type: str = "*", object: str = "*",
                  channels: Sequence[str] = ("web",), *,
                  expires_at: int | None = None) -> Subscription:
        check_user_id(user)
        if type != "*":
            audience = self.catalog.get(type).audience
            if OBJECT_SUBSCRIBERS not in audience:
                raise InvalidInput(
                    f"type {type!r} reaches no subscribers (its audience: "
                    f"{', '.join(audience)}), so a subscription to it would never match; "
                    "add object_subscribers to its audience, or subscribe to '*'", field="type")
        if object != "*":
            check_object(object)
        if isinstance(channels, str) or not channels:
            raise InvalidInput("channels must be a non-empty list", field="channels")
        for channel in channels:
            if channel not in CHANNELS:
                raise InvalidInput(f"channels: unknown channel {channel!r}", field="channels")
        now = self.clock.now_us()
        if expires_at is not None and (not isinstance(expires_at, int)
                                       or isinstance(expires_at, bool) or expires_at <= now):
            raise InvalidInput("expires_at must be after now: a subscription that has already "
                               "ended would never match", field="expires_at")

        def work(tx: Tx) -> Subscription:
            touch_user(tx, user, now)
            saved = tx.graph.save_subscription(user, type, object, channels, now, expires_at)
            # counted after the write, in its unit: the same subscription again is no new one
            if self.max_subscriptions and \
                    tx.graph.subscription_count(user) > self.max_subscriptions:
                raise QuotaExceeded(
                    f"{user} has {self.max_subscriptions} subscriptions, as many as allowed "
                    "(TIDINGS_MAX_SUBSCRIPTIONS); remove one first", field="subscriptions")
            return saved

        return self.store.transact(work)

    def unsubscribe(self, user: str, subscription_id: int | str) -> None:
        check_user_id(user)
        (number,) = check_ids([subscription_id], "subscription_id", "subscription id")
        if not self.store.transact(lambda tx: tx.graph.delete_subscription(user, number)):
            raise NotFound(f"subscription {subscription_id} of {user} does not exist")

    def subscriptions(self, user: str, *, limit: int = 20,
                      cursor: str | None = None) -> Page[Subscription]:
        check_user_id(user)
        limit = check_limit(limit)
        after = decode_cursor(cursor)[1] if cursor else 0
        with self.store.read() as tx:
            rows = tx.graph.subscriptions(user, after_id=after, limit=limit + 1)
        items = rows[:limit]
        more = len(rows) > limit
        return Page(items, encode_cursor(0, items[-1].id) if more else None)

    def follow(self, user: str, other: str) -> bool:
        check_user_id(user)
        check_user_id(other, "other")
        if user == other:
            raise InvalidInput("other: a user cannot follow themselves", field="other")
        now = self.clock.now_us()

        def work(tx: Tx) -> bool:
            touch_user(tx, user, now)
            added = tx.graph.add_follow(user, other, now)
            if added:
                for hook in self.follow_hooks:
                    hook(tx, user, other)
            return added

        return self.store.transact(work)

    def unfollow(self, user: str, other: str) -> bool:
        check_user_id(user)
        check_user_id(other, "other")

        def work(tx: Tx) -> bool:
            removed = tx.graph.remove_follow(user, other)
            if removed:
                for hook in self.unfollow_hooks:
                    hook(tx, user, other)
            return removed

        return self.store.transact(work)

    def follows(self, user: str, *, followers: bool, limit: int,
                cursor: str | None) -> Page[Follow]:
        check_user_id(user)
        limit = check_limit(limit)
        after = _name_after(cursor) if cursor else ""
        with self.store.read() as tx:
            rows = tx.graph.follows(user, followers=followers, after=after, limit=limit + 1)
        items = rows[:limit]
        more = len(rows) > limit
        return Page(items, _name_cursor(items[-1].user) if more else None)

    # -- groups, for privacy rules ---------------------------------------------------------

    def add_member(self, group: str, user: str) -> bool:
        """Put ``user`` in ``group`` (privacy rule ``group:NAME``); True if new."""
        name = _group(group)
        check_user_id(user)
        now = self.clock.now_us()
        return self.store.transact(lambda tx: tx.graph.add_member(name, user, now))

    def remove_member(self, group: str, user: str) -> bool:
        name = _group(group)
        check_user_id(user)
        return self.store.transact(lambda tx: tx.graph.remove_member(name, user))

    def members(self, group: str, *, limit: int = 20,
                cursor: str | None = None) -> Page[Member]:
        name = _group(group)
        limit = check_limit(limit)
        after = _name_after(cursor) if cursor else ""
        with self.store.read() as tx:
            rows = tx.graph.members(name, after=after, limit=limit + 1)
        items = rows[:limit]
        more = len(rows) > limit
        return Page(items, _name_cursor(items[-1].user) if more else None)

    def mute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        check_user_id(user)
        pairs = mute_pairs(actor, object)

        def work(tx: Tx) -> None:
            for kind, value in pairs:
                tx.graph.add_mute(user, kind, value)

        self.store.transact(work)

    def unmute(self, user: str, *, actor: str | None = None, object: str | None = None) -> None:
        check_user_id(user)
        pairs = mute_pairs(actor, object)

        def work(tx: Tx) -> None:
            for kind, value in pairs:
                tx.graph.remove_mute(user, kind, value)

        self.store.transact(work)

    def muted(self, user: str) -> dict[str, list[str]]:
        check_user_id(user)
        with self.store.read() as tx:
            pairs = tx.graph.mutes(user)
        result: dict[str, list[str]] = {"actors": [], "objects": []}
        for kind, value in pairs:
            result["actors" if kind == "actor" else "objects"].append(value)
        return result
