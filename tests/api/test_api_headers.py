"""Security headers: HTML answers (the web inbox, the unsubscribe page, the API docs) send a
Content-Security-Policy without inline script (the docs' inline script is allowed by its hash),
may not be framed, and every answer says ``nosniff``; ``/tidings-bell.js`` stays embeddable
from any site. A real Chromium loads the inbox under the policy and reports no violation."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from typing import Any

import pytest

from backends import require
from servers import LiveServer
from tidings.channels.email import signing_secret, unsubscribe_token

pytest_plugins = ["servers"]

CHROMIUM = os.environ.get("TIDINGS_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def policy(header: str) -> dict[str, list[str]]:
    """A CSP header as {directive: sources}."""
    directives = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = words[1:]
    return directives


def assert_locked_down(headers: Any) -> dict[str, list[str]]:
    csp = policy(headers["content-security-policy"])
    assert csp["frame-ancestors"] == ["'none'"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    scripts = csp.get("script-src", csp["default-src"])
    assert "'unsafe-inline'" not in scripts and "'unsafe-eval'" not in scripts
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    return csp


def test_the_inbox_and_the_unsubscribe_page_are_locked_down(shared_live: LiveServer) -> None:
    shared_live.tidings.set_preferences("csp-bob", {"email": {"address": "bob@example.org"}})
    token = unsubscribe_token(signing_secret(shared_live.tidings.config), "csp-bob",
                              "bob@example.org")
    link = f"/v1/unsubscribe/{token}"
    with shared_live.http(None) as http:
        for path in ("/", link):
            response = http.get(path)
            assert response.status_code == 200, path
            csp = assert_locked_down(response.headers)
            assert csp["script-src"] == ["'self'"], path


def test_the_docs_allow_their_inline_script_by_hash(shared_live: LiveServer) -> None:
    with shared_live.http(None) as http:
        for path in ("/docs", "/redoc"):
            response = http.get(path)
            assert response.status_code == 200
            csp = assert_locked_down(response.headers)
            inline = re.findall(r"<script>(.*?)</script>", response.text, re.DOTALL)
            for script in inline:
                digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
                assert f"'sha256-{digest}'" in csp["script-src"], path


def test_every_answer_says_nosniff_and_json_is_not_framed(shared_live: LiveServer) -> None:
    with shared_live.http() as http:
        for response in (http.get("/healthz"), http.get("/v1/types"), http.get("/nowhere"),
                         http.post("/v1/events", json={"type": "nope"})):
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["x-frame-options"] == "DENY"


def test_the_bell_stays_embeddable_from_any_site(shared_live: LiveServer) -> None:
    with shared_live.http(None) as http:
        response = http.get("/tidings-bell.js", headers={"Origin": "https://wiki.example"})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/javascript")
        assert response.headers["access-control-allow-origin"] == "*"
        assert "cross-origin-resource-policy" not in response.headers
        preflight = http.options("/v1/me/notifications", headers={
            "Origin": "https://wiki.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "*"


def _check_chromium() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        raise FileNotFoundError(f"{CHROMIUM} is missing (scripts/test installs Debian's chromium)")
    import playwright.sync_api  # noqa: F401


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_the_inbox_works_under_its_policy_in_a_browser(live: LiveServer) -> None:
    require("Chromium", _check_chromium, where=CHROMIUM, env="TIDINGS_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with live.client() as server:
        server.publish("mention", actor="alice", recipients=["bob"])
    assert live.settled()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.goto(f"{live.base_url}/#token={live.token('bob')}")
            page.wait_for_selector("#list li")
            page.locator("tidings-bell .badge").filter(has_text="1").wait_for(timeout=5000)
            page.locator("tidings-bell .bell").click()
            page.locator("tidings-bell .item").first.wait_for()
            page.close()
        finally:
            browser.close()
    violations = [text for text in console if "Content Security Policy" in text]
    assert violations == []
