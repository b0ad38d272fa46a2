"""Who may do what, route by route, through a real server.

API.md: a user token "may act only on its own user: ``/v1/me/...`` and ``/v1/users/{its own
id}/...``; any other user → 403, nothing changed", and the server-key routes refuse it. The
routes come from the app's own ``/openapi.json``, so a route added without an entry in the tables
below fails :func:`test_every_route_is_in_the_matrix` rather than going unchecked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from engines import table_names, table_rows
from pushservice import BROWSER_KEY
from servers import SERVER_KEY, LiveServer, wait_for
from tidings.channels.push import keys
from tidings.client import Client

pytest_plugins = ["servers"]

_serial = itertools.count()
USER_PREFIX = "/v1/users/{user}"
ME_PREFIX = "/v1/me"


@dataclass(frozen=True)
class Call:
    """How to call one route: a valid request, a malformed one, and its path parameters."""

    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    bad_json: Any = None  # still 403 for another user: no validation detail leaks first
    path: Callable[[Client, str], dict[str, str]] = lambda server, user: {}


def _own_subscription(server: Client, user: str) -> dict[str, str]:
    return {"subscription_id": server.add_subscription(user=user,
                                                       object=f"page:Mine{next(_serial)}")}


def _victims_subscription(server: Client, user: str) -> dict[str, str]:
    return {"subscription_id": server.subscriptions(user=user)["items"][0]["id"]}


def _push_subscription(serial: int) -> dict[str, Any]:
    return {"endpoint": f"https://8.8.8.8/push/{serial}",
            "keys": {"p256dh": BROWSER_KEY, "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}


def _victims_push_subscription(server: Client, user: str) -> dict[str, str]:
    page = server._call("GET", f"/v1/users/{user}/push-subscriptions")
    return {"subscription_id": page["items"][0]["id"]}


def _own_push_subscription(server: Client, user: str) -> dict[str, str]:
    created = server._call("POST", f"/v1/users/{user}/push-subscriptions",
                           body=_push_subscription(next(_serial)))
    return {"subscription_id": created["id"]}


def _victims_notification(server: Client, user: str) -> dict[str, str]:
    return {"notification_id": server.notifications(user=user)["items"][0]["id"]}


def _own_notification(server: Client, user: str) -> dict[str, str]:
    """A fresh notification of ``user``'s own (each deletion takes one)."""
    event_id = server.publish("mention", actor="zed", recipients=[user])["id"]
    ids = wait_for(lambda: {i["id"] for i in server.notifications(user=user)["items"]
                            } & {event_id}, timeout=10)
    assert ids, f"{user} never got event {event_id}"
    return {"notification_id": event_id}


# Every route under /v1/users/{user} (and so /v1/me), keyed by (method, path after the prefix).
USER_ROUTES: dict[tuple[str, str], Call] = {
    ("GET", "/notifications"): Call(params={"unread": "true", "limit": 5}),
    ("GET", "/notifications/unread-count"): Call(params={"section": "alert"}),
    ("POST", "/notifications/read"): Call(json={"all": True}, bad_json={"all": "nope"}),
    ("POST", "/notifications/unread"): Call(json={"ids": ["1", "2"]}, bad_json={"ids": 1}),
    ("POST", "/notifications/seen"): Call(json={}, bad_json={"until": "never"}),
    # seeded: bob holds events 1 and 2, alice only 2 (she published 1)
    ("POST", "/notifications/read-up-to"): Call(json={"id": "2"}, bad_json={"id": "two"}),
    ("POST", "/notifications/archive"): Call(json={"ids": ["2"]}, bad_json={"ids": "2"}),
    ("POST", "/notifications/unarchive"): Call(json={"ids": ["2"]}, bad_json={}),
    ("POST", "/notifications/save"): Call(json={"ids": ["2"]}, bad_json={"ids": [None]}),
    ("POST", "/notifications/unsave"): Call(json={"ids": ["2"]}, bad_json={"id": "2"}),
    ("POST", "/notifications/snooze"): Call(
        json={"ids": ["2"], "until": "9999-01-01T00:00:00Z"},
        bad_json={"ids": ["2"], "until": "tomorrow"}),
    ("POST", "/notifications/unsnooze"): Call(json={"ids": ["2"]}, bad_json={"ids": 2}),
    ("DELETE", "/notifications/{notification_id}"): Call(path=_victims_notification),
    ("GET", "/notifications/{notification_id}/members"): Call(
        params={"limit": 5}, path=_victims_notification),
    ("GET", "/subscriptions"): Call(params={"limit": 5}),
    ("POST", "/subscriptions"): Call(json={"type": "page-linked", "object": "page:Z"},
                                     bad_json={"channels": []}),
    ("DELETE", "/subscriptions/{subscription_id}"): Call(path=_victims_subscription),
    ("PUT", "/follows/{other}"): Call(path=lambda server, user: {"other": "mallory"}),
    ("DELETE", "/follows/{other}"): Call(path=lambda server, user: {"other": "carol"}),
    ("GET", "/follows"): Call(),
    ("GET", "/followers"): Call(),
    ("GET", "/timeline"): Call(),
    ("GET", "/preferences"): Call(),
    ("PUT", "/preferences"): Call(json={"muted": {"actors": ["alice"]}},
                                  bad_json={"muted": "everyone"}),
    ("GET", "/stream"): Call(),
    ("GET", "/export"): Call(),
    ("GET", "/push-subscriptions"): Call(),
    ("POST", "/push-subscriptions"): Call(json=_push_subscription(0),
                                          bad_json={"endpoint": 5}),
    ("DELETE", "/push-subscriptions/{subscription_id}"): Call(path=_victims_push_subscription),
}
# The other /v1 routes, and what a user token gets there: 200 (any user may), 403 (server key
# only), 404 (an unsubscribe link: its signed token is the credential, a bearer token is not).
OTHER_ROUTES: dict[tuple[str, str], tuple[int, Call]] = {
    ("POST", "/v1/events"): (403, Call(json={"type": "mention", "recipients": ["bob"]})),
    ("POST", "/v1/events/batch"): (403, Call(json={"events": [{"type": "mention"}]})),
    ("POST", "/v1/retractions"): (403, Call(json={"actor": "alice"})),
    ("GET", "/v1/types"): (200, Call()),
    ("GET", "/v1/push/public-key"): (200, Call()),
    ("GET", "/v1/types/{name}"): (200, Call(path=lambda server, user: {"name": "mention"})),
    ("PUT", "/v1/types/{name}"): (403, Call(json={"category": "x"},
                                            path=lambda server, user: {"name": "mention"})),
    ("POST", "/v1/tokens"): (403, Call(json={"user": "bob"})),
    ("POST", "/v1/bounces"): (403, Call(json={"address": "bob@example.org"})),
    ("DELETE", "/v1/bounces/{address}"): (403, Call(
        path=lambda server, user: {"address": "bob@example.org"})),
    ("PUT", "/v1/groups/{group}/members/{user}"): (403, Call(
        path=lambda server, user: {"group": "staff", "user": "alice"})),
    ("DELETE", "/v1/groups/{group}/members/{user}"): (403, Call(
        path=lambda server, user: {"group": "staff", "user": "bob"})),
    ("GET", "/v1/groups/{group}/members"): (403, Call(
        params={"limit": 5}, path=lambda server, user: {"group": "staff"})),
    ("DELETE", "/v1/users/{user}"): (403, Call(path=lambda server, user: {"user": user})),
    ("GET", "/v1/unsubscribe/{token}"): (404, Call(
        path=lambda server, user: {"token": "Ym9i.0123abcd"})),
    ("POST", "/v1/unsubscribe/{token}"): (404, Call(
        path=lambda server, user: {"token": "Ym9i.0123abcd"})),
    ("POST", "/v1/unsubscribe/{token}/undo"): (404, Call(
        path=lambda server, user: {"token": "Ym9i.0123abcd"})),
}


def _routes(spec: dict[str, Any]) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, operations in spec["paths"].items()
            for method in operations}


def _spec(live: LiveServer) -> dict[str, Any]:
    with live.http(None) as http:
        document: dict[str, Any] = http.get("/openapi.json").json()
    return document


def _send(http: httpx.Client, method: str, path: str, call: Call, *, bad: bool = False,
          token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = call.bad_json if bad else call.json
    options: dict[str, Any] = {"params": call.params, "headers": headers}
    if body is not None:
        options["json"] = body
    # a stream answers 200 and then never ends: read the status and hang up
    with http.stream(method, path, **options) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            response.read()
    return response


def _snapshot(live: LiveServer) -> dict[str, list[dict[str, Any]]]:
    assert live.settled()
    return {name: table_rows(live.tidings, name) for name in table_names()}


def _success(spec: dict[str, Any], method: str, template: str) -> int:
    (status,) = [int(code) for code in spec["paths"][template][method.lower()]["responses"]
                 if code.startswith("2")]
    return status


@pytest.fixture
def live(start_server: Callable[..., LiveServer]) -> LiveServer:
    """A server with Web Push on (its public key route answers), and no per-token rate limit:
    the matrix sends a user token more requests a second than a client may (429s would hide
    the answers it checks)."""
    return start_server(config={"vapid_private_key": keys.generate()[0]}, user_rate_per_second=0)


@pytest.fixture
def seeded(live: LiveServer) -> LiveServer:
    """bob has notifications, read state, a subscription, a follow and preferences."""
    with live.client() as server:
        for actor in ("alice", "carol"):
            server.publish("mention", actor=actor, recipients=["bob", "alice"])
        server.add_subscription(user="bob", type="page-linked", object="page:Bob")
        server.follow("carol", user="bob")
        server.follow("bob", user="carol")
        server.put_preferences({"muted": {"actors": ["mallory"]}, "locale": "de"}, user="bob")
        server.add_member("staff", "bob")
        server._call("POST", "/v1/users/bob/push-subscriptions", body=_push_subscription(1))
        assert live.settled()
        (first, _) = [i["id"] for i in server.iter_notifications(user="bob")]
        server.mark_read(user="bob", ids=[first])
        server.mark_seen(user="bob")
    return live


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_every_route_is_in_the_matrix(live: LiveServer) -> None:
    routes = _routes(_spec(live))
    # /v1/users/{user} itself (the erasure) is the server's alone, with no /v1/me form
    user_routes = {(m, p.removeprefix(USER_PREFIX)) for m, p in routes
                   if p.startswith(USER_PREFIX) and p != USER_PREFIX}
    me_routes = {(m, p.removeprefix(ME_PREFIX)) for m, p in routes if p.startswith(ME_PREFIX)}
    other_routes = {(m, p) for m, p in routes if p.startswith("/v1/")
                    and (p == USER_PREFIX or not p.startswith((USER_PREFIX, ME_PREFIX)))}
    assert user_routes == set(USER_ROUTES), "add the new user route to USER_ROUTES"
    assert me_routes == set(USER_ROUTES), "every user route must exist under /v1/me too"
    assert other_routes == set(OTHER_ROUTES), "add the new route to OTHER_ROUTES"


def test_a_user_token_cannot_read_or_change_another_users_data(seeded: LiveServer) -> None:
    live = seeded
    alice = live.token("alice")
    before = _snapshot(live)
    refused = []
    with live.client() as server, live.http(None) as http:
        for (method, suffix), call in USER_ROUTES.items():
            template = USER_PREFIX + suffix
            path = template.format(user="bob", **call.path(server, "bob"))
            for bad in (False, True) if call.bad_json is not None else (False,):
                response = _send(http, method, path, call, bad=bad, token=alice)
                refused.append((method, path, bad, response.status_code))
        with http.stream("GET", "/v1/users/bob/stream",
                         params={"access_token": alice}) as response:
            refused.append(("GET", "/v1/users/bob/stream?access_token", False,
                            response.status_code))
        for user in ("ALICE", "alice2", "alic"):  # close is not the same
            response = _send(http, "GET", f"/v1/users/{user}/notifications", Call(), token=alice)
            refused.append(("GET", f"/v1/users/{user}/notifications", False,
                            response.status_code))
    assert [r for r in refused if r[3] != 403] == []
    assert _snapshot(live) == before


def test_a_user_token_may_use_its_own_routes(seeded: LiveServer) -> None:
    live = seeded
    spec = _spec(live)
    answered = []
    with live.client() as server, live.http(None) as http:
        for prefix in (USER_PREFIX, ME_PREFIX):
            for (method, suffix), call in USER_ROUTES.items():
                template = prefix + suffix
                path = template.replace("{user}", "alice")
                if call.path is _victims_subscription:
                    call = Call(path=_own_subscription)
                if call.path is _victims_notification:
                    call = Call(path=_own_notification)
                if call.path is _victims_push_subscription:
                    call = Call(path=_own_push_subscription)
                path = path.format(**call.path(server, "alice"))
                response = _send(http, method, path, call, token=live.token("alice"))
                expected = _success(spec, method, template)
                answered.append((method, path, response.status_code, expected))
    assert [a for a in answered if a[2] != a[3]] == []
    assert not any(path.startswith("/v1/users/bob") for _, path, _, _ in answered)


def test_server_routes_refuse_user_tokens_and_me_refuses_server_keys(
        seeded: LiveServer) -> None:
    live = seeded
    alice = live.token("alice")
    before = _snapshot(live)
    answers = []
    with live.client() as server, live.http(None) as http:
        for (method, template), (expected, call) in OTHER_ROUTES.items():
            path = template.format(**call.path(server, "bob"))
            response = _send(http, method, path, call, token=alice)
            answers.append((method, path, response.status_code, expected))
        for (method, suffix), call in USER_ROUTES.items():
            if "{" in suffix:
                suffix = suffix.format(subscription_id="1", other="carol",
                                       notification_id="1")
            response = _send(http, method, ME_PREFIX + suffix, call, token=SERVER_KEY)
            answers.append((method, ME_PREFIX + suffix, response.status_code, 403))
    assert [a for a in answers if a[2] != a[3]] == []
    assert _snapshot(live) == before
