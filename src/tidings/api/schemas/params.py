"""Path and query parameters, each declared once with its id pattern from :mod:`.ids`."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path, Query
from starlette.convertors import StringConvertor, register_url_convertor

from tidings.api.schemas import ids
from tidings.api.schemas.common import Section

UserPath = Annotated[str, Path(pattern=ids.USER_ID, description="The application's user id.")]
OtherPath = Annotated[str, Path(pattern=ids.USER_ID)]
TypePath = Annotated[str, Path(pattern=ids.TYPE_NAME)]
SubscriptionIdPath = Annotated[str, Path(pattern=ids.ROW_ID)]
NotificationIdPath = Annotated[str, Path(pattern=ids.ROW_ID)]
# The routes beside ``…/notifications/{notification_id}``: a path segment naming one of them
# is that route (a method it lacks is a 405), never a notification id (a 422).
NOTIFICATION_ROUTES = ("read", "unread", "seen", "unread-count", "read-up-to", "archive",
                       "unarchive", "save", "unsave", "snooze", "unsnooze")


class NotificationSegment(StringConvertor):
    """``{notification_id:notification}``: any segment but the names of sibling routes."""

    regex = "(?!(?:" + "|".join(NOTIFICATION_ROUTES) + ")$)[^/]+"


register_url_convertor("notification", NotificationSegment())
GroupPath = Annotated[str, Path(pattern=ids.GROUP_NAME,
                                description="A group of the `group:NAME` privacy rule.")]
UnsubscribeTokenPath = Annotated[str, Path(min_length=3, max_length=600,
                                           pattern=ids.UNSUBSCRIBE_TOKEN)]
BounceAddressPath = Annotated[str, Path(max_length=254, pattern=ids.BOUNCE_ADDRESS)]

TypesQuery = Annotated[str | None, Query(max_length=2000, pattern=ids.TYPES_LIST,
                                         description="Comma-separated type names.")]
CategoryQuery = Annotated[str | None, Query(min_length=1, max_length=64, pattern=ids.TYPE_NAME)]
SectionQuery = Annotated[Section | None, Query()]
LimitQuery = Annotated[int, Query(ge=1, le=100)]
InboxStateQuery = Annotated[Literal["inbox", "archived", "saved", "snoozed"], Query(
    alias="state", description="`inbox` (the default: neither archived nor snoozed; saved "
                               "items too), `archived`, `saved` or `snoozed`.")]
ReasonQuery = Annotated[str | None, Query(max_length=200, pattern=ids.REASONS_LIST, description=(
    "Comma-separated reasons (`recipient`, `mention`, `subscribed`, `following`, `group`): "
    "only notifications that arrived for one of them."))]
ParticipatingQuery = Annotated[bool | None, Query(description=(
    "`true`: only notifications that arrived for the reason `recipient` or `mention`."))]
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=200, pattern=ids.CURSOR)]
LocaleQuery = Annotated[str | None, Query(pattern=ids.LOCALE_TAG)]
ActorQuery = Annotated[str | None, Query(pattern=ids.USER_ID,
                                         description="Only notifications by this actor.")]
ObjectQuery = Annotated[str | None, Query(pattern=ids.OBJECT_KEY,
                                          description="Only notifications on this object.")]
MaxIdQuery = Annotated[str | None, Query(pattern=ids.ROW_ID, description=(
    "Only notifications of events older than this id (event id below it)."))]
SinceIdQuery = Annotated[str | None, Query(pattern=ids.ROW_ID, description=(
    "Only notifications of events newer than this id (event id above it)."))]
