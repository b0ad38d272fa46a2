"""The two reads a badge and an inbox poll make most, answered without FastAPI's per-request
work: ``GET /v1/users/{user}/notifications/unread-count`` with no query and
``GET /v1/users/{user}/notifications`` with at most ``?limit=N``.

Profiled under load (cProfile, one ``tidings serve`` process), FastAPI's dependency solving
(the caller, the user, the state, seven query parameters, the payload conditions and the
app-wide check of unknown parameters) took over 40 % of an unread count's time in the
server, more than the read itself. These routes sit in front of the FastAPI routes of the
same paths and answer the plain form of the request themselves: the same authentication and
authorisation (:mod:`tidings.api.auth`), the same engine call, the same JSON body, and errors
raised into the same handlers. Anything else — another method, any other query parameter, a
user id the path's pattern refuses — is handed to the FastAPI route untouched, so its
validation and its error answers stay the contract's. They are not in the OpenAPI document:
the FastAPI routes still describe these paths.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from tidings.api.auth import authorize_user
from tidings.api.etag import conditional, if_none_match
from tidings.api.jsonshape import (
    NOT_STANDARD,
    dumps,
    shaped,
    standard_dumps,
)
from tidings.api.schemas import ids
from tidings.api.schemas.inbox import NotificationOut
from tidings.api.state import AppState
from tidings.domain.views import Notification

PREFIX = "/v1/users/{user}"
UNREAD = PREFIX + "/notifications/unread-count"
PAGE = PREFIX + "/notifications"
_LIMIT = re.compile(rb"limit=([1-9][0-9]{0,2})")
MAX_LIMIT = 100  # LimitQuery's bound
DEFAULT_LIMIT = 20

Answer = Callable[[AppState, Scope, str], Awaitable[Response]]
Plain = Callable[[bytes], bool]  # whether a query string is one a hot read answers


def authorization(scope: Scope) -> str | None:
    for key, value in scope["headers"]:
        if key == b"authorization":
            text: str = value.decode("latin-1")
            return text
    return None


def _caller_may_read(state: AppState, scope: Scope, user: str) -> None:
    """What the FastAPI route's ``principal`` and ``path_user`` dependencies check (no
    ``access_token`` here: the query is empty or ``limit`` only)."""
    authorize_user(state.authenticate(authorization(scope), None), user)


def _no_query(query: bytes) -> bool:
    return not query


def _limit_only(query: bytes) -> bool:
    found = _LIMIT.fullmatch(query) if query else None
    return not query or (found is not None and int(found.group(1)) <= MAX_LIMIT)


async def unread_count(state: AppState, scope: Scope, user: str) -> Response:
    _caller_may_read(state, scope, user)
    count, unseen = await state.tidings.inbox.badge_counts(user)  # no thread where it can
    return conditional(dumps({"count": count.count, "display": count.display,
                              "unseen": unseen.count, "unseen_display": unseen.display}),
                       if_none_match(scope["headers"]))


def item_json(item: Notification) -> bytes:
    """One listed item as the page's JSON holds it: the text :func:`dumps` gives it within
    the page, or an error where only its fallback encoder could write it."""
    return standard_dumps(shaped(NotificationOut, item.to_dict()))


async def first_page(state: AppState, scope: Scope, user: str) -> Response:
    query: bytes = scope["query_string"]
    limit = int(query[len(b"limit="):]) if query else DEFAULT_LIMIT
    _caller_may_read(state, scope, user)
    locale = await state.locale_of(user)
    try:  # the items' JSON kept from earlier pages, joined: the bytes dumps() gives the page
        encoded = await state.tidings.inbox.first_page_encoded(
            user, limit=limit, locale=locale, encode=item_json)
        body = (b'{"items":[' + b",".join(encoded.items) + b'],"next_cursor":'
                + dumps(encoded.next_cursor) + b"}")
    except NOT_STANDARD:  # an item only the fallback encoder writes: the page goes through it
        page = await run_in_threadpool(
            lambda: state.tidings.notifications(user, limit=limit, locale=locale))
        body = dumps({"items": [shaped(NotificationOut, item.to_dict()) for item in page.items],
                      "next_cursor": page.next_cursor})
    return conditional(body, if_none_match(scope["headers"]))


class HotRead(Route):
    """A plain GET of ``path`` (its query accepted by ``plain``, its user id valid) answered
    by ``answer``; any other request does not match, and the FastAPI route behind answers."""

    def __init__(self, path: str, state: AppState, plain: Plain, answer: Answer) -> None:
        super().__init__(path, endpoint=self._answer, include_in_schema=False)
        self.state = state
        self.plain = plain
        self.answer = answer

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] != "GET" \
                or not self.plain(scope["query_string"]):
            return Match.NONE, {}
        match, child = super().matches(scope)
        if match is not Match.FULL or not ids.matches(ids.USER_ID_BARE,
                                                      child["path_params"]["user"]):
            return Match.NONE, {}
        return match, {**child, "route": self}  # its path: the metrics' and logs' template

    async def _answer(self, request: Request) -> Response:
        scope = request.scope
        return await self.answer(self.state, scope, scope["path_params"]["user"])


def install(app: FastAPI, state: AppState) -> None:
    """Put the hot reads in front of the FastAPI routes of their paths."""
    app.router.routes[:0] = [HotRead(UNREAD, state, _no_query, unread_count),
                             HotRead(PAGE, state, _limit_only, first_page)]
