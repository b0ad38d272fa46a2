"""Live updates: :meth:`Tidings.watch` hears of deliveries and marks once they are committed,
on every store; on PostgreSQL across processes (LISTEN/NOTIFY), so an SSE stream on one API
process hears of a delivery by a worker elsewhere at once, not at its next poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from engines import open_tidings
from live import LiveServer
from stores import PostgresStores
from tidings.api.app import create_app
from tidings.api.auth import Authenticator
from tidings.engine import Tidings
from tidings.exceptions import InvalidInput

KEY = "live-updates-key"
SECRET = "live-updates-token-secret-0123456789"


class Heard:
    """Counts the calls of a watch callback, and lets a test wait for the next."""

    def __init__(self) -> None:
        self.calls = 0
        self._cond = threading.Condition()

    def __call__(self) -> None:
        with self._cond:
            self.calls += 1
            self._cond.notify_all()

    def wait_for(self, calls: int, seconds: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.calls >= calls, seconds)


def test_watch_hears_deliveries_and_marks_after_commit(t: Tidings) -> None:
    heard, other = Heard(), Heard()
    stop = t.watch("bob", heard)
    t.watch("carol", other)
    event = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    assert heard.calls == 0  # publishing delivers nothing yet
    t.run_jobs()
    assert heard.wait_for(1)
    t.mark_read("bob", [event.id])
    assert heard.wait_for(2)
    t.mark_all_read("bob")
    assert heard.wait_for(3)
    assert other.calls == 0
    stop()
    t.mark_seen("bob")
    time.sleep(0.2)
    assert heard.calls == 3


def test_watch_hears_a_followees_post_reach_the_timeline(t: Tidings) -> None:
    """Bob reads posts on his timeline only (no inbox row for them): the timeline alone has
    to tell his streams. Carol, who follows nobody, hears nothing."""
    t.follow("bob", "alice")
    t.set_preferences("bob", {"channels": {"post": {"web": False}}})
    heard, other = Heard(), Heard()
    t.watch("bob", heard)
    t.watch("carol", other)
    event = t.publish({"type": "post", "actor": "alice", "object": "post:1"})
    t.run_jobs()
    assert heard.wait_for(1)
    assert [e.id for e in t.timeline("bob").items] == [int(event.id)]
    assert t.unread_count("bob").count == 0
    assert other.calls == 0


def test_a_unit_that_rolls_back_announces_nothing(t: Tidings) -> None:
    heard = Heard()
    t.watch("bob", heard)
    with pytest.raises(InvalidInput):
        t.mark_read("bob", ["not-an-id"])
    assert heard.calls == 0


@pytest.fixture
def postgres_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


def test_on_postgresql_a_change_in_another_process_is_heard(postgres_url: str) -> None:
    """Two engines on one database stand for two processes: each has its own pool and its
    own notifier, so only LISTEN/NOTIFY can carry the news from one to the other."""
    with open_tidings(postgres_url) as api_side, open_tidings(postgres_url) as worker_side:
        assert api_side.watch_reaches_other_processes
        heard = Heard()
        api_side.watch("bob", heard)
        time.sleep(0.5)  # the listening connection is up
        worker_side.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
        worker_side.run_jobs()
        assert heard.wait_for(1, 10.0)
        worker_side.mark_all_read("bob")
        assert heard.wait_for(2, 10.0)


def test_a_stream_hears_another_processes_delivery_before_its_poll(postgres_url: str) -> None:
    """The stream polls every 60 s here: a notification within seconds came by NOTIFY."""
    with open_tidings(postgres_url) as api_side, open_tidings(postgres_url) as worker_side:
        app = create_app(api_side, api_keys=(KEY,), token_secret=SECRET, stream_interval=60.0)
        token = Authenticator((KEY,), SECRET).mint("bob", 600)[0]
        with LiveServer(app) as server, httpx.stream(
                "GET", f"{server.url}/v1/me/stream", timeout=httpx.Timeout(10.0, read=30.0),
                headers={"Authorization": f"Bearer {token}"}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            assert _next_event(lines) == ("unread", NONE)
            worker_side.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
            started = time.monotonic()
            worker_side.run_jobs()
            kind, data = _next_event(lines)
            assert kind == "notification" and '"actor":"alice"' in data
            assert _next_event(lines) == ("unread", ONE)
            assert time.monotonic() - started < 30  # far below the 60 s poll
            worker_side.mark_all_read("bob")
            assert _next_event(lines) == ("unread", NONE)


NONE = '{"count":0,"display":"0","unseen":0,"unseen_display":"0"}'  # the `unread` frames
ONE = '{"count":1,"display":"1","unseen":1,"unseen_display":"1"}'


def _next_event(lines: Iterator[str]) -> tuple[str, str]:
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: ") and kind:
            return kind, line[len("data: "):]
    raise AssertionError("the stream ended")
