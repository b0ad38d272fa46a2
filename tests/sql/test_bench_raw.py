"""The bench's baselines do the same jobs as tidings, on every backend: a raw statement that
counted, listed or wrote something else would make every ratio meaningless.

No speed is measured here (see tests/bench/test_bench.py for the tiny end-to-end runs).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from rich.progress import Progress
from sqlalchemy import select

from servers import serve
from stores import PostgresStores
from tidings.config import Config
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings.store.sql.schema import notifications
from tidings_benchmarks import (
    BenchFailure,
    fanout_raw,
    prefill,
    timeline_data,
    timeline_floor,
    timeline_seed,
)
from tidings_benchmarks import inbox as inbox_workload
from tidings_benchmarks import sweep as sweep_workload
from tidings_benchmarks.baseline_app import create_app
from tidings_benchmarks.inbox_raw import RawInbox
from tidings_benchmarks.jobwait import delivered
from tidings_benchmarks.lean_raw import LeanFanout, LeanInbox, unleb128
from tidings_benchmarks.stores import BenchStore, database_of

QUIET = Progress(disable=True)


def _engine(url: str) -> Tidings:
    t = Tidings(Config(database_url=url), types=inbox_workload.bench_types(), pool_size=1)
    for event_type in inbox_workload.bench_types():
        t.define_type(event_type)
    return t


def test_raw_inbox_statements_and_the_baseline_app_answer_what_the_engine_answers(
        store_url: str) -> None:
    t = _engine(store_url)
    raw = RawInbox(store_url)
    headers = {"Authorization": "Bearer k"}
    try:
        world = inbox_workload.World(10, random.Random(3))
        inbox_workload.load(t, world, 150, QUIET)
        with serve(create_app(store_url, "k")) as base, httpx.Client(base_url=base) as app:
            checked = 0
            for user in world.users:
                count = t.unread_count(user).count
                assert raw.unread_count(user) == count
                assert app.get(f"/v1/users/{user}/notifications/unread-count",
                               headers=headers).json() == {"count": count}
                ids = [i.id for i in t.notifications(user, limit=20).items]
                assert [str(row[0]) for row in raw.first_page(user)] == ids
                items = app.get(f"/v1/users/{user}/notifications?limit=20",
                                headers=headers).json()["items"]
                assert [str(i["event_id"]) for i in items] == ids
                assert all(isinstance(i["payload"], dict) for i in items)
                checked += bool(ids)
            assert checked >= 5
            assert app.get(f"/v1/users/{user}/notifications").status_code == 401
            event = {"type": "mention", "actor": "a", "recipients": ["b"],
                     "idempotency_key": "raw-1"}
            for _ in range(2):  # the second is a repeat: accepted, not stored again
                answer = app.post("/v1/events", json=event, headers=headers)
                assert (answer.status_code, answer.json()) == (202, {"status": "accepted"})
        stored = t.get_event(raw.conn.fetch(raw.conn.sql(
            "SELECT id FROM events WHERE idempotency_key = %s"), ("raw-1",))[0][0])
        assert (stored.type, stored.actor, stored.recipients) == ("mention", "a", ["b"])

        user = world.users[0]
        assert t.unread_count(user).count > 0
        raw.mark_all_read(user, time.time_ns() // 1000)
        assert t.unread_count(user).count == 0
        assert raw.unread_count(user) == 0
        raw.mark_all_read(user, 5)  # a watermark only moves forward
        assert t.unread_count(user).count == 0
    finally:
        raw.close()
        t.close()


def test_the_lean_layouts_statements_answer_what_the_engine_answers(store_url: str) -> None:
    """W2's lean side holds the engine's display groups: the same capped counts, the same
    first pages with the same group sizes (a difference fails the bench); mark all read moves
    its watermark alone. W3's lean fan-out writes a row per follower and records them all."""
    t = _engine(store_url)
    try:
        world = inbox_workload.World(10, random.Random(3))
        inbox_workload.load(t, world, 150, QUIET)
        lean = LeanInbox(store_url, inbox_workload.bench_types())
        try:
            assert lean.filled.notifications >= 150
            assert lean.filled.groups < lean.filled.notifications  # some bundles
            inbox_workload.check_lean(t, lean, world.users)
            pages = [row for user in world.users for row in lean.first_page(user)]
            assert any(row["count"] > 1 and row["group"] != row["event_id"] for row in pages)
            user = max(world.users, key=lean.unread_count)
            assert lean.unread_count(user) > 0
            lean.conn.execute(lean.conn.sql("UPDATE lean_inbox SET flags = flags | 1 "
                                            "WHERE user_id = %s"), (lean.user(user),))
            with pytest.raises(BenchFailure, match="unread count"):
                inbox_workload.check_lean(t, lean, [user])
            other = next(u for u in world.users if u != user and lean.unread_count(u) > 0)
            lean.mark_all_read(other, time.time_ns() // 1000)
            assert lean.unread_count(other) == 0 and t.unread_count(other).count > 0
        finally:
            lean.close()
        followers = [f"f{i:03d}" for i in range(30)]
        fanout_raw.write_follows(store_url, [(f, "star") for f in followers])
        fan = LeanFanout(store_url, chunk_size=7)
        try:
            assert fan.load_follows() == 30
            now = time.time_ns() // 1000
            assert fan.deliver_chunked("star", now) == 30
            assert fan.deliver("star", now + 1) == 30
            holders = fan.conn.fetch("SELECT holders FROM lean_ev WHERE id = 1")[0][0]
            chunks = fan.conn.fetch("SELECT users FROM lean_deliveries WHERE event_id = 1 "
                                    "ORDER BY chunk")
            ids: list[int] = []
            for packed in [holders, *(row[0] for row in chunks)]:
                deltas = unleb128(bytes(packed))
                ids += [sum(deltas[:i + 1]) for i in range(len(deltas))]
            assert len(chunks) == 4
            assert sorted(fan.names.names[i] for i in ids) == followers
            assert fan.conn.fetch("SELECT count(*) FROM lean_inbox")[0][0] == 60
            fan.empty()
            assert fan.conn.fetch("SELECT count(*) FROM lean_inbox")[0][0] == 0
        finally:
            fan.close()
    finally:
        t.close()


def _shape(rows: list[tuple[bool, bool, str]]) -> list[tuple[bool, bool, int]]:
    """Each row's (base?, read?, group number by first appearance): ids and hashes aside."""
    numbers: dict[str, int] = {}
    return [(base, read, numbers.setdefault(group, len(numbers))) for base, read, group in rows]


def test_a_sweep_inbox_has_the_rows_publishing_would_have_written(tmp_path: Path) -> None:
    stream = (e for e in inbox_workload.World(20, random.Random(5)).events() if e.recipients)
    events = [next(stream) for _ in range(80)]
    assert {e.type for e in events} == set(inbox_workload.TYPES)
    with BenchStore(f"sqlite:///{tmp_path / 'x.db'}") as store:
        t = _engine(store.url)
        try:
            published = "published"
            t.add_user(published, read_up_to=0)
            for event in events:  # one at a time, so rows arrive in publishing order
                if event.type == "edit-user-talk":
                    event = Event(event.type, actor=event.actor, payload=event.payload,
                                  object=f"page:User_talk:{published}")
                t.publish(Event(event.type, actor=event.actor, object=event.object,
                                payload=event.payload, recipients=[published]))
                t.run_jobs()
            n = notifications.c
            with database_of(t).read() as conn:
                ids = list(conn.execute(select(n.event_id).where(n.user_id == published)
                                        .order_by(n.created_at, n.event_id)).scalars())
            t.mark_read(published, ids[:round(len(ids) * inbox_workload.READ_SHARE)])
            with database_of(t).read() as conn:
                expected = _shape([(bool(r.bundle_base), r.read_at is not None, r.display_hash)
                                   for r in conn.execute(
                                       select(n.bundle_base, n.read_at, n.display_hash)
                                       .where(n.user_id == published)
                                       .order_by(n.created_at, n.event_id))])

            feed = iter(events)
            users = sweep_workload.load(t, store.url, [len(events)], lambda: next(feed),
                                        inbox_workload.bench_types(),
                                        inbox_workload.READ_SHARE, QUIET)
            written = users[len(events)]
            with database_of(t).read() as conn:
                rows = conn.execute(select(n.bundle_base, n.read_at, n.display_hash)
                                    .where(n.user_id == written)
                                    .order_by(n.created_at, n.event_id)).all()
                # each group's summary where delivery keeps it, as delivery kept it
                summaries = [[(bool(r.joined), r.group_count, r.group_actors)
                              for r in conn.execute(
                                  select(n.joined, n.group_count, n.group_actors)
                                  .where(n.user_id == user)
                                  .order_by(n.created_at, n.event_id))]
                             for user in (written, published)]
            assert _shape([(bool(r.bundle_base), r.read_at is not None, r.display_hash)
                           for r in rows]) == expected
            assert summaries[0] == summaries[1]
            assert any(count is not None and count > 1 for _, count, _ in summaries[0])
            assert t.unread_count(written).count == t.unread_count(published).count
            ours, theirs = (t.notifications(u, limit=20).items for u in (written, published))
            assert [(i.type, i.count, i.actors, i.read) for i in ours] == \
                [(i.type, i.count, i.actors, i.read) for i in theirs]
            t.publish(Event("mention", actor="someone", recipients=[written]))  # ids move on
            t.run_jobs()
        finally:
            t.close()


def test_raw_fanouts_write_the_rows_tidings_writes(store_url: str) -> None:
    followers = [f"f{i}" for i in range(7)]
    fanout_raw.write_follows(store_url, [(f, "star") for f in followers] + [("star", "f0")])
    t = Tidings(Config(database_url=store_url), pool_size=1)
    t.define_type(fanout_raw.EVENT_TYPE)
    raw = fanout_raw.RawFanout(store_url)
    try:
        t.publish(Event(fanout_raw.EVENT_TYPE.name, actor="star", object=fanout_raw.OBJECT))
        t.run_jobs()
        now = time.time_ns() // 1000
        assert raw.insert_select("star", now) == len(followers)
        assert raw.copy("star", now) == len(followers)
        assert raw.push("star", now) == len(followers)
        assert raw.push("f0", now) == 1  # the star follows f0
        n = notifications.c
        columns = (n.type_id, n.actor, n.object, n.bundle_base, n.read_at)
        with database_of(t).read() as conn:
            rows = conn.execute(select(n.event_id, n.user_id, n.created_at, n.fresh_at,
                                       n.bundle_hash, n.display_hash, *columns)
                                .where(n.actor == "star")).all()
        by_event: dict[int, list[Any]] = {}
        for row in rows:
            by_event.setdefault(row.event_id, []).append(row)
        assert len(by_event) == 4  # tidings', then three raw events
        shapes = {tuple(sorted((r.user_id, *(r[-len(columns):])) for r in group))
                  for group in by_event.values()}
        assert len(shapes) == 1  # the same followers, the same values
        for group in by_event.values():
            assert len({(r.bundle_hash, r.display_hash) for r in group}) == 1
            # dated at the event, fresh from the delivery (the raw writes deliver at once)
            assert all(len(r.display_hash) == 16 and r.fresh_at >= r.created_at for r in group)
        for user in followers:
            assert t.unread_count(user).count == 4
    finally:
        raw.close()
        t.close()


def test_a_prefilled_history_is_in_every_sides_tables_and_stays_through_rounds(
        store_url: str) -> None:
    """W3's prefill: each follower's rows on tidings' side (with its counts and mailboxes)
    and on the lean side before any round; a reset after every side's round leaves the
    history alone, counts back, and fails if a round took some of it."""
    with BenchStore(store_url) as store:
        followers = [f"f{i}" for i in range(6)]
        fanout_raw.write_follows(store.url, [(f, "star") for f in followers] + [("star", "f0")])
        t = Tidings(Config(database_url=store.url), pool_size=1)
        t.define_type(fanout_raw.EVENT_TYPE)
        raw = fanout_raw.RawFanout(store.url)
        lean = LeanFanout(store.url, chunk_size=4)
        try:
            lean.load_follows()
            actors = prefill.history({"star": 6, "f0": 1}, 4, random.Random(1))
            rows = sum(6 if a == "star" else 1 for a in actors)
            assert rows >= 8 and "star" in actors
            done = prefill.prefill(store, actors, 4, lean)
            assert (done.events, done.rows, done.mailbox_rows, done.lean_rows) == (
                len(actors), rows, rows, rows)

            def state() -> tuple[Any, ...]:
                with database_of(t).read() as conn:
                    return tuple(tuple(conn.exec_driver_sql(q).all()) for q in (
                        "SELECT user_id FROM users ORDER BY user_id",
                        "SELECT user_id, entries, floor_id FROM timeline_state "
                        "ORDER BY user_id",
                        "SELECT user_id, COUNT(*), COUNT(read_at) FROM notifications "
                        "GROUP BY user_id ORDER BY user_id"))

            users, mailboxes, held = state()
            assert [(u,) for u, _, _ in held] == list(users)  # every holder registered
            assert [(u, n, 0) for u, n, _ in held] == list(mailboxes)
            assert 0 < sum(r for _, _, r in held) < rows  # the oldest read, not all
            t.publish(Event(fanout_raw.EVENT_TYPE.name, actor="star",
                            object=fanout_raw.OBJECT))
            t.run_jobs()
            assert delivered(database_of(t), "star", done.last_event)["rows"] == 6
            now = time.time_ns() // 1000
            assert raw.insert_select("star", now) == 6
            assert lean.deliver("star", now) == 6
            assert state() != (users, mailboxes, held)
            prefill.reset(store, done, lean)
            assert state() == (users, mailboxes, held)
            assert delivered(database_of(t), "star", done.last_event)["rows"] == 0
            assert lean.conn.fetch("SELECT count(*) FROM lean_inbox")[0][0] == rows
            lean.conn.execute("DELETE FROM lean_inbox")
            lean.conn.commit()
            with pytest.raises(BenchFailure, match="removed some of the history"):
                prefill.reset(store, done, lean)
        finally:
            lean.close()
            raw.close()
            t.close()


def test_the_timeline_seeds_statements_answer_what_its_naive_join_answers(
        store_url: str) -> None:
    """W1's baseline: the seed's push mailbox, its per-followee pull merge (stored procedures
    on MariaDB, LATERAL on PostgreSQL, a correlated subquery on SQLite) and its submits give
    the naive join's pages, on the data the bench loads into tidings' tables."""
    data = timeline_data.generate("skewed", 0.002, 4)
    timeline_data.load_history(store_url, data, time.time_ns() // 1000, lambda _: None)
    timeline_seed.create(store_url)
    assert timeline_seed.load(store_url, data, lambda _: None) == sum(
        data.followers()[s] for s in data.senders)
    seed = timeline_seed.SeedTimelines(store_url)
    try:
        checked = 0
        for user in range(1, data.users + 1):
            want = timeline_data.naive_page(store_url, user, None)
            assert [r[0] for r in seed.push_page(user)] == want
            assert [r[0] for r in seed.pull_page(user)] == want
            if len(want) == 20:
                later = timeline_data.naive_page(store_url, user, want[-1])
                assert [r[0] for r in seed.push_page(user, want[-1])] == later
                assert [r[0] for r in seed.pull_page(user, want[-1])] == later
                checked += 1
        assert checked >= 10
        sender = data.senders[0]
        assert seed.push_submit(sender, "hello") == data.followers()[sender]
        seed.pull_submit(sender, "again")
        follower = next(a for a, b in data.edges if b == sender)
        newest = [r[0] for r in seed.pull_page(follower)][:2]
        assert newest == [data.messages + 2, data.messages + 1]
        assert seed.push_page(follower)[0][0] == data.messages + 1
        timeline_seed.remove_submitted(store_url, data.messages)
        assert seed.pull_page(follower)[0][0] <= data.messages
    finally:
        seed.close()


@pytest.fixture
def postgres_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


def _floor_rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute(f"SET search_path TO {timeline_floor.SCHEMA}, public")
        return conn.execute(sql, params).fetchall()


def test_the_sql_floor_does_tidings_push_with_the_cap_in_a_schema_of_its_own(
        postgres_url: str) -> None:
    """W1's SQL floor on PostgreSQL runs tidings' own path for a block (events and jobs, the
    claim, the push with the cap, the jobs deleted) on copies of tidings' tables: every
    follower gets the new messages, every mailbox keeps its newest ``cap`` entries with a true
    bound and a floor below them, no job is left, tidings' own tables are untouched, and the
    schema is gone once closed. Without the cap the mailboxes keep everything."""
    data = timeline_data.generate("uniform", 0.002, 5)
    timeline_data.load_history(postgres_url, data, time.time_ns() // 1000, lambda _: None)
    timeline_data.prepare_model(postgres_url, data, "push", 800, 1_000_000, lambda *_: None)
    cap = 60
    before = _floor_rows(postgres_url, "SELECT count(*) FROM public.timelines")[0][0]
    floor = timeline_floor.FloorPostgres(postgres_url)
    uncapped = timeline_floor.FloorPostgres(postgres_url, capped=False)
    try:
        for side in (floor, uncapped):
            side.fill()
        block = timeline_data.new_messages(data, 40, random.Random(3))
        due = sum(data.followers().get(sender, 0) for sender, _ in block)
        marks = [floor.mark(), uncapped.mark()]
        floor.push_block(block, time.time_ns() // 1000, cap)
        uncapped.push_block(block, time.time_ns() // 1000, cap)
        assert floor.written(marks[0]) == due == uncapped.written(marks[1]) > 0
        held = dict(_floor_rows(postgres_url, "SELECT user_id, count(*) FROM timelines "
                                              "GROUP BY user_id"))
        states = {u: (n, f) for u, n, f in _floor_rows(
            postgres_url, "SELECT user_id, entries, floor_id FROM timeline_state")}
        assert held and max(held.values()) == cap
        for user, count in held.items():
            entries, floor_id = states[user]
            assert entries == count
            oldest = _floor_rows(postgres_url, "SELECT min(event_id) FROM timelines "
                                               "WHERE user_id = %s", (user,))[0][0]
            assert floor_id < oldest
        assert _floor_rows(postgres_url, "SELECT count(*) FROM jobs") == [(0,)]
        kept = _floor_rows(postgres_url, "SELECT count(*) FROM "
                                         f"{timeline_floor.SCHEMA}_uncapped.timelines")[0][0]
        assert kept == before + due
        assert _floor_rows(postgres_url, "SELECT count(*) FROM public.timelines")[0][0] == before
    finally:
        floor.close()
        uncapped.close()
    assert _floor_rows(postgres_url, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE %s",
                       (timeline_floor.SCHEMA + "%",)) == [(0,)]
