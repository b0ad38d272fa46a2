"""What every request passes through, as plain ASGI middleware (streams pass untouched):

- :class:`RequestContext`: the request id (the caller's ``X-Request-Id`` or a new one) on the
  answer and in the logs, the access log line and latency metric, and the last resort for
  errors nothing else handled: a logged 500 with an error id (:func:`errors.unexpected`), so
  the connection stays usable and no traceback reaches the caller;
- :class:`HeaderLimit`: 431 for a request line and headers over ``max_bytes`` (whatever the
  HTTP parser let through);
- :class:`BodyChecks`: 413 over the size limit, 415 not JSON, 400 malformed JSON, 422 for a
  body nested deeper than :data:`MAX_DEPTH` levels or holding a NUL or a lone surrogate
  (naming the field), so nothing past the door meets either.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidings import logs
from tidings.api import errors, jsonshape
from tidings.api.errors import respond
from tidings.api.paths import route_path
from tidings.metrics import Metrics

request_log = logging.getLogger("tidings.http")
REQUEST_ID = "tidings.request_id"  # where the request id is kept in the ASGI scope
WRITES = ("POST", "PUT", "PATCH")
MAX_DEPTH = 64  # of a whole body; a payload may nest 32 levels (schemas.events)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


class RequestContext:
    """Request ids, access logs, latency metrics and the last resort for unhandled errors."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = (_header(scope, b"x-request-id") or uuid.uuid4().hex)[:64]
        scope[REQUEST_ID] = request_id
        started = time.perf_counter()
        status = 500
        responded = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded
            if message["type"] == "http.response.start":
                status = message["status"]
                responded = True
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            with logs.request_scope(request_id):  # on every line logged for this request
                await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if responded:  # a stream broke off: nothing more can be said to the caller
                errors.unexpected(exc, request_id)
            else:
                await errors.unexpected(exc, request_id)(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            template = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.requests.labels(scope["method"], template, str(status)).observe(elapsed)
            request_log.info("%s %s %s %.1fms", scope["method"], template, status,
                             elapsed * 1000, extra={"request_id": request_id})


class HeaderLimit:
    """A request whose line and headers are over ``max_bytes``: 431 naming the limit."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string", b"")) + \
                sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if size > self.max_bytes:
                if scope["type"] == "http":
                    await respond(431, "request_header_fields_too_large",
                                  f"the request line and headers are {size} bytes; at most "
                                  f"{self.max_bytes} are allowed (TIDINGS_MAX_HEADER_BYTES)",
                                  [{"field": "headers", "message": "too large"}],
                                  )(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyChecks:
    """Bodies of writes: at most ``max_bytes``, JSON, well-formed (one-click unsubscribe
    posts are exempt: mail clients send a form there)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in WRITES \
                or route_path(scope).startswith("/v1/unsubscribe/"):
            await self.app(scope, receive, send)
            return
        refusal, body = await self._read(scope, receive)
        if refusal is None:
            refusal = self._check(scope, body)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)

    async def _read(self, scope: Scope, receive: Receive) -> tuple[Any, bytes]:
        length = _header(scope, b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_bytes
            except ValueError:
                return respond(400, "bad_request", "Content-Length is not a number"), b""
            if too_big:
                return self._too_big(), b""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return self._too_big(), b""
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return None, b"".join(chunks)

    def _too_big(self) -> Any:
        return respond(413, "payload_too_large", f"the body is over {self.max_bytes} bytes")

    def _check(self, scope: Scope, body: bytes) -> Any:
        if not body:
            return None
        content_type = (_header(scope, b"content-type") or "").lower()
        if "json" not in content_type:
            return respond(415, "unsupported_media_type", "send the body as application/json")
        try:
            value = json.loads(body)
        except RecursionError:  # the parser recurses: this deep, it gives up
            return _invalid("body", f"nests deeper than {MAX_DEPTH} levels")
        except ValueError:
            return respond(400, "bad_request", "the body is not valid JSON")
        if jsonshape.could_have_problem(body, MAX_DEPTH):
            found = jsonshape.problem(value, MAX_DEPTH)
            if found is not None:
                return _invalid(*found)
        return None


def _invalid(field: str, message: str) -> Any:
    return respond(422, "invalid_input", f"{field}: {message}",
                   [{"field": field, "message": message}])


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body already read, then waits for the disconnect."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
