"""Web Push with the API and the worker as separate processes (``tidings serve --no-worker``
and ``tidings worker``), on SQLite and PostgreSQL: a browser subscribes over HTTP, an event is
published over HTTP, the worker pushes it to the loopback push service (which checks the VAPID
token and decrypts the payload), a 503 is retried and a 410 removes the subscription."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import tidings
from live import free_port
from pushservice import PushService
from tidings.channels.push import keys

SRC = str(Path(tidings.__file__).resolve().parents[1])
KEY = "push-key-0123456789"
PRIVATE, PUBLIC = keys.generate()
TYPES = """
[types.mention]
category = "mention"
priority = 4
audience = ["recipients"]
channels = ["web", "push"]
[types.mention.templates]
title = "{{ actor }} mentioned you"
link = "/wiki/{{ object }}"
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    clone: str = stores.clone()
    yield clone
    stores.drop(clone)


def wait_for(check: Callable[[], Any], what: Callable[[], str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what()
        time.sleep(0.05)


def test_api_and_worker_apart(url: str, tmp_path: Path) -> None:
    types = tmp_path / "types.toml"
    types.write_text(TYPES, encoding="utf-8")
    path = os.environ.get("PYTHONPATH")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")},
           "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
           "TIDINGS_DATABASE_URL": url, "TIDINGS_API_KEY": KEY,
           "TIDINGS_TYPES_FILE": str(types), "TIDINGS_VAPID_PRIVATE_KEY": PRIVATE,
           "TIDINGS_VAPID_SUBJECT": "mailto:ops@example.org",
           "TIDINGS_WEBHOOK_ALLOW": "127.0.0.1", "TIDINGS_JOB_BACKOFF_SECONDS": "0.2",
           "TIDINGS_PUBLIC_URL": "https://wiki.example"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []

    def tail() -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                         for p in sorted(tmp_path.glob("*.log")))

    def start(name: str, *args: str) -> None:
        with (tmp_path / f"{name}.log").open("wb") as log:
            processes.append(subprocess.Popen([sys.executable, "-m", "tidings.cli", *args],
                                              env=env, stdout=log, stderr=subprocess.STDOUT))

    with PushService(PUBLIC) as service:
        try:
            start("serve", "serve", "--no-worker", "--port", str(port))
            start("worker", "worker", "--poll", "0.05")

            def ready() -> bool:
                try:
                    return httpx.get(base + "/readyz", timeout=2).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_for(ready, tail, 120)
            phone, old = service.browser("phone"), service.browser("old")
            service.answer("phone", 503)
            service.answer("old", 410)
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"},
                              timeout=10) as http:
                assert http.get("/v1/push/public-key").json() == {"public_key": PUBLIC}
                for browser in (phone, old):
                    created = http.post("/v1/users/bob/push-subscriptions",
                                        json=browser.subscription())
                    assert created.status_code == 201, created.text
                published = http.post("/v1/events", json={
                    "type": "mention", "actor": "alice", "object": "Home",
                    "recipients": ["bob"]})
                assert published.status_code == 202, published.text
                wait_for(lambda: len(service.received.get("phone", [])) >= 2, tail)
                listed = http.get("/v1/users/bob/push-subscriptions").json()["items"]
                assert [i["endpoint"] for i in listed] == [phone.endpoint]
            assert service.errors == []
            first, second = service.received["phone"]
            assert (first["status"], second["status"]) == (503, 201)
            assert second["payload"]["title"] == "alice mentioned you"
            assert second["payload"]["link"] == "https://wiki.example/wiki/Home"
            assert second["payload"]["unread"] == 1
            assert second["headers"]["Urgency"] == "normal"
            assert [r["status"] for r in service.received["old"]] == [410]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
