"""Fill the candidate layouts (layouts.py) with the data set's notifications by raw SQL and
print bytes per notification per table and index, per candidate (its tables plus the common
ones: names, ev, marks).

    python lean_fill.py pg       # database lean_cand on 127.0.0.1:5432 (created, kept)
    python lean_fill.py sqlite   # /tmp/lean_cand.db
    python lean_fill.py maria    # database lean_cand on 127.0.0.1:3306
"""

from __future__ import annotations

import os
import sys
from typing import Any

import dataset
import layouts
from sizes import maria_sizes, pg_sizes, sqlite_sizes

LAYOUTS = ("a", "b", "c", "d")
COMMON = ("names", "ev", "marks")


def fill(backend: str, conn: Any, tables: dict[str, list[tuple[Any, ...]]]) -> None:
    for table, rows in tables.items():
        if not rows:
            continue
        if backend == "pg":
            with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["?" if backend == "sqlite" else "%s"] * len(rows[0]))
            cur = conn.cursor()
            for start in range(0, len(rows), 5000):
                cur.executemany(f"INSERT INTO {table} VALUES ({marks})",
                                rows[start:start + 5000])
    conn.commit()


def connect(backend: str) -> tuple[Any, str]:
    if backend == "pg":
        import psycopg
        os.system("dropdb -h 127.0.0.1 -U postgres --if-exists lean_cand; "
                  "createdb -h 127.0.0.1 -U postgres lean_cand")
        return psycopg.connect("postgresql://postgres@127.0.0.1:5432/lean_cand"), "lean_cand"
    if backend == "sqlite":
        import sqlite3
        path = "/tmp/lean_cand.db"
        if os.path.exists(path):
            os.remove(path)
        return sqlite3.connect(path), path
    import pymysql
    admin = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    admin.cursor().execute("DROP DATABASE IF EXISTS lean_cand")
    admin.cursor().execute("CREATE DATABASE lean_cand")
    return pymysql.connect(host="127.0.0.1", user="root", database="lean_cand"), "lean_cand"


def main(backend: str) -> None:
    evs = dataset.events()
    notes = dataset.notes(evs)
    rows = layouts.Rows(evs, notes)
    conn, where = connect(backend)
    cur = conn.cursor()
    for layout in ("", *LAYOUTS):
        for statement in layouts.ddl(layout, backend):
            cur.execute(statement)
    conn.commit()
    fill(backend, conn, rows.common())
    for layout in LAYOUTS:
        fill(backend, conn, rows.layout(layout))
    if backend == "pg":
        conn.close()
        import psycopg
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/lean_cand",
                             autocommit=True) as c:
            sizes = pg_sizes(c)
    elif backend == "sqlite":
        conn.close()
        sizes = sqlite_sizes(where)
    else:
        conn.autocommit(True)
        sizes = maria_sizes(conn, where)
    count = len(notes)
    print(f"\n== candidates on {backend}: {count:,} notifications "
          f"({len(set((n.user, n.group) for n in notes)):,} display groups)")
    common = {t for t in COMMON}
    for layout in ("common", *LAYOUTS):
        owned = common if layout == "common" else {
            t for t in {owner for owner, _ in sizes.values()} if t.startswith(f"{layout}_")}
        total = 0
        for name, (table, size) in sorted(sizes.items(), key=lambda i: -i[1][1]):
            if table in owned:
                total += size
                print(f"  {layout:<7} {name:<40} {size:>11,} {size / count:7.1f}")
        extra = "" if layout == "common" else " (+ common)"
        common_size = sum(s for t, s in sizes.values() if t in common)
        with_common = total + (0 if layout == "common" else common_size)
        print(f"  {layout:<7} {'TOTAL' + extra:<40} {with_common:>11,} "
              f"{with_common / count:7.1f}\n")


if __name__ == "__main__":
    main(sys.argv[1])
