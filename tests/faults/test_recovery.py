"""Losing Redis loses nothing accepted: a Redis server killed and restarted during a fan-out
(deliveries wait in the job queue and are neither lost nor doubled, reads answer
StoreUnavailable and recover by themselves), and ``tidings rebuild-hot-store`` after the whole
key space is gone. Live updates reach another process through pub/sub."""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from backends import require
from engines import TYPES, open_tidings
from redis_servers import RedisProcess, _have_redis_server, delete_prefix
from stores import SqlStores
from tidings.cli import app
from tidings.clock import FrozenClock, SystemClock
from tidings.config import Config
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import StoreUnavailable

FOLLOWERS = 1200
EVENTS = 4


def _total_rows(client: redis.Redis, prefix: str, users: list[str]) -> int:
    pipe = client.pipeline(transaction=False)
    for user in users:
        pipe.zcard(f"{prefix}{{u:{user}}}:ids")
    return sum(pipe.execute())


def test_a_redis_restart_during_fan_out_loses_and_doubles_nothing(
        tmp_path: Path, sqlite_url: str) -> None:
    require("redis-server", _have_redis_server)
    server = RedisProcess(tmp_path / "redis", None, "--appendonly", "yes",
                          "--appendfsync", "always").start()
    prefix = "k:"
    config = Config(database_url=sqlite_url, chunk_size=100, job_backoff_seconds=0.05,
                    hot_store_url=f"{server.url}?prefix={prefix}&timeout=1")
    t = Tidings(config, types=TYPES, clock=SystemClock())
    client = redis.Redis(port=server.port)
    followers = [f"f{n:05d}" for n in range(FOLLOWERS)]
    try:
        for user in followers:
            t.follow(user, "star")
        for n in range(EVENTS):
            t.publish({"type": "post", "actor": "star", "object": f"post:{n}"})
        worker = t.worker(concurrency=2, poll_seconds=0.01)
        worker.start()
        deadline = time.monotonic() + 60
        while _total_rows(client, prefix, followers) < FOLLOWERS // 2:  # mid fan-out
            assert time.monotonic() < deadline
            time.sleep(0.005)
        server.kill()
        with pytest.raises(StoreUnavailable):
            t.unread_count("f00001")
        time.sleep(1.5)  # jobs meet the outage and go back to the queue
        server.start()
        assert t.unread_count("f00001").count >= 0  # reads recover by themselves
        while t.queue.stats()["queued"] > 0:
            assert time.monotonic() < deadline + 60, t.queue.stats()
            time.sleep(0.05)
        worker.stop()
        assert _total_rows(client, prefix, followers) == FOLLOWERS * EVENTS
        for user in ("f00000", followers[-1]):
            # each post once; an inbox is ordered by delivery time, and a chunk given back
            # during the outage may be delivered after a later post's
            assert sorted(n.object for n in t.notifications(user).items) == [
                f"post:{n}" for n in range(EVENTS)]
            assert [e.object for e in t.timeline(user).items] == [  # by event id
                f"post:{n}" for n in reversed(range(EVENTS))]
        assert t.queue.stats()["failed"] == 0
    finally:
        t.close()
        client.close()
        server.stop()


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_rebuild_hot_store_refills_inboxes_read_marks_and_timelines(
        kind: str, request: pytest.FixtureRequest, sqlite_stores: SqlStores,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = (request.getfixturevalue("redis_cluster").url if kind == "cluster"
              else request.getfixturevalue("redis_server"))
    prefix = f"r{secrets.token_hex(5)}:"
    hot_url = f"{server}?prefix={prefix}"
    sql_url = sqlite_stores.clone()
    clock = FrozenClock()
    t = open_tidings(sql_url, clock=clock, hot_store_url=hot_url)
    try:
        for event_type in TYPES:
            t.define_type(event_type)
        t.define_type(EventType(name="review", audience=("recipients",), queryable=("lang",)))
        for lang in ("de", "en", "de"):
            t.publish({"type": "review", "actor": "cat", "recipients": ["ann"],
                       "payload": {"lang": lang}})
        for user in ("ann", "bob"):
            t.follow(user, "eve")
        for n in range(6):
            t.publish({"type": "page-linked", "actor": f"a{n}", "object": f"page:{n % 2}",
                       "recipients": ["ann", "bob"]})
            t.publish({"type": "post", "actor": "eve", "object": f"post:{n}"})
            t.run_jobs()
            clock.advance(1)
            if n == 3:
                t.mark_all_read("ann")
        retracted = t.publish({"type": "mention", "actor": "dan", "recipients": ["ann"]})
        t.run_jobs()
        t.retract(event_id=retracted.id)

        def view() -> list[object]:
            # the whole history is replayed (test_rebuild_exact.py compares more)
            return [(u, [n.to_dict() for n in t.notifications(u, unread=True, limit=50).items],
                     sum(n.count for n in t.notifications(u, unread=False, limit=50).items),
                     t.unread_count(u), t.timeline(u).items,
                     [n.id for n in t.notifications(u, payload={"lang": "de"}).items])
                    for u in ("ann", "bob")]

        before = view()
        delete_prefix(server, prefix)  # Redis lost everything
        with pytest.raises(StoreUnavailable, match="rebuild"):
            view()
        monkeypatch.setenv("TIDINGS_DATABASE_URL", sql_url)
        monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        assert "units of work replayed" in result.output
        assert view() == before
        assert before[0][2] > 0 and before[0][3].count > 0  # both parts were there
        assert len(before[0][5]) == 2  # the queryable fields came back with the rows
    finally:
        t.close()
        delete_prefix(server, prefix)
        sqlite_stores.drop(sql_url)


def test_live_updates_reach_another_process_through_pub_sub(hot_url: str, sqlite_url: str
                                                            ) -> None:
    with open_tidings(sqlite_url, hot_store_url=hot_url) as writer, \
            open_tidings(sqlite_url, hot_store_url=hot_url) as reader:
        heard = threading.Event()
        unsubscribe = reader.watch("ann", heard.set)
        assert reader.store.notifier.wait_connected(10)  # type: ignore[attr-defined]
        writer.publish({"type": "mention", "actor": "bob", "recipients": ["ann"]})
        writer.run_jobs()
        started = time.monotonic()
        assert heard.wait(5)
        assert time.monotonic() - started < 0.1
        heard.clear()
        writer.mark_all_read("ann")  # a mark on one device reaches the others
        assert heard.wait(5)
        heard.clear()
        writer.mark_all_read("bob")  # nobody listens to bob here
        assert not heard.wait(0.3)
        unsubscribe()
