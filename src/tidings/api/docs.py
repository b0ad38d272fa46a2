"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), with their
scripts, styles and icon served by tidings itself from the files the ``fastapi-offline``
package ships: the pages work without the internet and under a policy of ``'self'``. FastAPI's
own pages would load them from a CDN."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from tidings.api.paths import app_root

SWAGGER = "/docs"
REDOC = "/redoc"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
ASSETS = "/docs/assets"
PAGES = (SWAGGER, REDOC, OAUTH2_REDIRECT)
FILES = Path(fastapi_offline.__file__).parent / "static"


def install(app: FastAPI) -> None:
    """Serve the pages and their assets on ``app`` (built with ``docs_url=None`` and
    ``redoc_url=None``, so FastAPI's pages that use a CDN are not there)."""
    app.mount(ASSETS, StaticFiles(directory=FILES), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get(SWAGGER, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = _root(request)
        return get_swagger_ui_html(
            openapi_url=root + openapi_url, title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=root + OAUTH2_REDIRECT,
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png")

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = _root(request)
        return get_redoc_html(
            openapi_url=root + openapi_url, title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png", with_google_fonts=False)


def _root(request: Request) -> str:
    """The prefix the app is mounted under ("" at the root): the pages' links carry it."""
    return app_root(request.scope)
