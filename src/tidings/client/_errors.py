""":class:`ApiError`, the one error the client raises on purpose, and how an answer's status
and body become it."""

from __future__ import annotations

from typing import Any

import httpx

from tidings.exceptions import TidingsError


class ApiError(TidingsError):
    """The API answered with an error: ``status``, and the body's ``code``, ``message``,
    ``details``.

    ``retry_after`` holds the seconds of a ``Retry-After`` header (429, 503), else None.
    """

    def __init__(self, status: int, code: str, message: str,
                 details: list[dict[str, Any]] | None = None, *,
                 retry_after: float | None = None, request_id: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.retry_after = retry_after
        self.request_id = request_id


def parse_answer(response: httpx.Response) -> Any:
    """The JSON of a successful answer (None for 204), else raise :class:`ApiError`."""
    if response.is_success:
        return None if response.status_code == 204 or not response.content else response.json()
    raise error_of(response)


def error_of(response: httpx.Response) -> ApiError:
    """The :class:`ApiError` an error answer stands for; a body not in the API's error shape
    (a proxy's page, say) still gives one, coded ``http_<status>``."""
    code, message = f"http_{response.status_code}", response.reason_phrase
    details: list[dict[str, Any]] = []
    try:
        body = response.json()["error"]
        code, message, details = body["code"], body["message"], body.get("details") or []
    except (ValueError, KeyError, TypeError):
        if response.text:
            message = response.text[:500]
    retry_after = None
    raw = response.headers.get("retry-after")
    if raw is not None:
        try:
            retry_after = float(raw)
        except ValueError:
            retry_after = None
    return ApiError(response.status_code, code, message, details, retry_after=retry_after,
                    request_id=response.headers.get("x-request-id"))
