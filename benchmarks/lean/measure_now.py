"""Today's layout: deliver the data set (dataset.py) through the library (publish + the
embedded worker) into a fresh database, then print bytes per notification per table and index.

    python measure_now.py postgresql://postgres@127.0.0.1:5432/lean_now
    python measure_now.py sqlite:////tmp/lean_now.db
    python measure_now.py mysql+pymysql://root@127.0.0.1:3306/lean_now
"""

from __future__ import annotations

import sys
import time

from dataset import events
from sizes import maria_sizes, pg_sizes, report, sqlite_sizes

from tidings import Event, EventType, Templates, Tidings

INBOX = {"notifications", "deliveries", "inbox_types", "events", "event_fields", "read_markers",
         "inbox_open", "users"}


def main(url: str) -> None:
    types = [
        EventType("page-linked", category="links", bundle="object", audience=("recipients",),
                  templates=Templates(title="{{ object_title }} was linked by {{ actors_text }}")),
        EventType("mention", category="mentions", bundle="none", audience=("recipients",),
                  templates=Templates(title="{{ actor }} mentioned you")),
    ]
    t = Tidings.open(url, migrate=True, types=types)
    started = time.perf_counter()
    for e in events():
        t.publish(Event(e.type, actor=e.actor, object=e.object, payload=e.payload,
                        recipients=list(e.recipients)))
    t.run_jobs()
    print(f"delivered in {time.perf_counter() - started:.1f} s")
    page = t.notifications("user00000")
    print("user00000 first item:", page.items[0].title if page.items else None,
          "unread:", t.unread_count("user00000").display)
    t.close()
    if url.startswith("postgresql"):
        import psycopg
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT count(*) FROM notifications").fetchone()[0]
            sizes = pg_sizes(conn)
    elif url.startswith("sqlite"):
        import sqlite3
        path = url.split("sqlite:///", 1)[1]
        rows = sqlite3.connect(path).execute("SELECT count(*) FROM notifications").fetchone()[0]
        sizes = sqlite_sizes(path)
    else:
        import pymysql
        db = url.rsplit("/", 1)[1]
        conn = pymysql.connect(host="127.0.0.1", user="root", database=db, autocommit=True)
        cur = conn.cursor()
        cur.execute("SELECT count(*) FROM notifications")
        rows = cur.fetchone()[0]
        sizes = maria_sizes(conn, db)
    report(f"today's layout on {url.split(':')[0]}", sizes, rows, INBOX)


if __name__ == "__main__":
    main(sys.argv[1])
