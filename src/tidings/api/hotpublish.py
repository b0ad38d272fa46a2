"""``POST /v1/events`` answered without FastAPI's per-request work, like the hot reads of
:mod:`tidings.api.hotreads`.

Profiled under load (cProfile of the ASGI app, 16 requests at a time), FastAPI's dependency
solving took about a quarter of a publish's time in the server. This route sits in front of
the FastAPI route of the same path and answers a plain publish itself: the same server key
check (:mod:`tidings.api.auth`), the same model (``EventIn``, over the parsed body, as
FastAPI validates it), the same rate limit, the same group commit (:mod:`tidings.api.groupcommit`),
the same 202 body, and errors raised into the same handlers. A request it cannot answer in
full — a query string, a body the model refuses, a caller that is not a server key — is
handed to the FastAPI route with its body as read, so every error answer stays the
contract's. The body checks of :mod:`tidings.api.middleware` (size, media type, JSON) have
run before either route sees the body. Not in the OpenAPI document: the FastAPI route still
describes the path.
"""

from __future__ import annotations

import json

from fastapi import FastAPI
from starlette.routing import Match, Route, Router
from starlette.types import Receive, Scope, Send

from tidings.api.errors import ApiError
from tidings.api.hotreads import authorization
from tidings.api.jsonshape import SafeJSONResponse
from tidings.api.middleware import replay
from tidings.api.ratelimit import admit_shared
from tidings.api.schemas.events import EventIn
from tidings.api.state import AppState

PATH = "/v1/events"
DECLINED = "tidings.hot_publish_declined"  # scope key: let the FastAPI route answer


class HotPublish(Route):
    """A plain ``POST /v1/events``; whatever it cannot answer goes back to ``router``, which
    then passes this route by (:data:`DECLINED` in the scope) to the FastAPI one."""

    def __init__(self, state: AppState, router: Router) -> None:
        super().__init__(PATH, endpoint=self._never, methods=["POST"], include_in_schema=False)
        self.state = state
        self.router = router

    async def _never(self) -> None:  # pragma: no cover - handle() answers instead
        raise AssertionError("HotPublish answers in handle()")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["query_string"] \
                or scope.get(DECLINED):
            return Match.NONE, {}
        match, child = super().matches(scope)
        if match is not Match.FULL:
            return Match.NONE, {}
        return match, {**child, "route": self}  # its path: the metrics' and logs' template

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        state = self.state
        try:
            caller = state.auth.authenticate(authorization(scope), None)
            # as FastAPI validates a body: the model over the parsed JSON
            event = EventIn.model_validate(json.loads(body)) if caller.is_server else None
        except (ApiError, ValueError):  # pydantic's ValidationError is a ValueError
            event = None
        if event is None:  # the FastAPI route answers it, errors and all
            await self.router({**scope, DECLINED: True}, replay(body, receive), send)
            return
        await admit_shared(state.limiter, caller.key or "", 1, what="events",
                           setting="TIDINGS_RATE_LIMIT")
        published = await state.commits.publish(event.model_dump(exclude_unset=True),
                                                 caller.idempotency_scope)
        if published.created:
            state.metrics.events_accepted.inc()
        response = SafeJSONResponse({"id": published.id, "status": "accepted"},
                                    status_code=202)
        await response(scope, receive, send)


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            return b"".join(chunks)


def install(app: FastAPI, state: AppState) -> None:
    """Put the hot publish in front of the FastAPI route of its path."""
    app.router.routes.insert(0, HotPublish(state, app.router))
