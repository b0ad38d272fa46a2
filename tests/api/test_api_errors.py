"""Errors, authentication and limits of the HTTP API v1, through a real server on loopback.

Bad requests and bad credentials change nothing, so their many cases share one SQLite server per
module (``shared_live``); each answer must be a 4xx in the contract's error shape, name the
field, and be declared in ``/openapi.json``.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from contract import error_of, undocumented
from engines import TYPES, table_counts, table_rows
from servers import SERVER_KEY, TOKEN_SECRET, LiveServer, serve
from tidings.api.app import create_app
from tidings.client import ApiError, Client
from tidings.config import Config
from tidings.engine import Tidings

pytest_plugins = ["servers"]

ONE_BACKEND = pytest.mark.parametrize("api_backend", ["sqlite"])  # the HTTP layer alone


def mention(client: Client, actor: str, *recipients: str) -> str:
    return client.publish("mention", actor=actor, recipients=list(recipients))["id"]


# -- errors -----------------------------------------------------------------------------------

BIG = "x" * (64 * 1024 + 1)
BAD_REQUESTS = [
    # (id, method, path, request options, status, code or None, a word the message names)
    ("unknown-type", "POST", "/v1/events", {"json": {"type": "nope"}}, 422,
     "unknown_event_type", "type"),
    ("bad-type-name", "POST", "/v1/events", {"json": {"type": "no pe"}}, 422, None, "type"),
    ("missing-type", "POST", "/v1/events", {"json": {"actor": "alice"}}, 422, None, "type"),
    ("bad-recipient", "POST", "/v1/events", {"json": {"type": "mention",
                                                       "recipients": ["bad user"]}},
     422, None, "recipients"),
    ("unknown-field", "POST", "/v1/events", {"json": {"type": "mention", "colour": 1}},
     422, None, "colour"),
    ("payload-too-large", "POST", "/v1/events", {"json": {"type": "mention",
                                                           "payload": {"big": BIG}}},
     413, "payload_too_large", "payload"),
    ("too-many-recipients", "POST", "/v1/events",
     {"json": {"type": "mention", "recipients": [f"u{i}" for i in range(1001)]}},
     422, "too_many_recipients", "recipients"),
    ("body-over-4-mib", "POST", "/v1/events",
     {"content": b'{"type": "mention", "payload": {"x": "' + b"y" * (4 * 1024 * 1024) + b'"}}',
      "headers": {"content-type": "application/json"}}, 413, "payload_too_large", "body"),
    ("payload-nan", "POST", "/v1/events",  # Python's json reads NaN; JSON has no NaN
     {"content": b'{"type": "mention", "payload": {"x": NaN}}',
      "headers": {"content-type": "application/json"}}, 422, "invalid_input", "payload"),
    ("not-json", "POST", "/v1/events",
     {"content": b"type=mention", "headers": {"content-type": "text/plain"}},
     415, "unsupported_media_type", "json"),
    ("malformed-json", "POST", "/v1/events",
     {"content": b'{"type": "mention",', "headers": {"content-type": "application/json"}},
     400, "bad_request", "json"),
    ("not-json-on-a-user-route", "POST", "/v1/users/bob/notifications/read",
     {"content": b"all", "headers": {"content-type": "text/plain"}},
     415, "unsupported_media_type", "json"),
    ("body-over-4-mib-on-a-user-route", "PUT", "/v1/users/bob/preferences",
     {"content": b'{"locale": "' + b"y" * (4 * 1024 * 1024) + b'"}',
      "headers": {"content-type": "application/json"}}, 413, "payload_too_large", "body"),
    ("bad-user-id", "GET", "/v1/users/bad user!/notifications", {}, 422, None, "user"),
    ("user-id-too-long", "GET", f"/v1/users/{'u' * 256}/notifications", {}, 422, None, "user"),
    ("bad-cursor", "GET", "/v1/users/bob/notifications", {"params": {"cursor": "garbage"}},
     422, None, "cursor"),
    ("bad-follow-cursor", "GET", "/v1/users/bob/follows", {"params": {"cursor": "e30"}},
     422, None, "cursor"),
    ("bad-subscription-cursor", "GET", "/v1/users/bob/subscriptions",
     {"params": {"cursor": "!!"}}, 422, None, "cursor"),
    ("limit-zero", "GET", "/v1/users/bob/notifications", {"params": {"limit": 0}}, 422, None,
     "limit"),
    ("limit-over-100", "GET", "/v1/users/bob/timeline", {"params": {"limit": 101}}, 422, None,
     "limit"),
    *[(f"timeline-{name}-{label}", "GET", "/v1/users/bob/timeline", {"params": {name: value}},
       422, "invalid_input", name)
      for name in ("max_id", "since_id")
      for label, value in (("zero", "0"), ("negative", "-1"), ("text", "abc"), ("fraction", "1.5"),
                           ("over-bigint", str(2**63)), ("empty", ""))],
    ("timeline-unknown-parameter", "GET", "/v1/users/bob/timeline",
     {"params": {"before": "5"}}, 400, "bad_request", "before"),
    ("unread-not-bool", "GET", "/v1/users/bob/notifications", {"params": {"unread": "maybe"}},
     422, None, "unread"),
    ("unknown-type-filter", "GET", "/v1/users/bob/notifications/unread-count",
     {"params": {"types": "nope"}}, 422, None, "type"),
    ("bad-section", "GET", "/v1/users/bob/notifications", {"params": {"section": "sidebar"}},
     422, None, "section"),
    ("seen-until-not-a-time", "POST", "/v1/users/bob/notifications/seen",
     {"json": {"until": "yesterday"}}, 422, None, "until"),
    ("read-two-selectors", "POST", "/v1/users/bob/notifications/read",
     {"json": {"ids": ["1"], "all": True}}, 422, None, "ids"),
    ("subscription-id-not-a-number", "DELETE", "/v1/users/bob/subscriptions/abc", {}, 422,
     None, "subscription_id"),
    ("unknown-subscription", "DELETE", "/v1/users/bob/subscriptions/12345", {}, 404,
     "not_found", "subscription"),
    ("read-up-to-unknown-id", "POST", "/v1/users/bob/notifications/read-up-to",
     {"json": {"id": "12345"}}, 404, "not_found", "12345"),
    ("read-up-to-bad-id", "POST", "/v1/users/bob/notifications/read-up-to",
     {"json": {"id": "x"}}, 422, None, "id"),
    ("read-up-to-no-id", "POST", "/v1/users/bob/notifications/read-up-to", {"json": {}}, 422,
     None, "id"),
    ("read-up-to-unknown-field", "POST", "/v1/users/bob/notifications/read-up-to",
     {"json": {"id": "1", "all": True}}, 422, None, "all"),
    ("delete-unknown-notification", "DELETE", "/v1/users/bob/notifications/12345", {}, 404,
     "not_found", "12345"),
    ("notification-id-not-a-number", "DELETE", "/v1/users/bob/notifications/abc", {}, 422,
     None, "notification_id"),
    ("bad-group-name", "PUT", "/v1/groups/no pe/members/bob", {}, 422, None, "group"),
    ("group-name-too-long", "GET", f"/v1/groups/{'g' * 65}/members", {}, 422, None, "group"),
    ("bad-member-id", "DELETE", "/v1/groups/staff/members/bad user!", {}, 422, None, "user"),
    ("bad-members-cursor", "GET", "/v1/groups/staff/members", {"params": {"cursor": "!!"}},
     422, None, "cursor"),
    # base64 of {"after":"\ud800"}: a lone surrogate no store can be asked for
    *[(f"forged-{name}-cursor-with-a-surrogate", "GET", path,
       {"params": {"cursor": "eyJhZnRlciI6Ilx1ZDgwMCJ9"}}, 422, "invalid_cursor", "cursor")
      for name, path in (("follows", "/v1/users/bob/follows"),
                         ("followers", "/v1/users/bob/followers"),
                         ("members", "/v1/groups/staff/members"))],
    ("members-unknown-parameter", "GET", "/v1/groups/staff/members",
     {"params": {"since_id": "3"}}, 400, None, "since_id"),
    ("bad-channel", "POST", "/v1/users/bob/subscriptions", {"json": {"channels": ["pigeon"]}},
     422, None, "channels"),
    ("empty-retraction", "POST", "/v1/retractions", {"json": {}}, 422, None, "type"),
    ("unknown-type-read", "GET", "/v1/types/nope", {}, 404, "not_found", "nope"),
    ("bad-token-ttl", "POST", "/v1/tokens", {"json": {"user": "bob", "ttl_seconds": 1}}, 422,
     None, "ttl_seconds"),
    ("unknown-route", "GET", "/v1/nothing-here", {}, 404, "not_found", None),
    ("unknown-user-route", "GET", "/v1/users/bob/nothing-here", {}, 404, "not_found", None),
    ("wrong-method", "DELETE", "/v1/events", {}, 405, "method_not_allowed", None),
]


@pytest.mark.parametrize(("method", "path", "options", "status", "code", "names"),
                         [case[1:] for case in BAD_REQUESTS], ids=[c[0] for c in BAD_REQUESTS])
def test_bad_requests_get_a_clear_4xx(shared_live: LiveServer, openapi_spec: dict[str, Any],
                                      method: str, path: str, options: dict[str, Any],
                                      status: int, code: str | None, names: str | None) -> None:
    before = table_counts(shared_live.tidings)
    with shared_live.http() as http:
        response = http.request(method, path, **options)
    error = error_of(response)
    assert response.status_code == status, error
    if code is not None:
        assert error["code"] == code
    if names is not None:
        named = error["message"] + " ".join(str(d.get("field")) for d in error["details"])
        assert names.lower() in named.lower(), error
    assert response.headers["x-request-id"]
    if status not in (404, 405):  # an unknown route or method has no operation to document it
        path = response.request.url.path
        assert undocumented(openapi_spec, method, path, status, response.json()) == []
    assert table_counts(shared_live.tidings) == before


# -- authentication ---------------------------------------------------------------------------


def _jwt(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    return ".".join([part(json.dumps(header).encode()), part(json.dumps(claims).encode()),
                     part(signature)])


def _tampered(live: LiveServer) -> str:
    header, _, signature = live.token("alice").split(".")
    claims = {"sub": "bob", "exp": int(time.time()) + 3600}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{header}.{body}.{signature}"


BAD_CREDENTIALS: list[tuple[str, Callable[[LiveServer], dict[str, str]]]] = [
    ("missing", lambda live: {}),
    ("empty-bearer", lambda live: {"Authorization": "Bearer"}),
    ("not-bearer", lambda live: {"Authorization": f"Basic {SERVER_KEY}"}),
    ("wrong-key", lambda live: {"Authorization": "Bearer not-the-key"}),
    ("expired", lambda live: {"Authorization": f"Bearer {live.token('bob', ttl_seconds=-60)}"}),
    ("tampered", lambda live: {"Authorization": f"Bearer {_tampered(live)}"}),
    ("wrong-secret", lambda live: {
        "Authorization": f"Bearer {live.token('bob', secret='x' * 40)}"}),
    ("alg-none", lambda live: {"Authorization": "Bearer " + _jwt(
        {"alg": "none", "typ": "JWT"}, {"sub": "bob", "exp": int(time.time()) + 3600})}),
    ("no-exp", lambda live: {"Authorization": "Bearer " + jwt.encode(
        {"sub": "bob"}, TOKEN_SECRET, algorithm="HS256")}),
    ("bad-sub", lambda live: {"Authorization": f"Bearer {live.token('bad user')}"}),
]


@pytest.mark.parametrize("make_headers", [c[1] for c in BAD_CREDENTIALS],
                         ids=[c[0] for c in BAD_CREDENTIALS])
@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/users/bob/notifications"),
                                              ("GET", "/v1/me/stream"),
                                              ("POST", "/v1/events")])
def test_bad_credentials_get_401(shared_live: LiveServer,
                                 make_headers: Callable[[LiveServer], dict[str, str]],
                                 method: str, path: str) -> None:
    before = table_counts(shared_live.tidings)
    with shared_live.http(None) as http:
        body = {"type": "mention", "recipients": ["bob"]} if method == "POST" else None
        response = http.request(method, path, headers=make_headers(shared_live), json=body)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"
    assert table_counts(shared_live.tidings) == before


def test_user_tokens_cannot_use_server_routes_nor_keys_me(shared_live: LiveServer) -> None:
    before = table_counts(shared_live.tidings)
    with shared_live.client(shared_live.token("bob")) as bob, shared_live.client() as server:
        with pytest.raises(ApiError) as caught:
            bob.publish("mention", recipients=["bob"])
        assert (caught.value.status, caught.value.code) == (403, "forbidden")
        with pytest.raises(ApiError) as caught:
            server.notifications()  # /v1/me with a server key: no user
        assert caught.value.status == 403
    assert table_counts(shared_live.tidings) == before


# -- rate limit, operations -------------------------------------------------------------------


@ONE_BACKEND
def test_publishing_over_the_rate_gets_429_with_retry_after(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(rate_per_second=0.5)  # a bucket of one event
    with live.client() as server, live.http() as http:
        mention(server, "alice", "bob")
        with pytest.raises(ApiError) as caught:
            mention(server, "alice", "bob")
        assert (caught.value.status, caught.value.code) == (429, "rate_limited")
        assert caught.value.retry_after is not None and caught.value.retry_after >= 1
        response = http.post("/v1/events/batch", json={"events": [
            {"type": "mention", "recipients": ["bob"]}] * 5})
        # five events never fit a bucket of one: waiting would not help
        assert response.status_code == 413
        assert "retry-after" not in response.headers
        assert server.unread_count(user="bob")["count"] <= 1  # reads are not limited
    assert len(table_rows(live.tidings, "events")) == 1


def test_a_store_that_is_down_gives_503_with_retry_after() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://postgres@127.0.0.1:{port}/tidings"
    with Tidings(Config(database_url=url), types=TYPES) as tidings, \
            serve(create_app(tidings, api_keys=(SERVER_KEY,), token_secret=TOKEN_SECRET)) \
            as base_url, Client(base_url, SERVER_KEY) as server:
        assert server.healthz() == {"status": "ok"}
        for call in (server.readyz, lambda: server.notifications(user="bob"),
                     lambda: mention(server, "alice", "bob"), lambda: server.follow(
                         "alice", user="bob")):
            with pytest.raises(ApiError) as caught:
                call()
            assert caught.value.status == 503, caught.value
            assert caught.value.retry_after is not None and caught.value.retry_after > 0
            assert "Traceback" not in caught.value.message


def test_request_ids_are_echoed_or_made(shared_live: LiveServer) -> None:
    with shared_live.http() as http:
        assert http.get("/healthz", headers={"X-Request-Id": "abc-123"}).headers[
            "x-request-id"] == "abc-123"
        made = http.get("/healthz").headers["x-request-id"]
        assert made and made != http.get("/healthz").headers["x-request-id"]
        assert http.get("/v1/types", headers={"X-Request-Id": "e-1",
                                              "Authorization": "Bearer bad"}).headers[
            "x-request-id"] == "e-1"
