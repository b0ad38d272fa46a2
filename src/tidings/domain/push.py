"""Web Push subscriptions as stored, and the rules a browser's ``PushSubscription`` must meet.

Pure rules: no cryptography here beyond decoding (the keys' curve point is checked by the
channel, ``channels/push``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from tidings.exceptions import InvalidInput

MAX_ENDPOINT = 2048
P256DH_BYTES = 65  # an uncompressed P-256 point: 0x04, x, y
AUTH_BYTES = 16


@dataclass(frozen=True)
class PushSubscription:
    """One browser's subscription: where to POST (``endpoint``) and the keys (base64url)."""

    id: int
    user: str
    endpoint: str
    p256dh: str
    auth: str
    created_at: int


def endpoint_hash(endpoint: str) -> str:
    """What an endpoint is known by (unique in the store)."""
    return hashlib.sha256(endpoint.encode()).hexdigest()


def b64url_decode(text: str) -> bytes:
    """Decode base64url with or without padding; a ValueError if it is not."""
    if not isinstance(text, str) or not text or any(c in text for c in "+/ \n"):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def checked_keys(p256dh: object, auth: object) -> tuple[str, str]:
    """The subscription's keys, unpadded base64url, or InvalidInput saying what is wrong."""
    try:
        point = b64url_decode(p256dh) if isinstance(p256dh, str) else b""
    except ValueError:
        point = b""
    if len(point) != P256DH_BYTES or point[0] != 4:
        raise InvalidInput("keys.p256dh must be the browser's P-256 public key: 65 bytes, "
                           "uncompressed, in base64url", field="keys.p256dh")
    try:
        secret = b64url_decode(auth) if isinstance(auth, str) else b""
    except ValueError:
        secret = b""
    if len(secret) != AUTH_BYTES:
        raise InvalidInput("keys.auth must be the browser's 16-byte authentication secret "
                           "in base64url", field="keys.auth")
    encode = base64.urlsafe_b64encode
    return encode(point).rstrip(b"=").decode(), encode(secret).rstrip(b"=").decode()
