"""A mail goes out once even when what follows its sending fails: the sent log is written in a
unit of its own as soon as the SMTP server took the mail, and a job run again finds it there
and does not send again — on SQLite, PostgreSQL and MariaDB, through a real SMTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select

from smtp import SmtpSink
from stores import SqlStores
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.fanout.specs import fanout_spec
from tidings.ports import Tx
from tidings.store.sql.mail import SqlMail
from tidings.store.sql.schema import email_log, jobs

SECRET = "email-once-secret-of-at-least-32-bytes"
ATTEMPTS = 4
MENTION = EventType("mention", channels=("web", "email"), audience=("recipients",),
                    templates=Templates(title="{{ actor }} mentioned you: {{ payload.text }}"))


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def mail_url(request: pytest.FixtureRequest) -> Iterator[str]:
    stores: SqlStores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


@pytest.fixture
def t(mail_url: str, sink: SmtpSink) -> Iterator[Tidings]:
    config = Config(database_url=mail_url, smtp_url=sink.url, token_secret=SECRET,
                    mail_from="Wiki <wiki@example.org>", job_max_attempts=ATTEMPTS,
                    job_backoff_seconds=1.0)
    with Tidings(config, types=[MENTION], clock=FrozenClock()) as tidings:
        tidings.set_preferences("bob", {"email": {"address": "bob@example.org"}})
        yield tidings


def run_every_attempt(t: Tidings) -> None:
    """Run the jobs, and their retries as they come due, until none is left to run."""
    clock = t.clock
    assert isinstance(clock, FrozenClock)
    for _ in range(ATTEMPTS * 2):
        t.run_jobs()
        clock.advance(3600)


def logged(t: Tidings) -> list[Any]:
    with t.store.db.read() as conn:
        return list(conn.execute(select(email_log.c.message_id, email_log.c.subject)).all())


def test_a_failure_after_sending_does_not_send_again(t: Tidings, sink: SmtpSink,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real = SqlMail.delete_batch
    failures = {"left": 2}

    def failing(self: SqlMail, ids: Any) -> None:  # the job's last unit fails, twice
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("the unit after the send failed")
        real(self, ids)

    monkeypatch.setattr(SqlMail, "delete_batch", failing)
    t.publish(Event("mention", actor="alice", recipients=["bob"], payload={"text": "hi"}))
    run_every_attempt(t)
    assert failures["left"] == 0
    assert [m["Subject"] for m in sink.to("bob@example.org")] == ["alice mentioned you: hi"]
    assert [subject for _, subject in logged(t)] == ["alice mentioned you: hi"]
    with t.store.db.read() as conn:
        assert conn.execute(select(jobs)).all() == []  # finished, not given up


def test_a_title_the_log_cannot_take_as_is_is_mailed_once(t: Tidings, sink: SmtpSink) -> None:
    """An event stored before NUL was refused at the door (here through the store's port):
    its mailed title holds a NUL, which PostgreSQL would refuse in the log's text."""
    event = Event("mention", actor="alice", recipients=["bob"], payload={"text": "a\x00b"})

    def store_unchecked(tx: Tx) -> None:
        event_id = tx.events.insert(event, json.dumps(dict(event.payload)), t.clock.now_us())
        tx.jobs.enqueue_many([fanout_spec(event_id)])

    t.store.transact(store_unchecked)
    run_every_attempt(t)
    assert len(sink.to("bob@example.org")) == 1
    ((_, subject),) = logged(t)
    assert "\x00" not in subject and subject.startswith("alice mentioned you: a")
    assert t.queue.failures() == []
