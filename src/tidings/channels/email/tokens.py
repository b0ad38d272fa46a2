"""Signed one-click unsubscribe tokens (RFC 8058 links in every mail)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from tidings.config import Config


def unsubscribe_token(secret: str, user: str) -> str:
    payload = base64.urlsafe_b64encode(user.encode()).decode().rstrip("=")
    signature = hmac.new(secret.encode(), f"unsubscribe:{user}".encode(),
                         hashlib.sha256).hexdigest()[:32]
    return f"{payload}.{signature}"


def check_unsubscribe_token(secret: str, token: str) -> str | None:
    """The user a token unsubscribes, or None if it was not signed by us."""
    payload, _, signature = token.partition(".")
    try:
        user = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    expected = unsubscribe_token(secret, user).partition(".")[2]
    return user if hmac.compare_digest(expected, signature) else None


def signing_secret(config: Config) -> str:
    secret = config.token_secret or (config.api_keys[0] if config.api_keys else None)
    if not secret:
        raise RuntimeError("mail needs TIDINGS_TOKEN_SECRET (or TIDINGS_API_KEY) to sign "
                           "its unsubscribe links")
    return secret
