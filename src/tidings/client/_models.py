"""The API's answers as the client returns them: JSON objects typed as :class:`TypedDict` s,
declared once for :class:`~tidings.client.Client` and :class:`~tidings.client.AsyncClient`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, Literal, TypedDict, TypeVar

T = TypeVar("T")


class Page(TypedDict, Generic[T]):
    items: list[T]
    next_cursor: str | None


class Accepted(TypedDict):
    id: str
    status: Literal["accepted"]


class ErrorBody(TypedDict):
    code: str
    message: str
    details: list[dict[str, Any]]


class BatchItem(TypedDict, total=False):
    index: int
    status: Literal["accepted", "error"]
    id: str | None
    error: ErrorBody | None


class EventTypeInfo(TypedDict):
    name: str
    category: str
    section: str
    priority: int
    bundle: str
    channels: list[str]
    audience: list[str]
    templates: dict[str, Any]
    retention_days: int | None
    mandatory: bool
    label: str
    description: str | None
    queryable: list[str]
    privacy: str | None
    email_delay_seconds: int
    email_unless_read: bool
    push_delay_seconds: int
    mentions: str | None


class TypeList(list[EventTypeInfo]):
    """``GET /v1/types``: the declared types, iterated and indexed as a list, with the rest of
    the answer beside them: ``items`` (the same types) and ``enabled_channels`` (the channels
    the server delivers over)."""

    def __init__(self, items: Iterable[EventTypeInfo], enabled_channels: Iterable[str]
                 ) -> None:
        super().__init__(items)
        self.enabled_channels = list(enabled_channels)

    @property
    def items(self) -> list[EventTypeInfo]:
        return list(self)


class Token(TypedDict):
    token: str
    expires_at: str


Reason = Literal["recipient", "mention", "subscribed", "following", "group"]


class Notification(TypedDict):
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
    archived: bool
    saved: bool
    snoozed_until: str | None
    # why it arrived; None for notifications delivered before reasons were kept
    reason: Reason | None


class BundleMember(TypedDict):
    """A member of a display group (``Client.bundle_members``): its own event and read state."""

    id: str
    actor: str | None
    created_at: str
    read: bool
    title: str
    payload: dict[str, Any]
    reason: Reason | None


class UnreadCount(TypedDict):
    count: int
    display: str
    unseen: int  # of the unread, those newer than the seen watermark (what a badge shows)
    unseen_display: str


class Subscription(TypedDict):
    id: str
    type: str
    object: str
    channels: list[str]
    created_at: str
    expires_at: str | None


class Follow(TypedDict):
    user: str
    since: str


class Member(TypedDict):
    user: str
    since: str


class Membership(TypedDict):
    group: str
    user: str
    member: bool


class FollowState(TypedDict):
    user: str
    other: str
    following: bool


class TimelineEvent(TypedDict):
    id: str
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    created_at: str


class Bounce(TypedDict):
    address: str
    bounced: bool


Preferences = dict[str, Any]


class SseEvent(tuple[str, Any]):
    """One event of the live stream: an ``(event, data)`` pair (it unpacks and compares as
    one), with the stream's ``id`` for it (what ``Last-Event-ID`` resumes from; None where
    the server sent none)."""

    id: str | None

    def __new__(cls, event: str, data: Any, id: str | None = None) -> SseEvent:
        pair = super().__new__(cls, (event, data))
        pair.id = id
        return pair

    @property
    def event(self) -> str:
        name: str = self[0]
        return name

    @property
    def data(self) -> Any:
        return self[1]
