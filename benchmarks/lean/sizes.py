"""Bytes per relation on PostgreSQL (after VACUUM FULL), SQLite (dbstat after VACUUM) and
MariaDB (InnoDB data_length + index_length after OPTIMIZE TABLE), printed per table and per
index and divided by a row count."""

from __future__ import annotations

import sqlite3
from typing import Any


def pg_sizes(conn: Any) -> dict[str, tuple[str, int]]:
    """relation -> (owning table, bytes) for every table, its TOAST and each index."""
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    tables = [r[0] for r in cur.fetchall()]
    for t in tables:
        cur.execute(f'VACUUM FULL ANALYZE "{t}"')
    out: dict[str, tuple[str, int]] = {}
    for t in tables:
        cur.execute("SELECT pg_table_size(%s::regclass)", (t,))  # heap + TOAST + fsm/vm
        out[t] = (t, cur.fetchone()[0])
        cur.execute("SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) "
                    "FROM pg_index WHERE indrelid = %s::regclass", (t,))
        for name, size in cur.fetchall():
            out[name] = (t, size)
    return out


def sqlite_sizes(path: str) -> dict[str, tuple[str, int]]:
    conn = sqlite3.connect(path)
    conn.execute("VACUUM")
    rows = conn.execute("SELECT name, tbl_name FROM sqlite_master "
                        "WHERE type IN ('table', 'index')").fetchall()
    owner = dict(rows)
    try:
        found = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.OperationalError:  # no dbstat: the file as a whole
        import os
        return {"(file)": ("(file)", os.path.getsize(path))}
    return {name: (owner.get(name, name), size) for name, size in found}


def maria_sizes(conn: Any, db: str) -> dict[str, tuple[str, int]]:
    cur = conn.cursor()
    cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (db,))
    tables = [r[0] for r in cur.fetchall()]
    for t in tables:
        cur.execute(f"OPTIMIZE TABLE `{t}`")
        cur.fetchall()
        cur.execute(f"ANALYZE TABLE `{t}` PERSISTENT FOR ALL")
        cur.fetchall()
    out: dict[str, tuple[str, int]] = {}
    # per index: mysql.innodb_index_stats size (pages), the clustered one is the table's data
    cur.execute("SELECT @@innodb_page_size")
    page = int(cur.fetchone()[0])
    for t in tables:
        cur.execute("SELECT data_length, index_length FROM information_schema.tables "
                    "WHERE table_schema = %s AND table_name = %s", (db, t))
        data, index = cur.fetchone()
        out[t] = (t, int(data))
        cur.execute("SELECT index_name, stat_value FROM mysql.innodb_index_stats WHERE "
                    "database_name = %s AND table_name = %s AND stat_name = 'size' "
                    "AND index_name <> 'PRIMARY' AND index_name <> 'GEN_CLUST_INDEX'",
                    (db, t))
        named = cur.fetchall()
        listed = 0
        for name, pages in named:
            out[f"{t}.{name}"] = (t, int(pages) * page)
            listed += int(pages) * page
        if int(index) and not named:
            out[f"{t}.(indexes)"] = (t, int(index))
    return out


def report(title: str, sizes: dict[str, tuple[str, int]], rows: int,
           inbox: set[str] | None = None) -> dict[str, Any]:
    """Print relation, bytes, B/notification; totals for all tables and the inbox ones."""
    print(f"\n== {title}: {rows:,} notifications")
    total = sum(s for _, s in sizes.values())
    for name, (table, size) in sorted(sizes.items(), key=lambda i: (-i[1][1])):
        if size / rows >= 0.3:
            print(f"  {name:<70} {table:<22} {size:>11,} {size / rows:8.1f}")
    print(f"  {'TOTAL every table and index':<93} {total:>11,} {total / rows:8.1f}")
    result: dict[str, Any] = {"total": total, "per_row": round(total / rows, 1)}
    if inbox is not None:
        part = sum(s for _, (t, s) in sizes.items() if t in inbox)
        print(f"  {'inbox tables ' + ','.join(sorted(inbox)):<93} {part:>11,} {part / rows:8.1f}")
        result["inbox_per_row"] = round(part / rows, 1)
    return result
