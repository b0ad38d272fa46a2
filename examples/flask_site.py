"""A Flask site whose users get tidings' notifications (docs/mount.md, "Flask").

Flask speaks WSGI, so tidings runs beside it (``tidings serve``) instead of inside it. The
site's backend talks to tidings through the Python client with the server key: it publishes
what its users do, reads a signed-in user's inbox for its own pages, and mints that user a
short-lived token for the bell, which then talks to tidings from the browser (and asks the
site for a fresh token before the old one expires)::

    TIDINGS_URL=http://127.0.0.1:8000 TIDINGS_API_KEY=… FLASK_SECRET_KEY=… \\
        flask --app examples/flask_site.py run
"""

from __future__ import annotations

import os
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template_string, request, session

from tidings.client import ApiError, Client

PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Example site</title></head>
<body>
  <header>
    <tidings-bell server="{{ tidings }}" token="{{ token }}"></tidings-bell>
    Signed in as {{ user }}
  </header>
  <script src="{{ tidings }}/tidings-bell.js"></script>
  <script>
    // A fresh token before this one expires: the bell carries on with it.
    const bell = document.querySelector("tidings-bell");
    bell.addEventListener("tidings-token-expiring", async (event) => {
      const answer = await fetch("{{ url_for('bell_token') }}", { method: "POST" });
      if (answer.ok) event.target.token = (await answer.json()).token;
    });
  </script>
</body>
</html>"""

BELL_TOKEN_SECONDS = 15 * 60


def create_site(tidings_url: str, api_key: str, secret_key: str) -> Flask:
    """The site, talking to the tidings server at ``tidings_url`` with ``api_key``."""
    site = Flask(__name__)
    site.secret_key = secret_key
    tidings = Client(tidings_url, api_key)  # the site's backend: the server key

    def signed_in() -> str:
        user = session.get("user")
        if not isinstance(user, str):
            abort(401)
        return user

    @site.errorhandler(ApiError)
    def tidings_refused(error: ApiError) -> Any:
        # tidings names what was wrong; a 5xx of tidings is the site's 502
        status = error.status if 400 <= error.status < 500 else 502
        return jsonify(error={"code": error.code, "message": error.message}), status

    @site.post("/login")
    def login() -> Any:
        """Stands in for the site's own sign-in."""
        session["user"] = request.form["user"]
        return redirect("/")

    @site.post("/comments")
    def comment() -> Any:
        """A comment that mentions people: each of them is told."""
        author = signed_in()
        body = request.get_json()
        accepted = tidings.publish(
            "mention", actor=author, object=f"page:{body['page']}",
            recipients=body["mentions"], payload={"text": body["text"]})
        return jsonify(event=accepted["id"]), 201

    @site.get("/notifications")
    def notifications() -> Any:
        """The signed-in user's newest notifications, for the site's own page."""
        user = signed_in()
        page = tidings.notifications(user=user, limit=20)
        unread = tidings.unread_count(user=user)
        return jsonify(unread=unread["display"], items=[
            {"id": item["id"], "title": item["title"], "read": item["read"]}
            for item in page["items"]])

    @site.post("/notifications/read")
    def read_all() -> Any:
        return jsonify(updated=tidings.mark_read(user=signed_in(), all=True))

    @site.post("/bell-token")
    def bell_token() -> Any:
        """A user token for the bell, minted for the signed-in user only."""
        minted = tidings.mint_token(signed_in(), ttl_seconds=BELL_TOKEN_SECONDS)
        return jsonify(token=minted["token"], expires_at=minted["expires_at"])

    @site.get("/")
    def home() -> Any:
        user = signed_in()
        token = tidings.mint_token(user, ttl_seconds=BELL_TOKEN_SECONDS)["token"]
        return render_template_string(PAGE, tidings=tidings_url.rstrip("/"), token=token,
                                      user=user)

    return site


if "TIDINGS_URL" in os.environ:  # `flask --app examples/flask_site.py run`
    app = create_site(os.environ["TIDINGS_URL"], os.environ["TIDINGS_API_KEY"],
                      os.environ["FLASK_SECRET_KEY"])
