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
Network failures are httpx's own exceptions. A 429 or 503 to a request that is safe to repeat
(GET, PUT, DELETE, a POST with an idempotency key) is retried after its ``Retry-After``, as
the client's :class:`Retry` says (three requests at most, ten seconds' wait at most, by default).

The client is written once: :mod:`tidings.client._async` is the source and
:mod:`tidings.client._sync` is generated from it by ``scripts/unasync.py``. The answers' types
(:mod:`~tidings.client._models`), :class:`ApiError` (:mod:`~tidings.client._errors`), the
spelling of requests (:mod:`~tidings.client._requests`) and the SSE parser
(:mod:`~tidings.client._sse`) are shared by both. The client's modules import httpx, anyio and
:mod:`tidings.exceptions` only, never the engine, SQLAlchemy or FastAPI.
"""

from tidings.client._async import AsyncClient
from tidings.client._errors import ApiError
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
    SseEvent,
    Subscription,
    TimelineEvent,
    Token,
    TypeList,
    UnreadCount,
)
from tidings.client._retry import Retry
from tidings.client._sync import Client

__all__ = [
    "Accepted",
    "ApiError",
    "AsyncClient",
    "BatchItem",
    "Bounce",
    "BundleMember",
    "Client",
    "EventTypeInfo",
    "Follow",
    "FollowState",
    "Member",
    "Membership",
    "Notification",
    "Page",
    "Preferences",
    "Retry",
    "SseEvent",
    "Subscription",
    "TimelineEvent",
    "Token",
    "TypeList",
    "UnreadCount",
]
