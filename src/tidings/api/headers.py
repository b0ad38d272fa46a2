"""Security headers on every answer (ASGI middleware).

Every answer says ``X-Content-Type-Options: nosniff`` and may not be framed
(``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``). HTML answers — the web inbox,
the unsubscribe page, the API docs — get a Content-Security-Policy without inline script:
an inline ``<script>`` runs only if the policy names its SHA-256, which is computed here
from the page itself (FastAPI's docs pages have one). Other answers get
``default-src 'none'``. ``/tidings-bell.js`` stays embeddable by any site: a script's own
CSP does not apply where it is embedded, and CORS is left as it is.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidings.api.paths import route_path

# Inline styles are allowed: <tidings-bell> styles its shadow root with a <style> element.
PAGE_POLICY = ("default-src 'self'; script-src 'self'{scripts}; "
               "style-src 'self' 'unsafe-inline'{styles}; img-src 'self' data:{images}; "
               "font-src 'self'{fonts}; connect-src 'self'; worker-src 'self'{workers}; "
               "object-src 'none'; base-uri 'none'; form-action 'self'; "
               "frame-ancestors 'none'")
# The docs pages load Swagger UI and ReDoc from this server (tidings.api.docs); ReDoc runs a
# worker it makes from a blob.
DOCS_SOURCES = {"scripts": "", "styles": "", "images": "", "fonts": "", "workers": " blob:"}
OTHER_POLICY = "default-src 'none'; frame-ancestors 'none'"
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>",
                            re.DOTALL | re.IGNORECASE)


def page_policy(html: bytes, *, docs: bool = False) -> str:
    """The CSP of an HTML page: its inline scripts allowed by hash, nothing else inline."""
    hashes = "".join(
        f" 'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(html))
    sources = dict.fromkeys(DOCS_SOURCES, "") if not docs else dict(DOCS_SOURCES)
    sources["scripts"] += hashes
    return PAGE_POLICY.format(**sources)


class SecurityHeaders:
    """Add the headers; hold an HTML answer's head until its body is known (to hash it)."""

    def __init__(self, app: ASGIApp, docs_paths: Iterable[str]) -> None:
        self.app = app
        self.docs_paths = frozenset(docs_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        chunks: list[bytes] = []

        async def secured(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                headers["X-Frame-Options"] = "DENY"
                if headers.get("content-type", "").startswith("text/html"):
                    held = message
                    return
                headers.setdefault("Content-Security-Policy", OTHER_POLICY)
            elif message["type"] == "http.response.body" and held is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                page = b"".join(chunks)
                docs = route_path(scope) in self.docs_paths
                MutableHeaders(scope=held)["Content-Security-Policy"] = page_policy(page,
                                                                                    docs=docs)
                await send(held)
                message = {"type": "http.response.body", "body": page, "more_body": False}
                held = None
            await send(message)

        await self.app(scope, receive, secured)
