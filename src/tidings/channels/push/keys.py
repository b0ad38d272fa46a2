"""The VAPID key pair (RFC 8292) that identifies this server to push services.

``TIDINGS_VAPID_PRIVATE_KEY`` holds the P-256 private key, as PEM or as the raw 32-byte scalar
in base64url (what ``tidings vapid-keys`` prints and most Web Push tools use). The browser
subscribes with the public key (``GET /v1/push/public-key``): the uncompressed point in
base64url. The keys are py-vapid's (``py_vapid``) and the curve arithmetic ``cryptography``'s.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from functools import lru_cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02

from tidings.exceptions import ConfigError


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class KeyPair:
    """A VAPID signer and its public key as the browser's ``applicationServerKey``."""

    vapid: Vapid02
    public_key: str


@lru_cache(maxsize=4)
def load(private_key: str) -> KeyPair:
    """The pair of a configured private key; ConfigError if it is not a P-256 key."""
    text = private_key.strip()
    try:
        if text.startswith("-----BEGIN"):
            vapid = Vapid02.from_pem(text.encode())
        else:
            if len(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))) != 32:
                raise ValueError("a raw key is 32 bytes")
            vapid = Vapid02.from_raw(text.encode())
        public = vapid.public_key
        if not isinstance(public, ec.EllipticCurvePublicKey) or public.curve.name != "secp256r1":
            raise ValueError("not a P-256 key")
    except Exception as exc:  # py-vapid raises what its parsers raise
        raise ConfigError("TIDINGS_VAPID_PRIVATE_KEY must be a P-256 private key, as PEM or "
                          f"base64url (tidings vapid-keys makes one): {exc}") from None
    point = public.public_bytes(serialization.Encoding.X962,
                                serialization.PublicFormat.UncompressedPoint)
    return KeyPair(vapid, b64url(point))


def generate() -> tuple[str, str]:
    """A new pair: the private key (raw, base64url) and the public key (base64url)."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = b64url(key.private_numbers().private_value.to_bytes(32, "big"))
    return private, load(private).public_key
