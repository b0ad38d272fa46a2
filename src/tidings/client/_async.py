"""The asynchronous client, :class:`AsyncClient` (written once: see ``scripts/unasync.py``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, cast
from urllib.parse import quote

import httpx

from tidings.client._errors import error_of, parse_answer
from tidings.client._models import (
    Accepted,
    BatchItem,
    Bounce,
    BundleMember,
    EventTypeInfo,
    Follow,
    FollowState,
    Member,
    Membership,
    Notification,
    Page,
    Preferences,
    Subscription,
    TimelineEvent,
    Token,
    TypeList,
    UnreadCount,
)
from tidings.client._requests import (
    DEFAULT_TIMEOUT,
    ClientBase,
    bounce_body,
    event_body,
    inbox_query,
    query,
    read_body,
    retraction_body,
    seen_body,
    snooze_body,
    subscription_body,
    tls_context,
    user_path,
)
from tidings.client._retry import Retry, asleep
from tidings.client._stream_async import AsyncStream


class AsyncClient(ClientBase, AsyncStream):
    """A client of the HTTP API v1, asynchronous. ``token`` is a server key or a user token.

    Use it as ``async with AsyncClient(…) as tidings:``, or call :meth:`aclose`. ``transport``
    is for tests (``httpx.MockTransport``) or custom networking. ``retry`` says how a 429 or
    503 answer to a request safe to repeat is retried after its ``Retry-After``
    (:class:`~tidings.client.Retry`; ``Retry(attempts=1)`` never retries).
    """

    def __init__(
        self, base_url: str, token: str | None = None, *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: Retry | None = None,
    ) -> None:
        super().__init__(base_url, token)
        self.retry = Retry() if retry is None else retry
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=timeout, transport=transport,
            verify=tls_context())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(
        self, method: str, path: str, *, params: Mapping[str, str | int] | None = None,
        body: Any = None,
    ) -> Any:
        attempt = 1
        while True:
            response = await self._http.request(method, path, params=params, json=body)
            wait = self.retry.wait(method, body, response, attempt)
            if wait is None:
                return parse_answer(response)
            await asleep(wait)
            attempt += 1

    # events and types (server key)

    async def publish(
        self, type: str, *, actor: str | None = None, object: str | None = None,
        recipients: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
        payload: Mapping[str, Any] | None = None, idempotency_key: str | None = None,
    ) -> Accepted:
        """Publish one event; the answer means it is durable."""
        body = event_body(type, actor, object, recipients, exclude, payload, idempotency_key)
        return cast(Accepted, await self._call("POST", "/v1/events", body=body))

    async def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> list[BatchItem]:
        """Publish up to 1,000 events; each is answered on its own (accepted or its error)."""
        body = {"events": [dict(e) for e in events]}
        answer = await self._call("POST", "/v1/events/batch", body=body)
        return cast(list[BatchItem], answer["items"])

    async def retract(
        self, *, type: str | None = None, actor: str | None = None, object: str | None = None,
    ) -> int:
        """Remove matching notifications from every inbox; returns how many."""
        body = retraction_body(type, actor, object)
        answer = await self._call("POST", "/v1/retractions", body=body)
        return cast(int, answer["removed"])

    async def types(self) -> TypeList:
        """The declared types (a list) with the answer's ``enabled_channels`` beside them."""
        answer = await self._call("GET", "/v1/types")
        return TypeList(cast(list[EventTypeInfo], answer["items"]),
                        answer.get("enabled_channels", []))

    async def get_type(self, name: str) -> EventTypeInfo:
        return cast(EventTypeInfo, await self._call("GET", f"/v1/types/{quote(name, safe='')}"))

    async def put_type(self, name: str, definition: Mapping[str, Any]) -> EventTypeInfo:
        """Declare or replace an event type (``category``, ``bundle``, ``templates``, …)."""
        path = f"/v1/types/{quote(name, safe='')}"
        return cast(EventTypeInfo, await self._call("PUT", path, body=dict(definition)))

    async def mint_token(self, user: str, *, ttl_seconds: int | None = None) -> Token:
        body: dict[str, Any] = {"user": user}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return cast(Token, await self._call("POST", "/v1/tokens", body=body))

    async def report_bounce(self, address: str, *, reason: str | None = None) -> Bounce:
        """A hard bounce: mail to ``address`` stops (web delivery goes on)."""
        body = bounce_body(address, reason)
        return cast(Bounce, await self._call("POST", "/v1/bounces", body=body))

    async def clear_bounce(self, address: str) -> Bounce:
        """``address`` works again: mail resumes."""
        path = f"/v1/bounces/{quote(address, safe='@')}"
        return cast(Bounce, await self._call("DELETE", path))

    # a user's inbox

    async def notifications(
        self, *, user: str | None = None, types: Sequence[str] | None = None,
        category: str | None = None, section: str | None = None, unread: bool | None = None,
        limit: int | None = None, cursor: str | None = None, locale: str | None = None,
        actor: str | None = None, object: str | None = None, max_id: str | None = None,
        since_id: str | None = None, payload: Mapping[str, Any] | None = None,
        reason: Sequence[str] | str | None = None, participating: bool | None = None,
        state: str | None = None,
    ) -> Page[Notification]:
        """One page of the inbox, newest first; pass ``next_cursor`` back as ``cursor``.
        ``actor``, ``object``, ``max_id``, ``since_id`` and ``payload`` (conditions on the
        payload fields a type marks queryable) narrow it; ``reason`` (``recipient``,
        ``mention``, ``subscribed``, ``following``, ``group``) and ``participating`` (True:
        ``recipient`` or ``mention``) keep the items that arrived for those reasons;
        ``state``: ``inbox`` (the server's default), ``archived``, ``saved`` or ``snoozed``."""
        params = inbox_query(types, category, section, payload, unread=unread, limit=limit,
                             cursor=cursor, locale=locale, actor=actor, object=object,
                             max_id=max_id, since_id=since_id, reason=reason,
                             participating=participating, state=state)
        path = user_path(user, "/notifications")
        return cast(Page[Notification], await self._call("GET", path, params=params))

    async def iter_notifications(
        self, *, user: str | None = None, types: Sequence[str] | None = None,
        category: str | None = None, section: str | None = None, unread: bool | None = None,
        page_size: int = 100, locale: str | None = None, actor: str | None = None,
        object: str | None = None, max_id: str | None = None, since_id: str | None = None,
        payload: Mapping[str, Any] | None = None,
        reason: Sequence[str] | str | None = None, participating: bool | None = None,
        state: str | None = None,
    ) -> AsyncIterator[Notification]:
        """Every item of the inbox, following cursors to the end."""
        cursor = None
        while True:
            page = await self.notifications(
                user=user, types=types, category=category, section=section, unread=unread,
                limit=page_size, cursor=cursor, locale=locale, actor=actor, object=object,
                max_id=max_id, since_id=since_id, payload=payload, reason=reason,
                participating=participating, state=state)
            for item in page["items"]:
                yield item
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def unread_count(
        self, *, user: str | None = None, types: Sequence[str] | None = None,
        category: str | None = None, section: str | None = None, actor: str | None = None,
        object: str | None = None, max_id: str | None = None, since_id: str | None = None,
        payload: Mapping[str, Any] | None = None,
        reason: Sequence[str] | str | None = None, participating: bool | None = None,
    ) -> UnreadCount:
        """The unread count (and the unseen one), narrowed as :meth:`notifications` is."""
        params = inbox_query(types, category, section, payload, actor=actor, object=object,
                             max_id=max_id, since_id=since_id, reason=reason,
                             participating=participating)
        path = user_path(user, "/notifications/unread-count")
        return cast(UnreadCount, await self._call("GET", path, params=params))

    async def mark_read(
        self, *, user: str | None = None, ids: Sequence[str] | None = None, all: bool = False,
        match: Mapping[str, str] | None = None, types: Sequence[str] | None = None,
        category: str | None = None, section: str | None = None,
    ) -> int:
        """Mark read by ``ids``, ``all=True`` (maybe narrowed) or ``match``; returns how many."""
        body = read_body(ids, all, match, types, category, section)
        path = user_path(user, "/notifications/read")
        answer = await self._call("POST", path, body=body)
        return cast(int, answer["updated"])

    async def mark_unread(self, ids: Sequence[str], *, user: str | None = None) -> int:
        path = user_path(user, "/notifications/unread")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def archive(self, ids: Sequence[str], *, user: str | None = None) -> int:
        """Archive (\"done\") these notifications' display groups: out of the
        inbox and its unread count; returns how many changed."""
        path = user_path(user, "/notifications/archive")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def unarchive(self, ids: Sequence[str], *, user: str | None = None) -> int:
        """Back in the inbox; returns how many changed."""
        path = user_path(user, "/notifications/unarchive")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def save(self, ids: Sequence[str], *, user: str | None = None) -> int:
        """Save these notifications' display groups (kept by retention and the
        cap, listed under ``state=\"saved\"``); returns how many changed."""
        path = user_path(user, "/notifications/save")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def unsave(self, ids: Sequence[str], *, user: str | None = None) -> int:
        """No longer saved; returns how many changed."""
        path = user_path(user, "/notifications/unsave")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def unsnooze(self, ids: Sequence[str], *, user: str | None = None) -> int:
        """Back in the inbox at once; returns how many changed."""
        path = user_path(user, "/notifications/unsnooze")
        answer = await self._call("POST", path, body={"ids": list(ids)})
        return cast(int, answer["updated"])

    async def snooze(self, ids: Sequence[str], until: datetime | str, *,
               user: str | None = None) -> int:
        """Snooze these notifications' display groups until ``until`` (an aware datetime or
        RFC 3339 text, in the future): out of the inbox until then, then back unread;
        returns how many changed."""
        path = user_path(user, "/notifications/snooze")
        answer = await self._call("POST", path, body=snooze_body(ids, until))
        return cast(int, answer["updated"])

    async def mark_read_up_to(self, id: str, *, user: str | None = None) -> int:
        """Mark read everything at or below notification ``id`` in the inbox; returns how
        many unread items that covered."""
        path = user_path(user, "/notifications/read-up-to")
        answer = await self._call("POST", path, body={"id": id})
        return cast(int, answer["updated"])

    async def bundle_members(
        self, id: str, *, user: str | None = None, limit: int | None = None,
        cursor: str | None = None, locale: str | None = None,
    ) -> Page[BundleMember]:
        """The members of notification ``id``'s display group (a bundle opened), newest
        first, each with its own title and read state; pass ``next_cursor`` back as
        ``cursor``."""
        params = query(limit=limit, cursor=cursor, locale=locale)
        path = user_path(user, f"/notifications/{quote(id, safe='')}/members")
        return cast(Page[BundleMember], await self._call("GET", path, params=params))

    async def export_user(self, *, user: str | None = None) -> list[dict[str, Any]]:
        """Everything the server keeps about the user (``GET …/export``): its JSON Lines as
        records, each with its ``kind``."""
        response = await self._http.get(user_path(user, "/export"))
        if not response.is_success:
            raise error_of(response)
        return [json.loads(line) for line in response.text.splitlines() if line]

    async def erase_user(self, user: str) -> Accepted:
        """Erase everything the server keeps about ``user`` (``DELETE /v1/users/{user}``,
        server key): ``{"id", "status": "accepted"}``, ``id`` naming the job that does it."""
        return cast(Accepted, await self._call("DELETE", user_path(user, "")))

    async def delete_notification(self, id: str, *, user: str | None = None) -> None:
        """Remove this user's notification ``id`` (other recipients keep theirs)."""
        await self._call("DELETE", user_path(user, f"/notifications/{quote(id, safe='')}"))

    async def mark_seen(
        self, *, user: str | None = None, until: datetime | str | None = None,
    ) -> str:
        """Move the seen watermark (to now, or ``until``); returns where it is now."""
        path = user_path(user, "/notifications/seen")
        answer = await self._call("POST", path, body=seen_body(until))
        return cast(str, answer["seen_until"])

    # subscriptions, follows, timeline, preferences

    async def subscriptions(
        self, *, user: str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> Page[Subscription]:
        params = query(limit=limit, cursor=cursor)
        path = user_path(user, "/subscriptions")
        return cast(Page[Subscription], await self._call("GET", path, params=params))

    async def add_subscription(
        self, *, user: str | None = None, type: str = "*", object: str = "*",
        channels: Sequence[str] = ("web",), expires_at: datetime | str | None = None,
    ) -> str:
        """Subscribe to ``type`` (or ``*``) on ``object`` (or ``*``), until ``expires_at``
        (an aware datetime or RFC 3339 text; None: for good); returns the id."""
        body = subscription_body(type, object, channels, expires_at)
        answer = await self._call("POST", user_path(user, "/subscriptions"), body=body)
        return cast(str, answer["id"])

    async def delete_subscription(
        self, subscription_id: str, *, user: str | None = None,
    ) -> None:
        path = user_path(user, f"/subscriptions/{quote(subscription_id, safe='')}")
        await self._call("DELETE", path)

    async def push_public_key(self) -> str:
        """The server's VAPID public key, for ``pushManager.subscribe`` (NotFound: no Web Push
        on this server)."""
        return cast(str, (await self._call("GET", "/v1/push/public-key"))["public_key"])

    async def add_push_subscription(
        self, subscription: Mapping[str, Any], *, user: str | None = None,
    ) -> dict[str, Any]:
        """Store a browser's ``PushSubscription`` JSON (``endpoint``, ``keys.p256dh``,
        ``keys.auth``); returns the stored subscription (its ``id``)."""
        path = user_path(user, "/push-subscriptions")
        return cast(dict[str, Any], await self._call("POST", path, body=dict(subscription)))

    async def push_subscriptions(self, *, user: str | None = None) -> list[dict[str, Any]]:
        answer = await self._call("GET", user_path(user, "/push-subscriptions"))
        return cast(list[dict[str, Any]], answer["items"])

    async def delete_push_subscription(
        self, subscription_id: int | str, *, user: str | None = None,
    ) -> None:
        path = user_path(user, f"/push-subscriptions/{quote(str(subscription_id), safe='')}")
        await self._call("DELETE", path)

    async def follow(self, other: str, *, user: str | None = None) -> FollowState:
        path = user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, await self._call("PUT", path))

    async def unfollow(self, other: str, *, user: str | None = None) -> FollowState:
        path = user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, await self._call("DELETE", path))

    async def following(
        self, *, user: str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> Page[Follow]:
        """The users this user follows."""
        params = query(limit=limit, cursor=cursor)
        path = user_path(user, "/follows")
        return cast(Page[Follow], await self._call("GET", path, params=params))

    async def followers(
        self, *, user: str | None = None, limit: int | None = None, cursor: str | None = None,
    ) -> Page[Follow]:
        params = query(limit=limit, cursor=cursor)
        path = user_path(user, "/followers")
        return cast(Page[Follow], await self._call("GET", path, params=params))

    async def timeline(
        self, *, user: str | None = None, limit: int | None = None, cursor: str | None = None,
        max_id: int | str | None = None, since_id: int | str | None = None,
    ) -> Page[TimelineEvent]:
        """Events of the users followed, newest first. Page older with ``next_cursor`` (or
        ``max_id``, the last id shown); ``since_id`` (the first id shown) gives what is newer."""
        params = query(limit=limit, cursor=cursor, max_id=max_id, since_id=since_id)
        path = user_path(user, "/timeline")
        return cast(Page[TimelineEvent], await self._call("GET", path, params=params))

    async def iter_timeline(
        self, *, user: str | None = None, page_size: int = 100,
        since_id: int | str | None = None,
    ) -> AsyncIterator[TimelineEvent]:
        """Every entry of the timeline (newer than ``since_id``, if given), following cursors
        to the end."""
        cursor = None
        while True:
            page = await self.timeline(user=user, limit=page_size, cursor=cursor,
                                       since_id=since_id)
            for item in page["items"]:
                yield item
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def get_preferences(self, *, user: str | None = None) -> Preferences:
        path = user_path(user, "/preferences")
        return cast(Preferences, await self._call("GET", path))

    async def put_preferences(
        self, preferences: Mapping[str, Any], *, user: str | None = None,
    ) -> Preferences:
        """Replace the preferences (``email``, ``channels``, ``muted``, ``locale``)."""
        path = user_path(user, "/preferences")
        return cast(Preferences, await self._call("PUT", path, body=dict(preferences)))

    # groups (server key), for types with ``privacy = "group:NAME"``

    async def add_member(self, group: str, member: str) -> Membership:
        path = f"/v1/groups/{quote(group, safe='')}/members/{quote(member, safe='')}"
        return cast(Membership, await self._call("PUT", path))

    async def remove_member(self, group: str, member: str) -> Membership:
        path = f"/v1/groups/{quote(group, safe='')}/members/{quote(member, safe='')}"
        return cast(Membership, await self._call("DELETE", path))

    async def members(
        self, group: str, *, limit: int | None = None, cursor: str | None = None,
    ) -> Page[Member]:
        """A group's members by user id."""
        params = query(limit=limit, cursor=cursor)
        path = f"/v1/groups/{quote(group, safe='')}/members"
        return cast(Page[Member], await self._call("GET", path, params=params))

    # operations

    async def healthz(self) -> dict[str, str]:
        return cast(dict[str, str], await self._call("GET", "/healthz"))

    async def readyz(self) -> dict[str, str]:
        """``{"status": "ready"}``; raises :class:`ApiError` (503) when the store is down."""
        return cast(dict[str, str], await self._call("GET", "/readyz"))

    async def metrics(self) -> str:
        """The Prometheus text."""
        response = await self._http.get("/metrics", headers={"Accept": "text/plain"})
        if not response.is_success:
            raise error_of(response)
        return response.text
