"""The demo's wiki: a tiny page per title (and its talk page, and each user's pages), so every
link a notification carries leads somewhere; each page embeds ``<tidings-bell>`` and has a
"Watch" button that subscribes the signed-in user through the HTTP API; a user's page also has
a "Follow" button (``PUT`` / ``DELETE /v1/me/follows/{user}``), which fills the inbox's Following
page.

Served by ``tidings demo`` only: :func:`serve_wiki` adds these routes to the demo's app, not to
the library's. Every name placed in a page is escaped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from html import escape
from importlib import resources

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, Response

from tidings.demo import PAGES, USERS

STATIC = resources.files("tidings.demo") / "web"
BLURBS = {
    "San_Francisco": "A hilly city on the tip of a peninsula, between the Pacific and its bay.",
    "Golden_Gate_Bridge": "A suspension bridge spanning the strait that opens the bay to the "
                          "ocean, painted International Orange.",
    "Alcatraz_Island": "A small island in the bay: a fort, a federal prison, now a museum.",
    "Cable_car": "Cars pulled along the city's steepest streets by cables under the road.",
    "Fog": "The marine layer that rolls in through the Golden Gate on summer afternoons.",
    "Mission_District": "The city's oldest neighbourhood, sunny, with murals and taquerias.",
    "Sourdough": "A bread leavened with wild yeast, the city's since the Gold Rush.",
}
COLOURS = ["#1d6fb8", "#7a3db8", "#b83d6e", "#b8583d", "#2f8a4c", "#0f7c80", "#5a5fc8", "#a0651c"]


def resolve(name: str) -> tuple[str, str, str, str] | None:
    """A wiki path → (title, article path, talk path, watched object), or None if not a page."""
    if name.startswith("Talk:") and name[5:] in PAGES:
        name = name[5:]
    if name in PAGES:
        return name.replace("_", " "), name, f"Talk:{name}", f"page:{name}"
    for prefix in ("User:", "User_talk:"):
        user = name[len(prefix):] if name.startswith(prefix) else None
        if user in USERS:
            return f"User:{user}", f"User:{user}", f"User_talk:{user}", f"page:User_talk:{user}"
    return None


def page(name: str) -> str | None:
    """The HTML of the wiki page at ``/wiki/{name}``, or None."""
    found = resolve(name)
    if found is None:
        return None
    title, article, talk, watched = found
    on_talk = name == talk
    follow = ""
    if article.startswith("User:"):
        user = article[5:]
        text = (f"Messages for {user}: what you write here reaches their inbox." if on_talk
                else f"{user} edits the demo wiki. Follow them to see their edits on your "
                     "Following page.")
        follow = (f'<button id="follow" type="button" data-user="{escape(user)}" '
                  'aria-pressed="false" hidden>Follow</button>')
    else:
        text = ("Discussion about improving the article. Watchers of the article hear of it."
                if on_talk else BLURBS.get(article, ""))
    heading = (talk if on_talk else article).replace("_", " ")
    pages = "".join(f'<li><a href="/wiki/{escape(p)}">{escape(p.replace("_", " "))}</a></li>'
                    for p in PAGES)
    current = ' aria-current="page"'
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <title>{escape(heading)} · Demo wiki</title>
  <link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/static/tidings.css">
  <link rel="stylesheet" href="/demo/wiki.css">
</head>
<body class="wiki">
  <header class="bar">
    <a class="brand" href="/wiki/San_Francisco">Demo wiki</a>
    <span class="spacer"></span>
    <a class="inbox" href="/#/notifications">Inbox</a>
    <tidings-bell id="bell" href="/#/notifications" hidden></tidings-bell>
  </header>
  <main id="main">
    <article class="card">
      <nav class="page-tabs" aria-label="Page">
        <a href="/wiki/{escape(article)}"{"" if on_talk else current}>{
            "User page" if article.startswith("User:") else "Article"}</a>
        <a href="/wiki/{escape(talk)}"{current if on_talk else ""}>Talk</a>
        <span class="spacer"></span>
        <button id="watch" type="button" data-object="{escape(watched)}"
                data-title="{escape(title)}" aria-pressed="false" hidden>Watch</button>
        {follow}
        <a id="sign-in" class="button" href="/" hidden>Sign in to watch</a>
      </nav>
      <h1>{escape(heading)}</h1>
      <p>{escape(text)}</p>
      <p class="status" id="watch-status" role="status"></p>
    </article>
    <nav class="card pages" aria-label="Pages"><h2>Pages</h2><ul>{pages}</ul></nav>
  </main>
  <script src="/tidings-bell.js"></script>
  <script src="/demo/wiki.js"></script>
</body>
</html>
"""


def avatar(user: str) -> str:
    """An identicon for ``user``: a symmetric 5 by 5 pattern in a colour of their own (SVG)."""
    digest = hashlib.sha256(user.encode()).digest()
    colour = COLOURS[digest[0] % len(COLOURS)]
    cells = []
    for row in range(5):
        for col in range(3):
            if digest[1 + row * 3 + col] % 2:
                for x in {col, 4 - col}:
                    cells.append(f'<rect x="{6 + x * 10}" y="{6 + row * 10}" width="10" '
                                 f'height="10"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 62 62">'
            f'<rect width="62" height="62" fill="#f0f1f5"/><g fill="{colour}">'
            f'{"".join(cells)}</g></svg>')


def serve_wiki(app: FastAPI) -> None:
    """Add the wiki's pages, its script and style, and the users' avatars to ``app``."""

    @app.get("/wiki/{name:path}", include_in_schema=False)
    async def wiki_page(name: str) -> HTMLResponse:
        html = page(name)
        if html is None:
            raise HTTPException(404)  # the app's own "page not found"
        return HTMLResponse(html)

    @app.get("/demo/avatars/{user}.svg", include_in_schema=False)
    async def user_avatar(user: str) -> Response:
        if user not in USERS:
            raise HTTPException(404)
        return Response(avatar(user), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=86400"})

    for name, media in (("wiki.js", "text/javascript"), ("wiki.css", "text/css")):
        app.add_api_route(f"/demo/{name}", _file((STATIC / name).read_bytes(), media),
                          include_in_schema=False)


def _file(body: bytes, media: str) -> Callable[[], Awaitable[Response]]:
    async def serve() -> Response:
        return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})

    return serve
