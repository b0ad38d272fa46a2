"""Email routes: the unsubscribe link (RFC 8058 one-click) and bounce reports."""

from __future__ import annotations

import html
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import Server, State, error_responses
from tidings.api.errors import ApiError
from tidings.api.schemas.mail import Bounce, BounceIn
from tidings.api.schemas.params import BounceAddressPath, UnsubscribeTokenPath
from tidings.api.state import AppState

ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)

# The page is HTML, but errors answer with the JSON error body (a "model" here would be
# published as text/html, the route's own media type).
JSON_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
BAD_LINK: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad Request", "content": JSON_ERROR},
    404: {"description": "Not a valid unsubscribe link.", "content": JSON_ERROR},
}

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribe</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto;
padding: 0 1rem;">
{content}
</body></html>
"""
ASK = """<h1>Unsubscribe {user}?</h1>
<p>Stop all notification mail. Notifications on the web go on.</p>
<form method="post"><button type="submit">Unsubscribe</button></form>"""
DONE = """<h1>You are unsubscribed</h1>
<p>No more notification mail will be sent to {user}. You can turn it on again in your
preferences.</p>"""


def unsubscribe_html(user: str, *, done: bool) -> str:
    """The unsubscribe page: a question with a button, or the confirmation."""
    content = (DONE if done else ASK).format(user=html.escape(user))
    return PAGE.format(content=content)


def build() -> APIRouter:
    router = APIRouter(tags=["email"])

    def unsubscribing(state: AppState, token: str) -> str:
        user = state.tidings.user_of_unsubscribe_token(token)
        if user is None:
            raise ApiError(404, "this unsubscribe link is not valid")
        return user

    @router.get("/v1/unsubscribe/{token}", response_class=HTMLResponse, responses=BAD_LINK)
    async def unsubscribe_page(token: UnsubscribeTokenPath, state: State) -> HTMLResponse:
        """A page with an Unsubscribe button; opening the link changes nothing."""
        user = unsubscribing(state, token)
        return HTMLResponse(unsubscribe_html(user, done=False))

    @router.post("/v1/unsubscribe/{token}", response_class=HTMLResponse, responses=BAD_LINK)
    async def unsubscribe(token: UnsubscribeTokenPath, state: State) -> HTMLResponse:
        """One-click unsubscribe (RFC 8058): no more notification mail to this user."""
        user = unsubscribing(state, token)
        await run_in_threadpool(state.tidings.unsubscribe_email, user)
        return HTMLResponse(unsubscribe_html(user, done=True))

    @router.post("/v1/bounces", response_model=Bounce, responses=ERRORS)
    async def bounce(body: BounceIn, state: State, _caller: Server) -> dict[str, Any]:
        """Report a hard bounce: mail to this address stops; web delivery goes on."""
        await run_in_threadpool(state.tidings.report_bounce, body.address, body.reason)
        return {"address": body.address.strip().lower(), "bounced": True}

    @router.delete("/v1/bounces/{address}", response_model=Bounce, responses=ERRORS)
    async def clear_bounce(address: BounceAddressPath, state: State,
                           _caller: Server) -> dict[str, Any]:
        """The address works again: mail resumes."""
        await run_in_threadpool(state.tidings.clear_bounce, address)
        return {"address": address.strip().lower(), "bounced": False}

    return router
