"""What :class:`tidings.client.Client` and :class:`tidings.client.AsyncClient` share: the
types of the API's answers, :class:`ApiError`, how requests are spelled and how SSE is read."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypedDict, TypeVar
from urllib.parse import quote

import httpx

from tidings.exceptions import TidingsError

DEFAULT_TIMEOUT = 10.0
T = TypeVar("T")


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


# -- the API's answers ------------------------------------------------------------------------


class Page(TypedDict, Generic[T]):
    items: list[T]
    next_cursor: str | None


class Accepted(TypedDict):
    id: str
    status: str


class ErrorBody(TypedDict):
    code: str
    message: str
    details: list[dict[str, Any]]


class BatchItem(TypedDict, total=False):
    index: int
    status: Literal["accepted", "error"]
    id: str | None
    error: ErrorBody | None


class EventTypeInfo(TypedDict):
    name: str
    category: str
    section: str
    priority: int
    bundle: str
    channels: list[str]
    audience: list[str]
    templates: dict[str, Any]
    retention_days: int | None
    mandatory: bool


class Token(TypedDict):
    token: str
    expires_at: str


class Notification(TypedDict):
    id: str
    type: str
    category: str
    section: str
    object: str | None
    actor: str | None
    actors: list[str]
    count: int
    others: int
    title: str
    body: str | None
    link: str | None
    html: str
    created_at: str
    read: bool
    seen: bool
    payload: dict[str, Any]


class UnreadCount(TypedDict):
    count: int
    display: str


class Subscription(TypedDict):
    id: str
    type: str
    object: str
    channels: list[str]
    created_at: str


class Follow(TypedDict):
    user: str
    since: str


class FollowState(TypedDict):
    user: str
    other: str
    following: bool


class TimelineEvent(TypedDict):
    id: str
    type: str
    actor: str | None
    object: str | None
    payload: dict[str, Any]
    created_at: str


class Bounce(TypedDict):
    address: str
    bounced: bool


Preferences = dict[str, Any]
SseEvent = tuple[str, Any]


# -- shared by both clients -------------------------------------------------------------------


def user_path(user: str | None, suffix: str) -> str:
    if user is None:
        return f"/v1/me{suffix}"
    # "." and ".." are valid user ids: escape them so no one resolves them as path segments
    segment = quote(user, safe="") if user not in (".", "..") else user.replace(".", "%2E")
    return f"/v1/users/{segment}{suffix}"


def query(**values: Any) -> dict[str, str | int]:
    out: dict[str, str | int] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, str | int):
            out[name] = value
        else:  # a list of type names
            out[name] = ",".join(value)
    return out


def inbox_query(types: Sequence[str] | None, category: str | None, section: str | None,
                  **rest: Any) -> dict[str, str | int]:
    return query(types=types, category=category, section=section, **rest)


def event_body(type: str, actor: str | None, object: str | None, recipients: Sequence[str] | None,
           exclude: Sequence[str] | None, payload: Mapping[str, Any] | None,
           idempotency_key: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": type, "actor": actor, "object": object,
                            "recipients": None if recipients is None else list(recipients),
                            "exclude": None if exclude is None else list(exclude),
                            "payload": None if payload is None else dict(payload),
                            "idempotency_key": idempotency_key}
    return {key: value for key, value in body.items() if value is not None}


def read_body(ids: Sequence[str] | None, all: bool, match: Mapping[str, str] | None,
               types: Sequence[str] | None, category: str | None,
               section: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if ids is not None:
        body["ids"] = list(ids)
    if all:
        body["all"] = True
    if match is not None:
        body["match"] = dict(match)
    for key, value in (("types", types), ("category", category), ("section", section)):
        if value is not None:
            body[key] = list(value) if key == "types" else value
    return body


def seen_body(until: datetime | str | None) -> dict[str, Any]:
    if until is None:
        return {}
    return {"until": until.isoformat() if isinstance(until, datetime) else until}


def bounce_body(address: str, reason: str | None) -> dict[str, str]:
    return {"address": address} if reason is None else {"address": address, "reason": reason}


def retraction_body(type: str | None, actor: str | None, object: str | None) -> dict[str, str]:
    body = {"type": type, "actor": actor, "object": object}
    return {key: value for key, value in body.items() if value is not None}


def parse_answer(response: httpx.Response) -> Any:
    """The JSON of a successful answer (None for 204), else raise :class:`ApiError`."""
    if response.is_success:
        return None if response.status_code == 204 or not response.content else response.json()
    raise error_of(response)


def error_of(response: httpx.Response) -> ApiError:
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


class SseParser:
    """Turns ``text/event-stream`` lines into ``(event, data)`` pairs (data JSON-decoded)."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SseEvent | None:
        if not line:  # a blank line ends a frame
            event, data = self._event or "message", self._data
            self._event, self._data = "", []
            if not data:
                return None
            text = "\n".join(data)
            try:
                return event, json.loads(text)
            except ValueError:
                return event, text
        if line.startswith(":"):  # a comment (keepalive)
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def stream_timeout(timeout: float | None) -> httpx.Timeout:
    return httpx.Timeout(DEFAULT_TIMEOUT, read=timeout)


def shut_at_deadline(response: httpx.Response, seconds: float) -> threading.Timer | None:
    """Shut the stream's socket down after ``seconds``, which ends a read blocked on it."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if not isinstance(sock, socket.socket):
        return None  # a transport without a socket: the read timeout alone bounds the wait

    def shut() -> None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(seconds, shut)
    timer.daemon = True
    timer.start()
    return timer


class ClientBase:
    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
