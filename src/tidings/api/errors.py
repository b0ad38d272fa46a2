"""The one place that maps errors to HTTP: statuses, and the contract's JSON error body
``{"error": {"code", "message", "details"}}``.

- :class:`ApiError` (raised by routes and dependencies) carries its own status;
- a :class:`TidingsError` maps by its kind (:func:`status_of`): bad input 4xx, a store that
  cannot serve now 503 with ``Retry-After``, a value the store refused 422;
- request validation errors are 422 naming the field (400 for malformed JSON);
- anything else — a driver's integrity error, a defect — is :func:`unexpected`: logged with
  an error id, answered 500 with that id and never a traceback.

Outside the API (``/v1``) a path that leads nowhere is a page a person reads: 404 answers
there with an HTML page that leads back to the inbox, not with JSON.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from tidings.api import web
from tidings.api.paths import app_root, route_path
from tidings.exceptions import (
    IdempotencyConflict,
    InvalidInput,
    LinkExpired,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    SchemaOutOfDate,
    StoreRejected,
    StoreUnavailable,
    TidingsError,
    UnknownQueryField,
)

log = logging.getLogger("tidings.api")
RETRY_AFTER_SECONDS = "5"

STATUS_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 409: "conflict",
    413: "payload_too_large", 415: "unsupported_media_type", 422: "invalid_input",
    429: "rate_limited", 431: "request_header_fields_too_large", 500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    """An error with a status, raised by routes and dependencies."""

    def __init__(self, status: int, message: str, *, code: str | None = None,
                 details: list[dict[str, Any]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or STATUS_CODES.get(status, "error")
        self.message = message
        self.details = details or []
        self.headers = headers or {}


def invalid(field: str, message: str, status: int = 422) -> ApiError:
    """Bad input in ``field``: the message names it, and so do the details."""
    return ApiError(status, f"{field}: {message}",
                    details=[{"field": field, "message": message}])


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or []}}


def respond(status: int, code: str, message: str, details: list[dict[str, Any]] | None = None,
            headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status, headers=headers)


def status_of(exc: TidingsError) -> int:
    """The HTTP status of a tidings error, by its kind."""
    if isinstance(exc, PayloadTooLarge):
        return 413
    if isinstance(exc, UnknownQueryField):
        return 400
    if isinstance(exc, InvalidInput | StoreRejected):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, LinkExpired):
        return 410
    if isinstance(exc, IdempotencyConflict | QuotaExceeded):
        return 409
    if isinstance(exc, StoreUnavailable | SchemaOutOfDate):
        return 503
    return 500


def unexpected(exc: BaseException, request_id: str | None = None) -> JSONResponse:
    """Log ``exc`` with a new error id and answer 500 with that id (the log has the rest)."""
    error_id = secrets.token_hex(6)
    log.error("unexpected error (error id %s): %s: %s", error_id, type(exc).__name__,
              _first_line(exc), exc_info=exc, extra={"request_id": request_id,
                                                     "error_id": error_id})
    return respond(500, "internal_error",
                   f"an unexpected error occurred; it was logged (error id {error_id})")


def tidings_error(exc: TidingsError, request_id: str | None = None) -> JSONResponse:
    """The answer to a :class:`TidingsError`."""
    status = status_of(exc)
    if status == 500:
        return unexpected(exc, request_id)
    field = getattr(exc, "field", None)
    details = [{"field": field, "message": str(exc)}] if field else []
    headers = {"Retry-After": RETRY_AFTER_SECONDS} if status == 503 else None
    if status == 503:
        log.warning("store unavailable: %s", exc, extra={"request_id": request_id})
    return respond(status, exc.code, str(exc), details, headers)


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path. Starlette's own ``Allow`` names only the
    first route that matched the path, but GET and POST of one path are separate routes."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "\x00"})
        if match != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


def _field_path(location: Any) -> str:
    parts: list[str] = []
    for part in location:
        # A tagged union (``ReadIn``) puts its tag, the key that chose the branch, before the
        # branch's own errors: ("body", "ids", "ids", 0) names the field ids.0.
        if part not in ("body", "query", "path", "header") and [str(part)] != parts[-1:]:
            parts.append(str(part))
    return ".".join(parts) or str(location[-1] if location else "request")


def is_api_path(path: str) -> bool:
    """Whether ``path`` belongs to the JSON API (its errors are JSON, whoever asks)."""
    return path == "/v1" or path.startswith("/v1/")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else "(no message)"


def _request_id(request: Request) -> str | None:
    value = request.scope.get("tidings.request_id")
    return value if isinstance(value, str) else None


def install(app: FastAPI) -> None:
    """Register the handlers; :mod:`tidings.api.middleware` answers what escapes them."""

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return respond(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(TidingsError)
    async def on_tidings_error(request: Request, exc: TidingsError) -> JSONResponse:
        request.app.state.tidings.tidings.observer.store_error(exc)  # counted if one
        return tidings_error(exc, _request_id(request))

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"field": _field_path(err.get("loc", ())), "message": str(err.get("msg", ""))}
            for err in exc.errors()
        ]
        first = details[0] if details else {"field": "request", "message": "invalid"}
        status = 422
        if any(err.get("type") == "json_invalid" for err in exc.errors()):
            status = 400
        return respond(status, "invalid_input" if status == 422 else "bad_request",
                       f"{first['field']}: {first['message']}", details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request,
                         exc: StarletteHTTPException) -> JSONResponse | HTMLResponse:
        if exc.status_code == 404 and not is_api_path(route_path(request.scope)):
            return HTMLResponse(web.not_found_page(app_root(request.scope)), status_code=404)
        code = STATUS_CODES.get(exc.status_code, "error")
        message = str(exc.detail) if exc.detail else code.replace("_", " ")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)
        return respond(exc.status_code, code, message, headers=headers or None)
