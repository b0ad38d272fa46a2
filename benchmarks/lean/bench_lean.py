"""Raw statements of today's layout and of the chosen lean layout (``d``) side by side on
PostgreSQL, on the same populated data, sides alternated block by block.

Data (scaled down from issue 40's 8.6 M rows): 10,000 users, 43 followees each on average
(uniform), NOTES notifications (100 a user; half singletons, half in display groups of 10,
the oldest 30 % read). Today's layout is tidings' own schema (``tidings migrate``) filled
with the same rows (strings, hex hashes, its indexes, group summaries on the base rows).

    python bench_lean.py fill     # database lean_t (created)
    python bench_lean.py run
"""

from __future__ import annotations

import hashlib
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import psycopg
from layouts import BUNDLES, READ, REASON_SHIFT, ddl, leb128, pack_group

URL = "postgresql://postgres@127.0.0.1:5432/lean_t"
USERS = 10_000
PER_USER = 100
FOLLOWS = 43
T0 = 1_780_000_000_000_000
EVENTS = USERS * PER_USER // 10  # each event reaches 10 users in the stored data


def hx(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:32]


def name(u: int) -> str:
    return f"user{u:05d}"


def event_of(u: int, k: int) -> int:
    return k * (USERS // 10) + u % (USERS // 10) + 1


def fill() -> None:
    os.system("dropdb -h 127.0.0.1 -U postgres --if-exists lean_t; "
              "createdb -h 127.0.0.1 -U postgres lean_t")
    from tidings import Tidings
    Tidings.open(URL, migrate=True).close()
    rng = random.Random(38)
    with psycopg.connect(URL) as conn:
        for s in ddl("", "pg") + ddl("d", "pg"):
            conn.execute(s)
        conn.execute("CREATE TABLE follows_i (followee integer NOT NULL, follower integer "
                     "NOT NULL, PRIMARY KEY (followee, follower))")
        conn.execute("CREATE TABLE subs_i (object_id integer NOT NULL, user_id integer "
                     "NOT NULL, PRIMARY KEY (object_id, user_id))")
        conn.execute("CREATE TABLE subs_s (object varchar(255) NOT NULL, user_id varchar(255) "
                     "NOT NULL, PRIMARY KEY (object, user_id))")
        cur = conn.cursor()
        # today's indexes are built after the load (as VACUUM FULL / REINDEX leaves them)
        cur.execute("SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM "
                    "pg_index WHERE indrelid = 'notifications'::regclass AND NOT indisprimary")
        indexes = cur.fetchall()
        for ix, _ in indexes:
            cur.execute(f"DROP INDEX {ix}")
        follows = set()
        for u in range(USERS):
            for f in rng.sample(range(USERS), rng.randint(FOLLOWS - 20, FOLLOWS + 20)):
                if f != u:
                    follows.add((u, f))  # u follows f
        with cur.copy("COPY follows (follower, followee, created_at) FROM STDIN") as c:
            for u, f in follows:
                c.write_row((name(u), name(f), T0))
        with cur.copy("COPY follows_i (follower, followee) FROM STDIN") as c:
            for u, f in follows:
                c.write_row((u + 1, f + 1))
        with cur.copy("COPY subs_s FROM STDIN") as c:
            for u in range(100_000):
                c.write_row(("page:Big", f"user{u:06d}"))
        with cur.copy("COPY subs_i FROM STDIN") as c:
            for u in range(100_000):
                c.write_row((1, u + 20_001))
        with cur.copy("COPY names (id, kind, name) FROM STDIN") as c:
            for u in range(USERS):
                c.write_row((u + 1, 0, name(u)))
            c.write_row((USERS + 1, 1, "page-linked"))
            c.write_row((USERS + 2, 1, "mention"))
        evs = []
        for e in range(1, EVENTS + 1):
            linked = ((e - 1) // (USERS // 10)) % 2 == 0
            evs.append((e, linked, rng.randrange(USERS),
                        f'{{"from":"page:Source_{rng.randrange(10_000):05d}"}}'))
        actors = {e: name(a) for e, _, a, _ in evs}
        with cur.copy("COPY events (id, type, actor, object, payload, recipients, exclude, "
                      "idempotency_scope, body_hash, created_at) FROM STDIN") as c:
            for e, linked, actor, payload in evs:
                c.write_row((e, "page-linked" if linked else "mention", name(actor),
                             f"page:P{e % 500}", payload, "[]", "[]", "default",
                             hx(str(e)), T0 + e * 1000))
        with cur.copy("COPY ev (id, created_at, type_id, actor_id, object_id, payload) "
                      "FROM STDIN") as c:
            for e, linked, actor, payload in evs:
                c.write_row((e, T0 + e * 1000, USERS + (1 if linked else 2), actor + 1,
                             e % 500, payload))
        # the events the bench's fan-outs deliver (published before their fan-out)
        conn.execute("INSERT INTO events (id, type, actor, object, payload, recipients, "
                     "exclude, idempotency_scope, body_hash, created_at) SELECT g, "
                     "'mention', 'user00001', 'page:T' || g, '{}', '[]', '[]', 'default', "
                     "md5(g::text), %s FROM generate_series(10000001, 10020000) g", (T0,))
        conn.execute("INSERT INTO ev (id, created_at, type_id, actor_id, object_id, payload) "
                     "SELECT g, %s, %s, 2, 1, '{}' FROM generate_series(10000001, 10020000) g",
                     (T0, USERS + 2))
        now_rows, lean_rows = [], []
        for u in range(USERS):
            for block in range(PER_USER // 20):
                ks = range(block * 20, block * 20 + 20)
                bundled = [k for k in ks if k % 2 == 0]
                first = event_of(u, bundled[0])
                bh = hx(f"page-linked{block}")
                dh = hx(f"{bh}{first}")
                members = [event_of(u, k) for k in bundled]
                distinct = list(dict.fromkeys(actors[m] for m in reversed(members)))
                for k in ks:
                    e = event_of(u, k)
                    at = T0 + e * 1000
                    read = at if k < 30 else None
                    if k % 2:  # a singleton mention
                        now_rows.append((name(u), e, at, at, "mention", "mentions", "alert",
                                         actors[e], f"page:P{e % 500}", hx(f"m{e}"),
                                         hx(f"m{e}x"), True, read, False, None, None))
                        lean_rows.append((u + 1, USERS + 2, (2 << REASON_SHIFT)
                                          | (READ if read else 0), at, e, None, None, None))
                        continue
                    base = k == bundled[-1]
                    now_rows.append((name(u), e, at, at, "page-linked", "links", "alert",
                                     actors[e], f"page:P{e % 500}", bh, dh, base, read,
                                     k != bundled[0], len(members) if base else None,
                                     " ".join(distinct) if base else None))
                    if base:
                        ids = [int(a[4:]) + 1 for a in distinct]
                        lean_rows.append((u + 1, USERS + 1, BUNDLES | (1 << REASON_SHIFT)
                                          | (READ if read else 0), at, e, first, None,
                                          pack_group(e, list(reversed(members[:-1])), ids)))
        with cur.copy("COPY notifications (user_id, event_id, created_at, fresh_at, type, "
                      "category, section, actor, object, bundle_hash, display_hash, "
                      "bundle_base, read_at, joined, group_count, group_actors) FROM STDIN"
                      ) as c:
            for row in now_rows:
                c.write_row(row)
        with cur.copy("COPY d_groups FROM STDIN") as c:
            for row in lean_rows:
                c.write_row(row)
        with cur.copy("COPY d_open FROM STDIN") as c:
            for u in range(USERS):
                for block in range(PER_USER // 20):
                    e = event_of(u, block * 20 + 18)
                    c.write_row((u + 1, block + 1, T0 + e * 1000, e))
        with cur.copy("COPY d_deliveries FROM STDIN") as c:
            holders: dict[int, list[int]] = {}
            for u in range(USERS):
                for k in range(PER_USER):
                    holders.setdefault(event_of(u, k), []).append(u + 1)
            for e, us in holders.items():
                c.write_row((e, 0, leb128([us[0], *(b - a for a, b in pairwise(us))])))
        users = conn.cursor()
        users.execute("INSERT INTO users (user_id, created_at) "
                      "SELECT user_id, min(created_at) FROM notifications GROUP BY user_id")
        conn.commit()
        for _, definition in indexes:
            conn.execute(definition)
        conn.commit()
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        for t in ("notifications", "d_groups"):
            size = conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0]
            print(t, f"{size:,}")


# -- the statements ------------------------------------------------------------------------

NOW_FANOUT = """
INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, category, section,
  actor, object, bundle_hash, display_hash, bundle_base, read_at, joined)
SELECT follower, %(e)s, %(t)s, %(t)s, 'mention', 'mentions', 'alert', %(a)s::varchar, %(o)s, %(bh)s,
  %(dh)s, TRUE, NULL, FALSE FROM follows WHERE followee = %(a)s::varchar
ON CONFLICT DO NOTHING"""
NOW_FANOUT_BIG = NOW_FANOUT.replace("follows WHERE followee = %(a)s::varchar",
                                    "subs_s WHERE object = 'page:Big'").replace(
                                        "SELECT follower", "SELECT user_id")
LEAN_FANOUT = """
WITH written AS (
  INSERT INTO d_groups (user_id, type_id, flags, created_at, event_id)
  SELECT follower, %(type)s, %(flags)s, %(t)s, %(e)s FROM follows_i WHERE followee = %(ai)s
  ON CONFLICT DO NOTHING RETURNING user_id)
INSERT INTO d_deliveries (event_id, chunk, users)
SELECT %(e)s, 0, coalesce(string_agg(int4send(user_id), ''::bytea ORDER BY user_id), '')
FROM written"""
LEAN_FANOUT_BIG = LEAN_FANOUT.replace("follows_i WHERE followee = %(ai)s",
                                      "subs_i WHERE object_id = 1").replace(
                                          "SELECT follower", "SELECT user_id")

# a bundled event: each follower's notification joins the open (unread) group of its bundle,
# which moves to the top, or starts a group (today: the old base steps down, the new row
# carries the summary; lean: the group row is rewritten, the packed bytes stand for the
# worker's re-encoding, the open group and the delivery chunk are written)
NOW_JOIN = """
WITH f AS (SELECT follower AS u FROM follows WHERE followee = %(a)s::varchar),
old AS (UPDATE notifications n SET bundle_base = FALSE, group_count = NULL, group_actors = NULL
  FROM f WHERE n.user_id = f.u AND n.bundle_hash = %(bh_open)s AND n.bundle_base
  AND n.read_at IS NULL
  RETURNING n.user_id, n.display_hash, n.created_at, n.group_count, n.group_actors)
INSERT INTO notifications (user_id, event_id, created_at, fresh_at, type, category, section,
  actor, object, bundle_hash, display_hash, bundle_base, read_at, joined, group_count,
  group_actors)
SELECT f.u, %(e)s, greatest(%(t)s, old.created_at + 1), greatest(%(t)s, old.created_at + 1),
  'page-linked', 'links', 'alert', %(a)s::varchar, %(o)s, %(bh_open)s,
  coalesce(old.display_hash, %(dh)s), TRUE, NULL, old.user_id IS NOT NULL,
  coalesce(old.group_count, 0) + 1, %(a)s::varchar || coalesce(' ' || old.group_actors, '')
FROM f LEFT JOIN old ON old.user_id = f.u
ON CONFLICT DO NOTHING"""
LEAN_JOIN = """
WITH f AS (SELECT follower AS u FROM follows_i WHERE followee = %(ai)s),
j AS (UPDATE d_groups g SET created_at = greatest(%(t)s, g.created_at + 1), event_id = %(e)s,
    first_id = coalesce(g.first_id, g.event_id),
    packed = coalesce(g.packed, '\\x0201'::bytea) || '\\x05'::bytea
  FROM d_open o JOIN f ON o.user_id = f.u
  WHERE o.bundle_key = %(k)s AND g.user_id = o.user_id AND g.created_at = o.created_at
    AND g.flags & 1 = 0
  RETURNING g.user_id, g.created_at),
s AS (INSERT INTO d_groups (user_id, type_id, flags, created_at, event_id)
  SELECT f.u, %(type)s, %(flags)s, %(t)s, %(e)s FROM f
  WHERE f.u NOT IN (SELECT user_id FROM j)
  ON CONFLICT DO NOTHING RETURNING user_id, created_at),
w AS (SELECT user_id, created_at FROM j UNION ALL SELECT user_id, created_at FROM s),
op AS (INSERT INTO d_open (user_id, bundle_key, created_at, event_id)
  SELECT user_id, %(k)s, created_at, %(e)s FROM w
  ON CONFLICT (user_id, bundle_key) DO UPDATE SET created_at = EXCLUDED.created_at,
    event_id = EXCLUDED.event_id)
INSERT INTO d_deliveries (event_id, chunk, users)
SELECT %(e)s, 0, coalesce(string_agg(int4send(user_id), ''::bytea ORDER BY user_id), '')
FROM w"""

NOW_PAGE = """
SELECT n.event_id, n.created_at, n.fresh_at, n.type, n.category, n.section, n.actor,
  n.object, n.bundle_hash, n.display_hash, n.read_at, n.joined, n.group_count,
  n.group_actors, e.payload,
  (SELECT json_agg(json_build_array(scope, until_at)) FROM read_markers
   WHERE user_id = %(u)s) AS marks
FROM notifications n JOIN events e ON e.id = n.event_id
WHERE n.user_id = %(u)s AND n.bundle_base = TRUE
ORDER BY n.created_at DESC, n.event_id DESC LIMIT 20"""
LEAN_PAGE = """
SELECT g.created_at, g.event_id, g.type_id, g.flags, g.first_id, g.fresh_at, g.packed,
  e.actor_id, e.object_id, e.payload,
  (SELECT json_agg(json_build_array(scope, until_at)) FROM marks
   WHERE user_id = %(ui)s) AS marks
FROM d_groups g JOIN ev e ON e.id = g.event_id
WHERE g.user_id = %(ui)s ORDER BY g.created_at DESC LIMIT 20"""

NOW_COUNT = """
SELECT count(*) FROM (SELECT 1 FROM notifications WHERE user_id = %(u)s
  AND bundle_base = TRUE AND read_at IS NULL AND fresh_at > COALESCE(
  (SELECT until_at FROM read_markers WHERE user_id = %(u)s AND scope = 'all'), 0)
  LIMIT 100) AS capped"""
# the groups newer than the "all" watermark and not read one by one, newest first; a group
# marked unread again (fresh_at set) below the watermark would come from a side list
LEAN_COUNT = """
SELECT count(*) FROM (SELECT 1 FROM d_groups WHERE user_id = %(ui)s
  AND created_at > COALESCE((SELECT until_at FROM marks WHERE user_id = %(ui)s
  AND scope = 0), 0) AND flags & 1 = 0 ORDER BY created_at DESC LIMIT 100) AS capped"""

NOW_MARK = """
INSERT INTO read_markers (user_id, scope, until_at) VALUES (%(u)s, 'all', %(t)s)
ON CONFLICT (user_id, scope) DO UPDATE SET until_at = GREATEST(read_markers.until_at,
  EXCLUDED.until_at)"""
LEAN_MARK = """
INSERT INTO marks (user_id, scope, until_at) VALUES (%(ui)s, 0, %(t)s)
ON CONFLICT (user_id, scope) DO UPDATE SET until_at = GREATEST(marks.until_at,
  EXCLUDED.until_at)"""


class Sides:
    def __init__(self) -> None:
        self.conn = psycopg.connect(URL, autocommit=True, prepare_threshold=0)
        if os.environ.get("LEAN_ASYNC") == "1":  # the statements' work, not the disk's flush
            self.conn.execute("SET synchronous_commit = off")
        self.rng = random.Random(1)
        self.next_event = 10_000_000  # the fill's events from 10,000,001 on
        self.clock = T0 + 10**12

    def user(self) -> dict[str, Any]:
        u = self.rng.randrange(USERS)
        self.clock += 1000
        return {"u": name(u), "ui": u + 1, "t": self.clock}

    def fanout_params(self) -> dict[str, Any]:
        self.next_event += 1
        self.clock += 1000
        a = self.rng.randrange(USERS)
        e = self.next_event
        block = self.rng.randrange(PER_USER // 20)
        return {"e": e, "t": self.clock, "a": name(a), "ai": a + 1, "o": f"page:T{e}",
                "bh_open": hx(f"page-linked{block}"), "k": block + 1,
                "bh": hx(f"e{e}"), "dh": hx(f"e{e}d"), "type": USERS + 2,
                "flags": 2 << REASON_SHIFT}

    def run(self, sql: str, params: Callable[[], dict[str, Any]], n: int,
            tx: bool = False) -> float:
        cur = self.conn.cursor()
        started = time.perf_counter()
        for _ in range(n):
            p = params()
            if tx:
                with self.conn.transaction():
                    cur.execute(sql, p)
            else:
                cur.execute(sql, p)
                cur.fetchall() if cur.description else None
        return n / (time.perf_counter() - started)


def run() -> None:
    s = Sides()
    work = [
        ("fan-out to ~43 followers, events/s", NOW_FANOUT, LEAN_FANOUT, s.fanout_params, 300,
         True),
        ("bundled event to ~43 followers, events/s", NOW_JOIN, LEAN_JOIN, s.fanout_params,
         300, True),
        ("one event to 100,000 subscribers, rows/s", NOW_FANOUT_BIG, LEAN_FANOUT_BIG,
         s.fanout_params, 1, True),
        ("first page of 20 with summaries, /s", NOW_PAGE, LEAN_PAGE, s.user, 3000, False),
        ("unread count capped at 100, /s", NOW_COUNT, LEAN_COUNT, s.user, 5000, False),
        ("mark all read, /s", NOW_MARK, LEAN_MARK, s.user, 3000, False),
    ]
    only = sys.argv[2:]
    for label, now_sql, lean_sql, params, n, tx in work:
        if only and not any(o in label for o in only):
            continue
        s.run(now_sql, params, max(1, n // 10), tx)  # warm both
        s.run(lean_sql, params, max(1, n // 10), tx)
        rates: dict[str, list[float]] = {"now": [], "lean": []}
        for _ in range(3):  # alternated block by block
            for side, sql in (("now", now_sql), ("lean", lean_sql)):
                rate = s.run(sql, params, n, tx)
                rates[side].append(rate * (100_000 if "100,000" in label else 1))
        now, lean = statistics.median(rates["now"]), statistics.median(rates["lean"])
        print(f"{label:<42} today {now:>10,.0f}  lean {lean:>10,.0f}  lean/today "
              f"{lean / now:5.2f}   (blocks: {[round(r) for r in rates['now']]} "
              f"{[round(r) for r in rates['lean']]})", flush=True)


if __name__ == "__main__":
    {"fill": fill, "run": run}[sys.argv[1]]()
