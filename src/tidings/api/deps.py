"""Dependencies routes declare: the engine's state, who calls, and which user a route acts on."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request

from tidings.api.auth import Principal, authorize_user, require_server
from tidings.api.errors import ApiError
from tidings.api.schemas.errors import ErrorResponse
from tidings.api.schemas.params import UserPath
from tidings.api.state import AppState, get_state

State = Annotated[AppState, Depends(get_state)]


def principal(request: Request, state: State,
              authorization: Annotated[str | None, Header()] = None,
              access_token: Annotated[str | None, Query(max_length=4096,
                                                        include_in_schema=False)] = None,
              ) -> Principal:
    """Who calls. ``?access_token=`` is accepted only on streams (browsers' EventSource)."""
    query_token = access_token if request.url.path.endswith("/stream") else None
    return state.auth.authenticate(authorization, query_token)


Caller = Annotated[Principal, Depends(principal)]


def path_user(caller: Caller, user: UserPath) -> str:
    """The user of ``/v1/users/{user}/…``, if the caller may act on them."""
    authorize_user(caller, user)
    return user


def me_user(caller: Caller) -> str:
    """The user of ``/v1/me/…``: the user token's own."""
    if caller.user is None:
        raise ApiError(403, "/v1/me needs a user token; a server key names the user in "
                            "/v1/users/{user}")
    return caller.user


def server(caller: Caller) -> Principal:
    """The caller, who must hold a server key."""
    require_server(caller)
    return caller


Server = Annotated[Principal, Depends(server)]


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: these statuses answer with the error body."""
    return {status: {"model": ErrorResponse} for status in statuses}
