"""The web inbox at ``/`` and the embeddable ``/tidings-bell.js``: static files, no build step.

``/tidings-bell.js`` is one script for a site owner to include, put together here from its
parts in ``web/bell/`` (its stylesheet, its drawing helpers, the element), each a file of its
own to read and edit.
"""

import html
import json
from functools import cache
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

WEB = resources.files("tidings.api") / "web"


def mount(app: FastAPI) -> None:
    folder = str(WEB)

    @app.get("/", include_in_schema=False)
    async def inbox() -> FileResponse:
        return FileResponse(f"{folder}/index.html", media_type="text/html",
                            headers={"Cache-Control": "no-cache"})

    @app.get("/tidings-bell.js", include_in_schema=False)
    async def bell() -> Response:
        return Response(bell_script(), media_type="text/javascript",
                        headers={"Access-Control-Allow-Origin": "*",
                                 "Cache-Control": "no-cache"})

    @app.get("/push-sw.js", include_in_schema=False)
    async def push_worker() -> FileResponse:
        # at the root, so its scope is the whole inbox (a worker's scope is its folder)
        return FileResponse(f"{folder}/push-sw.js", media_type="text/javascript",
                            headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=folder), name="static")


@cache
def not_found_page(root: str = "") -> bytes:
    """The page a person gets for a path that leads nowhere (outside the JSON API); its links
    (stylesheet, icon, the inbox) under ``root``, the prefix the app is mounted under."""
    page = (WEB / "404.html").read_bytes()
    return page.replace(b'href="/', f'href="{html.escape(root)}/'.encode())


BELL_HEAD = """/* <tidings-bell>: a badge of news and a flyout of the newest notifications, live.
 *
 *   <script src="https://tidings.example.org/tidings-bell.js"></script>
 *   <tidings-bell api="https://tidings.example.org" token="USER_TOKEN"></tidings-bell>
 *
 * Attributes, events and styling: docs/web.md. Seen is not read, as in MediaWiki's Echo: the
 * badge counts the unseen and clears when the flyout opens; an item keeps its dot until read.
 * Everything a notification carries is placed as text, never as markup.
 */
(() => {
"use strict";
"""


@cache
def bell_script() -> bytes:
    """``/tidings-bell.js``: its stylesheet as a string, its helpers and the element, in one
    closure (nothing leaks into the embedding page but the element)."""
    parts = WEB / "bell"
    style = json.dumps((parts / "bell.css").read_text(encoding="utf-8"))
    script = (f"{BELL_HEAD}const STYLE = {style};\n\n"
              f"{(parts / 'kit.js').read_text(encoding='utf-8')}\n"
              f"{(parts / 'element.js').read_text(encoding='utf-8')}}})();\n")
    return script.encode("utf-8")
