"""A user's preferences: email, channels per category, mutes, locale, webhook."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from tidings.api.schemas.common import CLOSED_KEYS, Channel, JsonInt, Strict
from tidings.api.schemas.ids import EMAIL, LOCALE_TAG, WEBHOOK_URL, ObjectKey, TypeName, UserId


class MailDelay(Strict):
    email_delay_seconds: JsonInt = Field(0, ge=0, le=604_800, description=(
        "Immediate mail of the category goes this many seconds after delivery."))
    email_unless_read: bool = Field(False, description=(
        "With a delay: the mail goes only if the notification is still unread then."))


class EmailPreferences(Strict):
    address: Annotated[str, StringConstraints(max_length=254, pattern=EMAIL)] | None = None
    frequency: Literal["immediate", "daily", "weekly", "never"] = "immediate"
    timezone: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        "UTC", description="An IANA time zone name (`Europe/Berlin`); others: 422.")
    digest_hour: JsonInt = Field(8, ge=0, le=23)
    muted_objects: list[ObjectKey] = Field(
        default_factory=list, max_length=1000,
        description="Objects (pages, threads) that send no mail; the web inbox still gets "
                    "them. An unsubscribe link's \"this page\" adds one.")
    delays: dict[TypeName, MailDelay] = Field(
        default_factory=dict, json_schema_extra=CLOSED_KEYS,
        description="Per category: mail later, and only if still unread then (instead of "
                    "the types' own email_delay_seconds and email_unless_read).")


class PushDelay(Strict):
    push_delay_seconds: JsonInt = Field(0, ge=0, le=604_800, description=(
        "A push of the category goes this many seconds after delivery, and only if the "
        "notification is still unread then."))


class PushPreferences(Strict):
    delays: dict[TypeName, PushDelay] = Field(
        default_factory=dict, json_schema_extra=CLOSED_KEYS,
        description="Per category: push later, and only if still unread then (instead of "
                    "the types' own push_delay_seconds).")


class Muted(Strict):
    actors: list[UserId] = Field(default_factory=list, max_length=1000)
    objects: list[ObjectKey] = Field(default_factory=list, max_length=1000)


class WebhookPreferences(Strict):
    url: Annotated[str, StringConstraints(max_length=1024, pattern=WEBHOOK_URL)
                   ] | None = Field(None, description="POST target of the webhook channel.")


class Preferences(Strict):
    email: EmailPreferences = Field(default_factory=lambda: EmailPreferences.model_validate({}))
    channels: dict[TypeName, dict[Channel, bool]] = Field(default_factory=dict,
                                                          json_schema_extra=CLOSED_KEYS)
    muted: Muted = Field(default_factory=Muted)
    locale: Annotated[str, StringConstraints(pattern=LOCALE_TAG)] | None = None
    webhook: WebhookPreferences = Field(
        default_factory=lambda: WebhookPreferences.model_validate({}))
    push: PushPreferences = Field(default_factory=lambda: PushPreferences.model_validate({}))
