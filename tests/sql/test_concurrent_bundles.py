"""Several worker processes delivering events of one bundle at once still make one bundle.

Which display group a notification joins is decided by reading the newest base row of its
bundle; two transactions deciding at once for the same (user, bundle) must not both start a
group. The stores serialise that decision (``InboxStore.bundle_bases``), so the result matches
the in-memory model of ``test_bundling_model`` whatever order the workers ran the jobs in.

The workers are started and polling first; then every event is published in one transaction,
so they all become runnable at the same instant and the workers take them concurrently. The
assertions do not depend on how the jobs interleaved.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from test_bundling_model import TYPES, Member, Model
from tidings.config import Config
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings.store.sql.schema import jobs, notifications
from tidings_benchmarks.processes import WorkerProcesses

pytestmark = pytest.mark.slow

EVENTS = 40
WORKERS = 4
OBJECT = "page:Hub"
DRAIN_SECONDS = 120.0


def model_result(t: Tidings, user: str) -> list[tuple[int, int, bool]]:
    """(base event id, count, unread) of each group the model makes of what ``user`` got,
    replayed in the order the store dated the notifications."""
    with t.store.db.read() as conn:
        rows = conn.execute(
            select(notifications.c.event_id, notifications.c.created_at, notifications.c.actor)
            .where(notifications.c.user_id == user)
            .order_by(notifications.c.created_at, notifications.c.event_id)).all()
    model = Model()
    for row in rows:
        model.deliver(Member(row.event_id, row.actor, "link", OBJECT, row.created_at,
                             row.created_at))
    return [(g.base.event_id, len(g.members), model.unread(g)) for g in model.listed()]


def store_result(t: Tidings, user: str) -> list[tuple[int, int, bool]]:
    items = t.notifications(user, limit=100).items
    return [(int(i.id), i.count, not i.read) for i in items]


def run_concurrently(url: str, backend: str, users: list[str]) -> Tidings:
    t = Tidings(Config(database_url=url), types=TYPES)
    t.define_type(next(x for x in TYPES if x.name == "link"))  # the workers read it at start
    count = 1 if backend == "sqlite" else WORKERS
    with WorkerProcesses(url, count, chunk_size=5000, poll=0.005) as procs:
        t.publish_many([Event("link", actor=f"linker{i % 7}", object=OBJECT, recipients=users)
                        for i in range(EVENTS)])
        deadline = time.monotonic() + DRAIN_SECONDS
        while True:
            with t.store.db.read() as conn:
                if conn.execute(select(jobs.c.id).limit(1)).first() is None:
                    break
            procs.check_alive()
            assert time.monotonic() < deadline, "the workers did not drain the queue"
            time.sleep(0.05)
    return t


def test_one_user_gets_one_bundle(store_url: str, backend: str) -> None:
    t = run_concurrently(store_url, backend, ["reader"])
    try:
        assert store_result(t, "reader") == model_result(t, "reader")
        ((_, count, unread),) = store_result(t, "reader")
        assert (count, unread) == (EVENTS, True)
        assert t.unread_count("reader").count == 1
    finally:
        t.close()


def test_many_users_each_get_one_bundle(store_url: str, backend: str) -> None:
    users = [f"reader{i:03d}" for i in range(200)]
    t = run_concurrently(store_url, backend, users)
    try:
        split = {}
        for user in users:
            got = store_result(t, user)
            assert got == model_result(t, user)
            if len(got) != 1:
                split[user] = [count for _, count, _ in got]
        assert split == {}
        assert all(t.unread_count(u).count == 1 for u in users)
        assert [c for _, c, _ in store_result(t, users[0])] == [EVENTS]
    finally:
        t.close()
