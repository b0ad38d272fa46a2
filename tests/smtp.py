"""A real SMTP server (aiosmtpd) on loopback that keeps what it receives, parsed.

    with SmtpSink() as sink:
        ... send mail to 127.0.0.1:sink.port ...
        sink.wait_for(1)
        message = sink.messages[0]          # email.message.EmailMessage
        raw = sink.raw[0]                   # the bytes as received (headers not decoded)

or as the ``sink`` fixture (conftest.py takes it in), which skips without aiosmtpd (fails
with ``CI=true``).
"""

from __future__ import annotations

import email
import email.policy
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import pytest

from backends import require
from live import free_port


class _Handler:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.sink.delay:
            import asyncio

            await asyncio.sleep(self.sink.delay)
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self.sink.lock:
            self.sink.messages.append(parsed)
            self.sink.raw.append(bytes(envelope.original_content or envelope.content))
            self.sink.recipients.append(list(envelope.rcpt_tos))
        return "250 OK"


class SmtpSink:
    def __init__(self, delay: float = 0.0) -> None:
        from aiosmtpd.controller import Controller

        self.port = free_port()
        self.delay = delay
        self.messages: list[EmailMessage] = []
        self.raw: list[bytes] = []
        self.recipients: list[list[str]] = []
        self.lock = threading.Lock()
        self.controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def __enter__(self) -> SmtpSink:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.messages) >= count:
                    return list(self.messages)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} mails, got {len(self.messages)}")

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [m for m in self.messages if m["To"] == address]


def check_aiosmtpd() -> None:
    with SmtpSink():
        pass


@pytest.fixture
def sink() -> Iterator[SmtpSink]:
    """A real SMTP server receiving the test's mail."""
    require("SMTP test server (aiosmtpd)", check_aiosmtpd)
    with SmtpSink() as server:
        yield server
