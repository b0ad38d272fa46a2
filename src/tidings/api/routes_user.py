"""User-scoped routes, served twice: under ``/v1/users/{user}`` and under ``/v1/me``."""


from collections.abc import Callable
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from tidings.api import schemas as s
from tidings.api.errors import ApiError
from tidings.api.live import user_stream
from tidings.api.state import AppState, get_state
from tidings.clock import from_datetime, to_rfc3339

TypesQuery = Annotated[str | None, Query(max_length=2000, pattern=r"^[A-Za-z0-9_.:,-]*$",
                                         description="Comma-separated type names.")]
CategoryQuery = Annotated[str | None, Query(min_length=1, max_length=64)]
SectionQuery = Annotated[s.Section | None, Query()]
LimitQuery = Annotated[int, Query(ge=1, le=100)]
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=200)]
LocaleQuery = Annotated[str | None, Query(pattern=r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")]

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse} for code in (400, 401, 403, 404, 413, 415, 422, 503)
}


def _types(value: str | None) -> list[str] | None:
    return [t for t in value.split(",") if t] if value else None


def build(resolve: Callable[..., str], prefix: str, tag: str) -> APIRouter:
    """The user-scoped routes with ``resolve`` (a dependency) naming the user."""
    router = APIRouter(prefix=prefix, tags=[tag], responses=ERRORS)
    User = Annotated[str, Depends(resolve)]
    State = Annotated[AppState, Depends(get_state)]

    @router.get("/notifications", response_model=s.NotificationPage)
    async def list_notifications(
        user: User, state: State, types: TypesQuery = None, category: CategoryQuery = None,
        section: SectionQuery = None, unread: bool | None = None, limit: LimitQuery = 20,
        cursor: CursorQuery = None, locale: LocaleQuery = None,
    ) -> dict[str, Any]:
        """The user's inbox, newest first; a bundle appears once (its newest member)."""
        page = await run_in_threadpool(
            state.tidings.notifications, user, types=_types(types), category=category,
            section=section, unread=unread, limit=limit, cursor=cursor,
            locale=locale or await state.locale_of(user))
        return {"items": [item.to_dict() for item in page.items],
                "next_cursor": page.next_cursor}

    @router.get("/notifications/unread-count", response_model=s.UnreadCountOut)
    async def unread_count(user: User, state: State, types: TypesQuery = None,
                           category: CategoryQuery = None,
                           section: SectionQuery = None) -> dict[str, Any]:
        """Unread bundles, counted with a cap: above 99 the display is '99+'."""
        count = await run_in_threadpool(state.tidings.unread_count, user, types=_types(types),
                                        category=category, section=section)
        return {"count": count.count, "display": count.display}

    @router.post("/notifications/read", response_model=s.Updated)
    async def mark_read(user: User, state: State, body: s.ReadIn) -> dict[str, int]:
        """Mark read by ids, all (optionally some types / a category / a section), or match."""
        t = state.tidings
        if isinstance(body, s.ReadIds):
            updated = await run_in_threadpool(t.mark_read, user, body.ids)
        elif isinstance(body, s.ReadAll):
            updated = await run_in_threadpool(t.mark_all_read, user, types=body.types,
                                              category=body.category, section=body.section)
        else:
            match = body.match
            updated = await run_in_threadpool(
                lambda: t.mark_read_matching(user, actor=match.actor, type=match.type,
                                             object=match.object))
        state.metrics.marked_read.inc(updated)
        return {"updated": updated}

    @router.post("/notifications/unread", response_model=s.Updated)
    async def mark_unread(user: User, state: State, body: s.UnreadIn) -> dict[str, int]:
        """Mark these notifications (and their bundles) unread again."""
        updated = await run_in_threadpool(state.tidings.mark_unread, user, body.ids)
        return {"updated": updated}

    @router.post("/notifications/seen", response_model=s.SeenOut)
    async def mark_seen(user: User, state: State, body: s.SeenIn | None = None
                        ) -> dict[str, str]:
        """Move the seen watermark (to now, or to ``until`` if earlier)."""
        until = from_datetime(body.until) if body is not None and body.until else None
        await run_in_threadpool(state.tidings.mark_seen, user, until)
        state.metrics.marked_seen.inc()
        now = state.tidings.clock.now_us()
        return {"seen_until": to_rfc3339(min(until, now) if until is not None else now)}

    @router.get("/subscriptions", response_model=s.SubscriptionPage)
    async def list_subscriptions(user: User, state: State, limit: LimitQuery = 20,
                                 cursor: CursorQuery = None) -> dict[str, Any]:
        page = await run_in_threadpool(state.tidings.subscriptions, user, limit=limit,
                                       cursor=cursor)
        return {"items": [{"id": str(i.id), "type": i.type, "object": i.object,
                           "channels": list(i.channels), "created_at": to_rfc3339(i.created_at)}
                          for i in page.items],
                "next_cursor": page.next_cursor}

    @router.post("/subscriptions", response_model=s.Created, status_code=201)
    async def subscribe(user: User, state: State, body: s.SubscriptionIn) -> dict[str, str]:
        """Subscribe to a type (or ``*``) on an object (or ``*``)."""
        sub = await run_in_threadpool(state.tidings.subscribe, user, body.type, body.object,
                                      body.channels)
        return {"id": str(sub.id)}

    @router.delete("/subscriptions/{subscription_id}", status_code=204,
                   response_class=Response)
    async def unsubscribe(user: User, state: State,
                          subscription_id: Annotated[str, s.SUBSCRIPTION_ID]) -> Response:
        await run_in_threadpool(state.tidings.unsubscribe, user, subscription_id)
        return Response(status_code=204)

    @router.put("/follows/{other}", response_model=s.Following)
    async def follow(user: User, state: State, other: Annotated[str, s.OTHER]
                     ) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.follow, user, other)
        return {"user": user, "other": other, "following": True}

    @router.delete("/follows/{other}", response_model=s.Following)
    async def unfollow(user: User, state: State, other: Annotated[str, s.OTHER]
                       ) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.unfollow, user, other)
        return {"user": user, "other": other, "following": False}

    @router.get("/follows", response_model=s.FollowPage)
    async def following(user: User, state: State, limit: LimitQuery = 20,
                        cursor: CursorQuery = None) -> dict[str, Any]:
        """The users this user follows (paged)."""
        page = await run_in_threadpool(state.tidings.following, user, limit=limit,
                                       cursor=cursor)
        return _follow_page(page)

    @router.get("/followers", response_model=s.FollowPage)
    async def followers(user: User, state: State, limit: LimitQuery = 20,
                        cursor: CursorQuery = None) -> dict[str, Any]:
        """The users who follow this user (paged)."""
        page = await run_in_threadpool(state.tidings.followers, user, limit=limit,
                                       cursor=cursor)
        return _follow_page(page)

    @router.get("/timeline", response_model=s.TimelinePage)
    async def timeline(user: User, state: State, limit: LimitQuery = 20,
                       cursor: CursorQuery = None) -> dict[str, Any]:
        """Events of the users followed, newest first (push model)."""
        page = await run_in_threadpool(state.tidings.timeline, user, limit=limit,
                                       cursor=cursor)
        return {"items": page.items, "next_cursor": page.next_cursor}

    @router.get("/preferences", response_model=s.Preferences)
    async def get_preferences(user: User, state: State) -> dict[str, Any]:
        data = await run_in_threadpool(state.tidings.get_preferences, user)
        return s.Preferences.model_validate(data).model_dump()

    @router.put("/preferences", response_model=s.Preferences)
    async def put_preferences(user: User, state: State, body: s.Preferences
                              ) -> dict[str, Any]:
        """Replace the preferences (email, channels per category, mutes, locale)."""
        try:
            ZoneInfo(body.email.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ApiError(422, f"email.timezone: unknown time zone {body.email.timezone!r}",
                           details=[{"field": "email.timezone",
                                     "message": "not an IANA time zone"}]) from None
        data = await run_in_threadpool(state.tidings.set_preferences, user, body.model_dump())
        state.forget_locale(user)
        return s.Preferences.model_validate(data).model_dump()

    @router.get("/stream", response_class=StreamingResponse, responses={
        200: {"content": {"text/event-stream": {}},
              "description": "Server-Sent Events: `unread` and `notification`."}})
    async def stream(user: User, state: State, request: Request,
                     locale: LocaleQuery = None) -> StreamingResponse:
        """Live unread count and new items. Browsers may pass ``?access_token=``."""
        frames = user_stream(state.tidings, user,
                             locale=locale or await state.locale_of(user),
                             disconnected=request.is_disconnected,
                             interval=state.stream_interval)
        return StreamingResponse(frames, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache",
                                          "X-Accel-Buffering": "no"})

    return router


def _follow_page(page: Any) -> dict[str, Any]:
    return {"items": [{"user": f.user, "since": to_rfc3339(f.created_at)} for f in page.items],
            "next_cursor": page.next_cursor}
