"""Server keys and HS256 user tokens (``sub`` = user id, ``exp``)."""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

import jwt

from tidings.api.errors import ApiError
from tidings.api.schemas import ids

BEARER = "bearer"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the application's backend (a server key) or one user."""

    kind: str  # "server" | "user"
    user: str | None = None
    key: str | None = None

    @property
    def is_server(self) -> bool:
        return self.kind == "server"

    @property
    def idempotency_scope(self) -> str:
        """The scope of this server key's idempotency keys: a digest of the key (the key
        itself is never stored), so two applications' keys never collide."""
        digest = hashlib.sha256((self.key or "").encode()).hexdigest()[:32]
        return f"key:{digest}"


class Authenticator:
    def __init__(self, api_keys: tuple[str, ...], token_secret: str | None) -> None:
        self.api_keys = api_keys
        self.token_secret = token_secret

    def authenticate(self, authorization: str | None, query_token: str | None = None
                     ) -> Principal:
        token = None
        if authorization:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() != BEARER or not value.strip():
                raise _unauthorized("Authorization must be 'Bearer <token>'")
            token = value.strip()
        elif query_token:
            token = query_token
        if not token:
            raise _unauthorized("missing Authorization: Bearer <token>")
        server = self._server_key(token)
        if server is not None:
            return server
        if not self.token_secret:
            raise _unauthorized("invalid server key (user tokens are disabled)")
        try:
            claims = jwt.decode(token, self.token_secret, algorithms=["HS256"],
                                options={"require": ["sub", "exp"]})
        except jwt.ExpiredSignatureError:
            raise _unauthorized("the token has expired") from None
        except jwt.InvalidTokenError:
            raise _unauthorized("invalid token") from None
        subject = claims.get("sub")
        if not ids.matches(ids.USER_ID_BARE, subject):
            raise _unauthorized("the token's sub is not a valid user id")
        return Principal("user", user=subject)

    def server_of(self, authorization: str | None) -> Principal | None:
        """The server key ``Authorization: Bearer …`` carries; None for anything else (no
        header, a user token, a host application's own credentials)."""
        scheme, _, value = (authorization or "").partition(" ")
        if scheme.lower() != BEARER or not value.strip():
            return None
        return self._server_key(value.strip())

    def _server_key(self, token: str) -> Principal | None:
        for key in self.api_keys:
            if hmac.compare_digest(token.encode(), key.encode()):
                return Principal("server", key=key)
        return None

    def mint(self, user: str, ttl_seconds: int) -> tuple[str, int]:
        if not self.token_secret:
            raise ApiError(409, "user tokens are disabled: set TIDINGS_TOKEN_SECRET",
                           code="tokens_disabled")
        expires = int(time.time()) + ttl_seconds
        token = jwt.encode({"sub": user, "exp": expires}, self.token_secret, algorithm="HS256")
        return token, expires


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, message, headers={"WWW-Authenticate": "Bearer"})


def authorize_user(principal: Principal, user: str) -> None:
    """A user token may act only on its own user; a server key on anyone."""
    if principal.is_server:
        return
    if principal.user != user:
        raise ApiError(403, "this token may act only on its own user")


def require_server(principal: Principal) -> None:
    if not principal.is_server:
        raise ApiError(403, "this needs a server key")
