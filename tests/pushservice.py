"""A Web Push service stand-in on loopback, and browsers' subscriptions made by the tests.

``PushService`` answers POSTs to ``/push/<name>`` with the statuses queued for that name (then
201), and for each checks what a real push service checks: the VAPID ``Authorization`` header
(RFC 8292: an ES256 JWT whose ``aud`` is the service's origin, ``exp`` within 24 hours and
``sub`` a contact, verified against the key ``k`` the server published), and decrypts the
body (RFC 8291 ``aes128gcm``) with the browser's private key. ``Browser`` is one
subscription: its key pair and auth secret, and the ``PushSubscription`` JSON a page posts.

Test modules import helpers from here: PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from live import free_port

BROWSER_KEY = ("BAx8TZ0fdpchnQF19upu9XIrYLFqkhFA88ZCOMyOmFM34AA8oacnpujqYGyPzeZf1-TN1dZY1iP3oaIQ"
               "Q1qqNlo")  # a P-256 public key (uncompressed, base64url)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Browser:
    """One browser's subscription at ``service`` under ``name``."""

    def __init__(self, service: PushService, name: str) -> None:
        self.name = name
        self.endpoint = f"{service.origin}/push/{name}"
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)

    def subscription(self) -> dict[str, Any]:
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return {"endpoint": self.endpoint, "expirationTime": None,
                "keys": {"p256dh": b64url(point), "auth": b64url(self.auth)}}


class PushService:
    """Checks and decrypts every push; ``received[name]`` holds what each browser got."""

    def __init__(self, public_key: str) -> None:
        self.public_key = public_key
        self.browsers: dict[str, Browser] = {}
        self.answers: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.received: dict[str, list[dict[str, Any]]] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.port = free_port()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                name = self.path.rsplit("/", 1)[-1]
                with service.lock:
                    queued = service.answers.get(name) or []
                    status, extra = queued.pop(0) if queued else (201, {})
                try:
                    payload = service.check(name, dict(self.headers), body)
                except Exception as exc:  # what is wrong goes to the test
                    service.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    status, extra, payload = 400, {}, None
                with service.lock:
                    service.received.setdefault(name, []).append(
                        {"status": status, "headers": dict(self.headers), "payload": payload,
                         "at": time.time()})
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def browser(self, name: str) -> Browser:
        self.browsers[name] = Browser(self, name)
        return self.browsers[name]

    def answer(self, name: str, *answers: int | tuple[int, dict[str, str]]) -> None:
        """Queue the statuses (and headers) ``name``'s next pushes get."""
        self.answers.setdefault(name, []).extend(
            a if isinstance(a, tuple) else (a, {}) for a in answers)

    def check(self, name: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        scheme, _, params = headers["Authorization"].partition(" ")
        assert scheme == "vapid", scheme
        parts = dict(p.split("=", 1) for p in params.split(","))
        assert parts["k"] == self.public_key, "not the server's published key"
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(parts["k"]))
        claims = jwt.decode(parts["t"], key, algorithms=["ES256"], audience=self.origin,
                            options={"require": ["exp", "aud", "sub"]})
        assert claims["exp"] <= time.time() + 24 * 3600, "exp more than 24 hours on"
        assert claims["sub"].startswith(("mailto:", "https:")), claims["sub"]
        assert headers["Content-Encoding"] == "aes128gcm"
        assert int(headers["TTL"]) > 0
        browser = self.browsers[name]
        plain = http_ece.decrypt(body, private_key=browser.key, auth_secret=browser.auth,
                                 version="aes128gcm")
        data: dict[str, Any] = json.loads(plain)
        return data

    def __enter__(self) -> PushService:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
