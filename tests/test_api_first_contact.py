"""What a new user meets first on a running server: the API docs work offline — the pages
reference only files the server itself serves — and probes may ask health routes with
``HEAD``."""

from __future__ import annotations

import re

import pytest

from servers import LiveServer

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
