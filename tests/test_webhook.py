"""Webhooks against a real local HTTP receiver: HMAC-SHA256 signature, retries, delivery log."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import select

from live import free_port
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.schema import jobs, webhook_deliveries

SECRET = "webhook-secret-for-the-tests-0123456789"


class Receiver:
    """Answers ``statuses`` in turn (then 200) and keeps every request."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.requests: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"headers": dict(self.headers), "body": body})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(params=["sqlite", "postgresql"])
def hook_store(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


def make(url: str, **settings: Any) -> tuple[Tidings, FrozenClock]:
    clock = FrozenClock()
    t = Tidings(Config(database_url=url, webhook_secret=SECRET, job_backoff_seconds=2.0,
                       **settings),
                types=[EventType("mention", channels=("web", "webhook"),
                                 audience=("recipients",))], clock=clock)
    return t, clock


def test_signed_post_retried_until_accepted(hook_store: str) -> None:
    t, clock = make(hook_store)
    with Receiver([500, 503]) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        published = t.publish(Event("mention", actor="alice", recipients=["bob"],
                                    payload={"text": "hello"}))
        t.run_jobs()
        assert len(receiver.requests) == 1
        clock.advance(2.1)
        t.run_jobs()
        assert len(receiver.requests) == 2
        clock.advance(4.1)  # backoff doubles
        t.run_jobs()
        assert len(receiver.requests) == 3
        clock.advance(100)
        t.run_jobs()
        assert len(receiver.requests) == 3  # accepted: no more attempts
    for request in receiver.requests:
        headers, body = request["headers"], request["body"]
        expected = hmac.new(SECRET.encode(), headers["X-Tidings-Timestamp"].encode() + b"." + body,
                            hashlib.sha256).hexdigest()
        assert headers["X-Tidings-Signature"] == f"sha256={expected}"
        data = json.loads(body)
        assert data["user"] == "bob" and data["event"]["id"] == published.id
        assert data["event"]["payload"] == {"text": "hello"}
    with t.store.db.read() as conn:
        log = conn.execute(select(webhook_deliveries.c.status, webhook_deliveries.c.attempt)
                           .order_by(webhook_deliveries.c.id)).all()
        assert [(r.status, r.attempt) for r in log] == [(500, 1), (503, 2), (200, 3)]
        assert conn.execute(select(jobs)).all() == []
    t.close()


def test_gives_up_after_the_last_attempt_and_records_it(hook_store: str) -> None:
    t, clock = make(hook_store, job_max_attempts=2)
    with Receiver([500] * 10) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        clock.advance(60)
        t.run_jobs()
        clock.advance(600)
        t.run_jobs()
        assert len(receiver.requests) == 2
    failures = t.queue.failures(final_only=True)
    assert len(failures) == 1 and failures[0].func == "webhook"
    assert "500" in failures[0].error
    t.close()


def test_category_switch_turns_webhooks_off(hook_store: str) -> None:
    t, _clock = make(hook_store)
    with Receiver([]) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url},
                                  "channels": {"general": {"webhook": False}}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        assert receiver.requests == []
    assert t.unread_count("bob").count == 1
    t.close()
