"""A worker killed while sending a batch of digests: afterwards no mail is lost and at most the
one in flight is repeated (counted by Message-ID)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from backends import require
from smtp import SmtpSink, check_aiosmtpd
from test_fault_worker import Workers
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.schema import jobs

pytestmark = pytest.mark.slow
USERS = 40
SECRET = "fault-test-secret-of-at-least-32-bytes"


@pytest.fixture(params=["sqlite", "postgresql"])
def fault_store(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


def test_killed_while_sending_digests(fault_store: str, tmp_path: Path) -> None:
    require("SMTP test server (aiosmtpd)", check_aiosmtpd)
    with SmtpSink(delay=0.1) as sink:
        t = Tidings(Config(database_url=fault_store, smtp_url=sink.url, token_secret=SECRET))
        t.define_type(EventType("mention", channels=("web", "email"), audience=("recipients",)))
        users = [f"user{n}" for n in range(USERS)]
        for user in users:
            t.set_preferences(user, {"email": {"address": f"{user}@example.org",
                                               "frequency": "daily"}})
            t.publish(Event("mention", actor="alice", recipients=[user]))
        t.run_jobs()  # fan-out; the digests wait for their hour
        with t.store.db.write() as conn:  # ... which is now
            changed = conn.execute(update(jobs).where(jobs.c.func == "email_digest")
                                   .values(run_after=0)).rowcount
        assert changed == USERS
        group = Workers(fault_store, tmp_path)
        group.env.update({"TIDINGS_SMTP_URL": sink.url, "TIDINGS_TOKEN_SECRET": SECRET})
        group.start()
        try:
            deadline = time.monotonic() + 60
            while len(sink.messages) < USERS // 3:
                assert time.monotonic() < deadline, group.tail()
                group.check_alive()
                time.sleep(0.02)
            victim = group.running.pop()
            victim.kill()  # SIGKILL, mid-batch
            victim.wait(timeout=10)
            sent_before = len(sink.messages)
            assert sent_before < USERS
            group.start()
            while True:
                with t.store.db.read() as conn:
                    left = conn.execute(select(func.count()).select_from(jobs)).scalar_one()
                if left == 0 and len({m["To"] for m in sink.messages}) == USERS:
                    break
                assert time.monotonic() < deadline + 60, group.tail()
                time.sleep(0.1)
        finally:
            group.stop()
        ids = Counter(m["Message-ID"] for m in sink.messages)
        per_user = Counter(m["To"] for m in sink.messages)
        assert set(per_user) == {f"{u}@example.org" for u in users}  # nothing lost
        repeats = sum(n - 1 for n in ids.values())
        assert repeats <= 1, ids.most_common(3)  # at most the one in flight
        assert all(n <= 2 for n in per_user.values())
        assert len(ids) == USERS  # one digest per user, a repeat keeps its Message-ID
        assert t.queue.failures(final_only=True) == []
        t.close()
