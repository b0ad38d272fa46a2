"""Hostile input through a real server: each case is a 4xx in the contract's error shape that
names what is wrong, nothing is written, and the connection goes on serving.

Nesting and key counts of payloads are bounded at the door, and reads survive whatever is
stored; bodies that nest too deeply for a parser, lone surrogates and timestamps out of range
are refused; NUL and control characters are refused where they make no sense; ids are matched
in full (``"alice\\n"`` is not a user); unknown query parameters are named in a 400.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract import error_of
from engines import table_counts
from servers import LiveServer
from tidings.api.jsonshape import dumps, iterencode
from tidings.api.schemas.params import NOTIFICATION_ROUTES
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings.fanout.specs import fanout_spec
from tidings.ports import Tx

pytest_plugins = ["servers"]

ONE_BACKEND = pytest.mark.parametrize("api_backend", ["sqlite"])
MAX_DEPTH = 32
MAX_KEYS = 1000


def nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    """An object ``depth`` levels deep: ``nested(1)`` is ``{"a": 1}``."""
    value: Any = leaf
    for _ in range(depth):
        value = {"a": value}
    result: dict[str, Any] = value
    return result


def refused(http: httpx.Client, response: httpx.Response, status: int, *names: str) -> None:
    """``response`` is ``status`` with the error body naming ``names``; the same connection
    then serves the next request."""
    error = error_of(response)
    assert response.status_code == status, (response.status_code, error)
    named = error["message"] + " " + " ".join(str(d.get("field")) for d in error["details"])
    for name in names:
        assert name in named, error
    assert response.headers.get("connection", "").lower() != "close"
    assert http.get("/healthz").status_code == 200


@contextlib.contextmanager
def unchanged(live: LiveServer) -> Any:
    before = table_counts(live.tidings)
    yield
    assert table_counts(live.tidings) == before


def post_raw(http: httpx.Client, path: str, body: bytes) -> httpx.Response:
    return http.post(path, content=body, headers={"content-type": "application/json"})


# -- 9.2: payload depth and key count at the door; reads robust to what is stored ---------------


PAYLOAD_LIMITS = [
    ("too-deep", nested(MAX_DEPTH + 1), "32"),
    ("too-deep-in-a-list", {"a": json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)}, "32"),
    ("too-many-keys", {f"k{i}": i for i in range(MAX_KEYS + 1)}, "1000"),
    ("too-many-keys-nested", {f"k{i}": {"x": i} for i in range(MAX_KEYS // 2 + 1)}, "1000"),
]


@pytest.mark.parametrize(("payload", "limit"), [c[1:] for c in PAYLOAD_LIMITS],
                         ids=[c[0] for c in PAYLOAD_LIMITS])
def test_payload_depth_and_keys_are_bounded_at_the_door(shared_live: LiveServer,
                                                        payload: dict[str, Any],
                                                        limit: str) -> None:
    event = {"type": "mention", "recipients": ["bob"], "payload": payload}
    with shared_live.http() as http, unchanged(shared_live):
        response = http.post("/v1/events", json=event)
        refused(http, response, 422, "payload", limit)
        batch = http.post("/v1/events/batch", json={"events": [event]})
        assert batch.status_code == 202, batch.text
        (item,) = batch.json()["items"]
        assert item["status"] == "error" and "payload" in item["error"]["message"], item


@ONE_BACKEND
def test_payloads_at_the_limits_are_accepted(live: LiveServer) -> None:
    with live.http() as http:
        for payload in (nested(MAX_DEPTH), {f"k{i}": i for i in range(MAX_KEYS)}):
            response = http.post("/v1/events", json={"type": "mention", "recipients": ["bob"],
                                                     "payload": payload})
            assert response.status_code == 202, response.text


def test_a_stored_deeply_nested_payload_does_not_break_reads(live: LiveServer) -> None:
    """An event stored before the limits were checked (by an older version) is read back
    whole by every read: inbox, timeline, stream. Stored here through the store's port, as
    the library's publish now refuses it too."""
    deep = nested(300)
    live.tidings.follow("bob", "alice")
    with live.client(live.token("bob")) as bob:
        frames = bob.stream(timeout=10)
        assert next(frames)[0] == "unread"
        store_as_before_the_limits(live.tidings, Event(
            type="edit", actor="alice", object="page:Deep", recipients=("bob",), payload=deep))
        assert live.settled()
        (item,) = bob.notifications()["items"]
        assert item["payload"] == deep
        (entry,) = bob.timeline()["items"]
        assert entry["payload"] == deep
        streamed = next(data for event, data in frames if event == "notification")
        assert streamed["payload"] == deep
        frames.close()


def store_as_before_the_limits(t: Tidings, event: Event) -> None:
    """Store an event and its fan-out job the way publish did before payloads were bounded."""
    text = json.dumps(dict(event.payload))

    def work(tx: Tx) -> None:
        event_id = tx.events.insert(event, text, t.clock.now_us())
        tx.jobs.enqueue_many([fanout_spec(event_id)])

    t.store.transact(work)


# -- 9.7: bodies a parser chokes on, lone surrogates, timestamps out of range --------------------

DEEP_BODY = b'{"type": "mention", "payload": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001
HOSTILE_BODIES = [
    # (id, path, body, status, a word the error names)
    ("deep-array", "/v1/events", b"[" * 100_000 + b"]" * 100_000, 422, "body"),
    ("deep-object", "/v1/events", DEEP_BODY, 422, "body"),
    ("deep-batch", "/v1/events/batch", b'{"events": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
     422, "body"),
    ("deep-but-parsable", "/v1/events/batch",
     json.dumps({"events": [{"type": "mention", "payload": nested(500)}]}).encode(), 422,
     "events.0.payload"),
    ("surrogate-in-payload", "/v1/events",
     b'{"type": "mention", "payload": {"text": "\\ud800"}}', 422, "payload.text"),
    # JSON may come as UTF-16 or UTF-32 (RFC 8259 allows readers to take them)
    *[(f"surrogate-in-a-{codec}-body", "/v1/events",
       '{"type": "mention", "payload": {"text": "\\ud800"}}'.encode(codec), 422, "payload.text")
      for codec in ("utf-16", "utf-16-le", "utf-32")],
    ("nul-in-a-utf-16-body", "/v1/events",
     '{"type": "mention", "payload": {"text": "\\u0000"}}'.encode("utf-16"), 422,
     "payload.text"),
    ("surrogate-in-a-key", "/v1/events", b'{"type": "mention", "payload": {"\\udfff": 1}}',
     422, "payload"),
    ("surrogate-in-idempotency-key", "/v1/events",
     b'{"type": "mention", "idempotency_key": "k\\ud800"}', 422, "idempotency_key"),
    ("surrogate-in-a-template", "/v1/types/bad",
     b'{"templates": {"title": "x\\ud83d"}}', 422, "templates.title"),
    ("surrogate-in-preferences", "/v1/users/bob/preferences",
     b'{"muted": {"objects": ["page:\\udc00"]}}', 422, "muted.objects"),
    ("seen-in-year-0", "/v1/users/bob/notifications/seen",
     b'{"until": "0001-01-01T00:00:00+23:59"}', 422, "until"),
    ("seen-in-year-10000", "/v1/users/bob/notifications/seen",
     b'{"until": "9999-12-31T23:59:59-23:59"}', 422, "until"),
]


@pytest.mark.parametrize(("path", "body", "status", "names"), [c[1:] for c in HOSTILE_BODIES],
                         ids=[c[0] for c in HOSTILE_BODIES])
def test_hostile_bodies_get_a_4xx_and_the_connection_stays_usable(
        shared_live: LiveServer, path: str, body: bytes, status: int, names: str) -> None:
    method = "PUT" if path.startswith(("/v1/types/", "/v1/users/bob/preferences")) else "POST"
    with shared_live.http() as http, unchanged(shared_live):
        response = http.request(method, path, content=body,
                                headers={"content-type": "application/json"})
        refused(http, response, status, names)


# -- 9.8: NUL and control characters refused at the door ----------------------------------------

CONTROL_CASES = [
    # (id, method, path, request options, the field named)
    ("nul-in-idempotency-key", "POST", "/v1/events",
     {"json": {"type": "mention", "idempotency_key": "k\x00"}}, "idempotency_key"),
    ("newline-in-idempotency-key", "POST", "/v1/events",
     {"json": {"type": "mention", "idempotency_key": "k\n1"}}, "idempotency_key"),
    ("nul-in-bounce-reason", "POST", "/v1/bounces",
     {"json": {"address": "bob@example.org", "reason": "gone\x00"}}, "reason"),
    ("control-in-bounce-reason", "POST", "/v1/bounces",
     {"json": {"address": "bob@example.org", "reason": "gone\x1b[31m"}}, "reason"),
    ("nul-in-bounce-address", "POST", "/v1/bounces",
     {"json": {"address": "bob\x00@example.org"}}, "address"),
    ("nul-in-cleared-address", "DELETE", "/v1/bounces/bob%00@example.org", {}, "address"),
    ("nul-in-category", "GET", "/v1/users/bob/notifications",
     {"params": {"category": "talk\x00"}}, "category"),
    ("control-in-category", "GET", "/v1/users/bob/notifications/unread-count",
     {"params": {"category": "ta\tlk"}}, "category"),
    ("nul-in-cursor", "GET", "/v1/users/bob/timeline", {"params": {"cursor": "dDE\x00"}},
     "cursor"),
    ("nul-in-type-name", "PUT", "/v1/types/a%00b", {"json": {}}, "name"),
    ("nul-in-object", "POST", "/v1/retractions", {"json": {"object": "page:\x00"}}, "object"),
    # PostgreSQL keeps no NUL in text: refused in any string of an event's payload
    ("nul-in-payload", "POST", "/v1/events",
     {"json": {"type": "mention", "recipients": ["bob"], "payload": {"text": "a\x00b"}}},
     "payload.text"),
    ("nul-in-a-payload-key", "POST", "/v1/events",
     {"json": {"type": "mention", "recipients": ["bob"], "payload": {"te\x00xt": 1}}},
     "payload"),
    ("nul-deep-in-payload", "POST", "/v1/events",
     {"json": {"type": "mention", "recipients": ["bob"], "payload": {"a": [{"b": "\x00"}]}}},
     "payload.a.0.b"),
    ("nul-in-a-batched-payload", "POST", "/v1/events/batch",
     {"json": {"events": [{"type": "mention", "payload": {"text": "\x00"}}]}},
     "events.0.payload.text"),
    ("nul-in-preferences", "PUT", "/v1/users/bob/preferences",
     {"json": {"email": {"timezone": "UTC\x00"}}}, "email.timezone"),
    ("nul-in-a-type-template", "PUT", "/v1/types/nul-type",
     {"json": {"templates": {"title": "x\x00"}}}, "templates.title"),
]


def _control_case(live: LiveServer, method: str, path: str, options: dict[str, Any],
                  field: str) -> None:
    with live.http() as http, unchanged(live):
        response = http.request(method, path, **options)
        refused(http, response, 422, field)


@pytest.mark.parametrize(("method", "path", "options", "field"),
                         [c[1:] for c in CONTROL_CASES], ids=[c[0] for c in CONTROL_CASES])
def test_control_characters_are_refused_at_the_door(shared_live: LiveServer, method: str,
                                                    path: str, options: dict[str, Any],
                                                    field: str) -> None:
    _control_case(shared_live, method, path, options, field)


@pytest.mark.parametrize("api_backend", ["postgresql", "mysql"])
def test_nul_bytes_are_not_an_outage_on_postgresql(live: LiveServer) -> None:
    """PostgreSQL refuses NUL in text; the door refuses it first, with a 422, not a 503 (and
    on MariaDB alike, so every backend answers the same)."""
    for name, method, path, options, field in CONTROL_CASES:
        try:
            _control_case(live, method, path, options, field)
        except AssertionError as failure:
            failure.add_note(f"case: {name}")
            raise


# -- 9.9: ids are matched in full -----------------------------------------------------------------


def test_a_trailing_newline_is_not_part_of_an_id(shared_live: LiveServer) -> None:
    with shared_live.http(shared_live.token("alice\n")) as http, unchanged(shared_live):
        response = http.get("/v1/me/notifications")
        refused(http, response, 401, "sub")
    with shared_live.http() as http, unchanged(shared_live):
        refused(http, http.get("/v1/users/alice%0A/notifications"), 422, "user")
        refused(http, http.put("/v1/users/bob/follows/alice%0A"), 422, "other")
        refused(http, http.post("/v1/tokens", json={"user": "alice\n"}), 422, "user")
        refused(http, http.get("/v1/types/mention%0A"), 422, "name")
        refused(http, http.post("/v1/events", json={"type": "mention", "actor": "alice\n"}),
                422, "actor")
        refused(http, http.post("/v1/users/bob/notifications/seen",
                                json={"until": "2024-01-01T00:00:00Z\n"}), 422, "until")


# -- 13.8: unknown query parameters ----------------------------------------------------------------

PATH_VALUES = {"user": "bob", "other": "alice", "name": "mention", "subscription_id": "1",
               "notification_id": "1", "group": "staff",
               "token": "Ym9i.0123abcd", "address": "bob@example.org"}


def _operations(spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, operations in spec["paths"].items()
            for method in operations]


def test_unknown_query_parameters_are_named_in_a_400(shared_live: LiveServer) -> None:
    with shared_live.http() as http, unchanged(shared_live):
        response = http.get("/v1/users/bob/notifications",
                            params={"actor": "alice", "sort": "asc", "since": "9",
                                    "limit": "5"})
        refused(http, response, 400, "unknown query parameter: sort, since")
        token = shared_live.token("bob")
        # a token in the URL is for streams only (browsers' EventSource cannot send headers)
        refused(http, http.get("/v1/users/bob/notifications", params={"access_token": token}),
                400, "access_token")
        with http.stream("GET", "/v1/me/stream", params={"access_token": token},
                         headers={"Authorization": ""}) as stream:
            assert stream.status_code == 200


def test_every_route_refuses_unknown_query_parameters(shared_live: LiveServer,
                                                      openapi_spec: dict[str, Any]) -> None:
    operations = _operations(openapi_spec)
    assert len(operations) >= 40
    with shared_live.http() as http, unchanged(shared_live):
        for method, template in operations:
            path = template.format(**PATH_VALUES)
            response = http.request(method, path, params={"zz_unknown": "1"},
                                    json={} if method in ("POST", "PUT") else None)
            try:
                if method == "HEAD":  # the status alone: an answer to HEAD has no body
                    assert response.status_code == 400
                else:
                    refused(http, response, 400, "zz_unknown")
            except AssertionError as failure:
                failure.add_note(f"{method} {template}")
                raise


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_the_fallback_encoder_writes_what_the_standard_one_does(value: Any) -> None:
    assert "".join(iterencode(value)) == json.dumps(value, separators=(",", ":"))


def test_the_fallback_encoder_takes_any_depth_and_lone_surrogates() -> None:
    deep = nested(5000, "\ud800")
    text = dumps(deep).decode("ascii")
    assert text == '{"a":' * 5000 + '"\\ud800"' + "}" * 5000


def test_a_notification_id_never_takes_a_sibling_routes_name(
        shared_live: LiveServer, openapi_spec: dict[str, Any]) -> None:
    """``DELETE …/notifications/{id}`` stands beside fixed routes: every one of them is named
    in NOTIFICATION_ROUTES, so a method they lack is a 405, not a 422 on a bad id."""
    prefix = "/v1/users/{user}/notifications/"
    siblings = {path.removeprefix(prefix) for path in openapi_spec["paths"]
                if path.startswith(prefix) and not set("{/") & set(path.removeprefix(prefix))}
    assert siblings == set(NOTIFICATION_ROUTES)
    with shared_live.http() as http, unchanged(shared_live):
        for name in siblings:
            assert http.delete(f"/v1/users/bob/notifications/{name}").status_code == 405
        refused(http, http.delete("/v1/users/bob/notifications/abc"), 422, "notification_id")
