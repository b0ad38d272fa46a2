"""A Python client for the HTTP API v1, on httpx: :class:`Client` and :class:`AsyncClient`.

Both have the same methods; the async ones are coroutines (``stream`` an async iterator)::

    from tidings.client import Client

    with Client("http://127.0.0.1:8000", token="server-key") as tidings:
        tidings.publish("mention", actor="alice", recipients=["bob"])
        print(tidings.unread_count(user="bob"))        # {'count': 1, 'display': '1'}

    with Client("http://127.0.0.1:8000", token=bob_token) as inbox:   # a user token
        for item in inbox.iter_notifications(unread=True):            # /v1/me/notifications
            print(item["title"])

Methods on a user's data take ``user=``: ``/v1/users/{user}/…`` when given, ``/v1/me/…`` (the
token's own user) when left out. Answers are the API's JSON, typed as :class:`typing.TypedDict`
s; an error answer raises :class:`ApiError` with the API's ``code``, ``message`` and ``details``.
Network failures are httpx's own exceptions.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, cast
from urllib.parse import quote

import anyio
import httpx

from tidings import client_base as _base
from tidings.client_base import (
    DEFAULT_TIMEOUT,
    Accepted,
    ApiError,
    BatchItem,
    Bounce,
    EventTypeInfo,
    Follow,
    FollowState,
    Notification,
    Page,
    Preferences,
    SseEvent,
    Subscription,
    TimelineEvent,
    Token,
    UnreadCount,
)

# -- the synchronous client -------------------------------------------------------------------


class Client(_base.ClientBase):
    """A synchronous client. ``token`` is a server key or a user token.

    Use it as a context manager, or call :meth:`close`. ``transport`` is for tests
    (``httpx.MockTransport``) or custom networking.
    """

    def __init__(self, base_url: str, token: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, token)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers,
                                  timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, method: str, path: str, *, params: Mapping[str, str | int] | None = None,
              body: Any = None) -> Any:
        return _base.parse_answer(self._http.request(method, path, params=params, json=body))

    # events and types (server key)

    def publish(self, type: str, *, actor: str | None = None, object: str | None = None,
                recipients: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
                payload: Mapping[str, Any] | None = None,
                idempotency_key: str | None = None) -> Accepted:
        """Publish one event; the answer means it is durable."""
        body = _base.event_body(type, actor, object, recipients, exclude, payload, idempotency_key)
        return cast(Accepted, self._call("POST", "/v1/events", body=body))

    def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> list[BatchItem]:
        """Publish up to 1,000 events; each is answered on its own (accepted or its error)."""
        answer = self._call("POST", "/v1/events/batch", body={"events": [dict(e) for e in events]})
        return cast(list[BatchItem], answer["items"])

    def retract(self, *, type: str | None = None, actor: str | None = None,
                object: str | None = None) -> int:
        """Remove matching notifications from every inbox; returns how many."""
        body = _base.retraction_body(type, actor, object)
        answer = self._call("POST", "/v1/retractions", body=body)
        return cast(int, answer["removed"])

    def types(self) -> list[EventTypeInfo]:
        return cast(list[EventTypeInfo], self._call("GET", "/v1/types")["items"])

    def get_type(self, name: str) -> EventTypeInfo:
        return cast(EventTypeInfo, self._call("GET", f"/v1/types/{quote(name, safe='')}"))

    def put_type(self, name: str, definition: Mapping[str, Any]) -> EventTypeInfo:
        """Declare or replace an event type (``category``, ``bundle``, ``templates``, …)."""
        path = f"/v1/types/{quote(name, safe='')}"
        return cast(EventTypeInfo, self._call("PUT", path, body=dict(definition)))

    def mint_token(self, user: str, *, ttl_seconds: int | None = None) -> Token:
        body: dict[str, Any] = {"user": user}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return cast(Token, self._call("POST", "/v1/tokens", body=body))

    def report_bounce(self, address: str, *, reason: str | None = None) -> Bounce:
        """A hard bounce: mail to ``address`` stops (web delivery goes on)."""
        body = _base.bounce_body(address, reason)
        return cast(Bounce, self._call("POST", "/v1/bounces", body=body))

    def clear_bounce(self, address: str) -> Bounce:
        """``address`` works again: mail resumes."""
        return cast(Bounce, self._call("DELETE", f"/v1/bounces/{quote(address, safe='@')}"))

    # a user's inbox

    def notifications(self, *, user: str | None = None, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None,
                      unread: bool | None = None, limit: int | None = None,
                      cursor: str | None = None, locale: str | None = None
                      ) -> Page[Notification]:
        """One page of the inbox, newest first; pass ``next_cursor`` back as ``cursor``."""
        params = _base.inbox_query(types, category, section, unread=unread, limit=limit,
                               cursor=cursor, locale=locale)
        return cast(Page[Notification],
                    self._call("GET", _base.user_path(user, "/notifications"), params=params))

    def iter_notifications(self, *, user: str | None = None, types: Sequence[str] | None = None,
                           category: str | None = None, section: str | None = None,
                           unread: bool | None = None, page_size: int = 100,
                           locale: str | None = None) -> Iterator[Notification]:
        """Every item of the inbox, following cursors to the end."""
        cursor = None
        while True:
            page = self.notifications(user=user, types=types, category=category,
                                      section=section, unread=unread, limit=page_size,
                                      cursor=cursor, locale=locale)
            yield from page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def unread_count(self, *, user: str | None = None, types: Sequence[str] | None = None,
                     category: str | None = None, section: str | None = None) -> UnreadCount:
        params = _base.inbox_query(types, category, section)
        path = _base.user_path(user, "/notifications/unread-count")
        return cast(UnreadCount, self._call("GET", path, params=params))

    def mark_read(self, *, user: str | None = None, ids: Sequence[str] | None = None,
                  all: bool = False, match: Mapping[str, str] | None = None,
                  types: Sequence[str] | None = None, category: str | None = None,
                  section: str | None = None) -> int:
        """Mark read by ``ids``, ``all=True`` (maybe narrowed) or ``match``; returns how many."""
        body = _base.read_body(ids, all, match, types, category, section)
        answer = self._call("POST", _base.user_path(user, "/notifications/read"), body=body)
        return cast(int, answer["updated"])

    def mark_unread(self, ids: Sequence[str], *, user: str | None = None) -> int:
        path = _base.user_path(user, "/notifications/unread")
        return cast(int, self._call("POST", path, body={"ids": list(ids)})["updated"])

    def mark_seen(self, *, user: str | None = None, until: datetime | str | None = None) -> str:
        """Move the seen watermark (to now, or ``until``); returns where it is now."""
        path = _base.user_path(user, "/notifications/seen")
        return cast(str, self._call("POST", path, body=_base.seen_body(until))["seen_until"])

    def stream(self, *, user: str | None = None, locale: str | None = None,
               timeout: float | None = None) -> Iterator[SseEvent]:
        """The live stream as ``(event, data)`` pairs: ``("unread", {"count", "display"})``,
        ``("notification", item)``. With ``timeout``, iteration ends after that many seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        path = _base.user_path(user, "/stream")
        with self._http.stream("GET", path, params=_base.query(locale=locale),
                               headers={"Accept": "text/event-stream"},
                               timeout=_base.stream_timeout(timeout)) as response:
            if not response.is_success:
                response.read()
                raise _base.error_of(response)
            timer = _base.shut_at_deadline(response, timeout) if timeout is not None else None
            parser = _base.SseParser()
            try:
                for line in response.iter_lines():
                    if deadline is not None and time.monotonic() >= deadline:
                        return
                    frame = parser.feed(line)
                    if frame is not None:
                        yield frame
            except httpx.TransportError:
                if deadline is None or time.monotonic() < deadline:
                    raise
            finally:
                if timer is not None:
                    timer.cancel()

    # subscriptions, follows, timeline, preferences

    def subscriptions(self, *, user: str | None = None, limit: int | None = None,
                      cursor: str | None = None) -> Page[Subscription]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[Subscription],
                    self._call("GET", _base.user_path(user, "/subscriptions"), params=params))

    def add_subscription(self, *, user: str | None = None, type: str = "*", object: str = "*",
                         channels: Sequence[str] = ("web",)) -> str:
        """Subscribe to ``type`` (or ``*``) on ``object`` (or ``*``); returns the id."""
        body = {"type": type, "object": object, "channels": list(channels)}
        answer = self._call("POST", _base.user_path(user, "/subscriptions"), body=body)
        return cast(str, answer["id"])

    def delete_subscription(self, subscription_id: str, *, user: str | None = None) -> None:
        path = _base.user_path(user, f"/subscriptions/{quote(subscription_id, safe='')}")
        self._call("DELETE", path)

    def follow(self, other: str, *, user: str | None = None) -> FollowState:
        path = _base.user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, self._call("PUT", path))

    def unfollow(self, other: str, *, user: str | None = None) -> FollowState:
        path = _base.user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, self._call("DELETE", path))

    def following(self, *, user: str | None = None, limit: int | None = None,
                  cursor: str | None = None) -> Page[Follow]:
        """The users this user follows."""
        params = _base.query(limit=limit, cursor=cursor)
        path = _base.user_path(user, "/follows")
        return cast(Page[Follow], self._call("GET", path, params=params))

    def followers(self, *, user: str | None = None, limit: int | None = None,
                  cursor: str | None = None) -> Page[Follow]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[Follow],
                    self._call("GET", _base.user_path(user, "/followers"), params=params))

    def timeline(self, *, user: str | None = None, limit: int | None = None,
                 cursor: str | None = None) -> Page[TimelineEvent]:
        """Events of the users followed, newest first."""
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[TimelineEvent],
                    self._call("GET", _base.user_path(user, "/timeline"), params=params))

    def get_preferences(self, *, user: str | None = None) -> Preferences:
        return cast(Preferences, self._call("GET", _base.user_path(user, "/preferences")))

    def put_preferences(self, preferences: Mapping[str, Any], *, user: str | None = None
                        ) -> Preferences:
        """Replace the preferences (``email``, ``channels``, ``muted``, ``locale``)."""
        path = _base.user_path(user, "/preferences")
        return cast(Preferences, self._call("PUT", path, body=dict(preferences)))

    # operations

    def healthz(self) -> dict[str, str]:
        return cast(dict[str, str], self._call("GET", "/healthz"))

    def readyz(self) -> dict[str, str]:
        """``{"status": "ready"}``; raises :class:`ApiError` (503) when the store is down."""
        return cast(dict[str, str], self._call("GET", "/readyz"))

    def metrics(self) -> str:
        """The Prometheus text."""
        response = self._http.get("/metrics", headers={"Accept": "text/plain"})
        if not response.is_success:
            raise _base.error_of(response)
        return response.text


# -- the asynchronous client ------------------------------------------------------------------


class AsyncClient(_base.ClientBase):
    """The asynchronous twin of :class:`Client` (same methods, awaited; ``stream`` is an
    async iterator: close it with ``contextlib.aclosing`` when leaving it early)."""

    def __init__(self, base_url: str, token: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, token)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers,
                                       timeout=timeout, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, *,
                    params: Mapping[str, str | int] | None = None, body: Any = None) -> Any:
        return _base.parse_answer(await self._http.request(method, path, params=params, json=body))

    async def publish(self, type: str, *, actor: str | None = None, object: str | None = None,
                      recipients: Sequence[str] | None = None,
                      exclude: Sequence[str] | None = None,
                      payload: Mapping[str, Any] | None = None,
                      idempotency_key: str | None = None) -> Accepted:
        body = _base.event_body(type, actor, object, recipients, exclude, payload, idempotency_key)
        return cast(Accepted, await self._call("POST", "/v1/events", body=body))

    async def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> list[BatchItem]:
        body = {"events": [dict(e) for e in events]}
        return cast(list[BatchItem], (await self._call("POST", "/v1/events/batch",
                                                       body=body))["items"])

    async def retract(self, *, type: str | None = None, actor: str | None = None,
                      object: str | None = None) -> int:
        body = _base.retraction_body(type, actor, object)
        return cast(int, (await self._call("POST", "/v1/retractions", body=body))["removed"])

    async def types(self) -> list[EventTypeInfo]:
        return cast(list[EventTypeInfo], (await self._call("GET", "/v1/types"))["items"])

    async def get_type(self, name: str) -> EventTypeInfo:
        return cast(EventTypeInfo, await self._call("GET", f"/v1/types/{quote(name, safe='')}"))

    async def put_type(self, name: str, definition: Mapping[str, Any]) -> EventTypeInfo:
        path = f"/v1/types/{quote(name, safe='')}"
        return cast(EventTypeInfo, await self._call("PUT", path, body=dict(definition)))

    async def mint_token(self, user: str, *, ttl_seconds: int | None = None) -> Token:
        body: dict[str, Any] = {"user": user}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return cast(Token, await self._call("POST", "/v1/tokens", body=body))

    async def report_bounce(self, address: str, *, reason: str | None = None) -> Bounce:
        body = _base.bounce_body(address, reason)
        return cast(Bounce, await self._call("POST", "/v1/bounces", body=body))

    async def clear_bounce(self, address: str) -> Bounce:
        path = f"/v1/bounces/{quote(address, safe='@')}"
        return cast(Bounce, await self._call("DELETE", path))

    async def notifications(self, *, user: str | None = None,
                            types: Sequence[str] | None = None, category: str | None = None,
                            section: str | None = None, unread: bool | None = None,
                            limit: int | None = None, cursor: str | None = None,
                            locale: str | None = None) -> Page[Notification]:
        params = _base.inbox_query(types, category, section, unread=unread, limit=limit,
                               cursor=cursor, locale=locale)
        return cast(Page[Notification],
                    await self._call("GET", _base.user_path(user, "/notifications"), params=params))

    async def iter_notifications(self, *, user: str | None = None,
                                 types: Sequence[str] | None = None,
                                 category: str | None = None, section: str | None = None,
                                 unread: bool | None = None, page_size: int = 100,
                                 locale: str | None = None) -> AsyncIterator[Notification]:
        cursor = None
        while True:
            page = await self.notifications(user=user, types=types, category=category,
                                            section=section, unread=unread, limit=page_size,
                                            cursor=cursor, locale=locale)
            for item in page["items"]:
                yield item
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def unread_count(self, *, user: str | None = None,
                           types: Sequence[str] | None = None, category: str | None = None,
                           section: str | None = None) -> UnreadCount:
        params = _base.inbox_query(types, category, section)
        path = _base.user_path(user, "/notifications/unread-count")
        return cast(UnreadCount, await self._call("GET", path, params=params))

    async def mark_read(self, *, user: str | None = None, ids: Sequence[str] | None = None,
                        all: bool = False, match: Mapping[str, str] | None = None,
                        types: Sequence[str] | None = None, category: str | None = None,
                        section: str | None = None) -> int:
        body = _base.read_body(ids, all, match, types, category, section)
        answer = await self._call("POST", _base.user_path(user, "/notifications/read"), body=body)
        return cast(int, answer["updated"])

    async def mark_unread(self, ids: Sequence[str], *, user: str | None = None) -> int:
        path = _base.user_path(user, "/notifications/unread")
        return cast(int, (await self._call("POST", path, body={"ids": list(ids)}))["updated"])

    async def mark_seen(self, *, user: str | None = None,
                        until: datetime | str | None = None) -> str:
        path = _base.user_path(user, "/notifications/seen")
        answer = await self._call("POST", path, body=_base.seen_body(until))
        return cast(str, answer["seen_until"])

    async def stream(self, *, user: str | None = None, locale: str | None = None,
                     timeout: float | None = None) -> AsyncIterator[SseEvent]:
        """See :meth:`Client.stream`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        path = _base.user_path(user, "/stream")
        async with self._http.stream("GET", path, params=_base.query(locale=locale),
                                     headers={"Accept": "text/event-stream"},
                                     timeout=_base.stream_timeout(timeout)) as response:
            if not response.is_success:
                await response.aread()
                raise _base.error_of(response)
            lines = response.aiter_lines()
            parser = _base.SseParser()
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return
                with anyio.move_on_after(remaining) as scope:
                    try:
                        line = await anext(lines)
                    except StopAsyncIteration:
                        return
                if scope.cancelled_caught:
                    return
                frame = parser.feed(line)
                if frame is not None:
                    yield frame

    async def subscriptions(self, *, user: str | None = None, limit: int | None = None,
                            cursor: str | None = None) -> Page[Subscription]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[Subscription],
                    await self._call("GET", _base.user_path(user, "/subscriptions"), params=params))

    async def add_subscription(self, *, user: str | None = None, type: str = "*",
                               object: str = "*", channels: Sequence[str] = ("web",)) -> str:
        body = {"type": type, "object": object, "channels": list(channels)}
        answer = await self._call("POST", _base.user_path(user, "/subscriptions"), body=body)
        return cast(str, answer["id"])

    async def delete_subscription(self, subscription_id: str, *,
                                  user: str | None = None) -> None:
        path = _base.user_path(user, f"/subscriptions/{quote(subscription_id, safe='')}")
        await self._call("DELETE", path)

    async def follow(self, other: str, *, user: str | None = None) -> FollowState:
        path = _base.user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, await self._call("PUT", path))

    async def unfollow(self, other: str, *, user: str | None = None) -> FollowState:
        path = _base.user_path(user, f"/follows/{quote(other, safe='')}")
        return cast(FollowState, await self._call("DELETE", path))

    async def following(self, *, user: str | None = None, limit: int | None = None,
                        cursor: str | None = None) -> Page[Follow]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[Follow],
                    await self._call("GET", _base.user_path(user, "/follows"), params=params))

    async def followers(self, *, user: str | None = None, limit: int | None = None,
                        cursor: str | None = None) -> Page[Follow]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[Follow],
                    await self._call("GET", _base.user_path(user, "/followers"), params=params))

    async def timeline(self, *, user: str | None = None, limit: int | None = None,
                       cursor: str | None = None) -> Page[TimelineEvent]:
        params = _base.query(limit=limit, cursor=cursor)
        return cast(Page[TimelineEvent],
                    await self._call("GET", _base.user_path(user, "/timeline"), params=params))

    async def get_preferences(self, *, user: str | None = None) -> Preferences:
        return cast(Preferences, await self._call("GET", _base.user_path(user, "/preferences")))

    async def put_preferences(self, preferences: Mapping[str, Any], *,
                              user: str | None = None) -> Preferences:
        path = _base.user_path(user, "/preferences")
        return cast(Preferences, await self._call("PUT", path, body=dict(preferences)))

    async def healthz(self) -> dict[str, str]:
        return cast(dict[str, str], await self._call("GET", "/healthz"))

    async def readyz(self) -> dict[str, str]:
        return cast(dict[str, str], await self._call("GET", "/readyz"))

    async def metrics(self) -> str:
        response = await self._http.get("/metrics", headers={"Accept": "text/plain"})
        if not response.is_success:
            raise _base.error_of(response)
        return response.text


__all__ = [
    "Accepted",
    "ApiError",
    "AsyncClient",
    "BatchItem",
    "Bounce",
    "Client",
    "EventTypeInfo",
    "Follow",
    "FollowState",
    "Notification",
    "Page",
    "Preferences",
    "SseEvent",
    "Subscription",
    "TimelineEvent",
    "Token",
    "UnreadCount",
]
