"""Path and query parameters, each declared once with its id pattern from :mod:`.ids`."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from tidings.api.schemas import ids
from tidings.api.schemas.common import Section

UserPath = Annotated[str, Path(pattern=ids.USER_ID, description="The application's user id.")]
OtherPath = Annotated[str, Path(pattern=ids.USER_ID)]
TypePath = Annotated[str, Path(pattern=ids.TYPE_NAME)]
SubscriptionIdPath = Annotated[str, Path(pattern=ids.ROW_ID)]
UnsubscribeTokenPath = Annotated[str, Path(min_length=3, max_length=600,
                                           pattern=ids.UNSUBSCRIBE_TOKEN)]
BounceAddressPath = Annotated[str, Path(max_length=254, pattern=ids.BOUNCE_ADDRESS)]

TypesQuery = Annotated[str | None, Query(max_length=2000, pattern=ids.TYPES_LIST,
                                         description="Comma-separated type names.")]
CategoryQuery = Annotated[str | None, Query(min_length=1, max_length=64, pattern=ids.TYPE_NAME)]
SectionQuery = Annotated[Section | None, Query()]
LimitQuery = Annotated[int, Query(ge=1, le=100)]
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=200, pattern=ids.CURSOR)]
LocaleQuery = Annotated[str | None, Query(pattern=ids.LOCALE_TAG)]
