"""The client's shared parts under their former module name, kept so that imports of
``tidings.client_base`` go on working. They live in :mod:`tidings.client` now: the answers'
types in ``_models``, :class:`ApiError` in ``_errors``, requests in ``_requests``, SSE in
``_sse``."""

from tidings.client._errors import ApiError, error_of, parse_answer
from tidings.client._models import (
    Accepted,
    BatchItem,
    Bounce,
    ErrorBody,
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
    user_path,
)
from tidings.client._sse import SseParser, shut_at_deadline, stream_timeout

__all__ = [
    "DEFAULT_TIMEOUT",
    "Accepted",
    "ApiError",
    "BatchItem",
    "Bounce",
    "ClientBase",
    "ErrorBody",
    "EventTypeInfo",
    "Follow",
    "FollowState",
    "Notification",
    "Page",
    "Preferences",
    "SseEvent",
    "SseParser",
    "Subscription",
    "TimelineEvent",
    "Token",
    "UnreadCount",
    "bounce_body",
    "error_of",
    "event_body",
    "inbox_query",
    "parse_answer",
    "query",
    "read_body",
    "retraction_body",
    "seen_body",
    "shut_at_deadline",
    "stream_timeout",
    "user_path",
]
