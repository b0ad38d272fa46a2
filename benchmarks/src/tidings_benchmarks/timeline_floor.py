"""W1 on PostgreSQL: the SQL floor of tidings' own push submit, beside the seed's SQL.

The submit figure's goal (issue 10: at least 1.25 times the seed's SQL) is about tidings' whole
path: the event published with its fan-out job in one transaction, the job claimed, the
followers' mailboxes written with the cap held on each, the job deleted. This side runs that
path's statements alone, a block of messages at a time as tidings does, from this process with
nothing computed between them: no audience rules, no preferences, no planning. It is what the
path costs the database, whoever drives it, so tidings' figure can come near it but not pass
it; with ``capped=False`` the same path without the cap (a plain insert of the entries, no
bound kept), which shows what holding the cap on every write costs.

The side works in a schema of its own (:data:`SCHEMA`): ``events``, ``jobs``, ``timelines``
and ``timeline_state`` created like tidings' (indexes included), the mailboxes and history
copied from tidings' once the push model's are built, ``search_path`` set so that the
statements name the tables as tidings' do; the follow graph is read from tidings' own
``follows``. The push-and-cap statement is tidings' (``timelinecap.push_statement``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from tidings.domain.timeline import high_water
from tidings.store.sql.timeline import cap as timelinecap
from tidings_benchmarks import BenchFailure
from tidings_benchmarks.raw import parse, pg_params
from tidings_benchmarks.timeline_data import POST, payload, user_id

SCHEMA = "tidings_bench_floor"
TABLES = ("events", "jobs", "timelines", "timeline_state")
# the fan-out jobs of a block, claimed as the queue claims them (SKIP LOCKED, by priority)
PUBLISH = """
WITH e AS (
  INSERT INTO events (type, actor, payload, recipients, exclude, body_hash, created_at)
  SELECT %(type)s, a, p, '[]', '[]', md5(p), %(at)s
  FROM ROWS FROM (json_array_elements_text(CAST(%(actors)s AS JSON)),
                  json_array_elements_text(CAST(%(payloads)s AS JSON))) AS r(a, p)
  RETURNING id, created_at)
INSERT INTO jobs (func, args, priority, run_after, grabbed_until, attempts, created_at)
SELECT 'fanout', json_build_object('event_id', id)::text, 0, created_at, 0, 0, created_at
FROM e"""
CLAIM = """
UPDATE jobs SET grabbed_until = %(until)s, attempts = attempts + 1
WHERE id IN (SELECT id FROM jobs WHERE run_after <= %(now)s AND grabbed_until < %(now)s
             ORDER BY priority, id LIMIT 1000 FOR UPDATE SKIP LOCKED)
RETURNING id, args"""
ENTRIES = """
  INSERT INTO timelines (user_id, event_id, created_at)
  SELECT f.follower, e.id, e.created_at FROM events e JOIN follows f ON f.followee = e.actor
  WHERE e.id = ANY(CAST(%(ids)s AS BIGINT[]))"""
DONE = "DELETE FROM jobs WHERE id = ANY(CAST(%(jobs)s AS BIGINT[]))"


class FloorPostgres:
    """The floor's connection and schema; :meth:`fill` after the push mailboxes are built,
    :meth:`push_block` per block, :meth:`close` drops the schema."""

    def __init__(self, url: str, *, capped: bool = True) -> None:
        self.capped = capped
        self.schema = SCHEMA if capped else f"{SCHEMA}_uncapped"
        self.conn = psycopg.connect(**pg_params(parse(url)[1]))
        self.push = (timelinecap.push_statement(ENTRIES).replace(":cap", "%(cap)s")
                     .replace(":mark", "%(mark)s")
                     if capped else ENTRIES)

    def fill(self) -> None:
        """The schema made anew from tidings' tables as they are now: the history's events,
        the push model's mailboxes and their states."""
        run = self.conn.execute
        run(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        run(f"CREATE SCHEMA {self.schema}")
        for table in TABLES:
            run(f"CREATE TABLE {self.schema}.{table} (LIKE public.{table} INCLUDING ALL)")
            if table in ("events", "jobs"):  # ids of its own, not from tidings' sequences
                run(f"CREATE SEQUENCE {self.schema}.{table}_ids")
                run(f"ALTER TABLE {self.schema}.{table} ALTER COLUMN id SET DEFAULT "
                    f"nextval('{self.schema}.{table}_ids')")
            if table != "jobs":
                run(f"INSERT INTO {self.schema}.{table} SELECT * FROM public.{table}")
        run(f"SELECT setval('{self.schema}.events_ids', (SELECT max(id) FROM public.events))")
        run(f"ANALYZE {', '.join(f'{self.schema}.{t}' for t in TABLES)}")
        run(f"SET search_path TO {self.schema}, public")
        self.conn.commit()

    def mark(self) -> int:
        """The newest event id now: :meth:`written` counts the mailbox rows of those after it."""
        self.conn.rollback()
        return _one(self.conn.execute("SELECT coalesce(max(id), 0) FROM events"))

    def push_block(self, block: Sequence[tuple[int, str]], at: int, cap: int) -> None:
        """One block of messages: published with their jobs (one transaction), the jobs
        claimed (one), then the mailboxes written with the cap held and the jobs deleted
        (one)."""
        run = self.conn.execute
        run(PUBLISH, {"type": POST.name, "at": at,
                      "actors": json.dumps([user_id(sender) for sender, _ in block]),
                      "payloads": json.dumps([json.dumps(payload(body)) for _, body in block])})
        self.conn.commit()
        claimed = run(CLAIM, {"now": at, "until": at + 60_000_000}).fetchall()
        self.conn.commit()
        params = {"ids": [json.loads(args)["event_id"] for _, args in claimed], "cap": cap,
                  "mark": high_water(cap)}
        cursor = run(self.push, params)
        if self.capped and cursor.fetchall():  # users the statement left over the cap
            raise BenchFailure("the SQL floor's push left a mailbox over its high-water mark")
        run(DONE, {"jobs": [job for job, _ in claimed]})
        self.conn.commit()

    def written(self, mark: int) -> int:
        """Mailbox rows of the events after ``mark`` (none of them is old enough to be
        trimmed by a round's submits)."""
        self.conn.rollback()
        return _one(self.conn.execute("SELECT count(*) FROM timelines WHERE event_id > %s",
                                      (mark,)))

    def close(self) -> None:
        try:
            self.conn.rollback()
            self.conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            self.conn.commit()
        finally:
            self.conn.close()


def _one(cursor: psycopg.Cursor[Any]) -> int:
    row = cursor.fetchone()
    assert row is not None
    return int(row[0])
