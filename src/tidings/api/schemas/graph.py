"""Subscriptions, follows and the timeline they feed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from tidings.api.schemas.common import Channel, Strict, Timestamp
from tidings.api.schemas.ids import ObjectKey, TypeName
from tidings.clock import to_rfc3339
from tidings.domain.views import TimelineEntry


def _web() -> list[Channel]:
    return ["web"]


class SubscriptionIn(Strict):
    type: TypeName | Literal["*"] = "*"
    object: ObjectKey = "*"
    channels: list[Channel] = Field(default_factory=_web, min_length=1)
    expires_at: Timestamp | None = Field(None, description=(
        "When the subscription stops matching (RFC 3339, after now); none: for good. "
        "Subscribing again to the same type and object replaces it."))


class Created(BaseModel):
    id: str


class SubscriptionOut(BaseModel):
    id: str
    type: str
    object: str
    channels: list[str]
    created_at: str
    expires_at: str | None = None


class SubscriptionPage(BaseModel):
    items: list[SubscriptionOut]
    next_cursor: str | None


class FollowOut(BaseModel):
    user: str
    since: str


class FollowPage(BaseModel):
    items: list[FollowOut]
    next_cursor: str | None


class Following(BaseModel):
    user: str
    other: str
    following: bool


class TimelineEvent(BaseModel):
    id: str
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    created_at: str


class TimelinePage(BaseModel):
    items: list[TimelineEvent]
    next_cursor: str | None


def timeline_item(entry: TimelineEntry) -> dict[str, Any]:
    """A timeline entry as the API shows it (a :class:`TimelineEvent`): ids as strings,
    times in RFC 3339."""
    return {"id": str(entry.id), "type": entry.type, "actor": entry.actor,
            "object": entry.object, "payload": entry.payload,
            "created_at": to_rfc3339(entry.created_at)}
