"""Request and response bodies of the HTTP API; they are what ``/openapi.json`` publishes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)

UserId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:@-]{1,255}$")]
TypeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
# 1-255 characters, no control characters (what ``check_object`` accepts)
ObjectKey = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f]{1,255}$")]
LocaleName = Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(_[A-Z]{2})?$")]
Channel = Literal["web", "email", "webhook"]
# Ids are BIGINT row ids, never 0; 18 digits keep every value below 2**63.
ROW_ID = r"^[1-9][0-9]{0,17}$"
SUBSCRIPTION_ID = Path(pattern=ROW_ID)
NotificationId = Annotated[str, StringConstraints(pattern=ROW_ID)]
OTHER = Path(pattern=r"^[A-Za-z0-9_.:@-]{1,255}$")
Section = Literal["alert", "message"]
# Control characters and spaces, spelt out: ``\s`` differs between the server's regex engine
# (Rust: Unicode White_Space, U+0085 too) and JSON Schema's (ECMA-262: U+FEFF too, U+0085
# not), so a pattern with ``\s`` would publish another rule than the one it checks.
INVISIBLE = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
VISIBLE = rf"[^{INVISIBLE}]"
NOT_AT = rf"[^@{INVISIBLE}]"


Audience = Literal["recipients", "object_subscribers", "actor_followers"]


def _default_audience() -> list[Audience]:
    return ["recipients", "object_subscribers"]


def _web() -> list[Channel]:
    return ["web"]


RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$")


def _rfc3339(value: Any) -> Any:
    """Only RFC 3339 text is a timestamp (not a number, a date, or a time without offset)."""
    if not isinstance(value, str) or not RFC3339.match(value):
        raise ValueError("must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z")
    return datetime.fromisoformat(value.upper())


Timestamp = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]


def _json_int(value: Any) -> Any:
    """A JSON integer: 5 or 5.0 (JSON Schema's "integer"), never true, "5" or 5.5."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


JsonInt = Annotated[int, BeforeValidator(_json_int)]


def at_least_one(model: BaseModel, names: tuple[str, ...]) -> None:
    """Raise unless one of ``names`` is given and not null."""
    if all(getattr(model, name) is None for name in names):
        raise ValueError(f"give at least one of {', '.join(names)}")


def at_least_one_schema(*names: str) -> dict[str, Any]:
    """JSON Schema for :func:`at_least_one`: some field of ``names`` is present as a string."""
    return {"anyOf": [{"required": [name], "properties": {name: {"type": "string"}}}
                      for name in names]}


# Keys outside the pattern are refused, so the schema says so (pydantic leaves it open).
CLOSED_KEYS: dict[str, Any] = {"additionalProperties": False}


class Strict(BaseModel):
    # strict: JSON's types as the schema says (0 is not false, "5" is not 5)
    model_config = ConfigDict(extra="forbid", strict=True)


class EventIn(Strict):
    type: TypeName
    actor: UserId | None = None
    object: ObjectKey | None = None
    recipients: list[UserId] = Field(default_factory=list)
    exclude: list[UserId] = Field(default_factory=list,
                                  description="Users never told of this event (privacy).")
    payload: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = None


class Accepted(BaseModel):
    id: str
    status: Literal["accepted"] = "accepted"


class BatchIn(Strict):
    events: list[dict[str, Any]] = Field(max_length=1000, min_length=1)


class BatchItem(BaseModel):
    index: int
    status: Literal["accepted", "error"]
    id: str | None = None
    error: dict[str, Any] | None = None


class BatchOut(BaseModel):
    items: list[BatchItem]


class RetractionIn(Strict):
    """At least one of the three, not null."""

    model_config = ConfigDict(json_schema_extra=at_least_one_schema("type", "actor", "object"))
    type: TypeName | None = None
    actor: UserId | None = None
    object: ObjectKey | None = None

    @model_validator(mode="after")
    def _given(self) -> RetractionIn:
        at_least_one(self, ("type", "actor", "object"))
        return self


class Removed(BaseModel):
    removed: int


class LocaleTemplates(Strict):
    title: str | None = None
    bundled_title: str | None = None
    body: str | None = None
    html: str | None = None
    email_body: str | None = None
    link: str | None = None


class TemplatesModel(Strict):
    title: str = "{{ actor }} did {{ type }} on {{ object }}"
    bundled_title: str | None = None
    body: str | None = None
    html: str | None = None
    email_body: str | None = None
    link: str | None = None
    locales: dict[LocaleName, LocaleTemplates] = Field(
        default_factory=dict, json_schema_extra=CLOSED_KEYS,
        description="Per locale (`de`, `pt_BR`), the templates that differ in that language.")


class TypeIn(Strict):
    category: TypeName = "general"
    section: Section = "alert"
    priority: JsonInt = Field(5, ge=1, le=10)
    bundle: Literal["none", "object", "actor", "actor_object"] = "none"
    channels: list[Channel] = Field(default_factory=_web)
    audience: list[Audience] = Field(default_factory=_default_audience, min_length=1)
    templates: TemplatesModel = Field(default_factory=TemplatesModel)
    retention_days: Annotated[int, Field(ge=1), BeforeValidator(_json_int)] | None = None
    mandatory: bool = False


class TypeOut(TypeIn):
    model_config = ConfigDict(extra="ignore", strict=False)
    name: str


class TypeList(BaseModel):
    items: list[TypeOut]


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


class NotificationPage(BaseModel):
    items: list[NotificationOut]
    next_cursor: str | None


class UnreadCountOut(BaseModel):
    count: int
    display: str


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


class SeenIn(Strict):
    until: Timestamp | None = None


class Updated(BaseModel):
    updated: int


class SeenOut(BaseModel):
    seen_until: str


class SubscriptionIn(Strict):
    type: TypeName | Literal["*"] = "*"
    object: ObjectKey = "*"
    channels: list[Channel] = Field(default_factory=_web, min_length=1)


class Created(BaseModel):
    id: str


class SubscriptionOut(BaseModel):
    id: str
    type: str
    object: str
    channels: list[str]
    created_at: str


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


class EmailPreferences(Strict):
    address: Annotated[str, StringConstraints(
        max_length=254, pattern=rf"^{NOT_AT}{{1,64}}@[A-Za-z0-9.-]{{1,189}}\.[A-Za-z]{{2,63}}$",
    )] | None = None
    frequency: Literal["immediate", "daily", "weekly", "never"] = "immediate"
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        "UTC", description="An IANA time zone name (`Europe/Berlin`); others: 422.")
    digest_hour: JsonInt = Field(8, ge=0, le=23)


class Muted(Strict):
    actors: list[UserId] = Field(default_factory=list, max_length=1000)
    objects: list[ObjectKey] = Field(default_factory=list, max_length=1000)


class WebhookPreferences(Strict):
    url: Annotated[str, StringConstraints(max_length=1024, pattern=rf"^https?://{VISIBLE}+$")
                   ] | None = Field(None, description="POST target of the webhook channel.")


class Preferences(Strict):
    email: EmailPreferences = Field(default_factory=lambda: EmailPreferences.model_validate({}))
    channels: dict[TypeName, dict[Channel, bool]] = Field(default_factory=dict,
                                                          json_schema_extra=CLOSED_KEYS)
    muted: Muted = Field(default_factory=Muted)
    locale: Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")
                      ] | None = None
    webhook: WebhookPreferences = Field(
        default_factory=lambda: WebhookPreferences.model_validate({}))


class BounceIn(Strict):
    address: Annotated[str, StringConstraints(min_length=3, max_length=254,
                                              pattern=rf"^{NOT_AT}+@{NOT_AT}+$")]
    reason: Annotated[str, StringConstraints(max_length=255)] = "hard bounce"


class Bounce(BaseModel):
    address: str
    bounced: bool


class TokenIn(Strict):
    user: UserId
    ttl_seconds: JsonInt = Field(3600, ge=60, le=30 * 86400)


class TokenOut(BaseModel):
    token: str
    expires_at: str


class Health(BaseModel):
    status: str


class ErrorDetail(BaseModel):
    field: str | None = None
    message: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[ErrorDetail]


class ErrorResponse(BaseModel):
    error: ErrorBody
