"""How the client spells requests: paths, query strings and JSON bodies, shared by both
clients so they cannot drift apart."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

DEFAULT_TIMEOUT = 10.0


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every client of this process shares: httpx's default
    builds one per client, reading the CA bundle each time (about 15 ms a client)."""
    return httpx.create_ssl_context()


class ClientBase:
    """The base URL and headers every request carries (``token`` as a bearer token)."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"


def user_path(user: str | None, suffix: str) -> str:
    """``/v1/users/{user}{suffix}``, or ``/v1/me{suffix}`` (the token's own user) for None."""
    if user is None:
        return f"/v1/me{suffix}"
    # "." and ".." are valid user ids: escape them so no one resolves them as path segments
    segment = quote(user, safe="") if user not in (".", "..") else user.replace(".", "%2E")
    return f"/v1/users/{segment}{suffix}"


def query(**values: Any) -> dict[str, str | int]:
    """Query parameters as the API reads them: None left out, booleans as ``true``/``false``,
    lists comma-joined."""
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
                payload: Mapping[str, Any] | None = None, **rest: Any) -> dict[str, str | int]:
    """An inbox list's or count's query; ``payload`` conditions become ``payload.FIELD=``
    (numbers and booleans in their JSON form, as the server compares them)."""
    out = query(types=types, category=category, section=section, **rest)
    for name, value in (payload or {}).items():
        out[f"payload.{name}"] = value if isinstance(value, str) else json.dumps(value)
    return out


def event_body(type: str, actor: str | None, object: str | None,
               recipients: Sequence[str] | None, exclude: Sequence[str] | None,
               payload: Mapping[str, Any] | None, idempotency_key: str | None) -> dict[str, Any]:
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


def subscription_body(type: str, object: str, channels: Sequence[str],
                      expires_at: datetime | str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": type, "object": object, "channels": list(channels)}
    if expires_at is not None:
        body["expires_at"] = (expires_at.isoformat() if isinstance(expires_at, datetime)
                              else expires_at)
    return body


def seen_body(until: datetime | str | None) -> dict[str, Any]:
    if until is None:
        return {}
    return {"until": until.isoformat() if isinstance(until, datetime) else until}


def snooze_body(ids: Sequence[str], until: datetime | str) -> dict[str, Any]:
    return {"ids": list(ids), "until": until.isoformat() if isinstance(until, datetime)
            else until}


def bounce_body(address: str, reason: str | None) -> dict[str, str]:
    return {"address": address} if reason is None else {"address": address, "reason": reason}


def retraction_body(type: str | None, actor: str | None, object: str | None) -> dict[str, str]:
    body = {"type": type, "actor": actor, "object": object}
    return {key: value for key, value in body.items() if value is not None}
