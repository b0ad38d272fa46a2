"""What a new user meets first on a running server: the API docs work offline — the pages
reference only files the server itself serves — and probes may ask health routes with
``HEAD``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from backends import require
from servers import LiveServer
from test_api_headers import CHROMIUM, LAUNCH_ARGS, _check_chromium

pytest_plugins = ["servers"]

ASSET_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_use_only_files_this_server_serves(shared_live: LiveServer, page: str) -> None:
    with shared_live.http(None) as http:
        response = http.get(page)
        assert response.status_code == 200
        referenced = re.findall(r"""(?:src|href)=["']([^"']+)["']""", response.text)
        assert referenced, response.text
        # same origin: a path on this server, never another host ("//host", "https://…")
        assert all(url.startswith("/") and not url.startswith("//") for url in referenced), \
            referenced
        assert "http://" not in response.text and "https://" not in response.text
        csp = response.headers["content-security-policy"]
        assert "https:" not in csp and "cdn" not in csp, csp
        for url in referenced:
            asset = http.get(url)
            assert asset.status_code == 200, url
            kind = ASSET_TYPES[url[url.rindex("."):]]
            assert kind in asset.headers["content-type"], (url, asset.headers)
            assert len(asset.content) > 1000, url
        assert http.get(shared_live.base_url + "/openapi.json").status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_routes_answer_head(shared_live: LiveServer, path: str) -> None:
    with shared_live.http(None) as http:
        head = http.head(path)
        assert (head.status_code, head.content) == (200, b"")
        assert http.get(path).status_code == 200


def test_the_docs_render_in_a_browser_cut_off_from_the_internet(shared_live: LiveServer) -> None:
    require("Chromium", _check_chromium, where=CHROMIUM, env="TIDINGS_CHROMIUM")
    from playwright.sync_api import sync_playwright

    elsewhere: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith(shared_live.base_url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.route("**/*", offline)
            page.goto(f"{shared_live.base_url}/docs")
            page.locator(".opblock-summary-path", has_text="/v1/events").first.wait_for()
            page.goto(f"{shared_live.base_url}/redoc")
            page.get_by_text("/v1/events").first.wait_for(state="attached")
            page.close()
        finally:
            browser.close()
    assert elsewhere == []
    # ReDoc's bundle links its "powered by" logo on its CDN: the policy keeps that one
    # decorative image out, and nothing else is refused
    refused = [text for text in console if "Content Security Policy" in text]
    assert [text for text in refused if "cdn.redoc.ly/redoc/logo" not in text] == []
