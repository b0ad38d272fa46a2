"""Event type declarations as the API takes and shows them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from tidings.api.schemas.common import (
    CLOSED_KEYS,
    Audience,
    Channel,
    JsonInt,
    Section,
    Strict,
    json_int,
)
from tidings.api.schemas.ids import (
    DESCRIPTION,
    LABEL,
    PAYLOAD_FIELD,
    PRIVACY,
    LocaleName,
    TypeName,
)


def _default_audience() -> list[Audience]:
    return ["recipients", "object_subscribers"]


def _web() -> list[Channel]:
    return ["web"]


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
    retention_days: Annotated[int, Field(ge=1), BeforeValidator(json_int)] | None = None
    mandatory: bool = False
    label: Annotated[str, StringConstraints(pattern=LABEL)] | None = Field(None, description=(
        "How people see the type (filters, preferences). Answers give the name made "
        "readable when none is declared: `edit-user-talk` → `Edit user talk`."))
    description: Annotated[str, StringConstraints(pattern=DESCRIPTION)] | None = Field(
        None, description="One line on when this notification comes.")
    queryable: list[Annotated[str, StringConstraints(pattern=PAYLOAD_FIELD)]] = Field(
        default_factory=list, max_length=8, description=(
            "Top-level scalar payload fields a list or unread count may be narrowed by "
            "(`?payload.FIELD=value`), kept with each notification when it is delivered."))
    privacy: Annotated[str, StringConstraints(pattern=PRIVACY)] | None = Field(
        None, description=(
            "Who of the audience may hear of an event: `followers` (of its actor), "
            "`group:NAME` (members of the group) or `rule:NAME` (a callable registered in "
            "the processes that run fan-out); none: everyone in the audience."))
    email_delay_seconds: JsonInt = Field(0, ge=0, le=604_800, description=(
        "Immediate mail goes this many seconds after delivery (at most a week)."))
    email_unless_read: bool = Field(False, description=(
        "With a delay: the mail goes only if the notification is still unread then."))
    push_delay_seconds: JsonInt = Field(0, ge=0, le=604_800, description=(
        "A push goes this many seconds after delivery (at most a week), and only if the "
        "notification is still unread then."))
    mentions: Annotated[str, StringConstraints(pattern=PAYLOAD_FIELD)] | None = Field(
        None, description=(
            "The top-level payload key listing the users the event mentions: a recipient "
            "listed there is notified for the reason `mention`."))


class TypeOut(TypeIn):
    model_config = ConfigDict(extra="ignore", strict=False)
    name: str


class TypeList(BaseModel):
    items: list[TypeOut]
    enabled_channels: list[Channel] = Field(default_factory=list, description=(
        "The channels this server delivers over: `web` always, `email` with an SMTP server "
        "configured, `webhook` with a webhook signing secret, `push` with a VAPID key."))
