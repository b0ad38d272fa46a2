"""Dependencies routes declare: the engine's state, who calls, which user a route acts on;
and the app-wide refusal of query parameters a route does not declare.

They are ``async def``: each is a few microseconds of work that never blocks, and FastAPI runs
a plain ``def`` dependency in the thread pool, a thread hop (and, on a busy server, a wait for
a thread) per dependency per request."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from tidings.api.auth import Principal, authorize_user, require_server
from tidings.api.errors import ApiError
from tidings.api.schemas.errors import ErrorResponse
from tidings.api.schemas.params import UserPath
from tidings.api.state import AppState, get_state

State = Annotated[AppState, Depends(get_state)]


async def principal(request: Request, state: State,
              authorization: Annotated[str | None, Header()] = None,
              access_token: Annotated[str | None, Query(max_length=4096,
                                                        include_in_schema=False)] = None,
              ) -> Principal:
    """Who calls. ``?access_token=`` is accepted only on streams (browsers' EventSource
    cannot send headers); elsewhere a token in the URL, where logs keep it, is refused."""
    stream = is_stream(request)
    caller = state.authenticate(authorization, access_token if stream else None)
    refuse_url_token(request, access_token)
    return caller


def is_stream(request: Request) -> bool:
    return request.url.path.endswith("/stream")


def refuse_url_token(request: Request, access_token: str | None) -> None:
    """``?access_token=`` anywhere but a stream: 400 naming it."""
    if access_token is not None and not is_stream(request):
        raise _unknown_query(["access_token"], " (a token in the URL is for streams only)")


Caller = Annotated[Principal, Depends(principal)]


async def path_user(caller: Caller, user: UserPath) -> str:
    """The user of ``/v1/users/{user}/…``, if the caller may act on them."""
    authorize_user(caller, user)
    return user


async def me_user(caller: Caller) -> str:
    """The user of ``/v1/me/…``: the user token's own."""
    if caller.user is None:
        raise ApiError(403, "/v1/me needs a user token; a server key names the user in "
                            "/v1/users/{user}")
    return caller.user


async def server(caller: Caller) -> Principal:
    """The caller, who must hold a server key."""
    require_server(caller)
    return caller


Server = Annotated[Principal, Depends(server)]


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route: these statuses answer with the error body."""
    return {status: {"model": ErrorResponse} for status in statuses}


PAYLOAD_PREFIX = "payload."


async def payload_conditions(request: Request) -> dict[str, str]:
    """``?payload.FIELD=value`` conditions on the payload fields a type marks ``queryable``
    (the engine refuses a field no type marks, naming it). A route that takes them declares
    this dependency; any other route refuses them as unknown parameters."""
    found: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name.startswith(PAYLOAD_PREFIX):
            field = name[len(PAYLOAD_PREFIX):]
            if field in found:
                raise ApiError(400, f"{name}: given twice", details=[
                    {"field": name, "message": "given twice"}])
            found[field] = value
    return found


PayloadConditions = Annotated[dict[str, str], Depends(payload_conditions)]


def _query_names(dependant: Dependant) -> frozenset[str]:
    """The query parameters a route (with its dependencies) declares."""
    names = {field.alias for field in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _query_names(dependency)
    return frozenset(names)


def _takes_payload(dependant: Dependant) -> bool:
    return any(d.call is payload_conditions or _takes_payload(d)
               for d in dependant.dependencies)


async def no_unknown_query(request: Request) -> None:
    """Refuse query parameters the route does not declare, naming them (400): a filter the
    server does not know must not be ignored into an unfiltered answer. An app-wide
    dependency, so every route of the contract is covered."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.include_in_schema:
        return  # the web inbox's own pages take what a browser adds
    declared = _query_names(route.dependant)  # a walk over a handful of dependencies
    prefixed = _takes_payload(route.dependant)
    unknown = [name for name in dict.fromkeys(request.query_params) if name not in declared
               and not (prefixed and name.startswith(PAYLOAD_PREFIX))]
    if unknown:
        raise _unknown_query(unknown)


def _unknown_query(names: list[str], why: str = "") -> ApiError:
    return ApiError(400, f"unknown query parameter: {', '.join(names)}{why}",
                    details=[{"field": name, "message": "unknown query parameter"}
                             for name in names])
