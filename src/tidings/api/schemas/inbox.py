"""A user's inbox: notifications, the unread count, and marking read, unread and seen."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from tidings.api.schemas.common import Section, Strict, Timestamp, at_least_one, at_least_one_schema
from tidings.api.schemas.ids import NotificationId, ObjectKey, TypeName, UserId

Reason = Literal["recipient", "mention", "subscribed", "following", "group"]


class NotificationOut(BaseModel):
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
    # additions to v1 (the inbox's triage): the reader's own state of the item
    archived: bool = Field(False, description="Archived (\"done\"): out of the inbox, listed "
                                              "under `state=archived`.")
    saved: bool = Field(False, description="Saved: listed under `state=saved` too; retention "
                                           "and the inbox cap keep it.")
    snoozed_until: str | None = Field(None, description="While snoozed (out of the inbox, "
                                                        "listed under `state=snoozed`): when it "
                                                        "comes back, unread (RFC 3339).")
    reason: Reason | None = Field(None, description=(
        "Why it arrived: the most personal of the audience rules that reached the user "
        "(a bundle: the most personal among its members); null for notifications delivered "
        "before reasons were kept."))


class NotificationPage(BaseModel):
    items: list[NotificationOut]
    next_cursor: str | None


class MemberOut(BaseModel):
    """A member of a display group: its own event, title in the singular, read state."""

    id: str
    actor: str | None
    created_at: str
    read: bool
    title: str
    payload: dict[str, Any]
    reason: Reason | None = None


class MemberPage(BaseModel):
    items: list[MemberOut]
    next_cursor: str | None


class UnreadCountOut(BaseModel):
    count: int
    display: str
    # additions to v1 (so not required): what a badge shows, as in Echo
    unseen: int = Field(0, description="Of the unread, those not yet seen (newer than the seen "
                                       "watermark), capped like `count`: what a badge shows.")
    unseen_display: str = "0"


class MatchIn(Strict):
    """At least one of the three, not null."""

    model_config = ConfigDict(json_schema_extra=at_least_one_schema("actor", "type", "object"))
    actor: UserId | None = None
    type: TypeName | None = None
    object: ObjectKey | None = None

    @model_validator(mode="after")
    def _given(self) -> MatchIn:
        at_least_one(self, ("actor", "type", "object"))
        return self


class ReadIds(Strict):
    """Mark these notifications (and their bundles) read."""

    ids: list[NotificationId] = Field(max_length=1000)


class ReadAll(Strict):
    """Mark everything read, or everything of some types, of a category or of a section."""

    model_config = ConfigDict(json_schema_extra={"maxProperties": 2})
    all: Literal[True]
    types: list[TypeName] | None = None
    category: TypeName | None = None
    section: Section | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> ReadAll:
        if len(self.model_fields_set - {"all"}) > 1:
            raise ValueError("give at most one of types, category, section")
        return self


class ReadMatch(Strict):
    """Mark read what matches (Jiepang's 'from this user, of this type, on this object')."""

    match: MatchIn


def _read_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        given = [key for key in ("ids", "all", "match") if key in value]
        return given[0] if len(given) == 1 else None
    return value.__class__.__name__.removeprefix("Read").lower() or None


ReadIn = Annotated[
    Annotated[ReadIds, Tag("ids")] | Annotated[ReadAll, Tag("all")]
    | Annotated[ReadMatch, Tag("match")],
    Discriminator(_read_kind, custom_error_type="invalid_read",
                  custom_error_message="give exactly one of ids, all (true) or match",
                  custom_error_context={}),
]


class UnreadIn(Strict):
    ids: list[NotificationId] = Field(max_length=1000)


class TriageIn(Strict):
    """These notifications' display groups (every id the user's own, else 404)."""

    ids: list[NotificationId] = Field(max_length=1000)


class SnoozeIn(Strict):
    """Snooze these notifications' display groups until a time to come."""

    ids: list[NotificationId] = Field(max_length=1000)
    until: Timestamp = Field(description="When they come back to the inbox, unread (RFC 3339, "
                                         "in the future).")


class ReadUpToIn(Strict):
    id: NotificationId = Field(description="Everything at or below this notification's place "
                                           "in the inbox becomes read.")


class SeenIn(Strict):
    until: Timestamp | None = None


class Updated(BaseModel):
    updated: int


class SeenOut(BaseModel):
    seen_until: str
