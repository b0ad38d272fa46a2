"""Webhooks against real local receivers: HMAC-SHA256 signature, retries, the delivery log; the
address guard when a URL is saved and again at delivery (DNS rebinding), the pinned connection,
timeouts, the unread response body."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hooks import SECRET, RawServer, Receiver, deliveries, flood, hold, make, queued, trickle
from servers import LiveServer
from tidings.channels import pinned
from tidings.domain.events import Event
from tidings.exceptions import InvalidInput

pytest_plugins = ["servers", "hooks"]


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
    assert [(r.status, r.attempt) for r in deliveries(t)] == [(500, 1), (503, 2), (200, 3)]
    assert queued(t) == []
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


# -- the address guard ------------------------------------------------------------------------

INSIDE = [
    "http://127.0.0.1:6379/", "https://127.0.0.1/hook", "https://localhost:8000/hook",
    "https://[::1]/hook", "https://0x7f000001/", "https://2130706433/", "https://127.1/",
    "https://169.254.169.254/latest/meta-data/", "https://[::ffff:127.0.0.1]/",
    "https://10.0.0.5/", "https://192.168.1.1/", "https://[fe80::1]/", "https://0.0.0.0/",
    "https://224.0.0.1/", "http://8.8.8.8/hook", "ftp://8.8.8.8/hook",
]


def test_webhook_urls_leading_inside_are_refused_when_saved(hook_store: str) -> None:
    t, _clock = make(hook_store, webhook_allow=())
    for url in INSIDE:
        with pytest.raises(InvalidInput) as refused:
            t.set_preferences("eve", {"webhook": {"url": url}, "locale": "de"})
        assert refused.value.field == "webhook.url", url
        assert t.get_preferences("eve") == {"muted": {"actors": [], "objects": []}}
    saved = t.set_preferences("eve", {"webhook": {"url": "https://8.8.8.8/hook"}})
    assert saved["webhook"] == {"url": "https://8.8.8.8/hook"}
    t.close()


def test_the_allow_list_lets_the_operator_name_internal_receivers(hook_store: str) -> None:
    t, _clock = make(hook_store, webhook_allow=("127.0.0.1", "10.0.0.0/8", "localhost"))
    for url in ("http://127.0.0.1:9/hook", "http://10.1.2.3/", "https://10.200.0.1/x",
                "http://localhost:9/hook"):
        assert t.set_preferences("ops", {"webhook": {"url": url}})["webhook"]["url"] == url
    for url in ("http://127.0.0.2/", "https://192.168.0.1/", "https://[::1]/"):
        with pytest.raises(InvalidInput):
            t.set_preferences("ops", {"webhook": {"url": url}})
    t.close()


def test_the_api_refuses_an_internal_webhook_url_with_422(live: LiveServer) -> None:
    with live.http() as http:
        for url in ("http://127.0.0.1:6379/", "https://169.254.169.254/latest/meta-data/",
                    "https://[::1]/", "https://0x7f000001/"):
            response = http.put("/v1/users/eve/preferences", json={"webhook": {"url": url}})
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert [d["field"] for d in error["details"]] == ["webhook.url"]
        stored = http.get("/v1/users/eve/preferences").json()
        assert stored["webhook"]["url"] is None


def test_a_stored_url_leading_inside_is_refused_at_delivery(hook_store: str) -> None:
    before, clock = make(hook_store)  # the operator allowed loopback when the URL was saved
    with Receiver([]) as receiver:
        before.set_preferences("bob", {"webhook": {"url": receiver.url},
                                       "email": {"address": "bob@example.org"}})
        before.close()
        t, _clock = make(hook_store, clock=clock, webhook_allow=())
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        clock.advance(3600)
        t.run_jobs()
        assert receiver.requests == []
    (attempt,) = deliveries(t)
    assert attempt.status is None and attempt.error.startswith("refused: 127.0.0.1 leads to")
    assert "loopback" in attempt.error
    (failure,) = t.queue.failures(final_only=True)  # refused for good, not retried
    assert failure.func == "webhook" and failure.attempt == 1 and queued(t) == []
    t.unsubscribe_email("bob")  # a URL stored earlier does not block other changes
    assert t.get_preferences("bob")["email"]["frequency"] == "never"
    t.close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Fake answers for some names: each lookup takes the next address of its list (the last
    one repeats); other names and address literals go to the system resolver."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host in answers:
            queue = answers[host]
            address = queue.pop(0) if len(queue) > 1 else queue[0]
            return real(address, port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def test_a_name_that_turns_internal_after_saving_is_refused(hook_store: str,
                                                            dns: dict[str, list[str]]) -> None:
    t, _clock = make(hook_store, webhook_allow=())
    with Receiver([]) as receiver:
        dns["hooks.rebind.test"] = ["8.8.8.8", "127.0.0.1"]  # public when saved, then not
        t.set_preferences("bob", {"webhook": {
            "url": f"https://hooks.rebind.test:{receiver.port}/hook"}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        assert receiver.requests == []
    (attempt,) = deliveries(t)
    assert attempt.error.startswith("refused: hooks.rebind.test leads to 127.0.0.1")
    assert queued(t) == []
    t.close()


def test_delivery_connects_to_the_address_it_checked(hook_store: str,
                                                     dns: dict[str, list[str]]) -> None:
    t, _clock = make(hook_store, webhook_allow=("hooks.example.test",))
    with Receiver([]) as receiver:
        url = f"http://hooks.example.test:{receiver.port}/hook?k=1"
        # the receiver for the check when saving and the one at delivery; any later lookup
        # (a connection that resolved the name again) would go nowhere
        dns["hooks.example.test"] = ["127.0.0.1", "127.0.0.1", "192.0.2.1"]
        t.set_preferences("bob", {"webhook": {"url": url}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        (request,) = receiver.requests
    assert request["headers"]["Host"] == f"hooks.example.test:{receiver.port}"
    assert request["path"] == "/hook?k=1"
    assert [(r.status, r.error) for r in deliveries(t)] == [(200, None)]
    t.close()


def test_every_post_shares_one_verifying_tls_context() -> None:
    """Made once a process (httpx would read the CA bundle for each POST), and it checks the
    receiver's certificate and name."""
    context = pinned.tls_context()
    assert context is pinned.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


# -- time and size ----------------------------------------------------------------------------

def _one_attempt(url: str, make_engine: Callable[[], Any]) -> tuple[Any, float]:
    t, _clock = make_engine()
    t.set_preferences("bob", {"webhook": {"url": url}})
    t.publish(Event("mention", actor="alice", recipients=["bob"]))
    t.run_jobs(max_jobs=1)  # the fan-out
    started = time.monotonic()
    t.run_jobs()
    return t, time.monotonic() - started


@pytest.fixture
def quick(hook_store: str) -> Iterator[Callable[[], Any]]:
    engines: list[Any] = []

    def engine() -> Any:
        made = make(hook_store, webhook_connect_timeout=1.0, webhook_read_timeout=1.0)
        engines.append(made[0])
        return made

    yield engine
    for t in engines:
        t.close()


def test_a_silent_receiver_is_given_up_on_after_the_read_timeout(
        quick: Callable[[], Any]) -> None:
    with RawServer(hold) as silent:
        t, took = _one_attempt(silent.url, quick)
    assert took < 6.0  # 1 s to connect, 1 s to read; it was 10 s before
    (attempt,) = deliveries(t)
    assert attempt.status is None and attempt.error
    (job,) = queued(t)
    assert json.loads(job.args)["attempt"] == 2  # retried later


def test_a_trickling_receiver_is_cut_off_at_the_deadline(quick: Callable[[], Any]) -> None:
    with RawServer(trickle) as slow:
        t, took = _one_attempt(slow.url, quick)
    assert took < 10.0  # the receiver would have kept it 30 s, a line every 0.2 s
    (attempt,) = deliveries(t)
    assert attempt.status is None and attempt.error == "no answer within 2 s"


def test_the_response_body_is_never_read(quick: Callable[[], Any]) -> None:
    with RawServer(flood) as flooding:
        t, _took = _one_attempt(flooding.url, quick)
        time.sleep(0.2)
        sent = flooding.sent
    assert [(r.status, r.error) for r in deliveries(t)] == [(200, None)]
    assert queued(t) == []
    assert sent < 64 * 1024 * 1024  # of 256 MB offered: the client hung up after the status
