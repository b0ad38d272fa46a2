"""One place that maps errors to HTTP statuses and the contract's JSON error shape:
``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from tidings.exceptions import (
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    SchemaOutOfDate,
    StoreUnavailable,
    TidingsError,
    TooManyRecipients,
)

log = logging.getLogger("tidings.api")
RETRY_AFTER_SECONDS = "5"

STATUS_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 409: "conflict",
    413: "payload_too_large", 415: "unsupported_media_type", 422: "invalid_input",
    429: "rate_limited", 500: "internal_error", 503: "unavailable",
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


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or []}}


def respond(status: int, code: str, message: str, details: list[dict[str, Any]] | None = None,
            headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status, headers=headers)


def status_of(exc: TidingsError) -> int:
    if isinstance(exc, PayloadTooLarge | TooManyRecipients):
        return 413 if isinstance(exc, PayloadTooLarge) else 422
    if isinstance(exc, InvalidInput):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, IdempotencyConflict):
        return 409
    if isinstance(exc, StoreUnavailable | SchemaOutOfDate):
        return 503
    return 500


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


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return respond(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(TidingsError)
    async def tidings_error(_request: Request, exc: TidingsError) -> JSONResponse:
        status = status_of(exc)
        details = []
        field = getattr(exc, "field", None)
        if field:
            details.append({"field": field, "message": str(exc)})
        headers = {"Retry-After": RETRY_AFTER_SECONDS} if status == 503 else None
        if status == 500:
            log.error("unexpected error: %s", exc)
        return respond(status, exc.code, str(exc), details, headers)

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
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = STATUS_CODES.get(exc.status_code, "error")
        message = str(exc.detail) if exc.detail else code.replace("_", " ")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)
        return respond(exc.status_code, code, message, headers=headers or None)

    @app.exception_handler(sa_exc.DBAPIError)
    async def store_error(_request: Request, exc: sa_exc.DBAPIError) -> JSONResponse:
        log.warning("store error: %s", str(exc.orig).splitlines()[0] if exc.orig else exc)
        return respond(503, "unavailable", "the store is unavailable; try again shortly",
                       headers={"Retry-After": RETRY_AFTER_SECONDS})

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return respond(500, "internal_error", "an unexpected error occurred")
