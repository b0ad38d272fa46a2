"""Web Push routes: the VAPID public key, and a user's browser subscriptions (served under
``/v1/users/{user}`` and ``/v1/me``).

No ``from __future__ import annotations`` here: FastAPI reads the route functions'
annotations, and ``User`` is local to :func:`build`."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import Caller, State, error_responses
from tidings.api.schemas.graph import Created
from tidings.api.schemas.params import SubscriptionIdPath
from tidings.api.schemas.push import PublicKey, PushSubscriptionIn, PushSubscriptionList
from tidings.clock import to_rfc3339

ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)


def build_public() -> APIRouter:
    router = APIRouter(prefix="/v1", responses=ERRORS, tags=["push"])

    @router.get("/push/public-key", response_model=PublicKey)
    async def public_key(state: State, _caller: Caller) -> dict[str, str]:
        """The key a page subscribes with (404 when this server has no VAPID key)."""
        return {"public_key": state.tidings.push.public_key()}

    return router


def build(resolve: Callable[..., Awaitable[str]], prefix: str, tag: str) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=[tag, "push"], responses=ERRORS)
    User = Annotated[str, Depends(resolve)]

    @router.get("/push-subscriptions", response_model=PushSubscriptionList)
    async def list_push(user: User, state: State) -> dict[str, Any]:
        items = await run_in_threadpool(state.tidings.push.list, user)
        return {"items": [{"id": str(s.id), "endpoint": s.endpoint,
                           "created_at": to_rfc3339(s.created_at)} for s in items]}

    @router.post("/push-subscriptions", response_model=Created, status_code=201)
    async def add_push(user: User, state: State, body: PushSubscriptionIn) -> dict[str, str]:
        """Store the browser's `PushSubscription` (its JSON form); the same endpoint again
        replaces the earlier one."""
        sub = await run_in_threadpool(state.tidings.push.add, user, body.model_dump())
        return {"id": str(sub.id)}

    @router.delete("/push-subscriptions/{subscription_id}", status_code=204,
                   response_class=Response)
    async def remove_push(user: User, state: State,
                          subscription_id: SubscriptionIdPath) -> Response:
        await run_in_threadpool(state.tidings.push.remove, user, subscription_id)
        return Response(status_code=204)

    return router
