"""Group membership (server key): who is in a group of the ``group:NAME`` privacy rule."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import Server, State, error_responses
from tidings.api.schemas.groups import MemberPage, Membership
from tidings.api.schemas.params import CursorQuery, GroupPath, LimitQuery, UserPath
from tidings.clock import to_rfc3339

ERRORS = error_responses(400, 401, 403, 413, 415, 422, 429, 503)


def build() -> APIRouter:
    router = APIRouter(prefix="/v1/groups", tags=["groups"], responses=ERRORS)

    @router.put("/{group}/members/{user}", response_model=Membership)
    async def add_member(group: GroupPath, user: UserPath, state: State,
                         _caller: Server) -> dict[str, Any]:
        """Put a user in a group (idempotent): types with ``privacy = "group:NAME"`` reach
        its members only."""
        await run_in_threadpool(state.tidings.add_member, group, user)
        return {"group": group, "user": user, "member": True}

    @router.delete("/{group}/members/{user}", response_model=Membership)
    async def remove_member(group: GroupPath, user: UserPath, state: State,
                            _caller: Server) -> dict[str, Any]:
        """Take a user out of a group (idempotent)."""
        await run_in_threadpool(state.tidings.remove_member, group, user)
        return {"group": group, "user": user, "member": False}

    @router.get("/{group}/members", response_model=MemberPage)
    async def members(group: GroupPath, state: State, _caller: Server,
                      limit: LimitQuery = 20, cursor: CursorQuery = None) -> dict[str, Any]:
        """A group's members by user id (paged)."""
        page = await run_in_threadpool(state.tidings.members, group, limit=limit,
                                       cursor=cursor)
        return {"items": [{"user": m.user, "since": to_rfc3339(m.created_at)}
                          for m in page.items],
                "next_cursor": page.next_cursor}

    return router
