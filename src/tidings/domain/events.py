"""Events as the application publishes them, and their validation."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidings.domain.text import check_text
from tidings.exceptions import InvalidInput, InvalidUserId, PayloadTooLarge, TooManyRecipients

# matched in full: with ``re.match``, ``$`` would also match before a final newline ("alice\n")
USER_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,255}")
MAX_OBJECT_LENGTH = 255
MAX_KEY_LENGTH = 255
MAX_SCOPE_LENGTH = 64
# The idempotency scope of events published through the library; over HTTP each server key
# has its own (``tidings.api.auth.Principal.idempotency_scope``), so two applications sharing
# an installation never collide on a key.
DEFAULT_SCOPE = "default"


def check_user_id(value: object, field: str = "user") -> str:
    """Return ``value`` if it is a valid user id, else raise :class:`InvalidUserId`."""
    if not isinstance(value, str) or not USER_ID.fullmatch(value):
        raise InvalidUserId(
            f"{field} must be 1-255 characters of [A-Za-z0-9_.:@-], got {value!r:.80}",
            field=field,
        )
    return value


def check_object(value: object, field: str = "object") -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_OBJECT_LENGTH:
        raise InvalidInput(f"{field} must be a string of 1-255 characters", field=field)
    check_text(value, field)
    if any(ord(ch) < 32 for ch in value):
        raise InvalidInput(f"{field} must not contain control characters", field=field)
    return value


@dataclass(frozen=True)
class Event:
    """What happened: ``actor`` did ``type`` to ``object``.

    ``recipients`` are told explicitly; ``exclude`` are never told (a per-event privacy rule).
    """

    type: str
    actor: str | None = None
    object: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    recipients: Sequence[str] = ()
    exclude: Sequence[str] = ()
    idempotency_key: str | None = None
    created_at: int | None = None

    def body_hash(self) -> str:
        """A digest of everything but the idempotency key, to tell a retry from a conflict."""
        body = {
            "type": self.type,
            "actor": self.actor,
            "object": self.object,
            "payload": self.payload,
            "recipients": list(self.recipients),
            "exclude": list(self.exclude),
        }
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


MAX_PAYLOAD_DEPTH = 32
MAX_PAYLOAD_KEYS = 1000


def depth_and_keys(value: Any) -> tuple[int, int]:
    """How deep ``value`` nests (a scalar is 0, ``{"a": 1}`` is 1) and how many object keys
    it holds at every level; without recursion, so any value can be measured."""
    deepest = keys = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            keys += len(item)
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest, keys


@dataclass(frozen=True)
class Limits:
    max_payload_bytes: int = 64 * 1024
    max_recipients: int = 1000


def validate_event(event: Event, limits: Limits) -> str:
    """Check an event's shape; return its payload serialised as JSON."""
    if event.actor is not None:
        check_user_id(event.actor, "actor")
    if event.object is not None:
        check_object(event.object)
    if not isinstance(event.recipients, Sequence) or isinstance(event.recipients, str):
        raise InvalidInput("recipients must be a list of user ids", field="recipients")
    if len(event.recipients) > limits.max_recipients:
        raise TooManyRecipients(
            f"recipients lists {len(event.recipients)} users; at most "
            f"{limits.max_recipients} are allowed",
            field="recipients",
        )
    for i, user in enumerate(event.recipients):
        check_user_id(user, f"recipients[{i}]")
    if not isinstance(event.exclude, Sequence) or isinstance(event.exclude, str):
        raise InvalidInput("exclude must be a list of user ids", field="exclude")
    for i, user in enumerate(event.exclude):
        check_user_id(user, f"exclude[{i}]")
    if len(event.exclude) > limits.max_recipients:
        raise TooManyRecipients(
            f"exclude lists {len(event.exclude)} users; at most {limits.max_recipients}",
            field="exclude",
        )
    if event.idempotency_key is not None and (
        not isinstance(event.idempotency_key, str)
        or not 1 <= len(event.idempotency_key) <= MAX_KEY_LENGTH
    ):
        raise InvalidInput("idempotency_key must be 1-255 characters", field="idempotency_key")
    if event.idempotency_key is not None:
        check_text(event.idempotency_key, "idempotency_key")
    if not isinstance(event.payload, Mapping):
        raise InvalidInput("payload must be a JSON object", field="payload")
    depth, keys = depth_and_keys(event.payload)
    if depth > MAX_PAYLOAD_DEPTH:
        raise InvalidInput(f"payload nests {depth} levels deep; at most {MAX_PAYLOAD_DEPTH} are "
                           "allowed", field="payload")
    if keys > MAX_PAYLOAD_KEYS:
        raise InvalidInput(f"payload holds {keys} keys; at most {MAX_PAYLOAD_KEYS} are allowed",
                           field="payload")
    check_text(event.payload, "payload")
    try:
        # NaN and Infinity are not JSON: stored, they would reach clients as invalid JSON
        text = json.dumps(dict(event.payload), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"payload is not JSON-serialisable: {exc}", field="payload") from None
    size = len(text.encode())
    if size > limits.max_payload_bytes:
        raise PayloadTooLarge(
            f"payload is {size} bytes; at most {limits.max_payload_bytes} are allowed",
            field="payload",
        )
    return text


def check_scope(scope: object) -> str:
    """An idempotency scope: 1-64 characters."""
    if not isinstance(scope, str) or not 1 <= len(scope) <= MAX_SCOPE_LENGTH:
        raise InvalidInput(f"idempotency_scope must be 1-{MAX_SCOPE_LENGTH} characters",
                           field="idempotency_scope")
    return scope
