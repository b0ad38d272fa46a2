"""The error body of every 4xx and 5xx answer: ``{"error": {"code", "message", "details"}}``."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    field: str | None = None
    message: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[ErrorDetail]


class ErrorResponse(BaseModel):
    error: ErrorBody
