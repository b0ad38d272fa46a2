"""Claims of two lanes at the same moment (SQL backends): a lane never misses its own job
because the other lane's locking scan read it."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select

from engines import enqueue
from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.jobs.model import Job, JobSpec
from tidings.store.sql.schema import jobs


def test_a_lane_claims_its_job_while_another_lanes_scan_holds_it(t: Tidings,
                                                                 clock: FrozenClock) -> None:
    """The webhook lane's claim reads every runnable row in claim order and keeps only its
    own; on MariaDB that scan locks the rows it rejected until its transaction ends, so a
    claim of the other lane at that moment skips them (SKIP LOCKED) and would leave its job to
    the next poll, which may be minutes away. The claim looks again instead."""
    if t.store.backend == "sqlite":
        pytest.skip("SQLite has one writer: no claim runs beside another's scan")
    enqueue(t, JobSpec("add_user", {"user": "bob"}))
    db = t.store.db  # type: ignore[attr-defined]
    now = clock.now_us()
    webhook_lane = (select(jobs.c.id)
                    .where(jobs.c.run_after <= now, jobs.c.grabbed_until <= now,
                           jobs.c.func.in_(["webhook"]))
                    .order_by(jobs.c.priority, jobs.c.run_after, jobs.c.id)
                    .limit(1).with_for_update(skip_locked=True))
    other_lane = (select(jobs.c.id)
                  .where(jobs.c.run_after <= now, jobs.c.grabbed_until <= now,
                         jobs.c.func.not_in(["webhook"]))
                  .limit(1).with_for_update(skip_locked=True))
    claimed: list[Job] = []
    with db.write() as scan:
        assert scan.execute(webhook_lane).all() == []
        with db.write() as conn:  # what a plain claim of the other lane sees now
            seen = conn.execute(other_lane).all()
        assert (seen == []) == (db.backend == "mysql")
        thread = threading.Thread(
            target=lambda: claimed.extend(t.queue.claim(1, exclude=["webhook"])))
        thread.start()
        time.sleep(0.03)  # the claim's first look meets the held scan
    thread.join(10)
    assert [job.args for job in claimed] == [{"user": "bob"}]
