"""User-scoped routes, served twice: under ``/v1/users/{user}`` and under ``/v1/me``."""

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import PayloadConditions, Server, State, error_responses
from tidings.api.errors import RETRY_AFTER_SECONDS, ApiError
from tidings.api.etag import conditional
from tidings.api.jsonshape import SafeJSONResponse, dumps, shaped
from tidings.api.live import LiveResponse, user_stream
from tidings.api.resume import BadLastEventId, Position, parse_last_event_id
from tidings.api.schemas.events import Accepted
from tidings.api.schemas.graph import (
    Created,
    Following,
    FollowPage,
    SubscriptionIn,
    SubscriptionPage,
    TimelinePage,
    timeline_item,
)
from tidings.api.schemas.inbox import (
    MemberOut,
    MemberPage,
    NotificationOut,
    NotificationPage,
    ReadAll,
    ReadIds,
    ReadIn,
    ReadUpToIn,
    SeenIn,
    SeenOut,
    SnoozeIn,
    TriageIn,
    UnreadCountOut,
    UnreadIn,
    Updated,
)
from tidings.api.schemas.params import (
    ActorQuery,
    CategoryQuery,
    CursorQuery,
    InboxStateQuery,
    LimitQuery,
    LocaleQuery,
    MaxIdQuery,
    NotificationIdPath,
    ObjectQuery,
    OtherPath,
    ParticipatingQuery,
    ReasonQuery,
    SectionQuery,
    SinceIdQuery,
    SubscriptionIdPath,
    TypesQuery,
    UserPath,
)
from tidings.api.schemas.preferences import Preferences
from tidings.clock import from_datetime, to_rfc3339

ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)
# Query parameters named after payload fields cannot be declared one by one: the list and the
# count publish their form as an extension of the operation.
PAYLOAD_CONDITIONS: dict[str, Any] = {"x-payload-conditions": (
    "`payload.FIELD=value` (any number, each field once): only notifications whose event's "
    "payload has FIELD equal to value, for fields an event type lists in `queryable` "
    "(top-level strings, numbers and booleans, compared as text: `5`, `2.5`, `true`). A field "
    "no type (of `types`, when given) lists: 400 naming it.")}
STREAM_EXAMPLE = (  # the frames of a stream, with `timeline` (an addition to v1)
    'event: unread\ndata: {"count": 1, "display": "1", "unseen": 1, "unseen_display": "1"}\n\n'
    'event: notification\ndata: {"id": "42", "type": "mention", "title": "…", …}\n\n'
    'event: timeline\ndata: {"id": "43", "type": "post", "actor": "alice", "object": "post:7", '
    '"payload": {}, "created_at": "2026-01-02T03:04:05Z"}\n\n')


NOT_MODIFIED: dict[int | str, dict[str, Any]] = {304: {
    "description": "Not Modified: `If-None-Match` names the answer's current `ETag` (an "
                   "addition; every 200 carries an `ETag`, a hash of its body)."}}
IfNoneMatch = Annotated[str | None, Header(
    description="An `ETag` this route gave (or several, or `*`): 304 while it still holds.")]
LastEventId = Annotated[str, Header(
    alias="Last-Event-ID",
    description="The `id:` of the last event a stream delivered: the stream replays what came "
                "after it (at most 100 items and 100 timeline entries; beyond, one `resync` "
                "event). Browsers' EventSource sends it when reconnecting.",
    # the ids a stream sends, stated for clients and schema-driven tests; not enforced by the
    # framework, so any other text gets the contract's 400 invalid_last_event_id
    # (empty: no id, as EventSource sends before its first)
    json_schema_extra={"pattern": r"^$|^" + r"(0|[1-9][0-9]{0,18})-" * 2
                       + r"(0|[1-9][0-9]{0,18})$"})]


def _types(value: str | None) -> list[str] | None:
    return [t for t in value.split(",") if t] if value else None


def build(resolve: Callable[..., Awaitable[str]], prefix: str, tag: str) -> APIRouter:
    """The user-scoped routes with ``resolve`` (a dependency) naming the user."""
    router = APIRouter(prefix=prefix, tags=[tag], responses=ERRORS)
    User = Annotated[str, Depends(resolve)]

    @router.get("/notifications", response_model=NotificationPage,
                openapi_extra=PAYLOAD_CONDITIONS, responses=NOT_MODIFIED)
    async def list_notifications(
        user: User, state: State, payload: PayloadConditions, if_none_match: IfNoneMatch = None,
        types: TypesQuery = None,
        category: CategoryQuery = None, section: SectionQuery = None,
        unread: bool | None = None, limit: LimitQuery = 20, cursor: CursorQuery = None,
        locale: LocaleQuery = None, actor: ActorQuery = None, object: ObjectQuery = None,
        max_id: MaxIdQuery = None, since_id: SinceIdQuery = None,
        reason: ReasonQuery = None, participating: ParticipatingQuery = None,
        inbox_state: InboxStateQuery = "inbox",
    ) -> Response:
        """The user's inbox, newest first; a bundle appears once (its newest member)."""
        # and, additions: an `ETag` (`If-None-Match` naming it is answered 304, no body);
        # `state`, the inbox's triage (archived, saved, snoozed items)
        page = await run_in_threadpool(
            state.tidings.notifications, user, types=_types(types), category=category,
            section=section, unread=unread, limit=limit, cursor=cursor,
            locale=locale or await state.locale_of(user), actor=actor, object=object,
            max_id=max_id, since_id=since_id, payload=payload, reason=reason,
            participating=participating, state=inbox_state)
        return conditional(dumps({
            "items": [shaped(NotificationOut, item.to_dict()) for item in page.items],
            "next_cursor": page.next_cursor}), if_none_match)

    @router.get("/notifications/unread-count", response_model=UnreadCountOut,
                openapi_extra=PAYLOAD_CONDITIONS, responses=NOT_MODIFIED)
    async def unread_count(user: User, state: State, payload: PayloadConditions,
                           if_none_match: IfNoneMatch = None, types: TypesQuery = None,
                           category: CategoryQuery = None, section: SectionQuery = None,
                           actor: ActorQuery = None, object: ObjectQuery = None,
                           max_id: MaxIdQuery = None, since_id: SinceIdQuery = None,
                           reason: ReasonQuery = None,
                           participating: ParticipatingQuery = None) -> Response:
        """Unread bundles, counted with a cap: above 99 the display is '99+'."""
        # and, an addition, those of them not yet seen (`unseen`): what a badge shows
        t = state.tidings
        narrow: dict[str, Any] = {
            "types": _types(types), "category": category, "section": section, "actor": actor,
            "object": object, "max_id": max_id, "since_id": since_id, "payload": payload,
            "reason": reason, "participating": participating}
        count, unseen = await run_in_threadpool(lambda: t.unread_counts(user, **narrow))
        return conditional(dumps({"count": count.count, "display": count.display,
                                  "unseen": unseen.count, "unseen_display": unseen.display}),
                           if_none_match)

    @router.post("/notifications/read", response_model=Updated)
    async def mark_read(user: User, state: State, body: ReadIn) -> dict[str, int]:
        """Mark read by ids, all (optionally some types / a category / a section), or match."""
        t = state.tidings
        if isinstance(body, ReadIds):
            updated = await run_in_threadpool(t.mark_read, user, body.ids)
        elif isinstance(body, ReadAll):
            updated = await run_in_threadpool(t.mark_all_read, user, types=body.types,
                                              category=body.category, section=body.section)
        else:
            match = body.match
            updated = await run_in_threadpool(
                lambda: t.mark_read_matching(user, actor=match.actor, type=match.type,
                                             object=match.object))
        state.metrics.marked_read.inc(updated)
        return {"updated": updated}

    def triage_route(path: str, summary: str, method: str) -> None:
        """``POST …/notifications/{path}`` with ``{"ids"}``: ``method`` of the facade."""

        async def triage(user: User, state: State, body: TriageIn) -> dict[str, int]:
            act = getattr(state.tidings, method)
            return {"updated": await run_in_threadpool(act, user, body.ids)}

        triage.__doc__ = summary + (" Every id must be the user's own (else 404, nothing "
                                    "changed); ``updated``: the groups whose state changed.")
        router.post(f"/notifications/{path}", response_model=Updated, name=method)(triage)

    triage_route("archive", "Archive (\"done\") these notifications' display groups: out of "
                 "the inbox and its unread count, listed under `state=archived`, until a new "
                 "member brings a group back.", "archive")
    triage_route("unarchive", "Back in the inbox.", "unarchive")
    triage_route("save", "Save these notifications' display groups: they stay in the inbox "
                 "and list under `state=saved` too; retention and the inbox cap keep them.",
                 "save")
    triage_route("unsave", "No longer saved.", "unsave")
    triage_route("unsnooze", "Back in the inbox at once.", "unsnooze")

    @router.post("/notifications/snooze", response_model=Updated)
    async def snooze(user: User, state: State, body: SnoozeIn) -> dict[str, int]:
        """Snooze these notifications' display groups until ``until`` (in the future): out
        of the inbox and its unread count, listed under `state=snoozed` with `snoozed_until`;
        then back in the inbox, unread, with a live update on the user's streams. Every id
        must be the user's own (else 404, nothing changed)."""
        updated = await run_in_threadpool(state.tidings.snooze, user, body.ids,
                                          from_datetime(body.until))
        return {"updated": updated}

    @router.post("/notifications/read-up-to", response_model=Updated)
    async def mark_read_up_to(user: User, state: State, body: ReadUpToIn) -> dict[str, int]:
        """Mark read every notification at or below this one's place in the inbox (one
        watermark); 404 unless the user has it. ``updated``: the unread items it covered."""
        updated = await run_in_threadpool(state.tidings.mark_read_up_to, user, body.id)
        state.metrics.marked_read.inc(updated)
        return {"updated": updated}

    @router.delete("/notifications/{notification_id:notification}", status_code=204,
                   response_class=Response)
    async def delete_notification(user: User, state: State,
                                  notification_id: NotificationIdPath) -> Response:
        """Remove this user's notification (everyone else keeps theirs); 404 unless the user
        has it."""
        await run_in_threadpool(state.tidings.delete_notification, user, notification_id)
        return Response(status_code=204)

    @router.get("/notifications/{notification_id:notification}/members",
                response_model=MemberPage)
    async def bundle_members(user: User, state: State, notification_id: NotificationIdPath,
                             limit: LimitQuery = 20, cursor: CursorQuery = None,
                             locale: LocaleQuery = None) -> Response:
        """The members of the item's display group (a bundle opened), newest first, each
        with its title in the singular and its own read state; any member's id opens its
        group. 404 unless the user has that notification."""
        page = await run_in_threadpool(
            state.tidings.bundle_members, user, notification_id, limit=limit, cursor=cursor,
            locale=locale or await state.locale_of(user))
        return SafeJSONResponse({
            "items": [shaped(MemberOut, item.to_dict()) for item in page.items],
            "next_cursor": page.next_cursor})

    @router.post("/notifications/unread", response_model=Updated)
    async def mark_unread(user: User, state: State, body: UnreadIn) -> dict[str, int]:
        """Mark these notifications (and their bundles) unread again."""
        updated = await run_in_threadpool(state.tidings.mark_unread, user, body.ids)
        return {"updated": updated}

    @router.post("/notifications/seen", response_model=SeenOut)
    async def mark_seen(user: User, state: State, body: SeenIn | None = None
                        ) -> dict[str, str]:
        """Move the seen watermark (to now, or to ``until`` if earlier)."""
        until = from_datetime(body.until) if body is not None and body.until else None
        await run_in_threadpool(state.tidings.mark_seen, user, until)
        state.metrics.marked_seen.inc()
        now = state.tidings.clock.now_us()
        return {"seen_until": to_rfc3339(min(until, now) if until is not None else now)}

    @router.get("/export", response_class=StreamingResponse, responses={200: {
        "description": "JSON Lines (`application/jsonl`): one record a line, each with a "
                       "`kind`: `user`, `notification`, `read_marker`, `subscription`, "
                       "`follow`, `follower`, `mute`, `preferences`, `pending_mail`, "
                       "`bounce`, `push_subscription`, `event`.",
        "content": {"application/jsonl": {"schema": {"type": "string"}}}}})
    async def export(user: User, state: State) -> StreamingResponse:
        """Everything kept about the user (GDPR Art. 15 and 20), streamed as JSON Lines:
        their notifications with their state, watermarks, subscriptions, follows both ways,
        mutes, preferences, pending mail, bounce state, push endpoints and the events they
        authored."""
        records = state.tidings.export_user(user)
        lines = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
                 for record in records)
        return StreamingResponse(lines, media_type="application/jsonl", headers={
            "Content-Disposition": f'attachment; filename="tidings-{user}.jsonl"'})

    @router.get("/subscriptions", response_model=SubscriptionPage)
    async def list_subscriptions(user: User, state: State, limit: LimitQuery = 20,
                                 cursor: CursorQuery = None) -> dict[str, Any]:
        page = await run_in_threadpool(state.tidings.subscriptions, user, limit=limit,
                                       cursor=cursor)
        return {"items": [{"id": str(i.id), "type": i.type, "object": i.object,
                           "channels": list(i.channels), "created_at": to_rfc3339(i.created_at),
                           "expires_at": None if i.expires_at is None
                           else to_rfc3339(i.expires_at)}
                          for i in page.items],
                "next_cursor": page.next_cursor}

    @router.post("/subscriptions", response_model=Created, status_code=201)
    async def subscribe(user: User, state: State, body: SubscriptionIn) -> dict[str, str]:
        """Subscribe to a type (or ``*``) on an object (or ``*``)."""
        expires_at = None if body.expires_at is None else from_datetime(body.expires_at)
        sub = await run_in_threadpool(partial(state.tidings.subscribe, expires_at=expires_at),
                                      user, body.type, body.object, body.channels)
        return {"id": str(sub.id)}

    @router.delete("/subscriptions/{subscription_id}", status_code=204,
                   response_class=Response)
    async def unsubscribe(user: User, state: State,
                          subscription_id: SubscriptionIdPath) -> Response:
        await run_in_threadpool(state.tidings.unsubscribe, user, subscription_id)
        return Response(status_code=204)

    @router.put("/follows/{other}", response_model=Following)
    async def follow(user: User, state: State, other: OtherPath
                     ) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.follow, user, other)
        return {"user": user, "other": other, "following": True}

    @router.delete("/follows/{other}", response_model=Following)
    async def unfollow(user: User, state: State, other: OtherPath
                       ) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.unfollow, user, other)
        return {"user": user, "other": other, "following": False}

    @router.get("/follows", response_model=FollowPage)
    async def following(user: User, state: State, limit: LimitQuery = 20,
                        cursor: CursorQuery = None) -> dict[str, Any]:
        """The users this user follows (paged)."""
        page = await run_in_threadpool(state.tidings.following, user, limit=limit,
                                       cursor=cursor)
        return _follow_page(page)

    @router.get("/followers", response_model=FollowPage)
    async def followers(user: User, state: State, limit: LimitQuery = 20,
                        cursor: CursorQuery = None) -> dict[str, Any]:
        """The users who follow this user (paged)."""
        page = await run_in_threadpool(state.tidings.followers, user, limit=limit,
                                       cursor=cursor)
        return _follow_page(page)

    @router.get("/timeline", response_model=TimelinePage)
    async def timeline(user: User, state: State, limit: LimitQuery = 20,
                       cursor: CursorQuery = None, max_id: MaxIdQuery = None,
                       since_id: SinceIdQuery = None) -> SafeJSONResponse:
        """Events of the users followed, newest first, whichever timeline model (push, pull
        or hybrid) wrote them: the same items, order and cursors (docs/timelines.md)."""
        # Page older with ``next_cursor`` (or ``max_id``: the last id shown);
        # ask for what is newer with ``since_id`` (the first id shown).
        page = await run_in_threadpool(
            lambda: state.tidings.timeline(
                user, limit=limit, cursor=cursor, max_id=int(max_id) if max_id else None,
                since_id=int(since_id) if since_id else None))
        return SafeJSONResponse({"items": [timeline_item(item) for item in page.items],
                                 "next_cursor": page.next_cursor})

    @router.get("/preferences", response_model=Preferences)
    async def get_preferences(user: User, state: State) -> dict[str, Any]:
        data = await run_in_threadpool(state.tidings.get_preferences, user)
        return Preferences.model_validate(data).model_dump()

    @router.put("/preferences", response_model=Preferences)
    async def put_preferences(user: User, state: State, body: Preferences
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
        return Preferences.model_validate(data).model_dump()

    @router.get("/stream", response_class=StreamingResponse, responses={
        200: {"content": {"text/event-stream": {"example": STREAM_EXAMPLE}},
              "description": "Server-Sent Events: `unread` and `notification` (and, "
                             "additions, `timeline` and `resync`), each with an `id:`."}})
    async def stream(user: User, state: State, request: Request,
                     locale: LocaleQuery = None, last_event_id: LastEventId = ""
                     ) -> StreamingResponse:
        """Live unread count and new items. Browsers may pass ``?access_token=``."""
        # and, an addition to v1, `timeline` frames: a new entry of the user's timeline
        # bounded (live.OpenStreams): a user's sixth stream ends their oldest; a full server
        # answers 503
        # and, an addition: every event has an `id:`; a `Last-Event-ID` (which browsers send
        # by themselves on reconnecting) replays what came after it, or sends one `resync`
        resume = _resume_from(last_event_id)
        locale = locale or await state.locale_of(user)
        slot = await state.streams.open(user, wait=state.stream_write_timeout)
        if slot is None:
            full = len(state.streams) >= state.streams.total
            message = (f"this server holds {state.streams.total} live streams, its most"
                       if full else f"your {state.streams.per_user} live streams have not "
                                    "all ended yet")
            raise ApiError(503, f"{message}; try again shortly", code="too_many_streams",
                           headers={"Retry-After": RETRY_AFTER_SECONDS})
        frames = user_stream(state.tidings, user, locale=locale, slot=slot,
                             disconnected=request.is_disconnected,
                             interval=state.stream_interval, resume=resume)
        return LiveResponse(frames, state.streams, slot, state.stream_write_timeout)

    return router


def build_erase() -> APIRouter:
    """``DELETE /v1/users/{user}``: a person's erasure (server key only, never ``/v1/me``:
    an application erases its user when it deletes their account)."""
    router = APIRouter(prefix="/v1/users", tags=["users"],
                       responses=error_responses(400, 401, 403, 413, 415, 422, 429, 503))

    @router.delete("/{user}", response_model=Accepted, status_code=202)
    async def erase(user: UserPath, state: State, _caller: Server) -> dict[str, str]:
        """Erase everything kept about the user (GDPR Art. 17): a job retracts the events
        they authored from every inbox and timeline, and removes their notifications,
        watermarks, subscriptions, follows both ways, mutes (theirs and others' of them),
        group memberships, preferences, pending mail, bounce state, push subscriptions and
        timeline, and their name from other events' recipients and exclude lists and from
        queued jobs. ``id`` names the job; again, or for a user never seen: 202 as well."""
        job = await run_in_threadpool(state.tidings.erase_user, user)
        state.forget_locale(user)
        return {"id": job, "status": "accepted"}

    return router


def _resume_from(header: str | None) -> Position | None:
    """The place a reconnecting stream resumes from (None: a new stream)."""
    if header is None or not header.strip():
        return None
    try:
        return parse_last_event_id(header)
    except BadLastEventId as error:
        raise ApiError(400, str(error), code="invalid_last_event_id") from None


def _follow_page(page: Any) -> dict[str, Any]:
    return {"items": [{"user": f.user, "since": to_rfc3339(f.created_at)} for f in page.items],
            "next_cursor": page.next_cursor}
