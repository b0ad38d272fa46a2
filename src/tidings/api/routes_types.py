"""Event types (read by anyone with a credential, declared with the server key) and user
tokens (minted with the server key)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import Caller, Server, State, error_responses
from tidings.api.errors import ApiError
from tidings.api.schemas.auth import TokenIn, TokenOut
from tidings.api.schemas.params import TypePath
from tidings.api.schemas.types import TypeIn, TypeList, TypeOut
from tidings.clock import to_rfc3339
from tidings.domain.types import EventType
from tidings.exceptions import TidingsError

ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)


def build() -> APIRouter:
    router = APIRouter(prefix="/v1", responses=ERRORS)

    @router.get("/types", response_model=TypeList, tags=["events", "types"])
    async def list_types(state: State, _caller: Caller) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.load_types)
        return {"items": [_shown(t) for t in state.tidings.types],
                "enabled_channels": state.tidings.enabled_channels}

    @router.get("/types/{name}", response_model=TypeOut, tags=["events", "types"])
    async def get_type(name: TypePath, state: State, _caller: Caller) -> dict[str, Any]:
        try:
            event_type = await run_in_threadpool(state.tidings.get_type, name)
        except TidingsError:
            raise ApiError(404, f"event type {name!r} does not exist") from None
        return _shown(event_type)

    @router.put("/types/{name}", response_model=TypeOut, tags=["events", "types"])
    async def put_type(name: TypePath, body: TypeIn, state: State,
                       _caller: Server) -> dict[str, Any]:
        """Declare or replace an event type (stored: every process sees it)."""
        event_type = EventType.from_dict(name, body.model_dump())
        await run_in_threadpool(state.tidings.define_type, event_type)
        return _shown(event_type)

    @router.post("/tokens", response_model=TokenOut, status_code=201, tags=["events", "auth"])
    async def mint_token(body: TokenIn, state: State, _caller: Server) -> dict[str, str]:
        """Mint a user token (HS256 JWT with ``sub`` and ``exp``)."""
        token, expires = state.auth.mint(body.user, body.ttl_seconds)
        return {"token": token, "expires_at": to_rfc3339(expires * 1_000_000)}

    return router


def _shown(event_type: EventType) -> dict[str, Any]:
    """A type as answers show it: with a label even when none was declared."""
    return {**event_type.to_dict(), "label": event_type.display_label}
