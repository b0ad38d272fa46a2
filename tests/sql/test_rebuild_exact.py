"""A Redis loss loses nothing an API call accepted: a seeded random history of publishes,
subscriptions and follows made at various times, deletions, marks by id (read and unread),
read-up-to and mark-all-read, with bundles forming among read and unread rows, is played on
the hot store (Redis and Redis Cluster); every inbox (rows, read state, bundle members and
actors, unread counts) and timeline is read, the hot store's keys are all deleted, and
``tidings rebuild-hot-store`` must bring back exactly the same. Between the loss and the
rebuild, reads answer 503, never 200 with rows missing."""

from __future__ import annotations

import functools
import random
import secrets
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from engines import TYPES, open_tidings
from redis_servers import delete_prefix
from stores import SqlStores
from tidings.cli import app
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import StoreUnavailable
from tidings.store.hot import HotStore
from tidings.store.redis import journal as redisjournal
from tidings.store.sql import journal as sqljournal
from tidings.store.sql.schema import hot_journal

USERS = ["ann", "bob", "cat", "dan"]
ACTORS = ["eve", "fay", "gus", "ann"]
OBJECTS = ["page:A", "page:B"]
KINDS = ["page-linked", "mention", "review", "post"]
REVIEW = EventType(name="review", bundle="object", audience=("recipients", "object_subscribers"),
                   queryable=("tag",))
STEPS = 70


def _server(kind: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("redis_cluster").url if kind == "cluster"
               else request.getfixturevalue("redis_server"))


def _places(kind: str, request: pytest.FixtureRequest, sqlite_stores: SqlStores
            ) -> tuple[str, str, str, str]:
    """A test's own places: the Redis server, its key prefix, the hot store's URL and a
    SQLite database of its own."""
    server = _server(kind, request)
    prefix = f"x{secrets.token_hex(5)}:"
    return server, prefix, f"{server}?prefix={prefix}", sqlite_stores.clone()


def _declare(t: Tidings) -> None:
    for event_type in TYPES:
        t.define_type(event_type)
    t.define_type(REVIEW)


def _snapshot(t: Tidings) -> dict[str, Any]:
    """Every inbox as the API shows it, every count, every timeline."""
    seen: dict[str, Any] = {}
    for user in USERS:
        pages = []
        cursor = None
        while True:
            page = t.notifications(user, limit=7, cursor=cursor)
            pages.append([item.to_dict() for item in page.items])
            cursor = page.next_cursor
            if cursor is None:
                break
        seen[user] = {
            "pages": pages,
            "unread": [i.to_dict() for i in t.notifications(user, unread=True, limit=100).items],
            "read": [i.to_dict() for i in t.notifications(user, unread=False, limit=100).items],
            "count": t.unread_count(user), "unseen": t.unseen_count(user),
            "mentions": t.unread_count(user, types=["mention"]),
            "tagged": [i.id for i in t.notifications(user, payload={"tag": "x"}).items],
            "timeline": t.timeline(user, limit=100).items,
        }
    return seen


def _play(t: Tidings, clock: FrozenClock, rng: random.Random, steps: int = STEPS) -> None:
    """A random history; every step goes through the public API, jobs run as a worker
    would (sometimes after several publishes)."""
    for _ in range(steps):
        step = rng.choice(["publish", "publish", "publish", "publish", "subscribe", "follow",
                           "mark", "unmark", "upto", "all", "delete", "delete_match", "seen",
                           "jobs"])
        user = rng.choice(USERS)
        ids = [i.id for i in t.notifications(user, limit=100).items]
        if step == "publish":
            kind = rng.choice(KINDS)
            told = sorted(rng.sample(USERS, rng.randint(0, 2)))
            event: dict[str, Any] = {"type": kind, "actor": rng.choice(ACTORS),
                                     "object": rng.choice(OBJECTS),
                                     "payload": {"tag": rng.choice("xy")}}
            if told or kind not in ("post", "review"):
                event["recipients"] = told or [user]
            t.publish(event)
            if rng.random() < 0.6:
                t.run_jobs()
        elif step == "subscribe":
            t.subscribe(user, "review", rng.choice(OBJECTS))
        elif step == "follow":
            t.follow(user, rng.choice([a for a in ACTORS if a != user]))
        elif step == "mark" and ids:
            t.mark_read(user, rng.sample(ids, min(len(ids), rng.randint(1, 2))))
        elif step == "unmark" and ids:
            t.mark_unread(user, [rng.choice(ids)])
        elif step == "upto" and ids:
            t.mark_read_up_to(user, rng.choice(ids))
        elif step == "all":
            t.mark_all_read(user, types=rng.choice([None, ["mention"]]))
        elif step == "delete" and ids:
            t.delete_notification(user, rng.choice(ids))
        elif step == "delete_match":
            t.delete_notifications(user, actor=rng.choice(ACTORS), type=rng.choice(KINDS))
        elif step == "seen":
            t.mark_seen(user)
        elif step == "jobs":
            t.run_jobs()
        clock.advance(rng.choice([0.000001, 0.5, 3]))
    t.run_jobs()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_rebuild_after_losing_redis_gives_back_every_inbox_exactly(
        kind: str, seed: int, request: pytest.FixtureRequest, sqlite_stores: SqlStores,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, prefix, hot_url, sql_url = _places(kind, request, sqlite_stores)
    clock = FrozenClock()
    t = open_tidings(sql_url, clock=clock, hot_store_url=hot_url)
    try:
        _declare(t)
        _play(t, clock, random.Random(seed))
        before = _snapshot(t)
        assert sum(len(s["read"]) for s in before.values()) > 0
        assert sum(len(s["unread"]) for s in before.values()) > 0
        delete_prefix(server, prefix)  # Redis lost everything
        with pytest.raises(StoreUnavailable):
            t.notifications("ann")
        monkeypatch.setenv("TIDINGS_DATABASE_URL", sql_url)
        monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        after = _snapshot(t)
        for user in USERS:
            assert after[user] == before[user], user
        _play(t, clock, random.Random(seed + 100))  # and it goes on as before
    finally:
        t.close()
        delete_prefix(server, prefix)
        sqlite_stores.drop(sql_url)


DAY = 86_400.0
RETENTION_DAYS = 2


def _journal(t: Tidings) -> list[tuple[int, str]]:
    """(id, what) of every journal row: 'snapshot', 'checkpoint', 'baseline' or 'unit'."""
    store = t.store
    assert isinstance(store, HotStore)
    with store.records.db.read() as conn:
        rows = conn.execute(select(hot_journal.c.id, hot_journal.c.writes)
                            .order_by(hot_journal.c.id)).all()
    return [(r.id, "unit" if not r.writes.startswith("{") else
             "snapshot" if '"snapshot"' in r.writes else
             "checkpoint" if '"checkpoint"' in r.writes else "baseline") for r in rows]


def _maintain(t: Tidings) -> None:
    t.schedule_maintenance()  # the hourly retention job, as the worker's schedule queues it
    t.run_jobs()


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_rebuild_after_the_journal_was_compacted_past_retention_is_exact(
        kind: str, seed: int, request: pytest.FixtureRequest, sqlite_stores: SqlStores,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A history over days, past the retention of its first events (2 days): the retention
    job removes their notifications and folds the journal's older rows into a snapshot
    (bundles begun by removed rows go on with newer members, watermarks and read marks of
    those days, timelines). The journal keeps no unit's row from before the last fold, and
    a rebuild from it gives back every inbox exactly. Seed 5 stores the snapshot one key
    a row (many rows, and a last row taking what the folded rows had no room for)."""
    if seed == 5:
        monkeypatch.setattr(redisjournal, "KEYS_A_ROW", 1)
    server, prefix, hot_url, sql_url = _places(kind, request, sqlite_stores)
    clock = FrozenClock()
    t = open_tidings(sql_url, clock=clock, hot_store_url=hot_url,
                     retention_days=RETENTION_DAYS)
    try:
        _declare(t)
        rng = random.Random(seed)
        _play(t, clock, rng, 40)  # day 0
        _maintain(t)  # the first checkpoint
        clock.advance(DAY)
        _play(t, clock, rng, 40)  # day 1
        clock.advance(1.5 * DAY)  # day 0 is past retention
        first = _journal(t)
        _maintain(t)  # day 0 removed; the rows before the first checkpoint folded
        _play(t, clock, rng, 40)  # day 2.5: bundles of day 1 go on
        clock.advance(1.2 * DAY)  # day 1 is past retention
        _maintain(t)  # day 1 removed; the rows before the second checkpoint folded
        journal = _journal(t)
        checkpoints = [i for i, what in journal if what == "checkpoint"]
        assert len(checkpoints) == 2, journal
        # nothing but the snapshot before the second checkpoint: day 0 and 1's units are gone
        assert {what for i, what in journal if i < checkpoints[0]} == {"snapshot"}, journal
        now = dict(journal)
        assert not [i for i, what in first if what == "unit" and now.get(i) == "unit"]
        _play(t, clock, rng, 30)
        before = _snapshot(t)
        assert sum(len(s["pages"][0]) for s in before.values()) > 0
        delete_prefix(server, prefix)  # Redis lost everything
        monkeypatch.setenv("TIDINGS_DATABASE_URL", sql_url)
        monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        after = _snapshot(t)
        for user in USERS:
            assert after[user] == before[user], user
        clock.advance(1.1 * DAY)
        _maintain(t)  # a fold over a snapshot, then a loss again
        _play(t, clock, rng, 20)
        again = _snapshot(t)
        delete_prefix(server, prefix)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        assert _snapshot(t) == again
        journal = _journal(t)  # the snapshot, then the units from the last day on
        checkpoints = [i for i, what in journal if what == "checkpoint"]
        assert len(checkpoints) == 2, journal
        assert {what for i, what in journal if i < checkpoints[0]} == {"snapshot"}, journal
    finally:
        t.close()
        delete_prefix(server, prefix)
        sqlite_stores.drop(sql_url)


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_rebuild_overtaken_by_a_fold_of_the_journal_starts_again(
        kind: str, request: pytest.FixtureRequest, sqlite_stores: SqlStores,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The retention job folds the journal while a rebuild is reading it: the rows the
    rebuild had not read yet are gone into a snapshot it had read past. The rebuild sees the
    new checkpoint and replays again, and the inboxes come back exactly."""
    server, prefix, hot_url, sql_url = _places(kind, request, sqlite_stores)
    clock = FrozenClock()
    t = open_tidings(sql_url, clock=clock, hot_store_url=hot_url)
    try:
        _declare(t)
        rng = random.Random(7)
        _play(t, clock, rng, 40)
        _maintain(t)  # a checkpoint
        clock.advance(1.1 * DAY)
        _play(t, clock, rng, 20)
        before = _snapshot(t)
        delete_prefix(server, prefix)
        store = t.store
        assert isinstance(store, HotStore)
        row, folds = redisjournal.Replay.row, []

        def row_then_fold(self: redisjournal.Replay, writes: str) -> None:
            row(self, writes)
            if self.into is None and self.units == 10 and not folds:  # meanwhile, a fold
                with store.records.db.write() as conn:
                    folds.append(sqljournal.compact(conn, clock.now_us(), functools.partial(
                        redisjournal.folded, store.redis)))

        monkeypatch.setattr(sqljournal, "PAGE", 5)
        monkeypatch.setattr(redisjournal.Replay, "row", row_then_fold)
        monkeypatch.setenv("TIDINGS_DATABASE_URL", sql_url)
        monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        assert folds and folds[0] > 10
        after = _snapshot(t)
        for user in USERS:
            assert after[user] == before[user], user
    finally:
        t.close()
        delete_prefix(server, prefix)
        sqlite_stores.drop(sql_url)


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_reads_of_an_emptied_hot_store_answer_unavailable_not_missing_rows(
        kind: str, request: pytest.FixtureRequest, sqlite_stores: SqlStores,
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, prefix, hot_url, sql_url = _places(kind, request, sqlite_stores)
    t = open_tidings(sql_url, hot_store_url=hot_url)
    other = open_tidings(sql_url, hot_store_url=hot_url)
    try:
        t.publish({"type": "mention", "actor": "eve", "recipients": ["ann", "bob"]})
        t.run_jobs()
        assert t.unread_count("ann").count == 1
        delete_prefix(server, prefix)  # a restart without persistence, a FLUSHDB
        for engine in (t, other):
            with pytest.raises(StoreUnavailable, match="rebuild"):
                engine.notifications("ann")
            with pytest.raises(StoreUnavailable, match="rebuild"):
                engine.unread_count("bob")
            with pytest.raises(StoreUnavailable, match="rebuild"):
                engine.mark_all_read("ann")
        # a delivery into the emptied store waits in the queue, however long it takes
        t.publish({"type": "mention", "actor": "fay", "recipients": ["ann"]})
        for _ in range(12):
            with pytest.raises(StoreUnavailable, match="rebuild"):
                t.run_jobs()
        assert t.queue.stats()["queued"] == 1
        monkeypatch.setenv("TIDINGS_DATABASE_URL", sql_url)
        monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
        result = CliRunner().invoke(app, ["rebuild-hot-store"])
        assert result.exit_code == 0, result.output
        assert [i.actor for i in other.notifications("ann").items] == ["eve"]
        t.run_jobs()
        assert [i.actor for i in other.notifications("ann").items] == ["fay", "eve"]
        assert other.unread_count("bob").count == 1
        assert t.queue.stats()["failed"] == 0
    finally:
        t.close()
        other.close()
        delete_prefix(server, prefix)
        sqlite_stores.drop(sql_url)
