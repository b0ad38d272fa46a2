"""A store outage through a real server: 503 with ``Retry-After`` while PostgreSQL is away (never
a 500), recovery without a restart once it is back, and no event that got a 202 lost.

The app talks to PostgreSQL through :class:`tcpproxy.TcpProxy`, a loopback TCP relay the test
cuts (:meth:`~tcpproxy.TcpProxy.stop`: what the app sees when the database crashes or restarts)
and opens again.
Clients keep publishing and reading throughout, as real ones would: a publisher retries each
event after a 503 with the same ``idempotency_key``, so every event is eventually accepted once.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from sqlalchemy.engine import make_url

from engines import TYPES, event_ids, keys_of
from servers import serve, wait_for
from stores import PostgresStores
from tcpproxy import TcpProxy
from tidings.api.app import create_app
from tidings.config import Config
from tidings.engine import Tidings

SERVER_KEY = "outage-test-key"
AUTH = {"Authorization": f"Bearer {SERVER_KEY}"}
USERS = [f"user{i}" for i in range(7)]
HEALTHY_SECONDS = 1.5
OUTAGE_SECONDS = 3.0
RECOVERY_TIMEOUT = 30.0


@dataclass
class Traffic:
    """What the clients saw: every status (with its Retry-After) and the events accepted."""

    answers: list[tuple[str, int, str | None]] = field(default_factory=list)
    accepted: dict[int, str] = field(default_factory=dict)  # event number -> id
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, what: str, response: httpx.Response) -> None:
        with self.lock:
            self.answers.append((what, response.status_code,
                                 response.headers.get("retry-after")))

    def statuses(self) -> set[int]:
        with self.lock:
            return {status for _, status, _ in self.answers}


def publisher(base_url: str, traffic: Traffic, stop: threading.Event) -> None:
    """Publish events one after another; after a 503, send the same event again."""
    with httpx.Client(base_url=base_url, headers=AUTH, timeout=30) as client:
        number = 0
        while not stop.is_set():
            body = {"type": "mention", "actor": "alice", "recipients": [USERS[number % 7]],
                    "payload": {"n": number}, "idempotency_key": f"outage-{number}"}
            response = client.post("/v1/events", json=body)
            traffic.record("publish", response)
            if response.status_code == 202:
                with traffic.lock:
                    traffic.accepted[number] = response.json()["id"]
                number += 1
            else:
                time.sleep(0.05)


def reader(base_url: str, traffic: Traffic, stop: threading.Event) -> None:
    rng = random.Random(5)
    with httpx.Client(base_url=base_url, headers=AUTH, timeout=30) as client:
        while not stop.is_set():
            user = rng.choice(USERS)
            for path in (f"/v1/users/{user}/notifications/unread-count",
                         f"/v1/users/{user}/notifications?limit=5"):
                traffic.record("read", client.get(path))
            time.sleep(0.01)


@contextlib.contextmanager
def clients(base_url: str, traffic: Traffic) -> Iterator[None]:
    stop = threading.Event()
    threads = [threading.Thread(target=work, args=(base_url, traffic, stop), daemon=True)
               for work in (publisher, reader)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) > 0
    assert response.json()["error"]["code"] in ("unavailable", "store_unavailable")


@pytest.fixture
def store_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


def test_outage_gives_503_then_recovers_and_loses_nothing(store_url: str) -> None:
    real = make_url(store_url)
    proxy = TcpProxy((real.host or "127.0.0.1", real.port or 5432))
    proxy.start()
    through_proxy = real.set(host="127.0.0.1", port=proxy.port).render_as_string(
        hide_password=False)
    # A short job lease: a fan-out cut off mid-run is taken up again soon after recovery.
    config = Config(database_url=through_proxy, lease_seconds=2.0, job_backoff_seconds=0.2)
    traffic = Traffic()
    with contextlib.ExitStack() as stack:
        stack.callback(proxy.stop)
        tidings = stack.enter_context(Tidings(config, types=TYPES))
        app = create_app(tidings, api_keys=(SERVER_KEY,), token_secret=None, run_worker=True,
                         rate_per_second=1_000_000)
        base_url = stack.enter_context(serve(app))
        http = stack.enter_context(httpx.Client(base_url=base_url, headers=AUTH, timeout=30))

        with clients(base_url, traffic):
            time.sleep(HEALTHY_SECONDS)
            assert traffic.statuses() == {200, 202}, traffic.answers[-5:]
            before = len(traffic.accepted)

            proxy.stop()
            for request in (
                lambda: http.get("/readyz"),
                lambda: http.post("/v1/events", json={"type": "mention", "actor": "alice",
                                                      "recipients": ["user1"]}),
                lambda: http.get("/v1/users/user1/notifications"),
                lambda: http.get("/v1/users/user1/notifications/unread-count"),
                lambda: http.post("/v1/users/user1/notifications/read", json={"all": True}),
            ):
                assert_unavailable(request())
            assert http.get("/healthz").status_code == 200  # the process itself is fine
            time.sleep(OUTAGE_SECONDS)
            during = len(traffic.accepted)

            proxy.start()
            ready = wait_for(lambda: http.get("/readyz").status_code == 200, RECOVERY_TIMEOUT,
                             every=0.1)
            assert ready, "the server did not recover by itself"
            assert http.get("/v1/users/user1/notifications").status_code == 200
            assert wait_for(lambda: len(traffic.accepted) > during + 20, RECOVERY_TIMEOUT)

        assert http.get("/v1/users/user1/notifications/unread-count").status_code == 200
        # The server's own worker fans out every accepted event, those cut off mid-run too.
        with Tidings(Config(database_url=store_url), types=TYPES) as look:
            accepted = {int(event_id) for event_id in traffic.accepted.values()}
            assert len(accepted) == len(traffic.accepted)  # one event per idempotency key
            done = wait_for(lambda: fanned_out(look, accepted) == dict.fromkeys(accepted, 1),
                            RECOVERY_TIMEOUT, every=0.2)
            assert done, {k: v for k, v in fanned_out(look, accepted).items() if v != 1}
            assert accepted <= set(event_ids(look))

    # Every answer was a success, or a 503 with Retry-After; the clients saw the outage.
    statuses = traffic.statuses()
    assert statuses <= {200, 202, 503}, sorted(statuses)
    assert 503 in statuses, "the clients never saw the outage"
    assert all(after for _, status, after in traffic.answers if status == 503)
    assert before > 0 and len(traffic.accepted) > during


def fanned_out(tidings: Tidings, event_ids: set[int]) -> dict[int, int]:
    """Inbox rows per event (mention: one recipient each, so 1 when fanned out)."""
    rows = Counter(key.event_id for key in keys_of(tidings, event_ids))
    return {event_id: rows.get(event_id, 0) for event_id in event_ids}
