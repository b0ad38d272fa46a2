"""Pages a person reads, over HTTP: outside the JSON API a path that leads nowhere is an HTML
page (under ``/v1`` errors stay JSON), and the inbox has a favicon."""

from __future__ import annotations

import pytest

from contract import error_of
from servers import LiveServer

pytest_plugins = ["servers"]


@pytest.mark.parametrize("path", ["/wiki/Fog", "/nowhere", "/static/missing.css", "/v1x"])
def test_a_page_that_is_not_there_is_an_html_page(shared_live: LiveServer, path: str) -> None:
    with shared_live.http(None) as http:
        response = http.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "Page not found" in response.text and 'href="/"' in response.text
    assert "<script" not in response.text
    assert "script-src 'self'" in response.headers["content-security-policy"]


@pytest.mark.parametrize("path", ["/v1/nothing-here", "/v1", "/v1/users/bob/nothing-here"])
def test_the_api_keeps_its_json_errors(shared_live: LiveServer, path: str) -> None:
    with shared_live.http() as http:
        response = http.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_the_inbox_has_a_favicon(shared_live: LiveServer) -> None:
    with shared_live.http(None) as http:
        page = http.get("/").text
        icon = http.get("/static/favicon.svg")
    assert '<link rel="icon" href="static/favicon.svg"' in page  # relative: mountable
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
