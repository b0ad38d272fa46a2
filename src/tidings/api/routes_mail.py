"""Email routes: the unsubscribe link (RFC 8058 one-click) and bounce reports."""

from __future__ import annotations

import html
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from tidings.api.deps import Server, State, error_responses
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
    410: {"description": "The link was sent to an address the user no longer has.",
          "content": JSON_ERROR},
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
ASK = """<h1>Unsubscribe?</h1>
<p>Stop {what}. Notifications on the web go on.</p>
<form method="post"><button type="submit">Unsubscribe</button></form>"""
DONE = """<h1>You are unsubscribed</h1>
<p>You will no longer get {what}. Notifications on the web go on; you can change this in your
preferences.</p>
<form method="post" action="{token}/undo"><button type="submit">Undo</button></form>"""
UNDONE = """<h1>Turned on again</h1>
<p>You will get {what} again.</p>"""


def described(purpose: str, target: str) -> str:
    """What an unsubscribe link turns off, in words."""
    if purpose == "category":
        return f"email about “{target}” notifications"
    if purpose == "object":
        return f"email about {target}"
    return "any notification email"


def unsubscribe_html(purpose: str, target: str, token: str, *, step: str) -> str:
    """The unsubscribe page: the question with a button (``ask``), the confirmation with an
    Undo button (``done``), or the undo's confirmation (``undone``)."""
    template = {"ask": ASK, "done": DONE, "undone": UNDONE}[step]
    content = template.format(what=html.escape(described(purpose, target)),
                              token=html.escape(token))
    return PAGE.format(content=content)


def build() -> APIRouter:
    router = APIRouter(tags=["email"])

    async def follow(state: AppState, token: str, step: str) -> HTMLResponse:
        link = await run_in_threadpool(state.tidings.unsubscribe_link, token,
                                       apply=step != "ask", undo=step == "undone")
        return HTMLResponse(unsubscribe_html(link.purpose, link.target, token, step=step))

    @router.get("/v1/unsubscribe/{token}", response_class=HTMLResponse, responses=BAD_LINK)
    async def unsubscribe_page(token: UnsubscribeTokenPath, state: State) -> HTMLResponse:
        """A page saying what the link turns off, with a button; opening it changes nothing."""
        return await follow(state, token, "ask")

    @router.post("/v1/unsubscribe/{token}", response_class=HTMLResponse, responses=BAD_LINK)
    async def unsubscribe(token: UnsubscribeTokenPath, state: State) -> HTMLResponse:
        """One-click unsubscribe (RFC 8058): the link's kind of mail is turned off — one
        category, one object (page or thread), or all notification mail."""
        return await follow(state, token, "done")

    @router.post("/v1/unsubscribe/{token}/undo", response_class=HTMLResponse,
                 responses=BAD_LINK)
    async def unsubscribe_undo(token: UnsubscribeTokenPath, state: State) -> HTMLResponse:
        """Undo an unsubscribe link: its kind of mail is turned on again."""
        return await follow(state, token, "undone")

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
