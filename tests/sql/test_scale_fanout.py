"""One event to 100,000 followers on PostgreSQL: chunked fan-out, nothing lost or doubled.

With the default chunk size (5,000) the ``fanout`` job does not deliver itself: it is replaced
(``replace_with``) by 20 ``fanout_chunk`` jobs, one per range of follower ids. Timing is left
to ``tidings bench fanout``; this test checks only the outcome.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, insert, select

from stores import PostgresStores
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.fanout.specs import FANOUT_CHUNK
from tidings.store.sql.schema import follows, jobs, notifications

pytestmark = pytest.mark.slow

FOLLOWERS = 100_000
STAR = "star"


@pytest.fixture
def postgresql_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


def test_one_event_reaches_100000_followers_once(postgresql_url: str) -> None:
    t = Tidings(Config(database_url=postgresql_url))
    assert t.config.chunk_size == 5000
    try:
        t.define_type(EventType("post", audience=("actor_followers",)))
        followers = [f"follower{i:06d}" for i in range(FOLLOWERS)]
        with t.store.db.write() as conn:
            # One executemany; SQLAlchemy sends it as multi-row INSERTs of 1,000 rows.
            conn.execute(insert(follows), [
                {"follower": user, "followee": STAR, "created_at": 1} for user in followers])
            conn.execute(insert(follows).values(follower=STAR, followee="someone",
                                                created_at=1))

        published = t.publish(Event("post", actor=STAR, object="post:1"))
        event_id = int(published.id)

        assert t.run_jobs(max_jobs=1) == 1  # the fanout job, replaced by its chunks
        with t.store.db.read() as conn:
            queued = conn.execute(select(jobs.c.func, func.count()).group_by(jobs.c.func)).all()
        assert [tuple(row) for row in queued] == [(FANOUT_CHUNK, FOLLOWERS // 5000)]

        t.run_jobs()

        n = notifications.c
        with t.store.db.read() as conn:
            total = conn.execute(select(func.count()).select_from(notifications)).scalar_one()
            distinct = conn.execute(
                select(func.count(n.user_id.distinct())).where(n.event_id == event_id)
            ).scalar_one()
            outside = conn.execute(
                select(func.count()).select_from(notifications)
                .where(~n.user_id.like("follower%"))).scalar_one()
            lowest, highest = conn.execute(select(func.min(n.user_id), func.max(n.user_id))).one()
        assert total == FOLLOWERS
        assert distinct == FOLLOWERS
        assert outside == 0
        assert (lowest, highest) == (followers[0], followers[-1])
        assert t.queue.stats() == {"queued": 0, "runnable": 0, "running": 0, "failed": 0}
        assert t.counters.delivered == FOLLOWERS
    finally:
        t.close()
