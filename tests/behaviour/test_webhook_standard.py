"""Standard Webhooks: every delivery carries ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature`` that the ``standardwebhooks`` package verifies with the ``whsec_`` form of
the secret; the id is the same on every attempt of one delivery (the receiver's deduplication
key) and differs between deliveries. The former ``X-Tidings-*`` headers still come, unchanged."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from hooks import SECRET, Receiver, deliveries, make
from processes import WorkerProcess
from servers import LiveServer, start, wait_for
from tidings.channels.webhook import new_secret, receiver_secret
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.exceptions import ConfigError

pytest_plugins = ["servers", "hooks"]


class VerifyingReceiver(Receiver):
    """A receiver that verifies each request with ``standardwebhooks`` under ``secret``:
    401 when it does not verify, else the next of ``statuses`` (then 200). It keeps the
    webhook-ids it accepted, as a receiver deduplicating deliveries would."""

    def __init__(self, secret: str, statuses: list[int] | None = None) -> None:
        super().__init__(list(statuses or []))
        self.verifier = Webhook(secret)
        self.verified: list[str] = []  # webhook-id of each request that verified
        self.lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> int:
        with self.lock:
            self.requests.append(request)
            try:
                self.verifier.verify(request["body"], request["headers"])
            except WebhookVerificationError:
                return 401
            self.verified.append(request["headers"]["webhook-id"])
            return self.statuses.pop(0) if self.statuses else 200


def test_retries_carry_the_same_id_and_verify(hook_store: str) -> None:
    t, clock = make(hook_store)  # a secret chosen before whsec_: its bytes are the key
    with VerifyingReceiver(receiver_secret(SECRET), [500, 503]) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        first = t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        clock.advance(2.1)
        t.run_jobs()
        clock.advance(4.1)
        t.run_jobs()
        second = t.publish(Event("mention", actor="carol", recipients=["bob"]))
        t.run_jobs()
    assert len(receiver.requests) == 4
    assert len(receiver.verified) == 4  # every attempt verified
    ids = receiver.verified
    assert ids[0] == ids[1] == ids[2] and ids[3] != ids[0]  # one id per delivery
    assert all(i.startswith("msg_") for i in ids)
    assert [json.loads(r["body"])["event"]["id"] for r in receiver.requests] == \
        [first.id] * 3 + [second.id]
    for request in receiver.requests:  # the deprecated headers, as before
        headers, body = request["headers"], request["body"]
        expected = hmac.new(SECRET.encode(), headers["X-Tidings-Timestamp"].encode() + b"."
                            + body, hashlib.sha256).hexdigest()
        assert headers["X-Tidings-Signature"] == f"sha256={expected}"
        assert headers["X-Tidings-Timestamp"] == headers["webhook-timestamp"]
    assert [r.status for r in deliveries(t)] == [500, 503, 200, 200]
    t.close()


def test_a_whsec_secret_is_the_receivers_secret(hook_store: str) -> None:
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    assert receiver_secret(secret) == secret
    t, _clock = make(hook_store, webhook_secret=secret)
    with VerifyingReceiver(secret) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
    assert len(receiver.verified) == 1
    assert [r.status for r in deliveries(t)] == [200]
    t.close()


def test_a_receiver_with_another_secret_refuses(hook_store: str) -> None:
    t, clock = make(hook_store, job_max_attempts=2)
    with VerifyingReceiver(new_secret()) as receiver:
        t.set_preferences("bob", {"webhook": {"url": receiver.url}})
        t.publish(Event("mention", actor="alice", recipients=["bob"]))
        t.run_jobs()
        clock.advance(10)
        t.run_jobs()
    assert receiver.verified == [] and len(receiver.requests) == 2
    assert [r.status for r in deliveries(t)] == [401, 401]
    t.close()


@pytest.mark.parametrize("secret", ["whsec_", "whsec_not base64!", "whsec_====="])
def test_a_malformed_whsec_secret_is_refused_at_start(secret: str) -> None:
    with pytest.raises(ConfigError, match="TIDINGS_WEBHOOK_SECRET"):
        Config(webhook_secret=secret)
    with pytest.raises(ConfigError, match="TIDINGS_WEBHOOK_SECRET"):
        Config.from_env({"TIDINGS_WEBHOOK_SECRET": secret})


def test_unpadded_whsec_secrets_are_accepted() -> None:
    key = b"sixteen byte key!"
    unpadded = "whsec_" + base64.b64encode(key).decode().rstrip("=")
    assert Config(webhook_secret=unpadded).webhook_secret == unpadded
    assert receiver_secret(unpadded) == "whsec_" + base64.b64encode(key).decode()


def test_api_and_worker_processes_deliver_verifiable_webhooks(
        api_store_url: str, tmp_path: Path) -> None:
    secret = new_secret()
    types = (EventType("mention", channels=("web", "webhook"), audience=("recipients",)),)
    with contextlib.ExitStack() as stack, VerifyingReceiver(secret, [500]) as receiver:
        live: LiveServer = start(stack, api_store_url, types=types, run_worker=False,
                                 config={"webhook_secret": secret,
                                         "webhook_allow": ("127.0.0.1",)})
        with WorkerProcess(api_store_url, tmp_path, {
                "TIDINGS_WEBHOOK_SECRET": secret, "TIDINGS_WEBHOOK_ALLOW": "127.0.0.1"}
                ) as worker, live.client() as server:
            server.put_preferences({"webhook": {"url": receiver.url}}, user="bob")
            server.publish("mention", actor="alice", recipients=["bob"])
            assert wait_for(lambda: len(receiver.verified) == 2, timeout=20), worker.output()
    assert receiver.verified[0] == receiver.verified[1]
    assert [r.status for r in deliveries(live.tidings)] == [500, 200]
