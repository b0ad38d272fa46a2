"""What every request passes through: request ids, JSON access logs, latency metrics, and the
body checks (413 over the size limit, 415 not JSON, 400 malformed JSON)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

from tidings.api.errors import respond
from tidings.api.state import AppState

request_log = logging.getLogger("tidings.http")


def install(app: FastAPI, state: AppState) -> None:
    @app.middleware("http")
    async def guard(request: Request,
                    call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        started = time.perf_counter()
        response = await _checked(request, call_next, state)
        elapsed = time.perf_counter() - started
        response.headers["X-Request-Id"] = request_id[:64]
        route = request.scope.get("route")
        template = getattr(route, "path", "unmatched")
        state.metrics.requests.labels(request.method, template,
                                      str(response.status_code)).observe(elapsed)
        request_log.info("%s %s %s %.1fms", request.method, template, response.status_code,
                         elapsed * 1000, extra={"request_id": request_id[:64]})
        return response


async def _checked(request: Request, call_next: Callable[[Request], Awaitable[Response]],
                   state: AppState) -> Response:
    """413 for bodies over the limit, 415 for bodies that are not JSON."""
    if request.method in ("POST", "PUT", "PATCH") and \
            not request.url.path.startswith("/v1/unsubscribe/"):
        length = request.headers.get("content-length")
        if length is not None:
            try:
                too_big = int(length) > state.max_body_bytes
            except ValueError:
                return respond(400, "bad_request", "Content-Length is not a number")
            if too_big:
                return respond(413, "payload_too_large",
                               f"the body is over {state.max_body_bytes} bytes")
        body = await request.body()
        if len(body) > state.max_body_bytes:
            return respond(413, "payload_too_large",
                           f"the body is over {state.max_body_bytes} bytes")
        content_type = request.headers.get("content-type", "")
        if body and "json" not in content_type.lower():
            return respond(415, "unsupported_media_type", "send the body as application/json")
        if body:
            try:
                json.loads(body)
            except ValueError:
                return respond(400, "bad_request", "the body is not valid JSON")
    return await call_next(request)
